"""GPU Kernel view: kernels grouped by name, by name + launching operator + launch configuration, or by
name + CUDA graph (``graph``: the graph index of the replay the kernel ran in, :mod:`.graph_capture`;
None for a kernel launched outside every graph replay).

Definitions, per group (µs): ``calls`` = number of kernel events; ``total/mean/min/max`` of their
durations; ``blocks_per_sm`` and ``achieved_occupancy_pct`` = duration-weighted means over the calls
whose value is known (``null`` when none is; a 0 that Kineto wrote for "not computed" is unknown,
:func:`.gpu.kernel_occupancy`); ``tensor_cores`` = the name matches a tensor-core kernel
pattern (:mod:`.tensor_cores`). The launching operator is the innermost operator around the kernel's
launch (:mod:`.operators`). Kernels are recognized by category (``Kernel``/``kernel``) on NVIDIA and
AMD alike; a missing launch arg leaves its cell ``null``.
"""

from __future__ import annotations

from typing import Any, TypedDict, cast

import numpy as np

from ..trace.categories import Kind
from ..trace.model import Trace
from .gpu import kernel_occupancy
from .graph_capture import replays
from .operators import _longest_member, op_times
from .row_keys import unique_rows
from .tensor_cores import is_tensor_core_eligible_op, uses_tensor_cores

GROUPINGS = ("kernel", "kernel_op_config", "graph")


class KernelFigures(TypedDict):
    """A kernel group's name, calls and times (µs): the report's columns (registry/report.py)."""

    name: str
    calls: int
    total_us: float
    mean_us: float
    min_us: float
    max_us: float
    blocks_per_sm: float | None  # duration-weighted mean; None when no call has it
    achieved_occupancy_pct: float | None
    tensor_cores: bool  # the name matches a tensor-core kernel pattern


class KernelRowBase(KernelFigures):
    """One row of the GPU Kernel table (:func:`kernel_rows`): a group of kernel calls (µs). The launch
    configuration is None unless grouped per op and config."""

    key: str  # the group's index in this grouping, as text
    op: str | None  # the launching operator
    grid: str | None
    block: str | None
    registers_per_thread: int | None
    shared_memory_bytes: int | None
    tc_eligible: bool | None  # the launching operator could run on tensor cores
    longest_row: int  # the event row of the group's longest call


class KernelRow(KernelRowBase, total=False):
    """A kernel row; ``graph`` only grouped per graph."""

    graph: int | None  # the CUDA graph index of the replay it ran in; None outside every replay


def kernel_rows(trace: Trace, group_by: str = "kernel") -> list[KernelRow]:
    if group_by not in GROUPINGS:
        raise ValueError(f"group_by must be one of {GROUPINGS}")
    return trace.memo("kernel_rows:" + group_by, lambda: _kernel_rows(trace, group_by))


def _kernel_rows(trace: Trace, group_by: str) -> list[KernelRow]:
    ev = trace.events
    rows = np.flatnonzero(ev.kind == Kind.KERNEL)
    if len(rows) == 0:
        return []
    by_config = group_by == "kernel_op_config"
    owner = op_times(trace).owner[rows]
    op_name = np.where(owner >= 0, ev.name[np.maximum(owner, 0)], 0).astype(np.int64)
    parts = [ev.name[rows].astype(np.int64)]
    if by_config:
        parts += [
            op_name,
            ev.grid[rows].astype(np.int64),
            ev.block[rows].astype(np.int64),
            ev.registers[rows].astype(np.int64),
            ev.shared_memory[rows].astype(np.int64),
        ]
    by_graph = group_by == "graph"
    if by_graph:
        rep = replays(trace)
        graph_of = np.full(len(ev), -1, dtype=np.int64)
        graph_of[rep.rows] = rep.graph[rep.replay]
        parts.append(graph_of[rows])
    uniq, _, inverse = unique_rows(parts)  # as np.unique(rows, axis=0), without its slow row sort
    size = len(uniq)
    dur = ev.dur[rows]
    calls = np.bincount(inverse, minlength=size)
    total = np.bincount(inverse, weights=dur, minlength=size)
    mins = np.full(size, np.inf)
    maxs = np.full(size, -np.inf)
    np.minimum.at(mins, inverse, dur)
    np.maximum.at(maxs, inverse, dur)
    bps = _weighted_mean(ev.blocks_per_sm[rows], dur, inverse, size)
    occ = _weighted_mean(kernel_occupancy(trace)[rows], dur, inverse, size)
    longest = _longest_member(rows, inverse, dur, size)
    out: list[KernelRow] = []
    for g in range(size):
        name = trace.strings[uniq[g, 0]]
        row: dict[str, Any] = {
            "key": str(g),
            "name": name,
            "op": None,
            "grid": None,
            "block": None,
            "registers_per_thread": None,
            "shared_memory_bytes": None,
            "tc_eligible": None,
        }
        if by_config:
            op, grid, block, regs, smem = (int(v) for v in uniq[g, 1:])
            row.update(
                op=trace.strings[op] if op else None,
                grid=trace.strings[grid] if grid else None,
                block=trace.strings[block] if block else None,
                registers_per_thread=regs if regs >= 0 else None,
                shared_memory_bytes=smem if smem >= 0 else None,
                tc_eligible=is_tensor_core_eligible_op(trace.strings[op]) if op else None,
            )
        if by_graph:
            row["graph"] = int(uniq[g, 1]) if uniq[g, 1] >= 0 else None
        row.update(
            calls=int(calls[g]),
            total_us=float(total[g]),
            mean_us=float(total[g] / calls[g]),
            min_us=float(mins[g]),
            max_us=float(maxs[g]),
            blocks_per_sm=bps[g],
            achieved_occupancy_pct=occ[g],
            tensor_cores=uses_tensor_cores(name),
            longest_row=int(longest[g]),
        )
        out.append(cast(KernelRow, row))  # built in the table's column order
    return out


def _weighted_mean(values: np.ndarray, weights: np.ndarray, inverse: np.ndarray, size: int) -> list:
    """Per group, the weight-weighted mean of the values ≥ 0 (None when none is), kept inside the
    group's [min, max] of those values: float rounding must not lift a mean of 100 % values past 100 %."""
    ok = values >= 0  # NaN (missing) and negative values are skipped
    w = np.bincount(inverse[ok], weights=weights[ok], minlength=size)
    s = np.bincount(inverse[ok], weights=values[ok] * weights[ok], minlength=size)
    n = np.bincount(inverse[ok], minlength=size)
    lo = np.full(size, np.inf)
    hi = np.full(size, -np.inf)
    np.minimum.at(lo, inverse[ok], values[ok])
    np.maximum.at(hi, inverse[ok], values[ok])
    out: list[float | None] = []
    for g in range(size):
        if n[g] == 0:
            out.append(None)
        elif w[g] > 0:
            out.append(float(min(max(s[g] / w[g], lo[g]), hi[g])))
        else:  # only zero-length calls carry the value: plain mean
            out.append(float(values[ok][inverse[ok] == g].mean()))
    return out


def tensor_core_split(trace: Trace) -> dict[str, float]:
    """Kernel time on tensor cores vs. the rest (µs)."""
    ev = trace.events
    kernel = ev.kind == Kind.KERNEL
    tc = kernel & trace.name_mask(uses_tensor_cores)
    return {"tensor_core_us": float(ev.dur[tc].sum()), "other_us": float(ev.dur[kernel & ~tc].sum())}
