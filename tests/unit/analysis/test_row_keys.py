"""``analysis.row_keys.unique_rows`` answers as ``np.unique(rows, axis=0)`` does: the same rows in the
same order, the same first indices and inverse, on random integer columns with negative values,
repeats, values near the int64 limits (the folded key renumbered) and empty input."""

from __future__ import annotations

import numpy as np
import pytest

from tb_plugin.analysis.row_keys import dense_codes, unique_rows


def _reference(columns):
    a = np.stack(columns, axis=1).astype(np.int64)
    rows, first, inverse = np.unique(a, axis=0, return_index=True, return_inverse=True)
    return rows, first, inverse.reshape(-1)


@pytest.mark.parametrize("seed", range(8))
def test_unique_rows_equals_numpys_row_unique(seed):
    rng = np.random.default_rng(seed)
    for _ in range(40):
        n = int(rng.integers(1, 300))
        k = int(rng.integers(1, 6))
        columns = []
        for _ in range(k):
            choice = rng.integers(0, 3)
            if choice == 0:  # few values, negatives among them
                col = rng.integers(-3, 4, n)
            elif choice == 1:  # wide: the folded key needs renumbering
                col = rng.integers(-(1 << 62), 1 << 62, n)
            else:
                col = rng.integers(0, 50, n).astype(np.int32)
            columns.append(col)
        got, want = unique_rows(columns), _reference(columns)
        for g, w in zip(got, want):
            assert g.dtype == np.int64 or g.dtype == np.intp
            assert np.array_equal(g, w)


def test_empty_and_extremes():
    rows, first, inverse = unique_rows([np.zeros(0, np.int64), np.zeros(0, np.int32)])
    assert rows.shape == (0, 2) and len(first) == 0 and len(inverse) == 0
    big = np.array([np.iinfo(np.int64).max, np.iinfo(np.int64).min, 0, np.iinfo(np.int64).max])
    got, want = unique_rows([big, big[::-1].copy(), big]), _reference([big, big[::-1].copy(), big])
    for g, w in zip(got, want):
        assert np.array_equal(g, w)


@pytest.mark.parametrize("distinct", [1, 3, 4096, 4097, 50_000])
def test_dense_codes_equal_numpys_inverse(distinct):
    rng = np.random.default_rng(distinct)
    for dtype in (np.int64, np.int32, np.uint8 if distinct < 256 else np.int64):
        values = rng.integers(-(distinct // 2), distinct - distinct // 2, 20_000).astype(dtype)
        got, want = dense_codes(values), np.unique(values, return_inverse=True)
        assert np.array_equal(got[0], want[0]) and got[0].dtype == want[0].dtype
        assert np.array_equal(got[1], want[1].reshape(-1))
    assert [len(a) for a in dense_codes(np.zeros(0, np.int64))] == [0, 0]
