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
from ..trace.sparse import row_dtype
from ..trace.uniques import unique_values
from .op_tree import FEW_THREADS, _first_in_chain, _nearest_reaching, by_thread_and_start, rows_at

LEAF, PYTHON, UNTRACED, ANNOTATION = range(4)  # what a tile is (see the module docstring)
UNTRACED_NAME = "untraced host work"
ANNOTATION_SUFFIX = " [annotation]"
_LEAF_KINDS = (Kind.CPU_OP, Kind.RUNTIME, Kind.DRIVER)
NOT_ANNOTATION_KINDS = _LEAF_KINDS + (Kind.PYTHON_FUNCTION,)  # a thread with one of these keeps no annotation tile


@dataclass(frozen=True)
class Tiles:
    """Every thread's tiles, ordered by (thread, start), not overlapping within a thread."""

    thread: np.ndarray  # int64 thread key (pid << 32 | tid) per tile
    row: np.ndarray  # int64: the innermost event over the tile
    start: np.ndarray  # float64 µs
    end: np.ndarray  # float64 µs
    what: np.ndarray  # int8: LEAF, PYTHON, UNTRACED or ANNOTATION
    parent: (
        np.ndarray
    )  # int32 (int64 from 2³¹ events) per event of the trace: its innermost enclosing host event (−1: none)


def host_tiles(
    trace: Trace, rows: np.ndarray, other_threads: np.ndarray | None = None, parent_all: np.ndarray | None = None
) -> Tiles:
    """Tiles of the host events ``rows`` (finite times, any order; see the module docstring).
    ``other_threads``: the sorted thread keys that have events other than annotations, when ``rows`` are
    part of a larger set that decides it (the critical path's rows of a few steps); default: from ``rows``.
    ``parent_all``: the per-event array (every entry −1, :func:`~..trace.sparse.row_dtype`) that
    :attr:`Tiles.parent` is written into, so that a caller making the tiles of a few steps at a time
    fills it once, not once a group; default: a new one."""
    ev = trace.events
    if parent_all is None:
        parent_all = np.full(len(ev), -1, dtype=row_dtype(len(ev)))
    thread = ev.pid[rows].astype(np.int64) * (1 << 32) + ev.tid[rows].astype(np.int64)
    s, e = ev.ts[rows], ev.ts[rows] + ev.dur[rows]
    order = by_thread_and_start(thread, s, (-e,))
    rows, thread, s, e = rows[order], thread[order], s[order], e[order]
    if not len(rows):
        z = np.zeros(0)
        return Tiles(z.astype(np.int64), z.astype(np.int64), z, z, z.astype(np.int8), parent_all)
    # nesting: the innermost earlier event of the thread, of non-zero length, that contains each one
    same_before = np.r_[False, thread[1:] == thread[:-1]]
    pge = _nearest_reaching(e, same_before, -1, strict=False)
    parent = _first_in_chain(pge, e > s)
    parent_all[rows] = rows_at(rows, parent)
    del pge
    # elementary pieces between consecutive boundaries of a thread: the starts (positions 0..n−1) and
    # ends (n..2n−1) merged in (thread, time) order, a start before an end of the same time
    # positions and threads as int32 from here (the pieces are 2n long): a thread is its index among
    # the sorted thread keys, which orders as the key does
    n = len(rows)
    keys = thread[np.r_[True, ~same_before[1:]]]
    narrow: type[np.signedinteger] = row_dtype(2 * n)
    tix = (np.cumsum(~same_before) - 1).astype(narrow)
    del thread, same_before
    o = _boundary_order(tix, s, e, narrow)
    bt, bx = _at(tix, s, e, o, n)
    del s
    new = np.r_[True, (bt[1:] != bt[:-1]) | (bx[1:] != bx[:-1])]
    # the innermost event over [lo, hi): the last one of the thread to start at or before lo (rows are
    # by start, longest first): the latest start position met in the merged order up to the last
    # boundary equal to lo (positions grow with the thread, so an earlier thread's never wins)
    latest = np.maximum.accumulate(np.where(o < n, o, narrow(-1)))
    del o
    # masks, not index arrays: each selection one streaming pass, without 8-byte positions to write and
    # read back (a 4.5 GB trace's 2n boundaries: ~100 MB of them per index array)
    latest = latest[np.r_[new[1:], True]]  # each run's last boundary
    bt, bx = bt[new], bx[new]
    del new
    piece = bt[1:] == bt[:-1]  # [boundary, next boundary) inside one thread
    p_thr, lo, hi, pos = bt[:-1][piece], bx[:-1][piece], bx[1:][piece], latest[:-1][piece]
    del bt, bx, piece, latest
    # climbed to enclosing events until one reaches hi (rounds: nesting depth)
    same = tix[np.maximum(pos, 0)] == p_thr
    same &= pos >= 0
    cand = np.where(same, pos, narrow(-1))
    del pos, same
    todo = np.flatnonzero(cand >= 0)  # the pieces still climbing: each round passes over fewer
    while len(todo):
        todo = todo[e[cand[todo]] < hi[todo]]
        cand[todo] = parent[cand[todo]]
        todo = todo[cand[todo] >= 0]
    del todo
    # compacted one column at a time, so that only one old column is held beside its new one
    keep = cand >= 0
    cand = cand[keep]
    p_thr = p_thr[keep]
    lo = lo[keep]
    hi = hi[keep]
    del keep
    if len(cand):  # adjacent pieces of one event are one tile
        first = np.r_[True, (cand[1:] != cand[:-1]) | (lo[1:] != hi[:-1])]
        hi = hi[np.r_[first[1:], True]]  # each tile's last piece's end
        cand = cand[first]
        p_thr = p_thr[first]
        lo = lo[first]
        del first
    kind = ev.kind[rows[cand]]
    what = np.where(np.isin(kind, _LEAF_KINDS), LEAF, np.where(kind == Kind.PYTHON_FUNCTION, PYTHON, UNTRACED))
    # a thread with annotations only keeps them (nothing else names its time)
    if other_threads is None:
        has_other = np.isin(ev.kind[rows], NOT_ANNOTATION_KINDS)
        only_ann = ~np.isin(p_thr, unique_values(tix[has_other]))
    else:
        only_ann = ~np.isin(keys[p_thr], other_threads)
    what = np.where(only_ann & (what == UNTRACED), ANNOTATION, what).astype(np.int8)
    return Tiles(keys[p_thr], rows[cand], lo, hi, what, parent_all)


def _boundary_order(tix: np.ndarray, s: np.ndarray, e: np.ndarray, narrow: type[np.signedinteger]) -> np.ndarray:
    """The starts (positions 0..n−1) and ends (n..2n−1) merged in (thread, time) order, a start before
    an end of the same time, ties in position order: ``np.lexsort((np.r_[s, e], np.r_[tix, tix]))`` for
    positions grouped by thread (``tix``: each position's thread index, ascending). For a few threads,
    one stable sort of each thread's times (its starts a ready run), not a sort by thread over all 2n
    (~25 % less on 5.3 M events); for many (one per event, in a malformed file), that sort."""
    n = len(s)
    cuts = np.r_[0, np.flatnonzero(np.diff(tix)) + 1, n]
    if len(cuts) - 1 > FEW_THREADS:
        return np.lexsort((np.concatenate([s, e]), np.concatenate([tix, tix]))).astype(narrow)
    o = np.empty(2 * n, dtype=narrow)
    for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
        k = np.argsort(np.concatenate([s[a:b], e[a:b]]), kind="stable")
        # the thread's starts to positions a.., its ends to n + a..: shifted in place, not two shifted
        # copies and a choice between them (three 2n-long temporaries fewer)
        k += a
        np.add(k, n + a - b, out=k, where=k >= b)
        o[2 * a : 2 * b] = k
    return o


def _at(thread: np.ndarray, s: np.ndarray, e: np.ndarray, o: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(thread, time)`` of the merged boundaries ``o`` (positions < ``n``: starts ``s``, else ends
    ``e``): the thread gathered with positions wrapped modulo ``n`` (no index column made), the time
    from the two columns side by side."""
    bt = np.take(thread, o, mode="wrap")
    both = np.concatenate([s, e])
    bx = both[o]
    return bt, bx


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
