"""Host tiles: each thread's busy time cut into leaf work (µs), for the critical path.

At each instant a thread runs a chain of nested host events. Its **tile** there is the **innermost**
event of the chain, over that event's self time (the time none of its children runs):

- an operator (``aten::…``) or a runtime/driver call: **leaf work**, named by itself;
- a Python frame (``python_function``, ``with_stack``): the frame's own Python time, named by it;
- an annotation (``record_function``/``user_annotation`` and generic B/E spans) with nothing traced
  inside: **untraced** host time. Its identity is not the annotation: the path names it
  ``untraced host work`` with the annotation as context, except on a thread whose events are all
  annotations (Composer's spans), where the annotation is all there is and is kept, marked as such.

``ProfilerStep#`` markers are left out by the caller. Adjacent pieces of one event are one tile. The
tiles cover exactly the union of the thread's host events. Each tile keeps its event's row; the
enclosing annotation and Python frame of any row are found through ``parent`` (the innermost enclosing
host event of the same thread, −1: none).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..trace.categories import Kind
from ..trace.model import Trace
from .op_tree import _first_in_chain, _nearest_reaching

LEAF, PYTHON, UNTRACED, ANNOTATION = range(4)  # what a tile is (see the module docstring)
UNTRACED_NAME = "untraced host work"
ANNOTATION_SUFFIX = " [annotation]"
_LEAF_KINDS = (Kind.CPU_OP, Kind.RUNTIME, Kind.DRIVER)


@dataclass(frozen=True)
class Tiles:
    """Every thread's tiles, ordered by (thread, start), not overlapping within a thread."""

    thread: np.ndarray  # int64 thread key (pid << 32 | tid) per tile
    row: np.ndarray  # int64: the innermost event over the tile
    start: np.ndarray  # float64 µs
    end: np.ndarray  # float64 µs
    what: np.ndarray  # int8: LEAF, PYTHON, UNTRACED or ANNOTATION
    parent: np.ndarray  # int64 per event of the trace: its innermost enclosing host event (−1: none)


def host_tiles(trace: Trace, rows: np.ndarray) -> Tiles:
    """Tiles of the host events ``rows`` (finite times, any order; see the module docstring)."""
    ev = trace.events
    parent_all = np.full(len(ev), -1, dtype=np.int64)
    thread = ev.pid[rows].astype(np.int64) * (1 << 32) + ev.tid[rows].astype(np.int64)
    s, e = ev.ts[rows], ev.ts[rows] + ev.dur[rows]
    order = np.lexsort((-e, s, thread))
    rows, thread, s, e = rows[order], thread[order], s[order], e[order]
    if not len(rows):
        z = np.zeros(0)
        return Tiles(z.astype(np.int64), z.astype(np.int64), z, z, z.astype(np.int8), parent_all)
    # nesting: the innermost earlier event of the thread, of non-zero length, that contains each one
    same_before = np.r_[False, thread[1:] == thread[:-1]]
    pge = _nearest_reaching(e, same_before, -1, strict=False)
    parent = _first_in_chain(pge, e > s)
    parent_all[rows] = np.where(parent >= 0, rows[np.maximum(parent, 0)], -1)
    # elementary pieces between consecutive boundaries of a thread
    bt = np.concatenate([thread, thread])
    bx = np.concatenate([s, e])
    o = np.lexsort((bx, bt))
    bt, bx = bt[o], bx[o]
    new = np.r_[True, (bt[1:] != bt[:-1]) | (bx[1:] != bx[:-1])]
    bt, bx = bt[new], bx[new]
    piece = np.flatnonzero(bt[1:] == bt[:-1])
    p_thr, lo, hi = bt[piece], bx[piece], bx[piece + 1]
    # the innermost event over [lo, hi): the last one of the thread to start at or before lo (rows are
    # by start, longest first), climbed to enclosing events until one reaches hi (rounds: nesting depth)
    pos = _search_pairs(thread, s, p_thr, lo)
    cand = np.where((pos >= 0) & (thread[np.maximum(pos, 0)] == p_thr), pos, -1)
    while True:
        at = np.maximum(cand, 0)
        up = (cand >= 0) & (e[at] < hi)
        if not up.any():
            break
        cand[up] = parent[cand[up]]
    keep = cand >= 0
    cand, p_thr, lo, hi = cand[keep], p_thr[keep], lo[keep], hi[keep]
    if len(cand):  # adjacent pieces of one event are one tile
        first = np.r_[True, (cand[1:] != cand[:-1]) | (lo[1:] != hi[:-1])]
        idx = np.flatnonzero(first)
        last = np.r_[idx[1:], len(cand)] - 1
        cand, p_thr, lo, hi = cand[idx], p_thr[idx], lo[idx], hi[last]
    kind = ev.kind[rows[cand]]
    what = np.where(np.isin(kind, _LEAF_KINDS), LEAF, np.where(kind == Kind.PYTHON_FUNCTION, PYTHON, UNTRACED))
    # a thread with annotations only keeps them (nothing else names its time)
    has_other = np.isin(ev.kind[rows], _LEAF_KINDS + (Kind.PYTHON_FUNCTION,))
    threads_with_other = np.unique(thread[has_other])
    only_ann = ~np.isin(p_thr, threads_with_other)
    what = np.where(only_ann & (what == UNTRACED), ANNOTATION, what).astype(np.int8)
    return Tiles(p_thr, rows[cand], lo, hi, what, parent_all)


def _search_pairs(a: np.ndarray, b: np.ndarray, qa: np.ndarray, qb: np.ndarray) -> np.ndarray:
    """Per query ``(qa, qb)``: the last position ``i`` of the (a, b)-sorted pairs with ``(a[i], b[i]) ≤
    (qa, qb)``, −1 when none: one merge of both lists (pairs before queries on ties), then the running
    latest pair position."""
    n = len(a)
    kind = np.r_[np.zeros(n, np.int8), np.ones(len(qa), np.int8)]
    order = np.lexsort((kind, np.r_[b, qb], np.r_[a, qa]))
    latest = np.maximum.accumulate(np.where(order < n, order, -1))
    out = np.empty(len(qa), dtype=np.int64)
    is_q = order >= n
    out[order[is_q] - n] = latest[is_q]
    return out


def context(trace: Trace, row: int, parent: np.ndarray) -> dict:
    """The enclosing annotation (not ``ProfilerStep#``) and Python frame of event ``row`` (itself
    included), by climbing ``parent``: ``{"annotation": str | None, "python": str | None}``."""
    ev, out = trace.events, {"annotation": None, "python": None}
    depth = 0
    while row >= 0 and depth < 10_000 and (out["annotation"] is None or out["python"] is None):
        k, name = int(ev.kind[row]), trace.strings[ev.name[row]]
        if k in (Kind.USER_ANNOTATION, Kind.UNKNOWN_HOST) and out["annotation"] is None:
            out["annotation"] = name
        elif k == Kind.PYTHON_FUNCTION and out["python"] is None:
            out["python"] = name
        row, depth = int(parent[row]), depth + 1
    return out
