"""The operator and kernel tables' "longest call" per group (``operators._longest_member``) without a
sort equals the sort by group and duration it replaced: ties (the first call), NaN and infinite
durations, groups of NaN only, groups with no call."""

from __future__ import annotations

import numpy as np

from tb_plugin.analysis.operators import _longest_member


def _by_sort(rows, inverse, dur, size):
    order = np.lexsort((-dur, inverse))
    first = np.ones(len(order), dtype=bool)
    first[1:] = inverse[order[1:]] != inverse[order[:-1]]
    out = np.full(size, -1, dtype=np.int64)
    out[inverse[order[first]]] = rows[order[first]]
    return out


def test_longest_member_equals_the_sort():
    rng = np.random.default_rng(9)
    for _ in range(300):
        n = int(rng.integers(0, 200))
        size = int(rng.integers(1, 30))
        inverse = rng.integers(0, size, n)
        dur = rng.choice([0.0, -0.0, 1.0, 2.5, 7.0, np.nan, np.inf, -np.inf], n)
        if rng.random() < 0.3:
            dur[inverse == 0] = np.nan  # a group of NaN only
        rows = rng.permutation(10 * n + 1)[:n]
        got = _longest_member(rows, inverse, dur, size)
        assert got.dtype == np.int64
        assert np.array_equal(got, _by_sort(rows, inverse, dur, size))
