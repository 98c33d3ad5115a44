"""``analysis.intervals.covers`` on sorted points (a run of points per interval) answers as the
bisection per point does: disjoint intervals with zero lengths, touching ends and infinite ends;
points sorted with repeats, unsorted, or with NaN (the bisection per point then)."""

from __future__ import annotations

import numpy as np

from tb_plugin.analysis.intervals import covers, merge


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
