"""``np.unique``, ``np.setdiff1d``, ``np.percentile`` and ``np.median``'s results without importing ``numpy.ma``.

numpy 2.4's ``np.unique`` without ``return_*`` asks ``np.ma.is_masked``, which imports ``numpy.ma`` on the
first call (its ``core`` alone ~10 ms of a cold process's CPU), and ``np.percentile``'s default (linear)
method calls ``np.unique`` for its partition's indices, as ``np.setdiff1d`` does for both its arrays; ``np.median`` of floats asks ``np.ma.isMaskedArray``. A cold report of a small trace made ~24 such calls
and needed none of the masked arrays; these two functions give the same values, dtypes and bits
(``tests/unit/trace/test_uniques.py`` compares them with numpy's).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

#: an integer array whose values span at most this many slots per element (plus a constant) is reduced
#: through a table of seen values (O(n + span)) rather than a sort
BITMAP_SLOTS_PER_ITEM = 4
BITMAP_SLOTS_FLOOR = 4096


def unique_values(values: ArrayLike) -> np.ndarray:
    """``np.unique(values)``: the distinct values of the flattened array, sorted, in its dtype (NaNs as one,
    last, as ``equal_nan=True``). Integers of a narrow span go through a table of seen values; other
    arrays are sorted (numpy's own default sort, so equal floats such as -0.0 and 0.0 keep numpy's pick)."""
    a = np.asarray(values).ravel()
    if a.dtype.kind in "iu" and a.size:
        lo, hi = a.min(), a.max()
        span = int(hi) - int(lo)
        if span <= BITMAP_SLOTS_PER_ITEM * a.size + BITMAP_SLOTS_FLOOR:
            seen = np.zeros(span + 1, dtype=bool)
            seen[a - lo if lo else a] = True  # in ``a``'s dtype: every difference lies in [0, span]
            return np.flatnonzero(seen).astype(a.dtype) + lo
    s = np.sort(a)
    keep = np.empty(s.shape, dtype=bool)
    keep[:1] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    if s.dtype.kind in "fcmM" and s.size and np.isnan(s[-1]):  # NaNs (NaT) sort last: keep the first only
        first_nan = int(np.argmax(np.isnan(s)))
        keep[first_nan + 1 :] = False
        keep[first_nan] = True
    return s[keep]


def setdiff(values: ArrayLike, other: ArrayLike) -> np.ndarray:
    """``np.setdiff1d(values, other)``: the sorted distinct values of ``values`` not in ``other``."""
    kept = unique_values(values)
    return kept[np.isin(kept, unique_values(other), assume_unique=True, invert=True)]


def percentile(values: ArrayLike, q: float) -> np.floating:
    """``np.percentile(values, q)`` of the flattened array (default linear method, ``q`` in [0, 100], a
    Python number): the same partition, indices and interpolation, so the same bits; where a value is
    NaN, the NaN that sorts last. ``values`` must not be empty."""
    arr = np.asarray(values).flatten()  # a copy: partitioned in place below
    n = arr.shape[0]
    virtual = (n - 1) * (q / 100)
    above = virtual >= n - 1
    prev = -1 if above else math.floor(virtual)
    nxt = -1 if above else prev + 1
    # numpy's kth: the sorted distinct of [0, -1, prev, next] (the last slot: where a NaN would sort)
    arr.partition(sorted({0, -1, prev, nxt}))
    gamma = virtual - prev  # numpy's: the fractional part, or virtual + 1 where clipped to the last slot
    a, b = arr[prev], arr[nxt]
    diff = b - a
    result = a + diff * gamma
    if gamma >= 0.5:  # numpy's lerp: from the upper bound past the midpoint (exact at gamma == 1)
        result = b - diff * (1 - gamma)
    if arr.dtype.kind in "fcmM" and np.isnan(arr[-1]):
        return arr[-1]  # numpy's: the NaN that sorted last
    return result


def median(values: ArrayLike) -> np.floating:
    """``np.median(values)`` of the flattened array: the same partition and mean, so the same bits; where
    a value is NaN, the NaN that sorts last. ``values`` must not be empty."""
    arr = np.asarray(values)
    n = arr.size
    kth = [n // 2 - 1, n // 2] if n % 2 == 0 else [(n - 1) // 2]
    nan_able = arr.dtype.kind in "fcmM"
    if nan_able:
        kth.append(-1)  # where a NaN would sort
    part = np.partition(arr, kth, axis=None)
    result = part[kth[0] : kth[0] + 2 - n % 2].mean()
    if nan_able and np.isnan(part[-1]):
        return part[-1]
    return result


__all__ = ["median", "percentile", "setdiff", "unique_values"]
