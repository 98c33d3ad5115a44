"""Who holds the memory at an allocator snapshot's peak: the bytes alive at the peak (bytes) grouped by
the operator, step and module that allocated them (with a trace of the same process) or by their
Python frames (always).

- **Alive at the peak**: :func:`.snapshot.alive_at_peak` (history allocations alive at the peak,
  blocks allocated before the history); their bytes sum to the snapshot's peak active bytes.
- **Same clock**: a snapshot entry's ``time_us`` is wall-clock µs since the Unix epoch; a trace time
  ``ts`` is ``ts + baseTimeNanoseconds / 1000`` on that clock (:func:`.clock.wall_offset_us`).
- **Match**: a trace matches a snapshot device when it writes ``baseTimeNanoseconds``, the snapshot
  has times, the rank of both is the same where both are known (the trace's ``distributedInfo.rank``,
  the snapshot's ``rank<N>`` in its path), the device is one the trace's kernels, copies and sets ran
  on (:func:`_runs_on`; without device work: one its ``deviceProperties`` lists, when it lists any), and
  the history's time span ``[first, last entry]`` overlaps the trace's ``[first event
  start, last event end]``; the overlap (µs) ranks several matches.
- **Operator** of an allocation: the innermost operator (``cpu_op`` or ``user_annotation``) open at
  its time (:func:`.memory.innermost_ops_at`). A snapshot entry does not record its thread: of the
  threads with an operator open then, the one whose innermost operator started last is taken (the
  operator entered most recently: the backward thread's op, not the forward thread's enclosing one).
  A ``ProfilerStep#`` as the innermost is ``(no operator)``.
- **Step**: the host step (:func:`.steps.host_steps`) whose ``[start, end)`` holds the time.
- **Module**: the innermost ``nn.Module`` (``with_modules``; Lightning's ``[pl][module]`` ranges)
  enclosing the allocation's operator; ``(no module)`` without one (backward operators have none).
- **Frame**: :func:`.snapshot.frame_summary` of the allocation's stack (``file:line:function``); an
  allocation without frames is ``(before history)`` when it predates the history, else ``(no frames)``.
- **Counter track** (the Trace view): the snapshot's active bytes (:func:`.snapshot.active_bytes`) on the
  trace's clock (entry time − ``baseTimeNanoseconds / 1000``), per bin its held maximum
  (:func:`.series.held_max`), 0 before the history's first entry.
- Special rows: ``(before history)`` (blocks allocated before the history: no time), ``(outside the
  trace)`` (a time outside the trace's span, or no time), ``(no frames)``.
Rows are ``{"name", "bytes", "allocations", "stack"}`` (``stack``: that of the row's largest
allocation, −1 for none), largest bytes first, then by name.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..artifacts.snapshot import Snapshot
from ..trace.categories import PROFILER_STEP_PREFIX
from ..trace.model import Trace
from .clock import wall_offset_us
from .gpu import gpu_devices
from .memory import innermost_ops_at
from .modules import MODULE_PREFIX, PL_MODULE_PREFIX, module_events
from .op_tree import op_tree
from .operators import op_times
from .series import held_max
from .snapshot import active_bytes, alive_at_peak, frame_summary, time_axis
from .steps import host_steps

BEFORE, OUTSIDE, NO_OP, NO_STEP, NO_MODULE, NO_FRAMES = (
    "(before history)",
    "(outside the trace)",
    "(no operator)",
    "(no step)",
    "(no module)",
    "(no frames)",
)


def trace_wall_span(trace: Trace) -> tuple[float, float] | None:
    """``[first event start, last event end]`` of ``trace`` in wall-clock µs; None without a base time."""
    offset = wall_offset_us(trace)
    ev = trace.events
    if offset is None or len(ev) == 0:
        return None
    return float(ev.ts.min()) + offset, float((ev.ts + ev.dur).max()) + offset


def match_facts(trace: Trace) -> dict:
    """What matching needs of a trace (small, kept by the registry per file): ``span`` (wall-clock µs,
    :func:`trace_wall_span`), ``rank`` (``distributedInfo.rank`` or None), ``ran`` (GPUs its kernels,
    copies and sets ran on) and ``listed`` (``deviceProperties`` ids)."""

    def build():
        rank = (trace.distributed or {}).get("rank")
        return {
            "span": trace_wall_span(trace),
            "rank": rank if isinstance(rank, int) and not isinstance(rank, bool) else None,
            "ran": gpu_devices(trace),
            "listed": [d.id for d in trace.devices],
        }

    return trace.memo("snapshot_match_facts", build)


def match_overlap(snapshot: Snapshot, device: int, trace: Trace | dict, snapshot_rank: int | None) -> float | None:
    """µs during which ``trace`` (or its :func:`match_facts`) and ``device``'s history overlap, None
    when they do not match (see the module's **Match**)."""
    facts = trace if isinstance(trace, dict) else match_facts(trace)
    dev = snapshot.devices.get(device)
    span = facts["span"]
    if dev is None or span is None or np.isnan(dev.time).all():
        return None
    if snapshot_rank is not None and facts["rank"] is not None and facts["rank"] != snapshot_rank:
        return None
    if not _runs_on(facts, device):
        return None
    lo, hi = max(span[0], float(np.nanmin(dev.time))), min(span[1], float(np.nanmax(dev.time)))
    return hi - lo if hi >= lo else None


def _runs_on(facts: dict, device: int) -> bool:
    """Whether a trace can be the process of snapshot device ``device``: the GPUs its kernels, copies
    and sets ran on hold it (a single GPU also matches when ``deviceProperties`` lists a single one: ROCm
    traces number it by its physical index); without device work, ``deviceProperties`` holds it; a
    trace with neither can."""
    ran, listed = facts["ran"], facts["listed"]
    if ran:
        return device in ran or (len(ran) == 1 and len(listed) == 1)
    return not listed or device in listed


def _group(names: np.ndarray, nbytes: np.ndarray, stacks: np.ndarray) -> list[dict]:
    """Rows per distinct name: Σ bytes, count, the stack of the largest member."""
    if len(names) == 0:
        return []
    uniq, inv = np.unique(names.astype(str), return_inverse=True)
    inv = inv.reshape(-1)
    total = np.bincount(inv, weights=nbytes.astype(np.float64), minlength=len(uniq))
    count = np.bincount(inv, minlength=len(uniq))
    order = np.lexsort((-nbytes, inv))  # per group, its largest member first
    first = order[np.r_[True, inv[order][1:] != inv[order][:-1]]]
    rows: list[dict[str, Any]] = [
        {
            "name": str(uniq[g]),
            "bytes": int(round(total[g])),
            "allocations": int(count[g]),
            "stack": int(stacks[first[k]]),
        }
        for k, g in enumerate(inv[first].tolist())
    ]
    rows.sort(key=lambda r: (-r["bytes"], r["name"]))
    return rows


def _alive(snapshot: Snapshot, device: int) -> tuple[dict, np.ndarray, np.ndarray, np.ndarray]:
    """``(alive_at_peak, bytes, stacks, wall times)`` per alive item (NaN time: before the history)."""
    dev = snapshot.devices[device]
    alive = alive_at_peak(snapshot, device)
    rows, early, blocks = alive["allocs"], alive["early"], alive["blocks"]
    nbytes = np.concatenate([dev.size[rows], dev.size[early], np.array([b["bytes"] for b in blocks], dtype=np.int64)])
    stacks = np.concatenate([dev.stack[rows], dev.stack[early], np.array([b["stack"] for b in blocks], dtype=np.int32)])
    times = np.concatenate([dev.time[rows], np.full(len(early) + len(blocks), np.nan)])
    return alive, nbytes.astype(np.int64), stacks.astype(np.int64), times.astype(np.float64)


def by_frame(snapshot: Snapshot, stacks: np.ndarray, nbytes: np.ndarray, before: np.ndarray) -> list[dict]:
    """Alive bytes grouped by :func:`.snapshot.frame_summary` (one summary per distinct stack); an item
    without frames is ``(before history)`` when it predates the history, else ``(no frames)``."""
    uniq, inv = np.unique(stacks, return_inverse=True)
    labels = np.array(
        [frame_summary(snapshot, int(s)) or NO_FRAMES for s in uniq.tolist()] or [NO_FRAMES], dtype=object
    )
    names = labels[inv.reshape(-1)] if len(stacks) else labels[:0]
    names = np.where(before & (names == NO_FRAMES), BEFORE, names)
    return _group(names, nbytes, stacks)


def _innermost_any_thread(trace: Trace, t: np.ndarray) -> np.ndarray:
    """Per time (µs, trace clock): the innermost operator open then on the thread whose innermost
    operator started last; −1 when no thread has one."""
    ev = trace.events
    ops = np.flatnonzero(op_times(trace).is_op)
    best = np.full(len(t), -1, dtype=np.int64)
    if len(ops) == 0 or len(t) == 0:
        return best
    best_start = np.full(len(t), -np.inf)
    threads = np.unique(np.stack([ev.pid[ops].astype(np.int64), ev.tid[ops].astype(np.int64)], axis=1), axis=0)
    for pid, tid in threads.tolist():  # one pass per thread (threads, not allocations)
        cand = innermost_ops_at(trace, np.full(len(t), pid), np.full(len(t), tid), t)
        start = np.where(cand >= 0, ev.ts[np.maximum(cand, 0)], -np.inf)
        better = start > best_start
        best[better], best_start[better] = cand[better], start[better]
    return best


def _module_of(trace: Trace, op: np.ndarray) -> np.ndarray:
    """Per operator row (−1: none): the innermost module event enclosing it, −1 for none."""
    is_module, lightning = module_events(trace)
    out = np.full(len(op), -1, dtype=np.int64)
    if not is_module.any():
        return out
    tree = op_tree(trace)
    parent = tree.op_parent if lightning else tree.py_parent
    cur = np.where(op >= 0, parent[np.maximum(op, 0)], -1)
    while True:  # one pass per nesting level
        open_ = cur >= 0
        found = np.zeros(len(cur), dtype=bool)
        found[open_] = is_module[cur[open_]]
        out[found] = cur[found]
        cur[found] = -1
        climb = cur >= 0
        if not climb.any():
            return out
        cur[climb] = parent[cur[climb]]


def _names(trace: Trace, rows: np.ndarray, none: str, strip: tuple[str, ...] = (), blank: str = "") -> np.ndarray:
    """Event names of ``rows`` (``none`` for −1; a name starting with ``blank`` too), a leading
    ``strip`` prefix removed. One label per distinct name, not per row."""
    ids = np.where(rows >= 0, trace.events.name[np.maximum(rows, 0)], -1)
    uniq, inv = np.unique(ids, return_inverse=True)
    labels = []
    for i in uniq.tolist():
        text = trace.strings[i] if i >= 0 else none
        if i >= 0 and blank and text.startswith(blank):
            text = none
        for prefix in strip:
            text = text[len(prefix) :] if text.startswith(prefix) else text
        labels.append(text)
    return np.array(labels or [none], dtype=object)[inv.reshape(-1)] if len(rows) else np.zeros(0, dtype=object)


def attribute(snapshot: Snapshot, device: int, trace: Trace | None) -> dict:
    """Bytes alive at ``device``'s peak by frame and, with ``trace`` (a match: :func:`match_overlap`),
    by operator, step and module. ``alive_bytes`` = Σ of every table = ``peak_active_bytes``."""
    alive, nbytes, stacks, wall = _alive(snapshot, device)
    out = {
        "device": f"GPU{device}",
        "peak_active_bytes": alive["peak_bytes"],
        "alive_bytes": int(nbytes.sum()),
        "allocations": int(len(nbytes)),
        "by_frame": by_frame(snapshot, stacks, nbytes, np.isnan(wall)),
        "by_operator": None,
        "by_step": None,
        "by_module": None,
    }
    span = trace_wall_span(trace) if trace is not None else None
    offset = wall_offset_us(trace) if trace is not None else None
    if trace is None or span is None or offset is None:  # no trace, or one not on the wall clock
        return out
    before = np.isnan(wall)
    timed_in = ~before & (wall >= span[0]) & (wall <= span[1])
    t = np.where(timed_in, wall - offset, np.nan)
    special = np.where(before, BEFORE, OUTSIDE).astype(object)
    op = np.full(len(t), -1, dtype=np.int64)
    op[timed_in] = _innermost_any_thread(trace, t[timed_in])
    op_names = _names(trace, op, NO_OP, blank=PROFILER_STEP_PREFIX)
    names, starts, ends, markers = host_steps(trace)
    names = [PROFILER_STEP_PREFIX + n for n in names] if markers else list(names)
    k = np.searchsorted(starts, np.nan_to_num(t, nan=-np.inf), side="right") - 1
    in_step = timed_in & (k >= 0) & (np.nan_to_num(t, nan=np.inf) < ends[np.maximum(k, 0)] if len(ends) else False)
    step_names = np.array(names + [NO_STEP], dtype=object)[np.where(in_step, k, len(names))]
    module_names = _names(trace, _module_of(trace, op), NO_MODULE, (MODULE_PREFIX, PL_MODULE_PREFIX))
    for key, labels in (("by_operator", op_names), ("by_step", step_names), ("by_module", module_names)):
        out[key] = _group(np.where(timed_in, labels, special), nbytes, stacks)
    return out


def wall_active(snapshot: Snapshot, device: int) -> tuple[np.ndarray, np.ndarray]:
    """``(wall-clock µs, active bytes)`` after each entry of ``device``'s history (an entry without a
    time takes the previous one's)."""
    dev = snapshot.devices[device]
    return time_axis(dev) + float(np.nanmin(dev.time)), active_bytes(snapshot, device)


def active_track(wall: tuple[np.ndarray, np.ndarray], trace: Trace, a0: float, a1: float, bins: int) -> list[int]:
    """Per bin of ``[a0, a1]`` (µs as the trace writes them): the held maximum of the active bytes
    ``wall`` (:func:`wall_active`) read on the trace's clock; 0 before the first entry."""
    t, active = wall
    return held_max(t - wall_offset_us(trace), active, a0, a1, bins).astype(np.int64).tolist()
