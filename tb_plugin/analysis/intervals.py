"""Interval arithmetic on numpy arrays (times in µs)."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np


def sorted_groups(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(s, reach, new_group)`` for non-empty intervals sorted by start: ``s`` the sorted starts (µs),
    ``reach`` the furthest end so far (µs), ``new_group`` True where an overlapping group begins."""
    s = np.asarray(starts, dtype=np.float64)
    e = np.asarray(ends, dtype=np.float64)
    if not ascending(s):  # (a time-ordered trace's events are in start order already: no sort, no copies)
        order = np.argsort(s, kind="stable")
        s, e = s[order], e[order]
        del order
    reach = np.maximum.accumulate(e)
    # a new group starts where the start is past everything seen before it
    new_group = np.empty(len(s), dtype=bool)
    new_group[0] = True
    new_group[1:] = s[1:] > reach[:-1]
    return s, reach, new_group


def merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of intervals ``[starts[i], ends[i])`` as sorted, disjoint ``(starts, ends)``."""
    if len(starts) == 0:
        return np.zeros(0), np.zeros(0)
    s, reach, new_group = sorted_groups(starts, ends)
    out_s = s[new_group]
    # reach never decreases, so a group's furthest end is the reach at its last interval
    last = np.r_[np.flatnonzero(new_group)[1:] - 1, len(s) - 1]
    out_e = np.maximum(np.maximum(reach[last], 0.0), out_s)
    return out_s, out_e


def covered_in_windows(
    merged_starts: np.ndarray, merged_ends: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> np.ndarray:
    """Per window ``[lo[i], hi[i]]``: the length (µs) of sorted, disjoint intervals (:func:`merge`'s
    output) inside it, for all windows at once: F(hi) − F(lo), where F(x) is the covered length up to
    ``x`` (cumulative lengths, one ``searchsorted``). An empty or inverted window covers 0."""
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.maximum(np.asarray(hi, dtype=np.float64), lo)
    if len(merged_starts) == 0:
        return np.zeros(len(lo))
    s = np.asarray(merged_starts, dtype=np.float64)
    e = np.asarray(merged_ends, dtype=np.float64)
    cum = cumulative_lengths(s, e)
    return covered_before(s, e, hi, cum) - covered_before(s, e, lo, cum)


def cumulative_lengths(merged_starts: np.ndarray, merged_ends: np.ndarray) -> np.ndarray:
    """``cum[k]``: the total length of intervals ``0 … k-1`` (``len + 1`` values, ``cum[0] = 0``)."""
    return np.concatenate([[0.0], np.cumsum(merged_ends - merged_starts)])


def covered_before(merged_starts: np.ndarray, merged_ends: np.ndarray, t, cum: np.ndarray | None = None) -> np.ndarray:
    """Per time ``t`` (scalar or array): the length of sorted, disjoint intervals (:func:`merge`'s output)
    before it, in the inputs' unit (µs or ticks): the cumulative length of the intervals that start at
    or before ``t`` (one ``searchsorted``), less what of the last one lies after ``t``. ``cum``:
    :func:`cumulative_lengths` of the intervals, when the caller keeps it for many calls."""
    t = np.asarray(t, dtype=np.float64)
    if len(merged_starts) == 0:
        return np.zeros(t.shape)
    if cum is None:
        cum = cumulative_lengths(merged_starts, merged_ends)
    k = np.searchsorted(merged_starts, t, side="right") - 1
    kk = np.maximum(k, 0)
    inside = np.clip(t - merged_starts[kk], 0.0, merged_ends[kk] - merged_starts[kk])
    return np.where(k >= 0, cum[kk] + inside, 0.0)


def covered_length(starts: np.ndarray, ends: np.ndarray, lo: float, hi: float) -> float:
    """Length of the union of the intervals inside ``[lo, hi]`` (µs)."""
    if hi <= lo or len(starts) == 0:
        return 0.0
    s, e = merge(np.clip(starts, lo, hi), np.clip(ends, lo, hi))
    return float(np.sum(e - s))


def covers(merged_starts: np.ndarray, merged_ends: np.ndarray, points: np.ndarray) -> np.ndarray:
    """For each point, whether it lies inside one of the merged (disjoint, sorted) intervals."""
    if len(merged_starts) == 0:
        return np.zeros(len(points), dtype=bool)
    n = len(points)
    if n > len(merged_starts) and ascending(points) and _disjoint(merged_starts, merged_ends):
        # sorted points (the breakdown's segment edges): each interval covers a run of them, found by
        # two bisections per interval, not one per point (the points' bisections into a long
        # array of starts miss the caches, 7–9× the time for 5× the events)
        first = np.searchsorted(points, merged_starts, side="left")
        past = np.searchsorted(points, merged_ends, side="left")
        depth = np.bincount(first, minlength=n + 1) - np.bincount(past, minlength=n + 1)
        return np.cumsum(depth[:n]) > 0
    idx = np.searchsorted(merged_starts, points, side="right") - 1
    ok = idx >= 0
    out = np.zeros(len(points), dtype=bool)
    out[ok] = points[ok] < merged_ends[idx[ok]]
    return out


def first_cover(merged: Sequence[tuple[np.ndarray, np.ndarray]], points: np.ndarray) -> np.ndarray:
    """For each point, the index in ``merged`` (sets of merged intervals, ``(starts, ends)`` each, in
    priority order) of the first set one of whose intervals covers it (as :func:`covers`), or
    ``len(merged)`` where none does (uint8 below 255 sets, else int64: a byte per point, not eight)."""
    k, n = len(merged), len(points)
    if not 0 < k <= _MAX_BIT_SETS or not ascending(points) or not all(_disjoint(s, e) for s, e in merged):
        owner = np.full(n, k, dtype=np.uint8 if k < 255 else np.int64)
        unclaimed = np.ones(n, dtype=bool)
        for c, (s, e) in enumerate(merged):
            hit = unclaimed & covers(s, e, points)
            owner[hit] = c
            unclaimed &= ~hit
        return owner
    # sorted points, disjoint intervals: set c covers a run of points per interval (covers' two bisections),
    # counted as bit c; every set's runs are added into one array and summed once (one bincount and one
    # cumsum for all the sets, not two and one per set: the 4.5 GB trace's breakdown, 7 sets of ~10^7 points)
    pos = np.concatenate([np.searchsorted(points, a, side="left") for s, e in merged for a in (s, e)])
    bit = np.concatenate(
        [np.full(len(a), sign * float(1 << c)) for c, (s, e) in enumerate(merged) for a, sign in ((s, 1), (e, -1))]
    )
    bits = np.bincount(pos, weights=bit, minlength=n + 1)[:n]
    del pos, bit
    np.cumsum(bits, out=bits)  # exact: sums of at most k distinct powers of two
    masks = bits.astype(np.intp)
    del bits  # (the 4.5 GB trace's ~10^7 points: 80 MB each, freed before the owners are made)
    return _lowest_bits(k)[masks]


_MAX_BIT_SETS = 16  # (a table of 2^k entries per k)


@functools.cache
def _lowest_bits(k: int) -> np.ndarray:
    """Per k-bit mask (k ≤ :data:`_MAX_BIT_SETS`), the index of its lowest set bit; ``k`` for the empty
    mask (uint8)."""
    masks = np.arange(1 << k)
    low = np.full(1 << k, k, dtype=np.uint8)
    for c in range(k - 1, -1, -1):  # (k steps: the lowest set bit written last)
        low[(masks >> c) & 1 == 1] = c
    return low


def ascending(values: np.ndarray) -> bool:
    """Whether ``values`` never decrease (False with a NaN among them)."""
    return bool(np.all(values[1:] >= values[:-1]))


def _disjoint(starts: np.ndarray, ends: np.ndarray) -> bool:
    """Whether the intervals are sorted, each not inverted and none overlapping the next (no NaN)."""
    return bool(np.all(ends >= starts) and np.all(starts[1:] >= ends[:-1]))
