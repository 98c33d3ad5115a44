"""Performance insights for one trace (single rank too). Times are µs.

- **GPU idle time**, per GPU over the steps window: window − the union of busy time over all that
  GPU's streams, split into host wait / short gap / other by what ended each idle gap
  (:mod:`~tb_plugin.analysis.gpu_idle` has the exact rules). Per-stream splits are reported too,
  labelled per stream (``per_stream``) and never summed into a GPU or total idle.
- **Launch delay** of a kernel = its start − the end of its launch call, floored at 0. It is split into
  **launch overhead** = the part of ``[launch end, kernel start]`` during which the kernel's GPU (all
  its streams) was idle, and **queueing** = the rest (the GPU was busy with earlier work). The kernel's
  own interval starts at the kernel start, so it never covers any of that interval: the union of all
  the GPU's work gives the same answer as the union without the kernel. A kernel is *shorter than its
  launch* when its duration is below its launch call's duration. Per kernel, p50/p95; over the trace,
  ``union_us``: the time, inside the steps window, covered by at least one kernel's launch-overhead
  (resp. queueing) interval, per GPU, added over GPUs. Kernels' delays overlap, so their sum is not a
  time (it was once reported: hundreds of seconds in a one-second window).
- **CUDA graphs in use**: the trace replays graphs (``cudaGraphLaunch``/``hipGraphLaunch``/``cuGraphLaunch``
  calls) or captures them (``*StreamBeginCapture*``, ``*StreamGetCaptureInfo*`` calls).
- **Exposed time** of each GPU over the steps window, in this order, each part excluding the ones
  before it: computation (non-communication kernels), exposed communication, exposed memcpy/memset,
  idle. The four add up to the window.
- **Queue length** of a stream at time t = kernels whose launch call has started but that have not
  started on the GPU.
- **Host synchronization**: ``cuda_sync`` events and the host calls that blocked on the device
  (:func:`.blocking.blocking_calls`: synchronize calls and blocking copies), the operator that issued
  each (:func:`.runtime_calls.issuing_operator`: the innermost ``cpu_op``, never a ``ProfilerStep#N``),
  and the GPU idle time after each: from its end to the next device work start on any stream (per
  operator the sum over its calls; in total the time-union, since back-to-back calls share one gap).

Advice from these figures is in :mod:`.advice` (one list per file with the Overview's rules).
"""

from __future__ import annotations

from typing import TypedDict, cast

import numpy as np

from ..trace.categories import Kind
from ..trace.links import device_mask, launch_of
from ..trace.model import Trace
from ..trace.uniques import percentile, unique_values
from .blocking import BLOCKING_COPY, SYNCHRONIZE, blocking_calls
from .breakdown import category_masks
from .gpu_idle import SHORT_GAP_US, Busy, StreamIdleRow, gpu_idle, stream_idle_split, window
from .intervals import merge
from .runtime_calls import issuing_operator

GAP_BINS_US = (0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000, 10000, float("inf"))
GRAPH_LAUNCH_PREFIXES = ("cudaGraphLaunch", "hipGraphLaunch", "cuGraphLaunch")
GRAPH_CAPTURE_MARKERS = ("StreamBeginCapture", "StreamGetCaptureInfo")
LAUNCH_BOUND_MIN_GAPS = 50  # … over at least this many gaps ("many short kernels")


class Histogram(TypedDict):
    """Counts of lengths (µs) per bin of :data:`GAP_BINS_US`."""

    edges_us: list[float | None]  # None: +∞
    counts: list[int]


class GpuIdleRow(TypedDict):
    """One GPU's idle time inside the steps window and its parts (µs; analysis/gpu_idle.py)."""

    device: int
    window_us: float
    busy_us: float
    idle_us: float  # = host_wait_us + short_gap_us + other_us
    host_wait_us: float
    short_gap_us: float
    other_us: float
    launch_bound_us: float  # idle in gaps that ended with a kernel shorter than its launch
    launch_bound_gaps: int


class StreamIdle(TypedDict):
    """GPU idle time per GPU and per stream (:func:`stream_idle`; µs)."""

    short_gap_threshold_us: float
    window_us: float
    gpus: list[GpuIdleRow]
    per_stream: list[StreamIdleRow]  # analysis/gpu_idle.py stream_idle_split
    gap_histogram: Histogram


class Spread(TypedDict):
    """Percentiles of per-kernel values and the time-union of their intervals (µs; None: no kernel)."""

    p50: float | None
    p95: float | None
    union_us: float


class GraphUse(TypedDict):
    """Graph replay and stream-capture calls in the trace."""

    replays: int
    captures: int


class LaunchDelays(TypedDict):
    """Launch delay and its split (:func:`launch_delays`; µs; None: no launched kernel)."""

    kernels: int
    p50: float | None
    p95: float | None
    max: float | None
    short_kernel_share: float | None  # kernels shorter than their launch call
    overhead_us: Spread
    queueing_us: Spread
    graphs: GraphUse
    delay_histogram: Histogram
    duration_histogram: Histogram


class ExposedParts(TypedDict):
    """A window split by priority: compute, then communication, then copies, then idle (µs)."""

    compute_us: float
    exposed_comm_us: float
    exposed_memcpy_us: float
    idle_us: float


class ExposedGpuRow(ExposedParts):
    """One GPU's :class:`ExposedParts`."""

    device: int


class ExposedTime(ExposedParts):
    """Per GPU and in total (:func:`exposed_time`): the parts add up to the window per GPU (µs)."""

    window_us: float
    gpus: list[ExposedGpuRow]


class SyncOperatorRow(TypedDict):
    """The synchronizing calls one operator issued (µs)."""

    op: str  # "(no operator)" for calls outside any operator
    calls: int
    sync_us: float
    gpu_idle_after_us: float  # time-union of the GPU idle after its calls
    apis: dict[str, int]  # calls per API, first seen first


class HostSyncs(TypedDict):
    """Synchronizing calls and ``cuda_sync`` events (:func:`host_syncs`; µs)."""

    sync_calls: int
    sync_us: float
    cuda_sync_events: int
    cuda_sync_us: float
    gpu_idle_after_us: float
    by_operator: list[SyncOperatorRow]  # most sync time first


class Insights(TypedDict):
    """The Insights tab's figures of one trace (:func:`insights`)."""

    idle: StreamIdle
    launch: LaunchDelays
    exposed: ExposedTime
    syncs: HostSyncs


def _histogram(values: np.ndarray) -> Histogram:
    """The documented {edges_us, counts} shape over :data:`GAP_BINS_US` (null = +∞)."""
    return {
        "edges_us": [e if np.isfinite(e) else None for e in GAP_BINS_US],
        "counts": np.histogram(values, bins=np.array(GAP_BINS_US))[0].tolist(),
    }


def stream_idle(trace: Trace) -> StreamIdle:
    """Per GPU idle time (≤ the window) split into host wait / short gap / other; per-stream splits
    (``per_stream``, labelled per stream, never summed); a histogram of the GPUs' idle gap lengths."""
    lo, hi = window(trace)
    gpus: list[GpuIdleRow] = []
    lengths = []
    for g in gpu_idle(trace):
        gaps = g.gaps
        row = {
            "device": g.device,
            "window_us": hi - lo,
            "busy_us": float(g.busy.cum[-1]),
            **gaps.split(),
            "launch_bound_us": float(gaps.length[gaps.launch_bound].sum()),
            "launch_bound_gaps": int(gaps.launch_bound.sum()),
        }
        gpus.append(cast(GpuIdleRow, row))
        lengths.append(gaps.length)
    return {
        "short_gap_threshold_us": SHORT_GAP_US,
        "window_us": hi - lo,
        "gpus": gpus,
        "per_stream": stream_idle_split(trace),
        "gap_histogram": _histogram(np.concatenate(lengths) if lengths else np.zeros(0)),
    }


def graph_use(trace: Trace) -> GraphUse:
    """Counts of CUDA/HIP graph replay calls and stream-capture calls in the trace (counted once per
    trace: the launch figures and the advice both read them; each caller gets its own dict)."""

    def build() -> GraphUse:
        ev = trace.events
        replay = trace.name_mask(lambda s: s.startswith(GRAPH_LAUNCH_PREFIXES))
        capture = trace.name_mask(lambda s: any(m in s for m in GRAPH_CAPTURE_MARKERS))
        host = ~device_mask(trace) & (ev.kind != Kind.GPU_USER_ANNOTATION)
        return {"replays": int((replay & host).sum()), "captures": int((capture & host).sum())}

    counted: GraphUse = trace.memo("graph_use", build)
    return {"replays": counted["replays"], "captures": counted["captures"]}


def _spread(values: np.ndarray, union_us: float = 0.0) -> Spread:
    if len(values) == 0:
        return {"p50": None, "p95": None, "union_us": 0.0}
    return {"p50": float(percentile(values, 50)), "p95": float(percentile(values, 95)), "union_us": union_us}


def launch_delays(trace: Trace) -> LaunchDelays:
    """Launch delay (p50/p95/max) split into launch overhead and queueing (p50/p95/total), kernel
    duration histogram, the share of kernels shorter than their launch, and CUDA graph use."""
    ev = trace.events
    launcher = launch_of(trace)
    k = np.flatnonzero((ev.kind == Kind.KERNEL) & (launcher >= 0))
    graphs = graph_use(trace)
    if len(k) == 0:
        empty = np.zeros(0)
        return {
            "kernels": 0,
            "p50": None,
            "p95": None,
            "max": None,
            "short_kernel_share": None,
            "overhead_us": _spread(empty),
            "queueing_us": _spread(empty),
            "graphs": graphs,
            "delay_histogram": _histogram(empty),
            "duration_histogram": _histogram(empty),
        }
    src = launcher[k]
    launch_end = ev.ts[src] + ev.dur[src]
    start = ev.ts[k]
    delay = np.maximum(start - launch_end, 0.0)
    overhead = np.zeros(len(k))
    dev = device_mask(trace)
    lo, hi = window(trace)
    union_overhead = union_queueing = 0.0
    # each GPU's device work over the whole trace, merged: the idle-time memo's (the same rows, in order)
    merged = {g.device: g.busy_all for g in gpu_idle(trace)}
    for d in unique_values(ev.device[k]):
        on = ev.device[k] == d
        busy = merged.get(int(d))
        if busy is None:  # (no device index: not one of the GPUs')
            work = dev & (ev.device == d)
            busy = Busy.of(ev.ts[work], ev.ts[work] + ev.dur[work])
        overhead[on] = busy.idle_in(launch_end[on], start[on])
        waits = Busy.of(np.clip(launch_end[on], lo, hi), np.clip(np.maximum(start[on], launch_end[on]), lo, hi))
        idle = float(busy.idle_in(waits.start, waits.end).sum())
        union_overhead += idle
        union_queueing += float(waits.cum[-1]) - idle
    overhead = np.clip(overhead, 0.0, delay)
    queueing = delay - overhead
    return {
        "kernels": int(len(k)),
        "p50": float(percentile(delay, 50)),
        "p95": float(percentile(delay, 95)),
        "max": float(delay.max()),
        "short_kernel_share": float((ev.dur[k] < ev.dur[src]).mean()),
        "overhead_us": _spread(overhead, union_overhead),
        "queueing_us": _spread(queueing, max(union_queueing, 0.0)),
        "graphs": graphs,
        "delay_histogram": _histogram(delay),
        "duration_histogram": _histogram(ev.dur[k]),
    }


def exposed_time(trace: Trace) -> ExposedTime:
    """Per GPU and in total: computation, exposed communication, exposed memcpy, idle (sum = window)."""
    ev = trace.events
    lo, hi = window(trace)
    masks = category_masks(trace)
    compute = masks["kernel"]
    comm = masks["communication"] & device_mask(trace)
    copy = masks["memcpy"] | masks["memset"]
    out: list[ExposedGpuRow] = []
    for d in unique_values(ev.device[device_mask(trace) & (ev.device >= 0)]):
        on = ev.device == d
        parts = _priority_cover([compute & on, comm & on, copy & on], ev, lo, hi)
        span = hi - lo
        out.append(
            {
                "device": int(d),
                "compute_us": parts[0],
                "exposed_comm_us": parts[1],
                "exposed_memcpy_us": parts[2],
                "idle_us": max(span - sum(parts), 0.0),
            }
        )
    total = (
        {k: float(sum(x[k] for x in out)) for k in ("compute_us", "exposed_comm_us", "exposed_memcpy_us", "idle_us")}
        if out
        else {"compute_us": 0.0, "exposed_comm_us": 0.0, "exposed_memcpy_us": 0.0, "idle_us": 0.0}
    )
    return cast(ExposedTime, {"window_us": hi - lo, "gpus": out, **total})


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
            out.append(
                {
                    "device": int(s >> 32),
                    "stream": int(s & 0xFFFFFFFF),
                    "times": times[order],
                    "lengths": np.maximum(np.cumsum(delta[order]), 0),
                }
            )
        return out

    return trace.memo("queue_length", build)


def idle_after_union(
    group: np.ndarray, after: np.ndarray, end: np.ndarray, dev_starts: np.ndarray, n: int
) -> np.ndarray:
    """Per group (``n`` of them), the time-union µs of its calls' ``[end, next device start]`` idle
    intervals. A call's interval ends at the first device start at or after its end (index ``after``);
    calls that share that start share the interval from the earliest of their ends, and intervals of
    different next starts never overlap (a later start means the call ended after the earlier one):
    so the union is, per (group, next start), the start minus the group's earliest end before it."""
    valid = after < len(dev_starts)
    key = group[valid].astype(np.int64) * (len(dev_starts) + 1) + after[valid]
    keys, inverse = np.unique(key, return_inverse=True)
    first_end = np.full(len(keys), np.inf)
    np.minimum.at(first_end, inverse.reshape(-1), end[valid])
    spans = dev_starts[keys % (len(dev_starts) + 1)] - first_end
    return np.bincount(keys // (len(dev_starts) + 1), weights=spans, minlength=n)


def host_syncs(trace: Trace, top: int = 20) -> HostSyncs:
    """Synchronizing calls and ``cuda_sync`` events, grouped by the operator that issued them."""
    ev = trace.events
    bl = blocking_calls(trace)
    cuda_sync = np.zeros(len(ev), dtype=bool)
    cat_sync = {i for i, s in enumerate(trace.strings) if s == "cuda_sync"}
    if cat_sync:
        cuda_sync = np.isin(ev.cat, list(cat_sync))
    rows = np.sort(bl.rows[np.isin(bl.kind, (SYNCHRONIZE, BLOCKING_COPY))])
    dev = np.flatnonzero(device_mask(trace))
    dev_starts = np.sort(ev.ts[dev])
    end = ev.ts[rows] + ev.dur[rows]
    after = np.searchsorted(dev_starts, end)
    # GPU idle after each call: until the next device work starts (0 when none follows)
    idle = (
        np.where(after < len(dev_starts), dev_starts[np.minimum(after, len(dev_starts) - 1)] - end, 0.0)
        if len(dev_starts)
        else np.zeros(len(rows))
    )
    op_of = issuing_operator(trace, rows)
    ops, first, group = np.unique(op_of, return_index=True, return_inverse=True)
    group = group.reshape(-1)
    # sums in row order, as a running total adds them (bincount adds each bin's weights in input order)
    calls = np.bincount(group, minlength=len(ops)).tolist()
    sync_us = np.bincount(group, weights=ev.dur[rows], minlength=len(ops)).tolist()
    idle_us = idle_after_union(group, after, end, dev_starts, len(ops)).tolist()
    pairs, pair_first, pair_calls = np.unique(
        group.astype(np.int64) << 32 | ev.name[rows].astype(np.int64), return_index=True, return_counts=True
    )
    apis: list[dict] = [{} for _ in ops]
    for k in np.argsort(pair_first, kind="stable").tolist():  # per (operator, API), first seen first
        apis[int(pairs[k] >> 32)][trace.strings[int(pairs[k] & 0xFFFFFFFF)]] = int(pair_calls[k])
    by_op: list[SyncOperatorRow] = [
        {
            "op": trace.strings[int(ops[g])] if ops[g] >= 0 else "(no operator)",
            "calls": calls[g],
            "sync_us": sync_us[g],
            "gpu_idle_after_us": idle_us[g],
            "apis": apis[g],
        }
        for g in np.argsort(first, kind="stable").tolist()
    ]  # operators in order of first appearance
    ranked = sorted(by_op, key=lambda x: -x["sync_us"])
    return {
        "sync_calls": int(len(rows)),
        "sync_us": float(ev.dur[rows].sum()),
        "cuda_sync_events": int(cuda_sync.sum()),
        "cuda_sync_us": float(ev.dur[cuda_sync].sum()),
        # the time-union of the calls' idle-after intervals (back-to-back syncs share one gap); each
        # operator's is the union of its own calls' (so the rows may add up to more than the total)
        "gpu_idle_after_us": float(Busy.of(end, end + idle).cum[-1]) if len(idle) else 0.0,
        "by_operator": ranked[:top],
    }


def insights(trace: Trace) -> Insights:
    """The Insights tab's figures (computed once per trace)."""

    def build() -> Insights:
        return {
            "idle": stream_idle(trace),
            "launch": launch_delays(trace),
            "exposed": exposed_time(trace),
            "syncs": host_syncs(trace),
        }

    found: Insights = trace.memo("insights", build)
    return found
