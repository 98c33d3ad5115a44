"""Per-event columns that hold a value at few rows: kept for those rows alone.

A per-event column meaningful only on some rows (kernels, operators) is mostly its fill (NaN, 0, −1):
held dense it costs 8 bytes an event for the whole life of the trace. :class:`SparseColumn` keeps the
rows that differ from the fill (ascending) and their values; ``column[rows]`` reads exactly as the
dense array would (the fill elsewhere), by bisection.
"""

from __future__ import annotations

import numpy as np


class SparseColumn:
    """``column[rows]``: the value at each event row (the fill where none is held), as a dense array's
    indexing gives it (integer rows or a boolean mask over the events; a scalar row gives a scalar).
    A negative row counts from the end, as in numpy, unless ``wrap_negative`` is False (then it holds
    no value: the fill)."""

    wrap_negative = True

    def __init__(self, rows: np.ndarray, values: np.ndarray, fill: float | int, size: int) -> None:
        self.rows = rows  # the event rows held, ascending (int32 where the trace allows)
        self.values = values  # their values, the dense column's dtype
        self.fill = fill
        self.size = size  # events in the trace

    @classmethod
    def of(cls, dense: np.ndarray, fill: float | int) -> SparseColumn:
        """The rows of ``dense`` that are not ``fill`` (NaN fill: the rows that are not NaN)."""
        rows = np.flatnonzero(_not_fill(dense, fill))
        return cls(rows.astype(row_dtype(len(dense))), dense[rows], fill, len(dense))

    @classmethod
    def at(cls, rows: np.ndarray, values: np.ndarray, fill: float | int, size: int) -> SparseColumn:
        """The column of ``size`` events whose ``values`` at the ascending event ``rows`` are given (the
        fill elsewhere): :meth:`of` of that dense column, without making it."""
        held = _not_fill(values, fill)
        return cls(rows[held].astype(row_dtype(size)), values[held], fill, size)

    def __len__(self) -> int:
        return self.size

    @property
    def nbytes(self) -> int:
        return self.rows.nbytes + self.values.nbytes

    def __getitem__(self, rows):
        rows = np.asarray(rows)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        if self.wrap_negative:
            rows = np.where(rows < 0, rows + self.size, rows)
        out = np.full(rows.shape, self.fill, dtype=self.values.dtype)
        if len(self.rows):
            pos = np.minimum(np.searchsorted(self.rows, rows), len(self.rows) - 1)
            hit = self.rows[pos] == rows
            out[hit] = self.values[pos[hit]]
        return out[()] if out.ndim == 0 else out


def _not_fill(values: np.ndarray, fill: float | int) -> np.ndarray:
    """Per value, whether it differs from ``fill`` (NaN fill: whether it is not NaN)."""
    return ~np.isnan(values) if isinstance(fill, float) and np.isnan(fill) else values != fill


def row_dtype(size: int) -> type:
    """int32 for row numbers of a trace under 2³¹ events, else int64."""
    return np.int32 if size < np.iinfo(np.int32).max else np.int64


__all__ = ["SparseColumn", "row_dtype"]
