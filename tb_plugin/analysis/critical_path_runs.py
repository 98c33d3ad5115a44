"""The critical path's walk (:mod:`analysis.critical_path`) along stream order, a run of nodes at a time.

Where kernels run back to back on a stream, the walk goes from each device node to its stream
predecessor, node after node: most of a GPU-bound step. Whether a node hands the walk to its
predecessor depends on the node alone (its launch, its recorded or inferred wait, the predecessor's
end) once the predecessor ends and the node starts after the step start, so it is computed for every
node at once (:func:`stream_steps`), and a run of such nodes becomes its segments in one numpy pass
(:func:`walk_run`): the same segments, marks and visits, in the same order, as the node-by-node walk.
"""

from __future__ import annotations

import numpy as np

from .critical_path_chain import KERNEL, WAIT, Walk

FIRST_CHUNK = 64  # nodes checked against the step at first; doubled until the run ends (a short run stays cheap)


def stream_steps(
    ts: np.ndarray,
    te: np.ndarray,
    prev: np.ndarray,
    launch_end: np.ndarray,
    waits: np.ndarray,
    inferred: tuple[np.ndarray, np.ndarray] | None,
    comm_of: np.ndarray,
) -> np.ndarray:
    """Per device node, the highest node at or below it (device order) where the walk does not go on to
    the stream predecessor (−1: none): a node goes on when it is no communication kernel and its
    predecessor on the stream ends at or after its launch (``launch_end``, −inf: none) and before any
    recorded wait's work (``waits``, −1: none) or inferred wait's (``inferred``: the latest end before
    its start and that node, None when the trace records its waits). µs; the rules of
    ``RankGraph._before_dev`` with the step start below both ends."""
    n = len(ts)
    if not n:
        return np.zeros(0, dtype=np.int64)
    p_end = np.minimum(te[np.maximum(prev, 0)], ts)
    l_end = np.minimum(launch_end, ts)
    best = np.maximum(p_end, l_end)
    goes_on = (prev >= 0) & (p_end >= l_end) & (comm_of < 0)
    goes_on &= ~((waits >= 0) & (np.minimum(te[np.maximum(waits, 0)], ts) > best))
    if inferred is not None:
        inf_end, inf_node = inferred
        goes_on &= ~((best < ts) & (inf_node >= 0) & (inf_end > best))
    idx = np.arange(n)
    return np.maximum.accumulate(np.where(goes_on, -1, idx))


def walk_run(
    w: Walk,
    top: int,
    stops: np.ndarray,
    ts: np.ndarray,
    te: np.ndarray,
    memo_mask: np.ndarray,
    names: np.ndarray,
    rows: np.ndarray,
    most: int,
) -> int:
    """Walk the stream-order run that starts at node ``top`` (reached at its successor's start), at most
    ``most`` nodes: append their segments (idle before each node's end, then the kernel) and marks to
    ``w``; return the node the walk reaches next (at its successor's start), for the node-by-node walk.
    A run ends at a node of ``stops`` (:func:`stream_steps`), at one that starts at or before the step
    start or whose predecessor ends there, and at a node ``memo_mask`` holds (ending before its successor)."""
    lo = w.lo
    floor = int(stops[top]) + 1  # the nodes in [floor, top] hand the walk on, step start apart
    floor = max(floor, floor + int(np.searchsorted(ts[floor : top + 1], lo, side="right")), top - most + 1)
    k, size = floor - 1, FIRST_CHUNK  # k: the first node (from the top) the run leaves to the node-by-node walk
    hi = top
    while hi >= floor:
        first = max(floor, hi - size + 1)
        chunk = np.arange(first, hi + 1)
        ends = np.minimum(te[chunk], ts[chunk + 1])
        bad = (te[chunk - 1] <= lo) | ((ends == te[chunk]) & memo_mask[chunk])
        if bad.any():
            k = first + int(np.flatnonzero(bad)[-1])
            break
        hi, size = first - 1, size * 2
    if k >= top:
        return top
    m = np.arange(top, k, -1)  # the run, in walk order
    t = ts[m + 1]
    end = np.minimum(te[m], t)
    start = ts[m]
    has_idle, has_kernel = end < t, end > start
    a = np.column_stack([end, start]).ravel()
    b = np.column_stack([t, end]).ravel()
    keep = np.column_stack([has_idle, has_kernel]).ravel()
    cat = np.tile(np.array([WAIT, KERNEL]), len(m))[keep]
    name = np.column_stack([np.full(len(m), "idle", dtype=object), names[m]]).ravel()[keep]
    row = np.column_stack([np.full(len(m), -1, dtype=np.int64), rows[m]]).ravel()[keep]
    a, b = a[keep], b[keep]
    b_lo, b_hi = w.block
    blocked = np.where((b_hi > a) & (b_lo < b), np.minimum(b, b_hi) - np.maximum(a, b_lo), 0.0)
    # a node's mark is where its kernel segment goes: after its idle segment and every earlier node's segments
    base = len(w.segs) + np.cumsum(has_idle.astype(np.int64) + has_kernel) - has_kernel
    marked = end == te[m]
    w.marks.extend(zip(base[marked].tolist(), m[marked].tolist()))
    w.segs.extend(zip(a.tolist(), b.tolist(), cat.tolist(), name.tolist(), row.tolist(), blocked.tolist()))
    return k
