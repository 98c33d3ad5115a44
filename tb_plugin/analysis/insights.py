"""Performance insights for one trace (single rank too). Times are µs.

- **Stream idle time**, per GPU stream, inside the steps window: the gaps between consecutive device
  work on the stream (kernels, memcpy, memset; overlapping work merged). A gap is
  *host wait* when the work after it was launched (its runtime call ended) after the gap began — the
  GPU had nothing queued; else a *short gap* when shorter than :data:`SHORT_GAP_US`; else *other*.
- **Launch delay** of a kernel = its start − the end of its launch call, floored at 0. A kernel is
  *shorter than its launch overhead* when its duration is below its launch call's duration.
- **Exposed time** of each GPU over the steps window, in this order, each part excluding the ones
  before it: computation (non-communication kernels), exposed communication, exposed memcpy/memset,
  idle. The four add up to the window.
- **Queue length** of a stream at time t = kernels whose launch call has started but that have not
  started on the GPU.
- **Host synchronization**: ``cuda_sync`` events and synchronizing runtime calls
  (:data:`SYNC_CALLS`), the operator that issued each (innermost operator around it), and the GPU idle
  time after each: from its end to the next device work start on any stream of the same process's GPUs.
"""

from __future__ import annotations

import numpy as np

from ..trace.categories import Kind
from ..trace.links import _cached, device_mask, launch_of
from ..trace.model import Trace
from .breakdown import category_masks
from .intervals import merge
from .op_tree import op_tree
from .steps import compute_steps

SHORT_GAP_US = 10.0
GAP_BINS_US = (0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000, 10000, float("inf"))
SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy",
              "hipStreamSynchronize", "hipDeviceSynchronize", "hipEventSynchronize",
              "hipMemcpy", "cuStreamSynchronize", "cuCtxSynchronize")
SHORT_KERNEL_SHARE = 0.3  # recommend CUDA graphs / torch.compile above this share


def _window(trace: Trace) -> tuple[float, float]:
    lo, hi = compute_steps(trace).window
    if hi <= lo:
        ev = trace.events
        return (float(ev.ts.min()), float((ev.ts + ev.dur).max())) if len(ev) else (0.0, 0.0)
    return lo, hi


def stream_idle(trace: Trace) -> dict:
    """Idle time per stream split into host wait / short gap / other, and a gap-length histogram."""
    ev = trace.events
    lo, hi = _window(trace)
    dev = np.flatnonzero(device_mask(trace))
    launcher = launch_of(trace)
    streams = []
    totals = {"host_wait_us": 0.0, "short_gap_us": 0.0, "other_us": 0.0}
    all_gaps = []
    key = ev.device[dev].astype(np.int64) << 32 | (ev.stream[dev] & 0xFFFFFFFF)
    for k in np.unique(key):
        rows = dev[key == k]
        rows = rows[np.argsort(ev.ts[rows], kind="stable")]
        start, end = ev.ts[rows], ev.ts[rows] + ev.dur[rows]
        inside = (end > lo) & (start < hi)
        rows, start, end = rows[inside], start[inside], end[inside]
        if len(rows) < 2:
            continue
        reach = np.maximum.accumulate(end)
        gap_start, gap_end = reach[:-1], start[1:]
        is_gap = gap_end > gap_start
        nxt = rows[1:][is_gap]
        g0, g1 = np.clip(gap_start[is_gap], lo, hi), np.clip(gap_end[is_gap], lo, hi)
        length = g1 - g0
        launch = launcher[nxt]
        launch_end = np.where(launch >= 0, ev.ts[np.maximum(launch, 0)] + ev.dur[np.maximum(launch, 0)], -np.inf)
        host = launch_end > g0
        short = ~host & (length < SHORT_GAP_US)
        part = {"host_wait_us": float(length[host].sum()), "short_gap_us": float(length[short].sum()),
                "other_us": float(length[~host & ~short].sum())}
        for name in totals:
            totals[name] += part[name]
        all_gaps.append(length)
        streams.append({"device": int(k >> 32), "stream": int(k & 0xFFFFFFFF), **part,
                        "busy_us": float(np.sum(merge(np.clip(start, lo, hi), np.clip(end, lo, hi))[1]
                                                - merge(np.clip(start, lo, hi), np.clip(end, lo, hi))[0]))})
    gaps = np.concatenate(all_gaps) if all_gaps else np.zeros(0)
    counts, _ = np.histogram(gaps, bins=np.array(GAP_BINS_US))
    return {"short_gap_threshold_us": SHORT_GAP_US, "streams": streams, **totals,
            "gap_histogram": {"edges_us": [e if np.isfinite(e) else None for e in GAP_BINS_US],
                              "counts": counts.tolist()}}


def launch_delays(trace: Trace) -> dict:
    """Launch delay and kernel duration distributions, and the share of kernels shorter than their launch."""
    ev = trace.events
    launcher = launch_of(trace)
    k = np.flatnonzero((ev.kind == Kind.KERNEL) & (launcher >= 0))
    edges = np.array(GAP_BINS_US)

    def histogram(values: np.ndarray) -> dict:
        # Always the documented {edges_us, counts} shape (all-zero counts without kernels): the UI draws it.
        return {"edges_us": [e if np.isfinite(e) else None for e in GAP_BINS_US],
                "counts": np.histogram(values, bins=edges)[0].tolist()}

    if len(k) == 0:
        empty = np.zeros(0)
        return {"kernels": 0, "p50": None, "p95": None, "max": None, "short_kernel_share": None,
                "delay_histogram": histogram(empty), "duration_histogram": histogram(empty)}
    src = launcher[k]
    delay = np.maximum(ev.ts[k] - (ev.ts[src] + ev.dur[src]), 0.0)
    shorter = ev.dur[k] < ev.dur[src]
    return {
        "kernels": int(len(k)),
        "p50": float(np.percentile(delay, 50)), "p95": float(np.percentile(delay, 95)), "max": float(delay.max()),
        "short_kernel_share": float(shorter.mean()),
        "delay_histogram": histogram(delay),
        "duration_histogram": histogram(ev.dur[k]),
    }


def exposed_time(trace: Trace) -> dict:
    """Per GPU and in total: computation, exposed communication, exposed memcpy, idle (sum = window)."""
    ev = trace.events
    lo, hi = _window(trace)
    masks = category_masks(trace)
    compute = masks["kernel"]
    comm = masks["communication"] & device_mask(trace)
    copy = masks["memcpy"] | masks["memset"]
    out = []
    for d in np.unique(ev.device[device_mask(trace) & (ev.device >= 0)]):
        on = ev.device == d
        parts = _priority_cover([compute & on, comm & on, copy & on], ev, lo, hi)
        span = hi - lo
        out.append({"device": int(d), "compute_us": parts[0], "exposed_comm_us": parts[1],
                    "exposed_memcpy_us": parts[2], "idle_us": max(span - sum(parts), 0.0)})
    total = {k: float(sum(x[k] for x in out)) for k in ("compute_us", "exposed_comm_us", "exposed_memcpy_us",
                                                         "idle_us")} if out else \
        {"compute_us": 0.0, "exposed_comm_us": 0.0, "exposed_memcpy_us": 0.0, "idle_us": 0.0}
    return {"window_us": hi - lo, "gpus": out, **total}


def _priority_cover(masks, ev, lo, hi) -> list[float]:
    """Length each mask's union adds inside [lo, hi] after the earlier masks' unions."""
    covered_s, covered_e = np.zeros(0), np.zeros(0)
    out = []
    for m in masks:
        s, e = np.clip(ev.ts[m], lo, hi), np.clip(ev.ts[m] + ev.dur[m], lo, hi)
        before = float(np.sum(covered_e - covered_s))
        covered_s, covered_e = merge(np.concatenate([covered_s, s]), np.concatenate([covered_e, e]))
        out.append(float(np.sum(covered_e - covered_s)) - before)
    return out


def queue_length(trace: Trace) -> list[dict]:
    """Per stream, the queue-length step function: ``times`` and ``lengths`` after each change."""
    def build():
        ev = trace.events
        launcher = launch_of(trace)
        k = np.flatnonzero((ev.kind == Kind.KERNEL) & (launcher >= 0))
        out = []
        key = ev.device[k].astype(np.int64) << 32 | (ev.stream[k] & 0xFFFFFFFF)
        for s in np.unique(key):
            rows = k[key == s]
            times = np.concatenate([ev.ts[launcher[rows]], ev.ts[rows]])
            delta = np.concatenate([np.ones(len(rows)), -np.ones(len(rows))])
            order = np.lexsort((delta, times))  # at one instant, a start before a launch
            out.append({"device": int(s >> 32), "stream": int(s & 0xFFFFFFFF), "times": times[order],
                        "lengths": np.maximum(np.cumsum(delta[order]), 0)})
        return out

    return _cached(trace, "queue_length", build)


def host_syncs(trace: Trace, top: int = 20) -> dict:
    """Synchronizing calls and ``cuda_sync`` events, grouped by the operator that issued them."""
    ev = trace.events
    sync_call = (ev.kind == Kind.RUNTIME) & trace.name_mask(lambda s: s.startswith(SYNC_CALLS) and "Async" not in s)
    cuda_sync = trace.name_mask(lambda s: False)
    cat_sync = {i for i, s in enumerate(trace.strings) if s == "cuda_sync"}
    if cat_sync:
        cuda_sync = np.isin(ev.cat, list(cat_sync))
    rows = np.flatnonzero(sync_call)
    parent = op_tree(trace).op_parent
    dev = np.flatnonzero(device_mask(trace))
    dev_starts = np.sort(ev.ts[dev])
    by_op: dict[str, dict] = {}
    idle_total = 0.0
    for r in rows.tolist():
        end = float(ev.ts[r] + ev.dur[r])
        i = np.searchsorted(dev_starts, end)
        idle = float(dev_starts[i] - end) if i < len(dev_starts) else 0.0
        idle_total += idle
        op = trace.strings[ev.name[parent[r]]] if parent[r] >= 0 else "(no operator)"
        entry = by_op.setdefault(op, {"op": op, "calls": 0, "sync_us": 0.0, "gpu_idle_after_us": 0.0, "apis": {}})
        entry["calls"] += 1
        entry["sync_us"] += float(ev.dur[r])
        entry["gpu_idle_after_us"] += idle
        api_name = trace.strings[ev.name[r]]
        entry["apis"][api_name] = entry["apis"].get(api_name, 0) + 1
    ranked = sorted(by_op.values(), key=lambda x: -x["sync_us"])
    return {"sync_calls": int(len(rows)), "sync_us": float(ev.dur[rows].sum()),
            "cuda_sync_events": int(cuda_sync.sum()), "cuda_sync_us": float(ev.dur[cuda_sync].sum()),
            "gpu_idle_after_us": idle_total, "by_operator": ranked[:top]}


def insights(trace: Trace) -> dict:
    return _cached(trace, "insights", lambda: {
        "idle": stream_idle(trace), "launch": launch_delays(trace), "exposed": exposed_time(trace),
        "syncs": host_syncs(trace)})


def insight_recommendations(doc: dict) -> list[str]:
    """Quantified advice from :func:`insights`."""
    out = []
    launch = doc["launch"]
    if launch["short_kernel_share"] is not None and launch["short_kernel_share"] > SHORT_KERNEL_SHARE:
        out.append(f"{100 * launch['short_kernel_share']:.0f}% of kernels run shorter than the CPU call that "
                   "launches them: the GPU waits on the host. Capture the step with CUDA graphs or use "
                   "torch.compile(mode='reduce-overhead') to cut launch overhead.")
    idle = doc["idle"]
    total_idle = idle["host_wait_us"] + idle["short_gap_us"] + idle["other_us"]
    if total_idle > 0 and idle["host_wait_us"] > 0.5 * total_idle:
        out.append(f"{idle['host_wait_us'] / 1000:.1f} ms of GPU stream idle time ({100 * idle['host_wait_us'] / total_idle:.0f}% "
                   "of it) is spent waiting for the host to launch work: reduce Python/CPU overhead per step.")
    syncs = doc["syncs"]
    if syncs["by_operator"] and syncs["gpu_idle_after_us"] > 0:
        worst = syncs["by_operator"][0]
        out.append(f"{syncs['sync_calls']} synchronizing calls stall the host for {syncs['sync_us'] / 1000:.1f} ms; the "
                   f"most costly come from {worst['op']} ({worst['calls']} calls). Avoid .item(), .cpu() and "
                   "blocking copies inside the step.")
    exposed = doc["exposed"]
    if exposed["window_us"] > 0 and exposed["exposed_comm_us"] > 0.1 * exposed["window_us"]:
        out.append(f"Communication not hidden behind computation takes {100 * exposed['exposed_comm_us'] / exposed['window_us']:.0f}% "
                   "of the GPU time: overlap it (DDP bucketing, FSDP prefetch) or send less.")
    return out
