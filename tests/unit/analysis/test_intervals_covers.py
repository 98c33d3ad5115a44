"""``analysis.intervals.covers`` on sorted points (a run of points per interval) answers as the
bisection per point does: disjoint intervals with zero lengths, touching ends and infinite ends;
points sorted with repeats, unsorted, or with NaN (the bisection per point then)."""

from __future__ import annotations

import numpy as np

from tb_plugin.analysis import intervals
from tb_plugin.analysis.intervals import covers, first_cover, merge


def _per_point(starts: np.ndarray, ends: np.ndarray, points: np.ndarray) -> np.ndarray:
    idx = np.searchsorted(starts, points, side="right") - 1
    ok = idx >= 0
    out = np.zeros(len(points), dtype=bool)
    out[ok] = points[ok] < ends[idx[ok]]
    return out


def test_covers_equals_the_bisection_per_point():
    rng = np.random.default_rng(5)
    for case in range(300):
        m = int(rng.integers(1, 40))
        if case % 3 == 0:  # merge's output
            s, e = merge(rng.integers(0, 200, m).astype(float), rng.integers(0, 200, m).astype(float) + 3)
        else:  # disjoint, some of zero length or touching the next
            cuts = np.sort(rng.integers(0, 300, 2 * m)).astype(float)
            s, e = cuts[0::2], cuts[1::2]
            if case % 5 == 0:
                e[-1] = np.inf
        points = np.sort(rng.integers(-5, 310, int(rng.integers(0, 400))).astype(float))
        if case % 7 == 0:
            points = rng.permutation(points)
        if case % 11 == 0 and len(points):
            points[-1] = np.nan
        assert np.array_equal(covers(s, e, points), _per_point(s, e, points))
    assert len(covers(np.zeros(0), np.zeros(0), np.arange(3.0))) == 3


def _first_by_loop(merged, points: np.ndarray) -> np.ndarray:
    """The owner of each point as the breakdown assigned it before ``first_cover``: set by set."""
    owner = np.full(len(points), len(merged))
    unclaimed = np.ones(len(points), dtype=bool)
    for c, (s, e) in enumerate(merged):
        hit = unclaimed & _per_point(s, e, points)
        owner[hit] = c
        unclaimed &= ~hit
    return owner


def _sets(rng, k: int, case: int) -> list:
    """``k`` sets of disjoint intervals (merge's output, or cut points: zero lengths, touching ends, an
    infinite end), overlapping each other."""
    out = []
    for _ in range(k):
        m = int(rng.integers(0, 30))
        if case % 3 == 0:
            s, e = merge(rng.integers(0, 200, m).astype(float), rng.integers(0, 200, m).astype(float) + 4)
        else:
            cuts = np.sort(rng.integers(0, 300, 2 * m)).astype(float)
            s, e = cuts[0::2], cuts[1::2]
            if case % 5 == 0 and m:
                e[-1] = np.inf
        out.append((s, e))
    return out


def test_first_cover_equals_the_sets_taken_in_turn(monkeypatch):
    rng = np.random.default_rng(11)
    fast, in_turn = 0, []
    monkeypatch.setattr(intervals, "covers", lambda *a: in_turn.append(1) or covers(*a))
    for case in range(400):
        k = int(rng.integers(0, 9)) if case % 50 else 17  # (17 sets: past the bit table, taken in turn)
        merged = _sets(rng, k, case)
        points = np.unique(rng.integers(-5, 310, int(rng.integers(0, 500))).astype(float))
        if case % 7 == 0:
            points = rng.permutation(points)  # (unsorted: taken in turn)
        if case % 11 == 0 and len(points):
            points[-1] = np.nan
        in_turn.clear()
        got = first_cover(merged, points)
        assert got.dtype == (np.uint8 if k < 255 else np.int64) and np.array_equal(
            got, _first_by_loop(merged, points)
        ), case
        fast += k > 0 and not in_turn
    assert fast > 250  # (most cases took the one-pass path)


def test_first_cover_of_overlapping_sets_takes_the_first():
    points = np.arange(10.0)
    merged = [(np.array([2.0]), np.array([5.0])), (np.array([0.0, 7.0]), np.array([4.0, 8.0]))]
    assert first_cover(merged, points).tolist() == [1, 1, 0, 0, 0, 2, 2, 1, 2, 2]
