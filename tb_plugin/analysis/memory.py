"""Memory view from profiler traces (``[memory]`` instant events).

Definitions (bytes; times µs relative to the trace's first event):

- **Devices**: ``Device Type`` 0 is "CPU"; CUDA (1) and HIP (6, ROCm) are "GPU<Device Id>"; XPU, MTIA,
  HPU, MPS… are named by their type (:mod:`tb_plugin.trace.devices`). Events of a type the tool cannot
  place are left out, and the file carries a warning naming them (we differ from torch-tb-profiler,
  which silently drops every type but CPU and CUDA, so ROCm traces show no GPU memory).
- **Curve**: ``Total Allocated`` and ``Total Reserved`` after each event, as a step function. When a
  trace lacks ``Total Allocated`` (older traces), the allocated curve is the running sum of ``Bytes``
  (``reconstructed`` is true). We differ from torch-tb-profiler, which shows no curve then. This is the
  one memory curve (:func:`curves`): the Memory view, the Trace view's memory counter tracks
  (:func:`.counters.memory_tracks`) and the GPU peaks of the memory advice (:func:`gpu_peaks`) read it.
- **Peak** allocated of a device = the curve's largest value (bytes) and its time; ``gpu_peaks`` gives
  it per GPU index (CUDA and HIP devices, :data:`tb_plugin.trace.devices.GPU_DEVICE_TYPES`), never
  below 0.
- **Windows**: a curve over ``[start, end]`` is reduced by :func:`.series.reduce_points` (per bin its
  largest and its last point, so peaks survive any zoom).
- **Attribution**: every memory event (an allocation, ``Bytes`` > 0, or a free, ``Bytes`` < 0) belongs to
  the innermost operator on its thread whose ``[start, end)`` contains it: the operator *during* which it
  happened. With ``Addr``, a free is also linked to the allocation it ends (same ``Addr``, same device).
- **Per operator**, self (its own events) and total (self + descendants): *size increase* = Σ signed
  Bytes during the operator (allocated minus freed, torch-tb-profiler's documented definition);
  *allocation size* = Σ positive Bytes; *allocations* = count of positive events; *not freed* (with
  ``Addr`` only) = bytes the operator allocated that no free in the trace released (the memory it kept);
  *calls* = the number of the operator's events, counted as in the Operator view. Events whose
  innermost operator is not a row (``ProfilerStep#``, DataLoader, ``Optimizer.*``) count for no row, as
  in torch-tb-profiler. The table is sorted by allocation size (largest first): size increase is 0 for
  every operator whose tensors are freed inside it, and negative for those that free.
- **Pairing**: an allocation pairs with the next free of the same ``Addr`` on the same device. An
  allocation never freed stays open (no release time); a free without an allocation has no
  allocation time. Without ``Addr`` no pairs can be made and the reason is reported.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterator, TypedDict

import numpy as np

from ..trace.devices import DEVICE_TYPE_NAMES, GPU_DEVICE_TYPES, memory_device_label
from ..trace.model import Trace
from ..trace.sparse import row_dtype
from .op_tree import climb, op_tree, parent_positions, positions_among
from .operators import EXCLUDED_PREFIXES, op_rows
from .row_keys import dense_codes, unique_rows
from .series import reduce_points


@dataclasses.dataclass
class MemoryData:
    """Per memory event (rows of ``trace.memory``), held in the narrowest row dtype (int32 under 2³¹
    rows): a 4.5 GB trace's 1.9 M memory events, ~30 MB for the four row columns instead of ~60 MB."""

    device_code: np.ndarray  # per memory event: 0 when ignored, else 1 + the index of its label in labels
    labels: list[str]  # the devices' labels, in device_rows order
    op: np.ndarray  # innermost operator row during each memory event (-1: none)
    unfreed: np.ndarray  # per event: an allocation (with Addr) that no free in the trace releases
    has_addr: bool
    origin: float
    freed_at: np.ndarray  # per allocation: the row of the free that ends it (-1: none; see _link_frees)
    ends: np.ndarray  # per free: the row of the allocation it ends (-1: none)

    @property
    def device(self) -> list[str]:
        """The label per memory event ("" when ignored), made when asked (not held: no section reads it)."""
        return np.asarray(["", *self.labels], dtype=object)[self.device_code].tolist()

    @property
    def alloc_op(self) -> np.ndarray:
        """For a free with Addr: the operator of the allocation it ends; else ``op`` (made when asked)."""
        out = self.op.copy()
        freed = self.ends >= 0
        out[freed] = self.op[self.ends[freed]]
        return out


def memory_data(trace: Trace) -> MemoryData:
    return trace.memo("memory_data", lambda: _memory_data(trace))


def _memory_data(trace: Trace) -> MemoryData:
    mem = trace.memory
    narrow = row_dtype(max(len(mem), len(trace.events)))  # memory rows and event rows
    device_code = np.zeros(len(mem), dtype=np.int32)  # 0: ignored, else 1 + the device's index
    for k, (_, _, rows) in enumerate(device_rows(trace)):
        device_code[rows] = k + 1
    names = [label for label, _, _ in device_rows(trace)]
    origin = memory_origin(trace)
    op: np.ndarray = _innermost_ops(trace).astype(narrow)  # (rows below 2³¹: the same values)
    unfreed = np.zeros(len(mem), dtype=bool)
    freed_at: np.ndarray = np.full(len(mem), -1, dtype=narrow)
    ends: np.ndarray = np.full(len(mem), -1, dtype=narrow)
    has_addr = bool((mem.addr >= 0).any()) if len(mem) else False
    if has_addr:  # link each free to the allocation it ends
        _link_frees(mem.addr, mem.bytes, device_code, freed_at, ends, unfreed)
    return MemoryData(device_code, names, op, unfreed, has_addr, origin, freed_at, ends)


def _link_frees(
    addr: np.ndarray,
    nbytes: np.ndarray,
    device_code: np.ndarray,
    freed_at: np.ndarray,
    ends: np.ndarray,
    unfreed: np.ndarray,
) -> None:
    """Per (device, Addr), in row order: a free (bytes < 0) right after an allocation (bytes > 0)
    ends it (``freed_at`` of the allocation, ``ends`` of the free); an allocation that is the last
    event of its address is never freed (``unfreed``). An allocation followed by another at the same
    address is replaced, neither freed nor unfreed; a free after a free ends nothing. Events without
    Addr, of an ignored device, or of zero bytes take no part. One sort, no Python loop."""
    sel = np.flatnonzero((addr >= 0) & (device_code > 0) & (nbytes != 0))
    if len(sel) == 0:
        return
    order = sel[np.lexsort((sel, addr[sel], device_code[sel]))]
    same_key = (device_code[order][1:] == device_code[order][:-1]) & (addr[order][1:] == addr[order][:-1])
    is_alloc = nbytes[order] > 0
    link = np.flatnonzero(same_key & is_alloc[:-1] & ~is_alloc[1:]) + 1
    freed_at[order[link - 1]] = order[link]
    ends[order[link]] = order[link - 1]
    unfreed[order[is_alloc & np.r_[~same_key, True]]] = True


def _innermost_ops(trace: Trace) -> np.ndarray:
    """Innermost operator (by [start, end)) on the memory event's thread, per memory event."""
    mem = trace.memory
    return innermost_ops_at(trace, mem.pid, mem.tid, mem.ts.astype(np.float64))


def innermost_ops_at(trace: Trace, pid: np.ndarray, tid: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Per query ``i``: the innermost operator row (by [start, end)) of thread ``(pid[i], tid[i])`` open
    at time ``t[i]`` (µs, the trace's clock); −1 when none.

    Vectorized: per thread, the operator that starts last at or before the time is the innermost one
    if it is still open (end > t); otherwise its enclosing operators (:func:`.op_tree.op_tree`'s
    ``op_parent``) are tried, one nesting level per numpy pass over all the queries still unplaced,
    so the passes number the nesting depth, not the queries."""
    ev = trace.events
    out = np.full(len(t), -1, dtype=np.int64)
    if len(t) == 0:
        return out
    is_op = op_rows(trace)[0]
    tree = op_tree(trace)
    ops = tree.order[is_op[tree.order]]
    if len(ops) == 0:
        return out

    def thread_key(p, q):  # (pid, tid) as one int64: both are 32-bit ids
        return p.astype(np.int64) << 32 | (q.astype(np.int64) & 0xFFFFFFFF)

    _, code = dense_codes(np.concatenate([thread_key(ev.pid[ops], ev.tid[ops]), thread_key(pid, tid)]))
    op_code, q_code = code[: len(ops)], code[len(ops) :]
    op_start = ev.ts[ops]
    # by thread, then start; nesting order kept: the tree's order is that already, but for a thread key
    # the tree reads otherwise (a negative tid), so the sort is made only where the check fails
    same = op_code[1:] == op_code[:-1]
    if not np.all((op_code[1:] > op_code[:-1]) | (same & (op_start[1:] >= op_start[:-1]))):
        order = np.lexsort((np.arange(len(ops)), op_start, op_code))
        ops, op_code, op_start = ops[order], op_code[order], op_start[order]
    del same
    bounds = np.searchsorted(op_code, np.arange(int(code.max()) + 2))
    t = np.asarray(t, dtype=np.float64)
    cand = out
    for th in np.flatnonzero(np.bincount(q_code)).tolist():  # one pass per thread (threads, not queries)
        lo, hi = bounds[th], bounds[th + 1]
        if lo == hi:
            continue
        here = np.flatnonzero(q_code == th)
        k = np.searchsorted(op_start[lo:hi], t[here], side="right") - 1
        cand[here] = np.where(k >= 0, ops[lo:hi][np.maximum(k, 0)], -1)
    parent = tree.op_parent
    todo = np.flatnonzero(cand >= 0)  # the queries still climbing: fewer each pass
    while len(todo):  # climb while the candidate closed at or before t (or is not an operator)
        c = cand[todo]
        todo = todo[(ev.ts[c] + ev.dur[c] <= t[todo]) | ~is_op[c]]  # its end, for it alone
        cand[todo] = parent[cand[todo]]
        todo = todo[cand[todo] >= 0]
    return cand


def memory_origin(trace: Trace) -> float:
    """The Memory view's time origin (µs): the trace's first event, else its first memory event."""
    ev, mem = trace.events, trace.memory
    return float(ev.ts.min()) if len(ev) else (float(mem.ts.min()) if len(mem) else 0.0)


def device_rows(trace: Trace) -> list[tuple[str, int | None, np.ndarray]]:
    """``(label, GPU index or None, memory-event rows by time)`` of each memory device the tool can
    place, CPU first then by index (the order of :func:`curves`)."""

    def build():
        mem = trace.memory
        if len(mem) == 0:
            return []
        dtype, did = mem.device_type.astype(np.int64), mem.device_id.astype(np.int64)
        placed = np.isin(dtype, list(DEVICE_TYPE_NAMES))
        labels: dict[str, list] = {}
        for t, d in unique_rows([dtype[placed], did[placed]])[0].tolist():
            label = memory_device_label(t, d)
            if label is not None:  # (a placed type always has one)
                labels.setdefault(label, []).append((t, d))
        out = []
        for label in sorted(labels, key=_device_order):
            pairs = labels[label]
            rows = np.flatnonzero(np.any([(dtype == t) & (did == d) for t, d in pairs], axis=0))
            gpu = all(t in GPU_DEVICE_TYPES for t, _ in pairs)
            out.append((label, int(label[3:]) if gpu else None, rows))
        return out

    return trace.memo("memory_device_rows", build)


def curves(trace: Trace) -> list[dict]:
    """Per device: the allocated/reserved step curves (``ts_us`` relative to :func:`memory_origin`)
    and their peaks. Computed once per trace."""
    return trace.memo("memory_curves", lambda: _curves(trace))


def _curves(trace: Trace) -> list[dict]:
    mem = trace.memory
    origin = memory_origin(trace)
    out = []
    for label, _, rows in device_rows(trace):
        allocated = mem.total_allocated[rows]
        reconstructed = not (allocated >= 0).any()
        if reconstructed:
            allocated = np.cumsum(mem.bytes[rows])
        reserved = mem.total_reserved[rows]
        ts = mem.ts[rows] - origin
        peak = int(np.argmax(allocated))
        out.append(
            {
                "device": label,
                "ts_us": ts,
                "allocated_bytes": allocated,
                "reserved_bytes": reserved if (reserved >= 0).any() else None,
                "reconstructed": reconstructed,
                "peak_allocated_bytes": int(allocated[peak]),
                "peak_allocated_ts": float(ts[peak]),
                "peak_reserved_bytes": int(reserved.max()) if (reserved >= 0).any() else None,
            }
        )
    return out


def gpu_peaks(trace: Trace) -> dict[int, int]:
    """Peak allocated bytes per GPU index (CUDA and HIP devices), from :func:`curves`; never below 0."""
    return {
        gpu: max(c["peak_allocated_bytes"], 0)
        for (_, gpu, _), c in zip(device_rows(trace), curves(trace))
        if gpu is not None
    }


def _device_order(label: str) -> tuple:
    return (0, 0) if label == "CPU" else (1, int(label[3:]) if label[3:].isdigit() else 0)


def allocation_pairs(trace: Trace) -> dict:
    """Allocation ↔ free pairs (see the module docstring). ``reason`` explains an empty table."""
    mem = trace.memory
    data = memory_data(trace)
    if not data.has_addr:
        return {
            "rows": [],
            "reason": "this trace's memory events have no 'Addr', so allocations cannot be "
            "paired with their frees (the curve and the statistics still work)",
        }
    # one output row per allocation, or per free that ends none (pairs: memory_data), in row order
    i = np.flatnonzero((mem.addr >= 0) & (mem.bytes != 0) & (data.device_code > 0))
    i = i[(mem.bytes[i] > 0) | (data.ends[i] < 0)]
    b = mem.bytes[i]
    alloc = b > 0
    t_rel = mem.ts - data.origin
    t = t_rel[i]
    j = data.freed_at[i]
    freed = alloc & (j >= 0)
    free_t = t_rel[np.where(freed, j, i)]
    op = data.op[i]
    op_name: np.ndarray = (
        np.asarray(trace.strings, dtype=object)[trace.events.name[np.maximum(op, 0)]]
        if len(trace.events)
        else np.full(len(i), None, dtype=object)
    )
    columns = {
        "device": np.asarray(data.labels, dtype=object)[data.device_code[i] - 1] if data.labels else [],
        "addr": mem.addr[i],
        "size_bytes": np.abs(b),
        "alloc_us": _or_none(t, alloc),
        "free_us": _or_none(np.where(alloc, free_t, t), freed | ~alloc),
        "duration_us": _or_none(free_t - t, freed),
        "op": _or_none(op_name, op >= 0),
    }
    values = [c.tolist() if isinstance(c, np.ndarray) else c for c in columns.values()]
    return {"rows": [dict(zip(columns, row)) for row in zip(*values)], "reason": None}


def _or_none(values: np.ndarray, keep: np.ndarray) -> list:
    """``values`` as Python numbers, None where ``keep`` is False."""
    out = values.astype(object)
    out[~keep] = None
    return out.tolist()


def operator_stats(trace: Trace, device: str, start_us: float | None = None, end_us: float | None = None) -> list[dict]:
    """Per operator name, for one device: calls, self/total size increase (allocated − freed during the
    operator), allocation size and count, and self bytes not freed by the trace's end (with ``Addr``),
    largest allocation size first.

    With a time range (µs relative to the first event), only memory events inside it count."""
    data = memory_data(trace)
    on_device = np.isin(data.device_code, [k + 1 for k, label in enumerate(data.labels) if label == device])
    if start_us is not None:
        on_device &= trace.memory.ts - data.origin >= start_us
    if end_us is not None:
        on_device &= trace.memory.ts - data.origin <= end_us
    sums = _operator_sums(trace, on_device)
    if sums is None:
        return []
    names, calls, cols = sums
    out: list[dict[str, Any]] = [
        {
            "name": name,
            "calls": int(calls[k]),
            "self_size_increase_bytes": int(cols[0][k]),
            "self_allocation_bytes": int(cols[1][k]),
            "self_allocations": int(cols[2][k]),
            "size_increase_bytes": int(cols[3][k]),
            "allocation_bytes": int(cols[4][k]),
            "allocations": int(cols[5][k]),
            "self_not_freed_bytes": int(cols[6][k]) if data.has_addr else None,
        }
        for k, name in enumerate(names)
    ]
    out.sort(key=lambda r: (-r["allocation_bytes"], r["name"]))
    return out


def _operator_sums(trace: Trace, chosen: np.ndarray) -> tuple[list[str], np.ndarray, list[np.ndarray]] | None:
    """Per operator name, over the memory events ``chosen`` (a mask over them) that happened inside an
    operator: ``(names, calls, sums)``, ``sums`` the seven float columns of :func:`operator_stats` in
    its order (self size increase, self allocation bytes, self allocations, the three with children,
    self bytes not freed; bytes), names that touched none of the chosen memory left out; None when no
    chosen event is inside an operator."""
    mem = trace.memory
    ev = trace.events
    data = memory_data(trace)
    idx = np.flatnonzero(chosen & (data.op >= 0))
    if len(idx) == 0:
        return None
    # in operator space (position among the operator rows, not event row): every sum below is over
    # the operators only, in the same order, so the values are the same with half the memory
    tree = op_tree(trace)
    is_op, merged = op_rows(trace)
    ops = np.flatnonzero(is_op)
    m = len(ops)
    # the positions first, so that the operator-space arrays below are not held beside the rank array
    rank = positions_among(is_op)  # operator row → its position in ops (np.searchsorted(ops, rows))
    owner = rank[data.op[idx]]  # memory events are attributed to operator rows only
    narrow = row_dtype(m)  # operator positions: int32 under 2³¹ operators
    parent = parent_positions(rank, tree.op_parent[ops])
    order = rank[tree.order[is_op[tree.order]]].astype(narrow, copy=False)
    del rank
    # the climbs' levels made once, before any column: then each column is summed, climbed and
    # reduced to its names before the next is made (a 4.5 GB trace: 3.5 M operators, 28 MB a column;
    # seven held at once were ~0.2 GB of the section's peak)
    whole = climb(order, parent)  # an operator's total holds its whole subtree
    del order
    merged = merged[ops]  # an op's same-name only child is one call with it
    folded = climb(np.flatnonzero(merged), parent)
    excluded = trace.name_mask(lambda s: s.startswith(EXCLUDED_PREFIXES))[ops]
    rows = ~excluded & ~merged
    del excluded, merged, parent
    keys, group = _name_groups(ev.name[ops[rows]], len(trace.strings) + 1)
    g = len(keys)
    name_of: np.ndarray = np.full(m, g, dtype=narrow)  # per operator its name's group; g: not a table row
    name_of[rows] = group
    del rows, group, ops

    def by_name(arr: np.ndarray) -> np.ndarray:  # per name, in operator order (the rows' order)
        return np.bincount(name_of, weights=arr, minlength=g + 1)[:g]

    b = mem.bytes[idx].astype(np.float64)
    sums: list[np.ndarray] = []
    totals: list[np.ndarray] = []
    for weight in _weights(b, data.unfreed[idx]):
        own = np.bincount(owner, weights=weight, minlength=m)
        if len(totals) < 3:  # the first three have totals too
            total = own.copy()
            whole.add_up([total])
            totals.append(by_name(total))
            del total
        folded.add_up([own])
        sums.append(by_name(own))
        del own
    del b, owner
    calls = np.bincount(name_of, minlength=g + 1)[:g]
    cols = [*sums[:3], *totals, sums[3]]
    # an operator that never touched the chosen memory is left out
    touched = np.flatnonzero((cols[1] != 0) | (cols[4] != 0) | (cols[0] != 0) | (cols[3] != 0))
    return [trace.strings[k] for k in keys[touched].tolist()], calls[touched], [c[touched] for c in cols]


def _weights(b: np.ndarray, unfreed: np.ndarray) -> Iterator[np.ndarray]:
    """Per memory event (``b``: its bytes), one at a time: the weights of the size increase, the
    allocation size, the allocations and the bytes not freed (``unfreed``: an allocation never freed)."""
    yield b
    yield np.where(b > 0, b, 0)
    yield (b > 0).astype(float)
    yield np.where(unfreed, b, 0)


def _name_groups(names: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(names, return_inverse=True)`` for string ids below ``bound``, by a table of the ids
    present (no sort of the rows: the same sorted keys and group per row)."""
    present = np.zeros(bound, dtype=bool)
    present[names] = True
    keys = np.flatnonzero(present)
    group = np.cumsum(present) - 1
    return keys, group[names]


def downsample_curve(ts: np.ndarray, values: np.ndarray, start: float, end: float, max_points: int) -> dict:
    """A step curve over ``[start, end]`` as the Memory view sends it, at most ``max_points`` points:
    :func:`.series.reduce_points` in ``(max_points - 3) // 2`` bins (the value held at ``start`` opens
    it, per bin its largest and last points, the value held at ``end`` closes it). Below 5 points there
    is no room for a bin: the peak, then the closing and opening points, as many as fit."""
    bins = (max_points - 3) // 2
    out_t, out_v = reduce_points(ts, values, start, end, max(1, bins))
    if len(out_t) > max_points:
        peak = int(np.argmax(out_v))
        keep = sorted(list(dict.fromkeys([peak, len(out_t) - 1, 0]))[: max(0, max_points)])
        out_t, out_v = [out_t[k] for k in keep], [out_v[k] for k in keep]
    return {"ts_us": out_t, "bytes": out_v}


def window_peak(ts: np.ndarray, values: np.ndarray, start: float, end: float) -> tuple[int | None, float | None]:
    """``(peak bytes, its time µs)`` of a step curve inside ``[start, end]``: the value held at ``start``
    counts (at ``start``). ``(None, None)`` when the curve has no value there yet."""
    before = np.flatnonzero(ts < start)
    idx = np.flatnonzero((ts >= start) & (ts <= end))
    cand_v = values[idx]
    cand_t = ts[idx]
    if len(before):
        cand_v = np.concatenate([[values[before[-1]]], cand_v])
        cand_t = np.concatenate([[start], cand_t])
    if len(cand_v) == 0:
        return None, None
    k = int(np.argmax(cand_v))
    return int(cand_v[k]), float(cand_t[k])


def memory_window(curve: dict, start: float, end: float, width_px: int) -> dict:
    """One device of :func:`curves` over ``[start, end]`` (µs): its allocated/reserved curves in at most
    ``2 × width_px`` points each (:func:`downsample_curve`), and the peaks inside the window (``range_peak_*``; the whole-trace peaks stay as they are)."""
    out = {k: v for k, v in curve.items() if k not in ("ts_us", "allocated_bytes", "reserved_bytes")}
    ts = curve["ts_us"]
    out["allocated"] = downsample_curve(ts, curve["allocated_bytes"], start, end, 2 * width_px)
    reserved = curve["reserved_bytes"]
    out["reserved"] = downsample_curve(ts, reserved, start, end, 2 * width_px) if reserved is not None else None
    peak, peak_ts = window_peak(ts, curve["allocated_bytes"], start, end)
    out["range_peak_allocated_bytes"], out["range_peak_allocated_ts"] = peak, peak_ts
    out["range_peak_reserved_bytes"] = window_peak(ts, reserved, start, end)[0] if reserved is not None else None
    return out


class MemoryDevicePeak(TypedDict):
    """One device's peaks in the report's ``memory`` section (bytes; time in µs from :func:`memory_origin`)."""

    device: str  # the device label (:func:`device_rows`)
    peak_allocated_bytes: int
    peak_allocated_ts: float  # when allocated memory peaked
    peak_reserved_bytes: int | None  # None when the trace records no Total Reserved


class MemoryOperatorRow(TypedDict):
    """One operator's allocations over all devices (:func:`operator_stats` summed; bytes)."""

    name: str
    size_increase_bytes: int  # allocated minus freed, children included
    allocation_bytes: int
    allocations: int


class MemorySummary(TypedDict):
    """The report's ``memory`` section (:func:`memory_summary`)."""

    devices: list[MemoryDevicePeak]
    top_operators: list[MemoryOperatorRow]  # most bytes allocated first


def memory_summary(trace: Trace, top: int = 20) -> MemorySummary:
    """The headless report's ``memory``: per-device peaks and the top operators over all devices."""
    devices: list[MemoryDevicePeak] = [
        {
            "device": c["device"],
            "peak_allocated_bytes": c["peak_allocated_bytes"],
            "peak_allocated_ts": c["peak_allocated_ts"],
            "peak_reserved_bytes": c["peak_reserved_bytes"],
        }
        for c in curves(trace)
    ]
    # one pass over the memory events of every device: each column is a sum of whole bytes or counts,
    # exact in float64, so the per-device sums of :func:`operator_stats` added up are these; an operator
    # shown for no device has zeros on each (its allocations are never negative)
    data = memory_data(trace)
    shown = {d["device"] for d in devices}
    sums = _operator_sums(trace, np.isin(data.device_code, [k + 1 for k, lb in enumerate(data.labels) if lb in shown]))
    rows: list[MemoryOperatorRow] = []
    if sums is not None:
        names, _, cols = sums
        rows = [
            {"name": name, "size_increase_bytes": int(inc), "allocation_bytes": int(alloc), "allocations": int(n)}
            for name, inc, alloc, n in zip(names, cols[3].tolist(), cols[4].tolist(), cols[5].tolist())
        ]
    ranked = sorted(rows, key=lambda r: (-r["allocation_bytes"], r["name"]))
    return {"devices": devices, "top_operators": ranked[:top]}
