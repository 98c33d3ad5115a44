"""Per-event columns held for the rows that have a value (trace/sparse.py): indexing one reads exactly as
indexing the dense column it was made from."""

from __future__ import annotations

import numpy as np
import pytest

from tb_plugin.analysis.operators import PerOp
from tb_plugin.trace.sparse import SparseColumn, row_dtype


def _dense() -> np.ndarray:
    """12 events; values at rows 2, 3, 7 and 11 (the last row), NaN elsewhere."""
    out = np.full(12, np.nan)
    out[[2, 3, 7, 11]] = [4.0, 0.0, 2.5e300, -1.0]
    return out


@pytest.mark.parametrize(
    "rows",
    [
        np.arange(12),
        np.array([11, 0, 7, 7, 3]),
        np.array([], dtype=np.int64),
        np.array([-1, -12, -5]),
        np.arange(12) % 2 == 0,  # a mask over the events
        np.array([3, 7], dtype=np.int32),
    ],
)
def test_reads_as_the_dense_column(rows):
    dense = _dense()
    column = SparseColumn.of(dense, np.nan)
    assert column.rows.tolist() == [2, 3, 7, 11] and len(column) == 12
    np.testing.assert_array_equal(column[rows], dense[rows])
    assert column[rows].dtype == dense.dtype


def test_scalar_rows_and_integer_fill():
    dense = np.array([-1, -1, 5, -1, 0], dtype=np.int64)
    column = SparseColumn.of(dense, -1)
    assert column.rows.tolist() == [2, 4]
    assert [column[i] for i in range(5)] == dense.tolist()
    assert column[-1] == 0


def test_nothing_held():
    column = SparseColumn.of(np.full(4, np.nan), np.nan)
    assert len(column.rows) == 0
    assert np.isnan(column[np.array([0, 3])]).all()


def test_per_op_reads_zero_off_the_operators_and_at_minus_one():
    ops = np.array([1, 4, 6])
    per_op = PerOp(ops, np.array([10.0, 20.0, 30.0]))
    assert per_op[np.array([0, 1, 4, 5, 6, -1])].tolist() == [0.0, 10.0, 20.0, 0.0, 30.0, 0.0]
    assert per_op.rows is ops  # every operator has a value: the operator rows themselves


def test_per_op_holds_only_the_operators_with_a_value():
    ops = np.array([1, 4, 6, 9])
    per_op = PerOp(ops, np.array([0.0, -0.0, 0.0, 2.0]))
    assert per_op.rows.tolist() == [4, 9]  # -0.0 is kept: it reads back with its sign
    got = per_op[np.arange(-1, 11)]
    want = np.zeros(12)
    want[[5, 10]] = [-0.0, 2.0]
    assert got.tolist() == want.tolist() and np.signbit(got).tolist() == np.signbit(want).tolist()


def test_row_dtype():
    assert row_dtype(1000) is np.int32
    assert row_dtype(2**31) is np.int64


@pytest.mark.parametrize("fill", [np.nan, 0.0, -1.0])
def test_a_column_from_given_rows_holds_what_one_from_the_dense_column_holds(fill):
    """``SparseColumn.at(rows, values, …)``: the rows whose value is not the fill, as ``of`` of the
    dense column with those values at those rows keeps them (fill values given at a row are left out)."""
    dense = np.where(np.isnan(_dense()), fill, _dense())
    rows = np.array([1, 2, 3, 7, 9, 11])
    got, want = SparseColumn.at(rows, dense[rows], fill, len(dense)), SparseColumn.of(dense, fill)
    assert np.array_equal(got.rows, want.rows) and got.rows.dtype == want.rows.dtype == row_dtype(12)
    assert np.array_equal(got.values, want.values) and len(got) == len(want) == 12
    assert np.array_equal(got[np.arange(12)], dense, equal_nan=True)
