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
from ..trace.heap import release_after_step
from ..trace.model import Trace
from ..trace.sparse import row_dtype

_RANK = {
    int(Kind.PYTHON_FUNCTION): 0,
    int(Kind.USER_ANNOTATION): 1,
    int(Kind.CPU_OP): 2,
    int(Kind.RUNTIME): 3,
    int(Kind.DRIVER): 3,
}


@dataclasses.dataclass
class OpTree:
    op_parent: np.ndarray  # innermost enclosing operator row, or -1 (for every event; int32 under 2³¹ events)
    py_parent: np.ndarray  # innermost enclosing python_function row, or -1
    crossings: int  # malformed (crossing) events seen
    order: np.ndarray  # host rows in nesting order (parents before children; the parents' dtype)


BLOCK = 1 << 15  # positions a pointer-jumping pass keeps to (~1.5 MB of its arrays: inside a core's L2)
FEW = (
    BLOCK >> 6
)  # a block's last positions, left to the pass over the whole array (rounds of a few positions cost their calls)


def _nearest_reaching(e: np.ndarray, linked: np.ndarray, step: int, strict: bool) -> np.ndarray:
    """Per position i: the nearest j in direction ``step`` (−1: before, +1: after) with ``e[j] >= e[i]``
    (``e[j] > e[i]`` when ``strict``), or −1, not reaching past a position whose ``linked`` is False
    (a thread's first event going back, its last going forward). ``e`` holds no NaN (callers read a
    non-finite end as −inf). Pointer jumping: a failed candidate c is replaced by its own link, since
    everything between c and its link fails c's own test, so it fails i's too (c failed it). Rounds
    grow with the nesting depth's logarithm. The rounds run block by block (:data:`BLOCK` positions,
    whose arrays stay in the cache) while a candidate stays in its block; the positions whose
    candidate leaves it, and a block's last few, jump on together over the whole array."""
    n = len(e)
    cand: np.ndarray = np.arange(step, n + step, dtype=row_dtype(n + 1))  # int32 positions under 2³¹: half the bytes
    cand[~linked] = -1
    left = [
        _reach_rounds(e, cand, lo + np.flatnonzero(cand[lo : lo + BLOCK] >= 0), step, strict, lo, FEW)
        for lo in range(0, n, BLOCK)
    ]
    _reach_rounds(e, cand, np.concatenate(left) if left else np.zeros(0, np.int64), step, strict, -1, 0)
    return cand


def _reach_rounds(
    e: np.ndarray, cand: np.ndarray, todo: np.ndarray, step: int, strict: bool, lo: int, few: int
) -> np.ndarray:
    """:func:`_nearest_reaching`'s rounds for positions ``todo`` (sorted), in place on ``cand``, within
    the block starting at ``lo`` (−1: the whole array) until ``few`` or fewer remain; returns the
    positions not resolved (a candidate outside the block, or the last ``few``), sorted."""
    hi = lo + BLOCK if lo >= 0 else len(e)
    left = []
    while len(todo) > few:
        c = cand[todo]
        out = c < lo if step < 0 else c >= hi
        if lo >= 0 and out.any():
            left.append(todo[out])
            keep = ~out
            todo, c = todo[keep], c[keep]
        done = e[c] > e[todo] if strict else e[c] >= e[todo]
        todo = todo[~done]
        cand[todo] = cand[cand[todo]]
        todo = todo[cand[todo] >= 0]
    left.append(todo)
    return np.sort(np.concatenate(left)) if len(left) > 1 else todo


def _first_in_chain(link: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Per position i: the first of ``link[i]``, ``link[link[i]]``, … that is ``wanted``, or −1;
    a position like ``i``. Pointer jumping on "the nearest wanted at or before me in the chain", so
    rounds grow with the chain length's logarithm; block by block as in :func:`_nearest_reaching`
    while the chain stays in the block (a parent is near its children in nesting order), then the
    positions whose chain left their block, together."""
    n = len(link)
    nearest = np.arange(n, dtype=link.dtype)  # self if wanted, else follow the link (written in place: no third column)
    np.copyto(nearest, link, where=~wanted)
    left = []
    for lo in range(0, n, BLOCK):
        hi = min(lo + BLOCK, n)
        todo = lo + np.flatnonzero(~wanted[lo:hi] & (nearest[lo:hi] >= 0))
        while len(todo) > FEW:
            c = nearest[todo]
            out = (c < lo) | (c >= hi)
            if out.any():
                left.append(todo[out])
                keep = ~out
                todo, c = todo[keep], c[keep]
            todo = todo[~wanted[c]]
            nearest[todo] = nearest[nearest[todo]]
            todo = todo[nearest[todo] >= 0]
        left.append(todo)
    todo = np.concatenate(left) if left else np.zeros(0, dtype=np.int64)
    while len(todo):
        todo = todo[~wanted[nearest[todo]]]
        nearest[todo] = nearest[nearest[todo]]
        todo = todo[nearest[todo] >= 0]
    # one gather over every position (a link of −1 reads the last position: overwritten), not a
    # compress, a gather and a masked scatter (4.5 GB trace: ~4 passes over 5.3 M positions fewer)
    first = nearest[link]
    np.copyto(first, -1, where=link < 0)
    return first


def ancestor_counts(parent: np.ndarray) -> np.ndarray:
    """Per node of a forest given by ``parent`` (−1: a root): its number of ancestors (list ranking by
    pointer doubling)."""
    hop = parent.copy()
    count = (hop >= 0).astype(np.int64)
    live = np.flatnonzero(hop >= 0)
    while len(live):
        up = hop[live]
        count[live] += count[up]  # right-hand sides read before any write: one synchronous round
        hop[live] = hop[up]
        live = live[hop[live] >= 0]
    return count


def path_nodes(parent: np.ndarray, label: np.ndarray, max_depth: int | None = None):
    """Calls → tree nodes: calls with the same path of labels from their root are one node (the
    Module view's and the diff's operator tree). ``parent``: per call the index of its parent call
    (−1: a root); ``label``: a label id per call. Returns ``(node per call, folded per call, parent node
    per node, label per node)``; with ``max_depth``, a call more than ``max_depth`` levels deep is
    folded: its node is its depth-``max_depth`` ancestor's. One pass per nesting level (that level's
    calls keyed by their parent's node and their label), none per call."""
    depth = ancestor_counts(parent)
    node = np.full(len(parent), -1, dtype=np.int64)
    folded = depth >= max_depth if max_depth is not None else np.zeros(len(parent), dtype=bool)
    by_depth = np.argsort(depth, kind="stable")
    bounds = np.searchsorted(depth[by_depth], np.arange(int(depth.max(initial=0)) + 2))
    node_parent: list[np.ndarray] = [np.zeros(0, dtype=np.int64)]
    node_label: list[np.ndarray] = [np.zeros(0, dtype=np.int64)]
    made = 0
    for level in range(len(bounds) - 1):
        at = by_depth[bounds[level] : bounds[level + 1]]
        above = np.where(parent[at] >= 0, node[np.maximum(parent[at], 0)], -1)
        if max_depth is not None and level >= max_depth:
            node[at] = above
            continue
        keys, inverse = np.unique(np.stack([above, label[at]], axis=1), axis=0, return_inverse=True)
        node[at] = made + inverse.reshape(-1)
        node_parent.append(keys[:, 0])
        node_label.append(keys[:, 1])
        made += len(keys)
    return node, folded, np.concatenate(node_parent), np.concatenate(node_label)


FEW_THREADS = 64  # threads taken one pass each by :func:`by_thread_and_start` (more: one sort)


def by_thread_and_start(thread: np.ndarray, start: np.ndarray, ties: tuple[np.ndarray, ...]) -> np.ndarray:
    """``np.lexsort(ties + (start, thread))``: positions by thread, then start, then the ``ties`` keys
    (the last one first, as lexsort reads them), then position. When the starts never decrease (the
    decode leaves the events in time order) and the threads are few, the positions are each
    thread's in turn, and only the runs of equal (thread, start) are sorted by the tie keys: a pass
    per thread instead of a sort per key (a four-key sort of 5.3 M events took ~0.6 s, and slowed
    faster than the events grew)."""
    narrow = row_dtype(len(start))  # int32 positions under 2³¹: half the bytes of int64
    if len(start) > 1 and bool(np.all(start[1:] >= start[:-1])):
        ordered = np.sort(thread)
        distinct = ordered[np.r_[True, ordered[1:] != ordered[:-1]]]
        del ordered
        if len(distinct) <= FEW_THREADS:
            order = np.concatenate([np.flatnonzero(thread == key).astype(narrow) for key in distinct.tolist()])
            # each position with the next: the same start and thread (one gathered column at a time)
            st = start[order]
            tie = st[1:] == st[:-1]
            del st
            th = thread[order]
            tie &= th[1:] == th[:-1]
            del th
            if tie.any():
                at = np.flatnonzero(np.r_[tie, False] | np.r_[False, tie])  # positions in a run of ties
                run = np.cumsum(np.r_[True, ~tie])[at]  # the run each belongs to
                sub = order[at]
                order[at] = sub[np.lexsort(tuple(key[sub] for key in ties) + (run,))]
            return order
    return np.lexsort(ties + (start, thread)).astype(narrow, copy=False)


def rows_at(rows: np.ndarray, at: np.ndarray) -> np.ndarray:
    """``rows[at]``, −1 where ``at`` is −1 (in ``rows``' dtype): the row of each position a pass found."""
    hit: np.ndarray = rows[np.maximum(at, 0)]
    hit[at < 0] = -1
    return hit


def op_tree(trace: Trace) -> OpTree:
    return trace.memo("op_tree", lambda: _build(trace))


def _build(trace: Trace) -> OpTree:
    ev = trace.events
    n = len(ev)
    op_parent: np.ndarray = np.full(n, -1, dtype=row_dtype(n))  # int32 rows under 2³¹ events: held for the trace's life
    py_parent: np.ndarray = np.full(n, -1, dtype=row_dtype(n))
    kind = ev.kind
    rank_table = np.full(256, -1, dtype=np.int8)  # one byte a row: the sort's first key, radix-sorted
    for k, r in _RANK.items():
        rank_table[k] = r
    rank = rank_table[kind]
    rows = np.flatnonzero(rank >= 0).astype(op_parent.dtype)  # row numbers, int32 under 2³¹ events
    if len(rows) == 0:
        return OpTree(op_parent, py_parent, 0, rows)
    thread = ev.pid[rows].astype(np.int64) << 32 | ev.tid[rows].astype(np.int64)
    start = ev.ts[rows]
    end = start + ev.dur[rows]
    order = by_thread_and_start(thread, start, (rank[rows], -end))
    rank = rank[rows][order]  # reordered one column at a time: one old column held beside its new one
    rows = rows[order]
    thread = thread[order]
    start = start[order]
    end = end[order]
    del order
    # An event stays open until an event of its thread ends after it (ties stay nested); so the
    # enclosing events of event i are those j before it, on its thread, whose end is ≥ every end in
    # (j, i]: the chain of "previous greater-or-equal end" links from i. Its parent of a kind is the
    # first event of that kind in the chain that has a length. A non-finite end neither closes nor
    # contains anything (it reads as -inf).
    e = np.where(np.isfinite(end), end, -np.inf)
    same_thread = thread[1:] == thread[:-1]  # each position with the next: the keys are not needed again
    del end, thread
    same_thread_before = np.r_[False, same_thread]
    pge = _nearest_reaching(e, same_thread_before, -1, strict=False)
    opened = e > start
    is_op_kind = (rank == 1) | (rank == 2)
    for out, wanted in ((op_parent, opened & is_op_kind), (py_parent, opened & (rank == 0))):
        at = _first_in_chain(pge, wanted)  # a position in this sorted order
        out[rows] = rows_at(rows, at)
    del pge, at
    # a crossing: an open operator closed by an event that starts inside it and ends after it
    nxt = _nearest_reaching(e, np.r_[same_thread, False], +1, strict=True)
    ops = np.flatnonzero(opened & is_op_kind & (nxt >= 0))
    crossings = int(np.count_nonzero(start[nxt[ops]] < e[ops]))
    return OpTree(op_parent, py_parent, crossings, rows)


def positions_among(mask: np.ndarray) -> np.ndarray:
    """Per row ``r``: the number of rows before ``r`` where ``mask`` is True, so for a row of the mask
    its position among them: ``np.searchsorted(np.flatnonzero(mask), rows)`` read as one gather
    ``positions_among(mask)[rows]`` (rows ≥ 0) instead of a binary search per row, whose probes miss
    the cache once the rows outgrow it. int32 under 2³¹ rows."""
    pos: np.ndarray = np.cumsum(mask, dtype=row_dtype(len(mask)))
    pos -= mask  # exclusive: the rows before, not this one
    return pos


def parent_positions(at: np.ndarray, op_parent: np.ndarray) -> np.ndarray:
    """Per operator, its enclosing operator's position among the operators, or -1 (``op_parent``: the
    operators' parent rows, -1 for none; ``at``: :func:`positions_among` of the operator mask). int32
    under 2³¹ operators."""
    pos: np.ndarray = at[op_parent].astype(row_dtype(len(op_parent)))
    pos[op_parent < 0] = -1
    return pos


def roll_up(arrays: list[np.ndarray], rows: np.ndarray, parent: np.ndarray) -> None:
    """Add each of ``rows``' values into its parent's, deepest rows first, so sums climb whole chains
    (a row whose parent is also in ``rows`` passes on what it received). Depth is counted along
    ``parent`` within ``rows``; one ``np.add.at`` per depth level, no Python loop over rows."""
    climb(rows, parent).add_up(arrays)


@dataclasses.dataclass
class Climb:
    """:func:`roll_up`'s levels, made once for several arrays summed one after another (the memory
    section's seven columns: each rolled up and reduced before the next is made, not all held at once).
    ``sel[bounds[k]:bounds[k + 1]]``: the rows of the k-th level, deepest first, each level's rows in
    the order of ``rows``; ``up``: each one's parent."""

    sel: np.ndarray
    up: np.ndarray
    bounds: list[int]

    def add_up(self, arrays: list[np.ndarray]) -> None:
        """Each level's values added into its parents', deepest level first, for each of ``arrays``
        (in place; the same additions in the same order as one roll-up of each)."""
        for lo, hi in zip(self.bounds[:-1], self.bounds[1:]):
            sel, up = self.sel[lo:hi], self.up[lo:hi]
            for arr in arrays:
                np.add.at(arr, up, arr[sel])
            release_after_step()  # the level's gathers (sizes differ per level: freed, rarely reused)


def climb(rows: np.ndarray, parent: np.ndarray) -> Climb:
    """The levels of ``rows`` (positions into ``parent``; −1: a root) for :meth:`Climb.add_up`: a row's
    level is its number of ancestors inside ``rows``; the rows without a parent take no part. Row
    positions are held in ``parent``'s row dtype (int32 under 2³¹)."""
    rows = np.asarray(rows)
    if rows.dtype.kind not in "iu":
        rows = rows.astype(np.int64)
    narrow = row_dtype(len(parent))
    if len(rows) == 0:
        return Climb(np.zeros(0, narrow), np.zeros(0, narrow), [0])
    rows = rows.astype(narrow, copy=False)
    inside = np.zeros(len(parent), dtype=bool)
    inside[rows] = True
    depth = np.zeros(len(rows), dtype=np.int32)  # nesting levels
    todo: np.ndarray = np.flatnonzero(parent[rows] >= 0).astype(narrow)  # the rows still climbing: fewer each pass
    anc = parent[rows[todo]]
    while len(todo):  # one pass per nesting level
        keep = inside[anc]
        todo, anc = todo[keep], anc[keep]
        depth[todo] += 1
        anc = parent[anc]
        keep = anc >= 0
        todo, anc = todo[keep], anc[keep]
        release_after_step()  # (each pass's arrays are shorter than the last's: their pages are rarely reused)
    del todo, anc, inside
    has_parent: np.ndarray = np.flatnonzero(parent[rows] >= 0).astype(narrow)
    top = int(depth.max(initial=0))
    levels = top - depth[has_parent]  # deepest first
    if len(levels) and top <= np.iinfo(np.uint16).max:
        levels = levels.astype(np.uint16)  # a stable sort of 16-bit keys is a radix sort: linear
    by_level = np.argsort(levels, kind="stable")  # each level's rows in their order
    bounds = np.searchsorted(levels[by_level], np.arange(top + 2)).tolist()
    del levels
    sel = rows[has_parent[by_level]]
    del by_level, has_parent
    return Climb(sel, parent[sel], bounds)
