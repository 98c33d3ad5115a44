"""Advice from the Insights and the runtime-calls table: rules that read idle gaps, launches and host
calls, and the "About this trace" warnings that say when the trace cannot explain the time. Times are µs.

Each rule returns a recommendation of the shape documented in :mod:`.recommendations` (``rule``,
``addressed_us``, ``threshold_us``, ``basis``, ``text`` and its values) only when the time it addresses
reaches its threshold (:data:`.recommendations.THRESHOLDS`, documented in docs/METRICS.md):

- ``allocator``: the caching allocator's device calls (``cudaFree``/``hipFree``/``cudaMalloc``…,
  :data:`ALLOCATOR_CALLS`).
- ``blocking_copy``: copies that held the host until the device finished (:mod:`.blocking`).
- ``synchronize``: stream/device/event synchronize calls.
  Each addresses the GPU idle time its calls explain (:func:`device_idle_cost`: while they run and
  until the next device work starts after each; a sync while the GPU is busy costs nothing) and names
  its dominant API, the operator that issued most of its time and the Python frame. Blocking calls
  outside the trace are left to the "About this trace" warning.
- ``cuda_graphs``: launch-bound idle (:mod:`.gpu_idle`) over the steps window, less the same blocked and
  DataLoader time as ``cpu_overhead``, when the trace neither replays nor captures CUDA graphs;
  torch.compile is suggested only when no compiled region runs.
- ``cpu_overhead``: host wait over the steps window, less the part of it spent in or right after the
  blocking calls (:func:`blocked_spans` of the call rules' calls and of the calls outside the trace,
  :func:`.runtime_calls.outside_trace`: the host was blocked on the device, not slow) and in DataLoader
  spans (the ``dataloader`` rule's time), when it is over half the GPU's idle time.

``about`` warnings: *work outside the trace* (blocking calls during which the waited-on device shows
under :data:`.runtime_calls.OUTSIDE_BUSY_SHARE` busy, in total at least the ``cpu_overhead`` threshold)
and *graph capture* (:func:`graph_capture_share` of the steps window ≥ :data:`CAPTURE_TRACE_SHARE`).
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np

from ..trace.categories import LAUNCH_KINDS
from ..trace.links import device_mask
from ..trace.model import Trace
from ..trace.uniques import setdiff, unique_values
from .blocking import BLOCKING_COPY, SYNCHRONIZE, blocking_calls
from .breakdown import category_masks
from .gpu_idle import Busy, device_busy, gpu_idle, window
from .insights import LAUNCH_BOUND_MIN_GAPS, Insights, graph_use
from .numfmt import duration, fixed
from .recommendations import Recommendation, recommendation, threshold_us
from .runtime_calls import issuing_frame, issuing_operator, outside_rows, outside_trace

ALLOCATOR_CALLS = (
    "cudaFree",
    "hipFree",
    "cudaMalloc",
    "hipMalloc",
    "cuMemFree_v2",
    "cuMemAlloc_v2",
    "cuMemFree",
    "cuMemAlloc",
    "hipFreeAsync",
    "hipMallocAsync",
)
COMPILED_MARKERS = ("CompiledFunction", "Torch-Compiled Region")
CAPTURE_TRACE_SHARE = 0.5
#: What an issuing operator usually is in user code (blocking copies and synchronizations).
OPERATOR_CAUSES = {
    "aten::item": ".item()",
    "aten::_local_scalar_dense": ".item(), float(), int() or bool() of a tensor",
    "aten::is_nonzero": "a tensor used as a Python bool (if tensor: …)",
    "aten::nonzero": "nonzero (also torch.where(mask) and boolean-mask indexing)",
    "aten::masked_select": "masked_select / boolean-mask indexing",
    "aten::unique": "unique",
    "aten::_unique2": "unique",
    "aten::repeat_interleave": "repeat_interleave without output_size",
    "aten::to": ".cpu() / .to() / .tolist()",
    "aten::_to_copy": ".cpu() / .to() / .tolist()",
    "aten::copy_": ".cpu() / .to() / .tolist() / copy_()",
}


def plural(n: int, word: str) -> str:
    """``"1 call"``, ``"1,360 calls"``."""
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def compiled_regions(trace: Trace) -> int:
    """Host events of compiled regions (``CompiledFunction``, ``Torch-Compiled Region…``)."""
    return int(trace.name_mask(lambda s: s.startswith(COMPILED_MARKERS)).sum())


def graph_capture_share(trace: Trace) -> float:
    """The share of the steps window that lies inside CUDA/HIP stream captures (each ``…BeginCapture``
    call to the first ``…EndCapture`` call that ends after it; 0 without captures)."""
    ev = trace.events
    lo, hi = window(trace)
    begin = np.flatnonzero(trace.name_mask(lambda s: "StreamBeginCapture" in s))
    end = np.flatnonzero(trace.name_mask(lambda s: "StreamEndCapture" in s))
    if len(begin) == 0 or len(end) == 0 or hi <= lo:
        return 0.0
    ends = np.sort(ev.ts[end] + ev.dur[end])
    k = np.searchsorted(ends, ev.ts[begin], side="left")
    ok = k < len(ends)
    span = Busy.of(np.clip(ev.ts[begin][ok], lo, hi), np.clip(ends[np.minimum(k, len(ends) - 1)][ok], lo, hi))
    return float(span.cum[-1]) / (hi - lo)


def named_calls(trace: Trace) -> dict[str, np.ndarray]:
    """Rows of the calls the call rules address, per rule (allocator, blocking_copy, synchronize); the
    blocking calls outside the trace are left to the "About this trace" warning. Found once per trace
    (three readers; each time two masks over all events); the arrays are read, never written."""

    def build() -> dict[str, np.ndarray]:
        ev = trace.events
        bl = blocking_calls(trace)
        allocator = np.flatnonzero(trace.name_mask(lambda s: s in ALLOCATOR_CALLS) & np.isin(ev.kind, LAUNCH_KINDS))
        blocking = setdiff(bl.rows, np.concatenate([allocator, outside_rows(trace)[0]]))
        kind = np.full(len(ev), -1, dtype=np.int8)
        kind[bl.rows] = bl.kind
        return {
            "allocator": allocator,
            "blocking_copy": blocking[kind[blocking] == BLOCKING_COPY],
            "synchronize": blocking[kind[blocking] == SYNCHRONIZE],
        }

    found: dict[str, np.ndarray] = trace.memo("named_calls", build)
    return found


def blocked_spans(trace: Trace, rows: np.ndarray) -> Busy:
    """The merged spans, inside the steps window, from each call of ``rows`` to the next device work
    start after its end (its own end when none follows; µs)."""
    ev = trace.events
    lo, hi = window(trace)
    dev = device_mask(trace)
    starts = np.append(np.sort(ev.ts[dev]), np.inf)  # no work after a call: its own end
    end = ev.ts[rows] + ev.dur[rows]
    after = starts[np.searchsorted(starts, end, side="left")]
    after = np.where(np.isfinite(after), np.maximum(after, end), end)
    return Busy.of(np.clip(ev.ts[rows], lo, hi), np.clip(after, lo, hi))


def device_idle_cost(trace: Trace, rows: np.ndarray) -> float:
    """The device idle time the calls ``rows`` explain, inside the steps window (µs): while they run and
    from each one's end until the next device work starts (a call that blocks drains the device's
    queue; nothing new runs until the host launches it)."""
    if len(rows) == 0:
        return 0.0
    busy = device_busy(trace)
    spans = blocked_spans(trace, rows)
    return float(busy.idle_in(spans.start, spans.end).sum())


def named_call_idle_us(trace: Trace) -> float:
    """Time inside the steps window that the call rules' calls and the calls outside the trace spend
    while no device works (the part of the Runtime category they explain; µs)."""
    ev = trace.events
    lo, hi = window(trace)
    rows = unique_values(np.concatenate(list(named_calls(trace).values()) + [outside_rows(trace)[0]]))
    if len(rows) == 0:
        return 0.0
    busy = device_busy(trace)
    calls = Busy.of(np.clip(ev.ts[rows], lo, hi), np.clip(ev.ts[rows] + ev.dur[rows], lo, hi))
    return float(busy.idle_in(calls.start, calls.end).sum())


def _issuer_phrase(trace: Trace, rows: np.ndarray) -> tuple[str, str | None, str | None]:
    """("from <operator> (<cause>) at <frame>", operator, frame) for the issuer of most of ``rows``' time."""
    ev = trace.events
    op = issuing_operator(trace, rows)
    frame = issuing_frame(trace, rows)
    ops, inv = np.unique(op, return_inverse=True)
    top_op = int(ops[int(np.argmax(np.bincount(inv.reshape(-1), weights=ev.dur[rows])))])
    on = op == top_op
    fr = frame[on & (frame >= 0)]
    top_frame = None
    if len(fr):
        names, inv = np.unique(ev.name[fr], return_inverse=True)
        top_frame = trace.strings[int(names[int(np.argmax(np.bincount(inv.reshape(-1), weights=ev.dur[fr])))])]
    op_name = trace.strings[top_op] if top_op >= 0 else None
    where = f"from {op_name}" if op_name else "outside any operator"
    if op_name in OPERATOR_CAUSES:
        where += f" ({OPERATOR_CAUSES[op_name]})"
    if top_frame:
        where += f" at {top_frame}"
    return where, op_name, top_frame


def call_rules(trace: Trace) -> list[Recommendation]:
    """``allocator``, ``blocking_copy`` and ``synchronize`` (module docstring), most time first."""
    ev = trace.events
    lo, hi = window(trace)
    span = hi - lo
    out = []
    for rule, rows in named_calls(trace).items():
        inside = np.clip(ev.ts[rows] + ev.dur[rows], lo, hi) - np.clip(ev.ts[rows], lo, hi)
        rows, inside = rows[inside > 0], inside[inside > 0]
        addressed, limit = device_idle_cost(trace, rows), threshold_us(rule, span)
        if len(rows) == 0 or span <= 0 or addressed < limit:
            continue
        names, inv = np.unique(ev.name[rows], return_inverse=True)
        per = np.bincount(inv.reshape(-1), weights=inside)
        top = int(np.argmax(per))
        api, api_rows = trace.strings[int(names[top])], rows[inv.reshape(-1) == top]
        where, op, frame = _issuer_phrase(trace, api_rows)
        share = (
            f"the GPU idles {duration(addressed)} ({fixed(100 * addressed / span, 1)}% of the steps window) "
            "while they block and until the work launched after them starts"
        )
        head = f"{api} takes {duration(float(per[top]))} in {plural(len(api_rows), 'call')}"
        if len(names) > 1:
            head += f" ({duration(float(inside.sum()))} with the other {rule.replace('_', ' ')} calls)"
        if rule == "allocator":
            grows = "Malloc" in api or "Alloc" in api
            why = (
                "The caching allocator is growing its pool from the device: keep tensor shapes steady so "
                "cached blocks are reused, and allocate the largest buffers early."
                if grows
                else "The caching allocator is returning memory to the device: torch.cuda.empty_cache(), or "
                "freeing cached blocks to retry an allocation when memory is fragmented. Do not call "
                "empty_cache() inside the step, keep tensor shapes steady"
            )
            if not grows:
                why += (
                    ", and try PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PYTORCH_HIP_ALLOC_CONF on "
                    "ROCm) to reduce fragmentation."
                )
            text = f"{head}, {where}; {share}. {why}"
        elif rule == "blocking_copy":
            verb = "holds" if len(api_rows) == 1 and len(names) == 1 else "hold"
            text = (
                f"{head} that {verb} the host until the device finishes, {where}; {share}. Keep "
                "the values on the device (avoid .item(), .cpu(), .tolist() and nonzero inside the step), "
                "or copy into pinned memory with non_blocking=True and read them later."
            )
        else:
            text = (
                f"{head}, {where}; {share}. Remove the synchronization from the step or move it "
                "to its end (timing and logging helpers are the usual callers)."
            )
        out.append(
            recommendation(
                rule,
                addressed,
                limit,
                "steps_window",
                text,
                api=api,
                calls=int(len(api_rows)),
                api_us=float(per[top]),
                operator=op,
                frame=frame,
            )
        )
    return sorted(out, key=lambda r: -r["addressed_us"])


def idle_rules(trace: Trace, insights_doc: Insights) -> list[Recommendation]:
    """``cuda_graphs`` and ``cpu_overhead`` per GPU (module docstring)."""
    out = []
    graphs = graph_use(trace)
    uses_graphs = graphs["replays"] + graphs["captures"] > 0
    compiled = compiled_regions(trace) > 0
    named = named_calls(trace)
    spans = blocked_spans(trace, unique_values(np.concatenate(list(named.values()) + [outside_rows(trace)[0]])))
    ev = trace.events
    loading = category_masks(trace)["dataloader"]  # the host was loading data: the DataLoader rule's time
    blocked = Busy.of(
        np.concatenate([spans.start, ev.ts[loading]]), np.concatenate([spans.end, ev.ts[loading] + ev.dur[loading]])
    )
    host_gaps = {g.device: g.gaps for g in gpu_idle(trace)}

    def unblocked(device: int, which: str) -> tuple[float, int]:
        """The GPU's host-wait (or launch-bound) idle outside ``blocked`` (µs) and the gaps it lies in."""
        gaps = host_gaps[device]
        keep = gaps.host if which == "host" else gaps.launch_bound
        g0, g1 = gaps.start[keep], gaps.end[keep]
        left = (g1 - g0) - (blocked.before(g1) - blocked.before(g0))
        return float(left.sum()), int((left > 0).sum())

    for gpu in insights_doc["idle"]["gpus"]:
        win = gpu["window_us"]
        bound, gaps = unblocked(gpu["device"], "launch_bound")  # time blocked or loading data is not launch overhead
        limit = threshold_us("cuda_graphs", win)
        if not uses_graphs and win > 0 and gaps >= LAUNCH_BOUND_MIN_GAPS and bound >= limit:
            how = (
                "Capture the step with CUDA graphs (torch.cuda.graphs)"
                if compiled
                else ("Capture the step with CUDA graphs or use torch.compile(mode='reduce-overhead')")
            )
            out.append(
                recommendation(
                    "cuda_graphs",
                    bound,
                    limit,
                    "steps_window",
                    f"GPU {gpu['device']} idles {duration(bound)} ({fixed(100 * bound / win, 0)}% of the steps window) in "
                    f"{plural(gaps, 'gap')} that each ended with a kernel shorter than the CPU call "
                    f"that launched it: the GPU waits for kernel launches. {how} to cut launch overhead.",
                    gpu=gpu["device"],
                    gaps=gaps,
                )
            )
    for gpu in insights_doc["idle"]["gpus"]:
        win, total = gpu["window_us"], gpu["idle_us"]
        # host wait that follows a blocking call (or lies inside one) belongs to that call's rule
        wait = max(unblocked(gpu["device"], "host")[0], 0.0)
        limit = threshold_us("cpu_overhead", win)
        if win > 0 and total > 0 and wait > 0.5 * total and wait >= limit:
            out.append(
                recommendation(
                    "cpu_overhead",
                    wait,
                    limit,
                    "steps_window",
                    f"GPU {gpu['device']} waits for the host to launch work {duration(wait)}, {fixed(100 * wait / win, 0)}% "
                    f"of the {duration(win)} steps window ({fixed(100 * wait / total, 0)}% of its idle time): reduce "
                    "Python/CPU overhead per step.",
                    gpu=gpu["device"],
                )
            )
    return out


class AboutNoteBase(TypedDict):
    """An "About this trace" warning (:func:`about`): its kind and sentence."""

    kind: str  # "work_outside_trace" or "graph_capture"
    text: str


class AboutNote(AboutNoteBase, total=False):
    """An "About this trace" warning with its kind's own values."""

    calls: int  # work_outside_trace: the blocking calls
    call_us: float  # their time
    device_busy_us: float  # the device's busy time within them
    unexplained_us: float
    capture_pct: float  # graph_capture: the steps window's share in CUDA-graph capture (%)


def about(trace: Trace) -> list[AboutNote]:
    """The "About this trace" warnings (module docstring): ``{"kind", "text", <values>}``."""
    out: list[AboutNote] = []
    lo, hi = window(trace)
    found = outside_trace(trace)
    if found["calls"] and found["unexplained_us"] >= threshold_us("cpu_overhead", hi - lo):
        apis = ", ".join(found["apis"])
        out.append(
            {
                "kind": "work_outside_trace",
                "calls": found["calls"],
                "call_us": found["call_us"],
                "device_busy_us": found["device_busy_us"],
                "unexplained_us": found["unexplained_us"],
                "text": f"The host waits {duration(found['call_us'])} in {plural(found['calls'], 'blocking call')} "
                f"({apis}) while this trace shows the device busy only {duration(found['device_busy_us'])} "
                "of that time. The device was running work this trace does not hold (a CUDA-graph "
                "replay, another process, work queued before the profiler started) or the copy was "
                "stalled on the host side. No CPU-overhead advice is given for that time.",
            }
        )
    share = graph_capture_share(trace)
    if share >= CAPTURE_TRACE_SHARE:
        out.append(
            {
                "kind": "graph_capture",
                "capture_pct": 100 * share,
                "text": f"This trace captures CUDA graphs during {fixed(100 * share, 0)}% of its steps window: "
                "its steps are graph capture and warm-up, not training or inference steps, so no "
                "step-time advice is given.",
            }
        )
    return out
