"""Host nesting: for every host event, its innermost enclosing operator and Python frame.

Per thread (pid, tid), events are ordered by (start, −end); an event's parent is the innermost
earlier event of non-zero length that contains it: ``parent.ts ≤ ts`` and ``end ≤ parent.end`` (µs).
A zero-length ``[t, t]`` event never contains another event and is never a parent: three zero-length
``aten::mul`` at one timestamp are siblings (three calls), not a chain that the same-name merge would
fold into one. A zero-length event at a parent's start or very end is inside it (µs-truncated
timestamps put ``aten::zero_`` at the end of the ``aten::zeros`` that called it; torch-tb-profiler
leaves such an event out, we keep it in). Operators are
``cpu_op``/``Operator`` and ``user_annotation`` events; launches (runtime/driver calls) and Python
frames (``python_function``) are placed too. An event that crosses a would-be parent (starts inside
it, ends after it) is malformed: it is counted and the would-be parent is closed.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..trace.categories import Kind
from ..trace.model import Trace

_RANK = {int(Kind.PYTHON_FUNCTION): 0, int(Kind.USER_ANNOTATION): 1, int(Kind.CPU_OP): 2,
         int(Kind.RUNTIME): 3, int(Kind.DRIVER): 3}


@dataclasses.dataclass
class OpTree:
    op_parent: np.ndarray  # innermost enclosing operator row, or -1 (for every event)
    py_parent: np.ndarray  # innermost enclosing python_function row, or -1
    crossings: int  # malformed (crossing) events seen
    order: np.ndarray  # host rows in nesting order (parents before children)


def op_tree(trace: Trace) -> OpTree:
    return trace.memo("op_tree", lambda: _build(trace))


def _build(trace: Trace) -> OpTree:
    ev = trace.events
    n = len(ev)
    op_parent = np.full(n, -1, dtype=np.int64)
    py_parent = np.full(n, -1, dtype=np.int64)
    kind = ev.kind
    rank_table = np.full(256, -1, dtype=np.int64)
    for k, r in _RANK.items():
        rank_table[k] = r
    rank = rank_table[kind]
    rows = np.flatnonzero(rank >= 0)
    if len(rows) == 0:
        return OpTree(op_parent, py_parent, 0, rows)
    thread = ev.pid[rows].astype(np.int64) << 32 | ev.tid[rows].astype(np.int64)
    start = ev.ts[rows]
    end = start + ev.dur[rows]
    order = np.lexsort((rank[rows], -end, start, thread))
    rows, thread, start, end, rank = rows[order], thread[order], start[order], end[order], rank[rows][order]
    op_out = op_parent
    py_out = py_parent
    crossings = 0
    ops: list[tuple[float, int]] = []  # (end, row)
    pys: list[tuple[float, int]] = []
    current = None
    for row, th, s, e, r in zip(rows.tolist(), thread.tolist(), start.tolist(), end.tolist(), rank.tolist()):
        if th != current:
            current, ops, pys = th, [], []
        # close every open event that ends before this one does (zero-length ones are never opened)
        while ops and ops[-1][0] < e:
            if ops[-1][0] > s:
                crossings += 1
            ops.pop()
        while pys and pys[-1][0] < e:
            pys.pop()
        if ops:
            op_out[row] = ops[-1][1]
        if pys:
            py_out[row] = pys[-1][1]
        if e <= s:  # a zero-length event contains nothing
            continue
        if r == 1 or r == 2:
            ops.append((e, row))
        elif r == 0:
            pys.append((e, row))
    return OpTree(op_parent, py_parent, crossings, rows)


def roll_up(arrays: list[np.ndarray], rows: np.ndarray, parent: np.ndarray) -> None:
    """Add each of ``rows``' values into its parent's, deepest rows first, so sums climb whole chains
    (a row whose parent is also in ``rows`` passes on what it received). Depth is counted along
    ``parent`` within ``rows``; one ``np.add.at`` per depth level, no Python loop over rows."""
    rows = np.asarray(rows, dtype=np.int64)
    if len(rows) == 0:
        return
    inside = np.zeros(len(parent), dtype=bool)
    inside[rows] = True
    depth = np.zeros(len(rows), dtype=np.int64)
    anc = parent[rows]
    while True:  # one pass per nesting level
        climbing = anc >= 0
        climbing[climbing] = inside[anc[climbing]]
        if not climbing.any():
            break
        depth += climbing
        anc = np.where(climbing, parent[np.maximum(anc, 0)], -1)
    has_parent = parent[rows] >= 0
    for level in range(int(depth.max()), -1, -1):
        sel = rows[(depth == level) & has_parent]
        for arr in arrays:
            np.add.at(arr, parent[sel], arr[sel])
