"""Host tiles: one thread's busy time cut into named, non-overlapping pieces (µs), for the critical path.

At each instant a thread runs a chain of nested host events. Its **tile** there is named by the
**outermost non-Python event** of the chain (an operator ``aten::…``, a ``record_function``
annotation, a runtime/driver call made outside any operator, a data loader span), else, where only
Python frames (``python_function``, ``with_stack``) run, by the **innermost Python frame**. Adjacent
pieces of one frame are one tile. So a trace without Python frames is cut into its top-level events,
as before; a ``with_stack`` trace is no longer one tile per step named by the script's ``<module>``
frame (which says nothing), but by the operators on the path and the Python functions between them.
The tiles cover exactly the union of the thread's host events (outermost events with crossings kept
as the incumbent rule: an event that starts before every earlier one ended is inside them).
"""

from __future__ import annotations

import numpy as np

from ..trace.categories import Kind
from ..trace.model import Trace


def host_tiles(trace: Trace, rows: np.ndarray, py_parent: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tiles of one thread: ``(row naming the tile, start µs, end µs)``, by start, not overlapping.

    ``rows``: the thread's host events of finite time, ordered by (start, −duration); ``py_parent``:
    per event its innermost enclosing Python frame (:func:`analysis.op_tree.op_tree`)."""
    ev = trace.events
    s = ev.ts[rows]
    e = s + ev.dur[rows]
    is_py = ev.kind[rows] == Kind.PYTHON_FUNCTION
    other, os_, oe = rows[~is_py], s[~is_py], e[~is_py]
    before = np.concatenate([[-np.inf], np.maximum.accumulate(oe)[:-1]])
    top = os_ >= before  # outermost non-Python events (not inside an earlier one)
    u_rows, us, ue = other[top], os_[top], oe[top]
    if not is_py.any():
        return u_rows, us, ue
    py_rows, ps = rows[is_py], s[is_py]
    bounds = np.unique(np.concatenate([ps, e[is_py], us, ue]))
    lo, hi = bounds[:-1], bounds[1:]
    if len(us):
        k = np.searchsorted(us, lo, side="right") - 1
        inside = (k >= 0) & (ue[np.maximum(k, 0)] > lo)
        lo, hi = lo[~inside], hi[~inside]
    # the innermost frame over [lo, hi): the last frame to start at or before lo (the shortest one on a
    # tie: rows are by start, longest first), climbed to enclosing frames until one reaches hi; one
    # round per nesting level, not per event
    j = np.searchsorted(ps, lo, side="right") - 1
    cand = np.where(j >= 0, py_rows[np.maximum(j, 0)], -1)
    while True:
        at = np.maximum(cand, 0)
        up = (cand >= 0) & (ev.ts[at] + ev.dur[at] < hi)
        if not up.any():
            break
        cand[up] = py_parent[cand[up]]
    keep = cand >= 0
    cand, lo, hi = cand[keep], lo[keep], hi[keep]
    if len(cand):
        first = np.concatenate([[True], (cand[1:] != cand[:-1]) | (lo[1:] != hi[:-1])])
        idx = np.flatnonzero(first)
        last = np.concatenate([idx[1:], [len(cand)]]) - 1
        cand, lo, hi = cand[idx], lo[idx], hi[last]
    all_rows = np.concatenate([u_rows, cand])
    all_s, all_e = np.concatenate([us, lo]), np.concatenate([ue, hi])
    order = np.argsort(all_s, kind="stable")
    return all_rows[order], all_s[order], all_e[order]
