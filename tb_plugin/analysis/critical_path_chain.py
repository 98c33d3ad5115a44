"""One chain of the critical path (see :mod:`analysis.critical_path`): its segments, collected backward
by the walk, folded into the summary a rank keeps (µs per category, the longest segments, the work
grouped by name, the time the host was blocked on the device)."""

from __future__ import annotations

import bisect
import itertools

import numpy as np

CATEGORIES = ("kernel", "cpu", "communication", "waiting")
KERNEL, CPU, COMM, WAIT = range(4)
TOP = 10
MAX_ITEMS = 10  # items (work grouped by name) a chain keeps, as many as a step reports


class Walk:
    """The segments of one chain, collected backward as ``(start, end, category, name, row,
    host_blocked_us)``; ``marks`` are the device nodes met (where their segment begins), ``tail`` the
    memoized rest of the walk and ``block`` the latest ``[call start, waited end]`` of a blocking call
    the walk came through (segments inside it are time the host was blocked on the device)."""

    def __init__(self, lo: float, hi: float, memo: dict):
        self.lo, self.hi, self.memo = lo, hi, memo
        self.segs: list[tuple] = []
        self.marks: list[tuple[int, int]] = []
        self.tail: tuple | None = None  # (Folded, segment): the memoized rest of the walk
        self.stop, self.stop_at, self.truncated = -1, lo, False
        self.block = (0.0, -np.inf)

    def add(self, a: float, b: float, cat: int, name: str, row: int = -1) -> None:
        if b > a:
            lo, hi = self.block
            blocked = (min(b, hi) - max(a, lo)) if hi > a and lo < b else 0.0
            self.segs.append((float(a), float(b), cat, name, row, blocked))

    def fold(self, memo: dict) -> tuple:
        """The summary state of the whole chain, ``(by_category, top, work, stop, stop_at, truncated,
        blocked, items)``, folding segments from the last (earliest) to the first onto the memoized
        tail; each marked node gets the state at its segment in ``memo``, as a ``(Folded, position)``
        pair made into that state only when a later walk reaches the node (:meth:`Folded.state`).
        ``items``: the work grouped by name, as a lazy :class:`Items`."""
        tail = self.tail[0].state(self.tail[1]) if self.tail is not None else None
        folded = Folded(self, tail)
        marks = dict(self.marks)  # one node per segment (the last marked there), in segment order
        at, nodes = list(marks), list(marks.values())
        inside = bisect.bisect_left(at, len(self.segs))  # a mark past the last segment marks nothing
        # in folding order (last segment first): a node marked twice keeps the state at its first segment
        memo.update(zip(nodes[inside - 1 :: -1] if inside else [], zip(itertools.repeat(folded), at[inside - 1 :: -1])))
        return folded.state(0)

    def summary(self, ctx=None) -> dict:
        """Bounds (common clock), µs per category, the ten longest segments, the longest work, the
        host-blocked µs and the :data:`MAX_ITEMS` items of most time (``[category, name, µs, segments]``).
        ``ctx``: row → context of a host segment (:func:`analysis.host_tiles.context`)."""
        by_cat, top, work, stop, stop_at, trunc, blocked, items = self.fold(self.memo)
        lo = stop_at if stop >= 0 else self.lo
        ranked = sorted(items.resolve().items(), key=lambda kv: -kv[1][0])[:MAX_ITEMS]
        return {
            "lo": lo,
            "hi": self.hi,
            "by_category": [float(x) for x in by_cat],
            "top": [_segment(s, ctx) for s in top],
            "work": _segment(work, ctx) if work else None,
            "stop": stop,
            "truncated": bool(trunc),
            "host_blocked_us": float(blocked),
            "items": [[int(c), n, float(v[0]), int(v[1])] for (c, n), v in ranked],
        }


class Folded:
    """A walk's segments folded onto its tail, in numpy: the running µs per category and host-blocked µs
    (sequential sums in folding order, so every partial sum is the one a segment-by-segment fold makes)
    and each segment's duration, for the state at any segment (:meth:`state`)."""

    def __init__(self, w: Walk, tail: tuple | None):
        self.w = w
        empty: tuple = ([0.0] * len(CATEGORIES), [], None, w.stop, w.stop_at, w.truncated, 0.0, None)
        by_cat, top, self.work, self.stop, self.stop_at, trunc, blocked, self.items = tail or empty
        self.top, self.trunc = list(top), trunc or w.truncated
        n = len(w.segs)
        a, b, cat, blk = _columns(w.segs, n)
        self.dur = (b - a)[::-1]  # folding order: the last (earliest) segment first
        self.cat = cat[::-1]
        self.sums = np.cumsum(
            np.vstack([np.r_[by_cat[c], np.where(self.cat == c, self.dur, 0.0)] for c in range(len(CATEGORIES))]),
            axis=1,
        )  # adding 0.0 leaves a sum as it is: each row is its category's running sum
        self.blocked = np.cumsum(np.r_[blocked, blk[::-1]])
        self.top_dur = np.r_[[s[1] - s[0] for s in self.top], self.dur]
        self.work_dur = np.where(self.cat != WAIT, self.dur, -np.inf)

    def state(self, p: int) -> tuple:
        """The summary state once segment ``p`` (and every later one in the list: earlier in time) is
        folded: ``(by_category, top, work, stop, stop_at, truncated, blocked, items)``."""
        segs, n, k = self.w.segs, len(self.w.segs), len(self.top)
        j = n - p  # segments folded
        ranked = np.argsort(-self.top_dur[: k + j], kind="stable")[:TOP]  # ties: the earlier folded first
        top = [self.top[i] if i < k else segs[n - 1 - (i - k)] for i in ranked.tolist()]
        work = self.work
        if j:
            best = int(np.argmax(self.work_dur[:j]))  # the first of the longest
            if self.work_dur[best] > -np.inf and (work is None or self.work_dur[best] > work[1] - work[0]):
                work = segs[n - 1 - best]
        by_cat = self.sums[:, j].tolist()
        blocked = float(self.blocked[j])
        return by_cat, top, work, self.stop, self.stop_at, self.trunc, blocked, Items(segs, p, self.items)


def _columns(segs: list, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Start, end, category and host-blocked µs of every segment (a C-level transpose)."""
    if not n:
        return np.zeros(0), np.zeros(0), np.zeros(0, np.int64), np.zeros(0)
    a, b, cat, _, _, blk = zip(*segs)
    return np.array(a, float), np.array(b, float), np.array(cat, np.int64), np.array(blk, float)


class Items:
    """The work of a chain's suffix grouped by ``(category, name)``: ``segs[p:]`` plus a memoized tail's
    items, added up on first use only (a copy at every marked node would cost the number of names per
    device node walked) and kept."""

    __slots__ = ("segs", "p", "tail", "done")

    def __init__(self, segs: list, p: int, tail: Items | None):
        self.segs, self.p, self.tail = segs, p, tail
        self.done: dict | None = None

    def resolve(self) -> dict:
        """``{(category, name): [µs, segments]}``, in the order a segment-by-segment pass inserts them
        (the tail's first, then by first segment) with the same sequential sums."""
        if self.done is None:
            out = {k: list(v) for k, v in self.tail.resolve().items()} if self.tail is not None else {}
            segs = self.segs[self.p :]
            if segs:
                a, b, cat, name = list(zip(*segs))[:4]
                keep = np.array(cat) != WAIT
                pairs = list(itertools.compress(zip(cat, name), keep.tolist()))
                keys = list(dict.fromkeys(pairs))  # in order of their first segment
                group = np.fromiter(map(dict(zip(keys, itertools.count())).__getitem__, pairs), np.int64, len(pairs))
                total = np.array([out.get(key, (0.0, 0))[0] for key in keys], float)
                np.add.at(total, group, np.array(b)[keep] - np.array(a)[keep])  # in segment order: sums as one by one
                count = np.bincount(group, minlength=len(keys)).tolist()
                for key, us, n in zip(keys, total.tolist(), count):  # one pass per distinct name
                    old = out.get(key)
                    out[key] = [us, n + (old[1] if old is not None else 0)]
            self.done = out
        return self.done


def _segment(seg: tuple, ctx=None) -> list:
    """A path segment as it travels: ``[category index, name, start_us, dur_us, row, annotation,
    python]`` (a list: the analysis cache's msgpack round trip gives lists back); ``start_us`` on the
    rank's own clock (as in its trace), ``row`` its event in that trace (the kernel, or the host event
    of the tile), −1 for waiting; ``annotation``/``python``: the enclosing annotation and Python frame
    of a host segment, or of a replayed kernel's captured launch (None: none, or another segment)."""
    a, b, cat, name, row = seg[:5]
    c = ctx(row) if ctx is not None and cat in (CPU, KERNEL) and row >= 0 else {"annotation": None, "python": None}
    return [int(cat), name, a, b - a, int(row), c["annotation"], c["python"]]
