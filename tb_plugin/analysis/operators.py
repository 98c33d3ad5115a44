"""Operator view: host and device time attributed to operators.

Definitions (µs), per operator event (``cpu_op``/``Operator`` and ``user_annotation`` ranges):

- **Host total** = its duration.
- **Host self** = host total − durations of its direct child operators − durations of its own
  runtime/driver calls (the launches directly inside it on the same thread).
- **Device self** = GPU time (kernels, memcpy, memset) of the work its own launches started. A launch
  belongs to the innermost operator that encloses it on its thread, so a backward op on the autograd
  thread owns the kernels it launched. ``cuda_driver`` launches (Triton, torch.compile) and
  ``cudaGraphLaunch`` replays are attributed the same way, except the device work of a replay matched
  to its capture in the trace (:mod:`.graph_capture`): it belongs to the operator around the captured
  launch it came from. **From graph replay** (``graph_replay_self_us``) = the part of device self
  that came that way.
- **Device total** = device self + device total of its child operators.
- **Calls** = number of events in the group. Rows group by name, by name + input shapes
  (``Input Dims``), or by name + call stack.
- **Tensor cores**: an op is *eligible* when its name is a tensor-core-capable op (or an autograd
  backward node of one); ``tc_self_pct``/``tc_total_pct`` = share of its self/total kernel time spent
  in tensor-core kernels (``null`` without kernel time).
- **FLOPs** = Σ of the ``flops`` arg (``with_flops=True``); TFLOP/s = FLOPs ÷ device total time.

``ProfilerStep#N`` markers, DataLoader ranges and the wrappers ``DataParallel.forward``,
``DistributedDataParallel.forward`` and ``Optimizer.*`` are not rows, but their children are. An op
whose only child op has the same name (``aten::div`` calling ``aten::div``) is one call: the child
is merged into it, its self times added to the parent's (as torch-tb-profiler counts calls).
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypedDict

import numpy as np

from ..trace.categories import DATALOADER_PREFIXES, PROFILER_STEP_PREFIX, Kind
from ..trace.links import device_mask, launch_mask, launch_of
from ..trace.model import Trace
from ..trace.sparse import SparseColumn, row_dtype
from .call_stacks import stack_ids
from .graph_capture import replay_source
from .op_tree import op_tree, parent_positions, positions_among, roll_up
from .row_keys import dense_codes
from .tensor_cores import is_tensor_core_eligible_op, uses_tensor_cores

EXCLUDED_PREFIXES = (
    PROFILER_STEP_PREFIX,
    "DataParallel.forward",
    "DistributedDataParallel.forward",
    "Optimizer.",
    *DATALOADER_PREFIXES,
)
GROUPINGS = ("operator", "input_shape", "call_stack")


class PerOp(SparseColumn):
    """Per-event values that only operator rows have (``ops``: the operator rows, ascending, ``values``
    theirs): ``self[rows]`` reads like a per-event array, 0 for other rows (−1 among them). Held for the
    operator rows alone, and for those whose value is not +0 alone when they are under two thirds of
    them (device, tensor-core and replay times: most operators launch nothing)."""

    wrap_negative = False

    def __init__(self, ops: np.ndarray, values: np.ndarray) -> None:
        held = (values != 0) | np.signbit(values)  # -0.0 and NaN are values too
        if 3 * int(np.count_nonzero(held)) < 2 * len(values):
            ops, values = ops[held], values[held]
        super().__init__(ops, values, 0.0, int(ops[-1]) + 1 if len(ops) else 0)

    def __getitem__(self, rows):
        """As :class:`SparseColumn` reads, for many integer rows (a table's, a quarter of the events or
        more) by a table of each event row's position among the held rows (one gather a row, no
        binary search whose probes miss the cache on a large trace); the same values."""
        rows = np.asarray(rows)
        if rows.ndim != 1 or rows.dtype.kind not in "iu" or 4 * len(rows) < self.size or not len(self.rows):
            return super().__getitem__(rows)
        held = np.zeros(self.size + 1, dtype=bool)  # one more: rows outside [0, size) read it (never held)
        held[self.rows] = True
        inside = np.where((rows >= 0) & (rows < self.size), rows, self.size)
        hit = held[inside]
        out = np.full(len(rows), self.fill, dtype=self.values.dtype)
        out[hit] = self.values[positions_among(held)[inside[hit]]]
        return out


@dataclasses.dataclass
class OpTimes:
    """Per-event values (meaningful on operator rows; the times are held for operator rows only, see
    :class:`PerOp`: indexing them with event rows reads like a per-event array)."""

    is_op: np.ndarray
    host_self: PerOp
    device_self: PerOp
    device_total: PerOp
    tc_self: PerOp  # tensor-core kernel time, self
    tc_total: PerOp
    kernel_self: PerOp  # kernel time, self (denominator of the tc shares)
    kernel_total: PerOp
    owner: np.ndarray  # for device work: the operator row its launch belongs to, else -1
    merged: np.ndarray  # operator rows merged into their same-name only-child parent (not table rows)
    replay_self: PerOp  # device self time that came from graph replays matched to their capture
    replay_total: PerOp  # the same, the operator's subtree included


def op_times(trace: Trace) -> OpTimes:
    return trace.memo("op_times", lambda: _op_times(trace))


def op_rows(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """``(is_op, merged)`` per event: the operator rows, and those merged into their same-name
    only-child parent (not table rows). A memo of its own, made first and read by :func:`op_times`
    (the same arrays): a section that reads only these (the memory section) makes neither the times nor
    holds them (a 4.5 GB trace: ~1.3 s and ~130 MB)."""
    return trace.memo("op_rows", lambda: _op_rows(trace))


def _op_rows(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    ev = trace.events
    is_op = (ev.kind == Kind.CPU_OP) | (ev.kind == Kind.USER_ANNOTATION)
    ops = np.flatnonzero(is_op)
    parent_pos = parent_positions(positions_among(is_op), op_tree(trace).op_parent[ops])
    op_children = np.flatnonzero(parent_pos >= 0)  # positions of operators inside another operator
    n_children = np.bincount(parent_pos[op_children], minlength=len(ops))
    names = ev.name[ops]
    same = op_children[
        (n_children[parent_pos[op_children]] == 1) & (names[op_children] == names[parent_pos[op_children]])
    ]
    merged = np.zeros(len(ev), dtype=bool)
    merged[ops[same]] = True
    return is_op, merged


def summed_times(trace: Trace) -> dict[str, np.ndarray | PerOp]:
    """The operator times every grouping of operators sums, by their column name (µs; indexed by event
    row): host self/total, device self/total (the kernels launched), device self time from graph replays."""
    t = op_times(trace)
    return {
        "host_self_us": t.host_self,
        "host_total_us": trace.events.dur,
        "device_self_us": t.device_self,
        "device_total_us": t.device_total,
        "graph_replay_self_us": t.replay_self,
    }


def _op_times(trace: Trace) -> OpTimes:
    """Computed in operator space (each operator's position among the operator rows): the same sums in
    the same order as over every event row, in about half the memory."""
    ev = trace.events
    n = len(ev)
    tree = op_tree(trace)
    is_op, merged = op_rows(trace)
    ops: np.ndarray = np.flatnonzero(is_op).astype(row_dtype(n))  # held by the times (PerOp): int32 rows where they fit
    m = len(ops)

    at = positions_among(is_op)  # at[operator rows]: their positions in ops (np.searchsorted(ops, rows))

    parent = tree.op_parent  # an operator row (every operator's parent is one) or -1
    parent_pos = parent_positions(at, parent[ops])
    order = at[tree.order[is_op[tree.order]]].astype(row_dtype(m), copy=False)  # operators, the tree's order
    same = np.flatnonzero(merged[ops])  # positions of the operators merged into their parent (op_rows)
    host_self = ev.dur[ops].copy()
    children = np.flatnonzero((is_op | launch_mask(trace)) & (parent >= 0))
    np.subtract.at(host_self, at[parent[children]], ev.dur[children])
    del children
    host_self = np.maximum(host_self, 0.0)

    launcher = launch_of(trace)
    dev = np.flatnonzero(device_mask(trace) & (launcher >= 0))
    owner: np.ndarray = np.full(n, -1, dtype=row_dtype(n))  # held with the memo: int32 rows where they fit
    owner[dev] = parent[launcher[dev]]
    source = replay_source(trace)
    replayed = np.flatnonzero(source >= 0)
    owner[replayed] = parent[source[replayed]]  # replayed work: the operator that captured it
    del replayed
    owned = dev[owner[dev] >= 0]
    del dev
    owner_pos = at[owner[owned]]
    del at  # (an int per event: not held beside the times below)
    kind = ev.kind[owned]
    tc = (kind == Kind.KERNEL) & trace.name_mask(uses_tensor_cores)[owned]

    zero = np.broadcast_to(0.0, (m,))  # (a time nothing accumulates into: +0 for every operator)

    def accumulate(pos: np.ndarray, rows: np.ndarray, weights_mask) -> np.ndarray:
        """The device time of ``rows`` (those of ``weights_mask``) summed per operator position; ``zero``
        where the mask holds no row: never made, copied nor rolled up (a trace without graph replays or
        tensor-core kernels: 4.5 GB trace, up to 4 arrays of 27 MB fewer at the operators section, where
        the process tree peaks)."""
        if weights_mask is not None and not weights_mask.any():
            return zero
        out = np.zeros(m)
        if weights_mask is None:
            np.add.at(out, pos, ev.dur[rows])
        else:
            np.add.at(out, pos[weights_mask], ev.dur[rows[weights_mask]])
        return out

    def made(arrays: list[np.ndarray]) -> list[np.ndarray]:
        return [a for a in arrays if a is not zero]

    device_self = accumulate(owner_pos, owned, None)
    kernel_self = accumulate(owner_pos, owned, kind == Kind.KERNEL)
    tc_self = accumulate(owner_pos, owned, tc)
    replay_self = accumulate(owner_pos, owned, source[owned] >= 0)
    del owner_pos, kind, tc, owned, source
    totals = [a if a is zero else a.copy() for a in (device_self, kernel_self, tc_self, replay_self)]
    roll_up(made(totals), order, parent_pos)  # an operator's total holds its subtree
    del order
    # the self times, read no more, become the table's (merged in place: no copies held beside them)
    table_self = [host_self, device_self, kernel_self, tc_self, replay_self]
    del host_self, device_self, kernel_self, tc_self, replay_self
    roll_up(made(table_self), same, parent_pos)  # deepest first, so chains of same-name ops fold all the way up
    del same, parent_pos
    # each operator-length array freed once held as its PerOp (popped: the lists hold them no more)
    host_s, device_s, kernel_s, tc_s, replay_s = (PerOp(ops, table_self.pop(0)) for _ in range(5))
    device_t, kernel_t, tc_t, replay_t = (PerOp(ops, totals.pop(0)) for _ in range(4))
    return OpTimes(
        is_op,
        host_self=host_s,
        device_self=device_s,
        device_total=device_t,
        tc_self=tc_s,
        tc_total=tc_t,
        kernel_self=kernel_s,
        kernel_total=kernel_t,
        owner=owner,
        merged=merged,
        replay_self=replay_s,
        replay_total=replay_t,
    )


def _groups(trace: Trace, group_by: str):
    """``(rows, inverse, keys)``: operator rows and their group index; keys = name id << 32 | second id."""
    if group_by not in GROUPINGS:
        raise ValueError(f"group_by must be one of {GROUPINGS}")

    def build():
        ev = trace.events
        excluded = trace.name_mask(lambda s: s.startswith(EXCLUDED_PREFIXES))
        times = op_times(trace)
        rows = np.flatnonzero(times.is_op & ~excluded & ~times.merged)
        if group_by == "operator":
            second = np.zeros(len(rows), dtype=np.int64)
        elif group_by == "input_shape":
            second = ev.input_dims[rows].astype(np.int64)
        else:
            second = stack_ids(trace)[rows].astype(np.int64)
        keys = ev.name[rows].astype(np.int64) << 32 | second
        uniq, inverse = dense_codes(keys)
        return rows, inverse, uniq

    return trace.memo("op_groups:" + group_by, build)


class OperatorFigures(TypedDict):
    """An operator group's name, calls and times (µs): the report's columns (registry/report.py)."""

    name: str
    calls: int
    host_self_us: float
    host_total_us: float
    device_self_us: float
    device_total_us: float
    graph_replay_self_us: float  # device self time replayed from CUDA graphs
    tc_eligible: bool  # the operator could run on tensor cores


class OperatorRow(OperatorFigures):
    """One row of the Operator table (:func:`operator_rows`): a group of operator calls (µs)."""

    key: str  # the group's index in this grouping, as text
    input_shape: str | None  # grouped by input shape; else None
    call_stack: str | None  # grouped by call stack; else None
    tc_self_pct: float | None  # share of its self kernel time in tensor-core kernels (%); None without any
    tc_total_pct: float | None
    flops: float | None  # None when no call reported FLOPs
    tflops_per_s: float | None
    longest_row: int  # the event row of the group's longest call


def operator_rows(trace: Trace, group_by: str = "operator") -> list[OperatorRow]:
    """Operator table rows, grouped as asked (see the module docstring)."""
    rows, inverse, uniq = _groups(trace, group_by)
    if len(rows) == 0:
        return []
    ev = trace.events
    t = op_times(trace)
    size = len(uniq)

    def total(values):
        return np.bincount(inverse, weights=values[rows], minlength=size)

    calls = np.bincount(inverse, minlength=size)
    tc_parts = {
        "kernel_self": t.kernel_self,
        "kernel_total": t.kernel_total,
        "tc_self": t.tc_self,
        "tc_total": t.tc_total,
    }
    sums = {k: total(v) for k, v in {**summed_times(trace), **tc_parts}.items()}
    flops_values = np.nan_to_num(ev.flops[rows], nan=0.0)
    has_flops = np.bincount(inverse, weights=(~np.isnan(ev.flops[rows])).astype(float), minlength=size) > 0
    flops = np.bincount(inverse, weights=flops_values, minlength=size)
    longest = _longest_member(rows, inverse, ev.dur[rows], size)
    out: list[OperatorRow] = []
    for g, key in enumerate(uniq.tolist()):
        name = trace.strings[key >> 32]
        sec = key & 0xFFFFFFFF
        dev_total = float(sums["device_total_us"][g])
        out.append(
            {
                "key": str(g),
                "name": name,
                "input_shape": trace.strings[sec] if group_by == "input_shape" and sec else None,
                "call_stack": trace.strings[sec] if group_by == "call_stack" and sec else None,
                "calls": int(calls[g]),
                "host_self_us": float(sums["host_self_us"][g]),
                "host_total_us": float(sums["host_total_us"][g]),
                "device_self_us": float(sums["device_self_us"][g]),
                "device_total_us": dev_total,
                "graph_replay_self_us": float(sums["graph_replay_self_us"][g]),
                "tc_eligible": is_tensor_core_eligible_op(name),
                "tc_self_pct": _pct(sums["tc_self"][g], sums["kernel_self"][g]),
                "tc_total_pct": _pct(sums["tc_total"][g], sums["kernel_total"][g]),
                "flops": float(flops[g]) if has_flops[g] else None,
                "tflops_per_s": (float(flops[g]) / dev_total / 1e6) if has_flops[g] and dev_total > 0 else None,
                "longest_row": int(longest[g]),
            }
        )
    return out


def _longest_member(rows: np.ndarray, inverse: np.ndarray, dur: np.ndarray, size: int) -> np.ndarray:
    """Per group, the event row of its longest call (for "show in trace"): of equal longest calls the
    first in ``rows``; NaN durations count only in a group of nothing else (its first); -1 for an empty
    group. Linear: per group the longest duration, then the first position that has it (no sort)."""
    n = len(dur)
    longest = np.full(size, -np.inf)
    np.fmax.at(longest, inverse, dur)  # (fmax: a NaN loses to any number)
    at = np.flatnonzero(dur == longest[inverse])
    first = np.full(size, n, dtype=np.int64)
    np.minimum.at(first, inverse[at], at)
    only_nan = first == n  # (and empty groups, which stay at n)
    if only_nan.any():
        np.minimum.at(first, inverse, np.where(only_nan[inverse], np.arange(n), n))
    out = np.full(size, -1, dtype=np.int64)
    found = first < n
    out[found] = rows[first[found]]
    return out


def group_members(trace: Trace, group_by: str, key: int) -> np.ndarray:
    """Event rows of the table row with this ``key`` (its group index)."""
    rows, inverse, _ = _groups(trace, group_by)
    return rows[inverse == key]


def operator_stacks(trace: Trace, group_by: str, key: int) -> list[dict]:
    """The distinct call stacks of one table row (its ``key``), most device time first: per stack its
    calls and the row's four times summed over the calls made from it (µs, as :func:`operator_rows`
    defines them). ``text`` is the stack, innermost frame first; "" for calls without one."""
    members = group_members(trace, group_by, key)
    t = op_times(trace)
    stacks, which = dense_codes(stack_ids(trace)[members])
    n = len(stacks)
    sums = [
        np.bincount(which, weights=w[members], minlength=n)
        for w in (t.host_self, trace.events.dur, t.device_self, t.device_total)
    ]
    calls = np.bincount(which, minlength=n)
    out: list[dict[str, Any]] = [
        {
            "text": trace.strings[int(s)] if s else "",
            "calls": int(calls[i]),
            "host_self_us": float(sums[0][i]),
            "host_total_us": float(sums[1][i]),
            "device_self_us": float(sums[2][i]),
            "device_total_us": float(sums[3][i]),
        }
        for i, s in enumerate(stacks)
    ]
    out.sort(key=lambda s: (-s["device_total_us"], -s["host_total_us"]))
    return out


def _pct(part: float, whole: float) -> float | None:
    return float(100.0 * part / whole) if whole > 0 else None
