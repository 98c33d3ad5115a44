"""Kernel launch geometry: how many thread blocks (work-groups, on AMD) each kernel ran.

The kernel's own ``grid``/``block`` args are used; a kernel without them (ROCm 6.2 traces write them
only on the launch call) takes its launch's (``correlation`` link). ``grid`` counts blocks, except for
the ROCm launch calls whose grid is the global work size in work-items (:data:`WORK_ITEM_GRID_LAUNCHES`):
there blocks = ceil(grid ÷ block) per dimension. ``hipModuleLaunchKernel`` is not one of them: its
``gridDimX/Y/Z`` are blocks, like CUDA's (a Triton ``attn_fwd`` on MI300 reads grid [2, 8, 1] with
256-thread blocks).
"""

from __future__ import annotations

import math
import re

import numpy as np

from .categories import Kind
from .links import launch_of
from .model import Trace
from .sparse import SparseColumn
from .uniques import unique_values

#: Launch calls whose ``grid`` is in work-items (``globalWorkSizeX/Y/Z``), not blocks.
WORK_ITEM_GRID_LAUNCHES = frozenset({"hipExtModuleLaunchKernel", "hipHccModuleLaunchKernel"})

_INT = re.compile(r"-?\d+")


def kernel_blocks(trace: Trace) -> SparseColumn:
    """For every event, the number of blocks its kernel launch ran (float64); NaN for events that are
    not kernels and for kernels whose geometry is unknown (no ``grid`` on the kernel or its launch, or
    a work-item grid without a ``block``). Held for the kernels whose count is known (:class:`SparseColumn`)."""
    return trace.memo("kernel_blocks", lambda: SparseColumn.of(_kernel_blocks(trace), np.nan))


def _kernel_blocks(trace: Trace) -> np.ndarray:
    ev = trace.events
    out = np.full(len(ev), np.nan)
    rows, grid, block, launch = _kernel_geometry(trace, "grid")
    if len(rows) == 0:
        return out
    work_items = np.zeros(len(rows), dtype=bool)
    linked = launch >= 0
    if linked.any():
        is_work_item_call = np.zeros(len(trace.strings) + 1, dtype=bool)
        is_work_item_call[trace.name_ids(lambda s: s in WORK_ITEM_GRID_LAUNCHES)] = True
        work_items[linked] = is_work_item_call[ev.name[launch[linked]]]
    dims = _dims_table(trace, unique_values(np.concatenate([grid, block])))
    g, b = dims[grid], dims[block]  # (n, 3) each, NaN where unknown
    with np.errstate(invalid="ignore", divide="ignore"):
        per_dim = np.where(work_items[:, None], np.ceil(g / np.where(b > 0, b, np.nan)), g)
    out[rows] = per_dim.prod(axis=1)
    return out


def block_threads(trace: Trace) -> SparseColumn:
    """For every event, the threads per block (work-items per work-group) of its kernel launch: the
    product of its ``block`` (or its launch call's, as :func:`kernel_blocks`); NaN when unknown. Held for
    the kernels whose size is known (:class:`SparseColumn`)."""
    return trace.memo("block_threads", lambda: _block_threads(trace))


def _block_threads(trace: Trace) -> SparseColumn:
    """:func:`block_threads` made on the kernel rows alone: the column :meth:`SparseColumn.of` would keep
    of the dense one (NaN elsewhere), without a full-length temporary (a 4.5 GB trace: 51 MB)."""
    n = len(trace.events)
    rows, _, block, _ = _kernel_geometry(trace, "block")
    if len(rows) == 0:
        return SparseColumn.at(rows, np.zeros(0), np.nan, n)
    return SparseColumn.at(rows, _dims_table(trace, unique_values(block))[block].prod(axis=1), np.nan, n)


def _kernel_geometry(trace: Trace, needed: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(kernel rows, grid ids, block ids, launch rows)``: where a kernel's ``needed`` column (``"grid"``
    or ``"block"``) is empty, its grid and block are both its launch call's."""
    ev = trace.events
    rows = np.flatnonzero(ev.kind == Kind.KERNEL)
    grid, block = ev.grid[rows].copy(), ev.block[rows].copy()
    launch = launch_of(trace)[rows]
    borrow = ((grid if needed == "grid" else block) == 0) & (launch >= 0)
    grid[borrow] = ev.grid[launch[borrow]]
    block[borrow] = ev.block[launch[borrow]]
    return rows, grid, block, launch


def _dims_table(trace: Trace, ids: np.ndarray) -> np.ndarray:
    """Rows of (x, y, z) for string ids holding ``[x, y, z]`` texts; NaN rows for others (id 0: none)."""
    table = np.full((len(trace.strings) + 1, 3), np.nan)
    for sid in ids.tolist():
        if sid <= 0:
            continue
        values = [int(v) for v in _INT.findall(trace.strings[sid])]
        if len(values) == 3 and all(v >= 0 for v in values) and math.prod(values) < 2**63:
            table[sid] = values
    return table
