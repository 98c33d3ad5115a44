"""One chain of the critical path (see :mod:`analysis.critical_path`): its segments, collected backward
by the walk, folded into the summary a rank keeps (µs per category, the longest segments, the work
grouped by name, the time the host was blocked on the device)."""

from __future__ import annotations

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
        self.tail: tuple | None = None
        self.stop, self.stop_at, self.truncated = -1, lo, False
        self.block = (0.0, -np.inf)

    def add(self, a: float, b: float, cat: int, name: str, row: int = -1) -> None:
        if b > a:
            lo, hi = self.block
            blocked = (min(b, hi) - max(a, lo)) if hi > a and lo < b else 0.0
            self.segs.append((float(a), float(b), cat, name, row, blocked))

    def fold(self, memo: dict) -> tuple:
        """The summary state of the whole chain, ``(by_category, top, work, stop, stop_at, truncated,
        blocked, items)``, folding segments from the last (earliest) to the first; each marked node's
        suffix goes to ``memo``. ``items``: the work grouped by name, as a lazy :class:`Items`."""
        tail = self.tail or ([0.0] * len(CATEGORIES), [], None, self.stop, self.stop_at, self.truncated, 0.0, None)
        by_cat, top, work, stop, stop_at, trunc, blocked, tail_items = tail
        by_cat, top = list(by_cat), list(top)
        trunc = trunc or self.truncated
        marks = dict(self.marks)
        for p in range(len(self.segs) - 1, -1, -1):
            a, b, cat, name, _, blk = seg = self.segs[p]
            d = b - a
            by_cat[cat] += d
            blocked += blk
            if len(top) < TOP or d > top[-1][1] - top[-1][0]:
                top = sorted(top + [seg], key=lambda s: -(s[1] - s[0]))[:TOP]
            if cat != WAIT and (work is None or d > work[1] - work[0]):
                work = seg
            if p in marks:
                memo[marks[p]] = (
                    tuple(by_cat),
                    tuple(top),
                    work,
                    stop,
                    stop_at,
                    trunc,
                    blocked,
                    Items(self.segs, p, tail_items),
                )
        return by_cat, top, work, stop, stop_at, trunc, blocked, Items(self.segs, 0, tail_items)

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


class Items:
    """The work of a chain's suffix grouped by ``(category, name)``: ``segs[p:]`` plus a memoized tail's
    items, added up on first use only (a copy at every marked node would cost the number of names per
    device node walked) and kept."""

    __slots__ = ("segs", "p", "tail", "done")

    def __init__(self, segs: list, p: int, tail: Items | None):
        self.segs, self.p, self.tail = segs, p, tail
        self.done: dict | None = None

    def resolve(self) -> dict:
        """``{(category, name): [µs, segments]}``."""
        if self.done is None:
            out = {k: list(v) for k, v in self.tail.resolve().items()} if self.tail is not None else {}
            for a, b, cat, name, *_ in self.segs[self.p :]:
                if cat != WAIT:
                    it = out.get((cat, name))
                    if it is None:
                        out[(cat, name)] = [b - a, 1]
                    else:
                        it[0] += b - a
                        it[1] += 1
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
