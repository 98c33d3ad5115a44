"""Step series and their reduction to a window: the one bin rule, held maximum and point reduction.

A **step series** is ``(ts, values)`` sorted by time: each value holds from its sample to the next
(memory curves, ``C`` counters, queue lengths, allocator curves). Every view that draws one at a
resolution (the Trace view's counter tracks, the Memory view's curves, the allocator-snapshot timeline,
the Overview's system metrics, memory-timeline exports) reduces it here, with one rule:

- **Bins**: the window ``[start, end)`` split into ``bins`` equal bins; bin k is ``[e_k, e_k+1)``
  with ``e = linspace(start, end, bins + 1)``. A sample on an edge belongs to the bin that starts
  there, so no sample belongs to two bins, and one at ``end`` belongs to the next window, not this
  one (:func:`bin_of`).
- **Held maximum** of a bin = the largest value the series takes in it: the value in force at the
  bin's start (the last sample at or before it; ``before`` when there is none) and every sample in the
  bin, even one held for no time (an allocation freed in the same µs), so peaks survive any zoom
  (:func:`held_max`).
- **Point reduction** keeps, per bin, the sample with the largest value and the sample in force at
  the bin's end (:func:`keep_indices`), so a step curve drawn from the kept points has exactly the held
  maximum of the full series in every one of those bins, and its value at every bin edge.
"""

from __future__ import annotations

import numpy as np


def bin_edges(start: float, end: float, bins: int) -> np.ndarray:
    """The ``bins + 1`` edges of ``bins`` equal bins over ``[start, end]`` (same unit as the times)."""
    return np.linspace(start, end, max(1, int(bins)) + 1)


def bin_of(ts: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Bin of each time by the module's rule: ``k`` for ``e_k <= t < e_k+1``; -1 before ``start``,
    ``len(edges) - 1`` at or after ``end``."""
    return np.searchsorted(edges, ts, side="right") - 1


def held_max(ts: np.ndarray, values: np.ndarray, start: float, end: float, bins: int, before=0) -> np.ndarray:
    """Per bin of ``[start, end)``: the held maximum of the step series ``(ts, values)`` (module
    docstring); ``before`` is the value before the first sample. Same dtype as ``values``."""
    edges = bin_edges(start, end, bins)
    values = np.asarray(values)
    enter = np.searchsorted(ts, edges[:-1], side="right") - 1  # the sample in force at each bin's start
    out = np.where(enter >= 0, values[np.maximum(enter, 0)] if len(values) else before, before).astype(values.dtype)
    lo = np.searchsorted(ts, edges[:-1], side="left")  # first sample in the bin
    hi = np.searchsorted(ts, edges[1:], side="left")  # first sample of the next bin
    has = hi > lo
    if has.any():
        # bins are contiguous, so reduceat over their first samples covers exactly [lo, next lo) = [lo, hi)
        peaks = np.maximum.reduceat(values[: int(hi[-1])], lo[has])
        out[has] = np.maximum(out[has], peaks)
    return out


def keep_indices(ts: np.ndarray, values: np.ndarray, start: float, end: float, bins: int) -> np.ndarray:
    """Indices (ascending) of the samples in ``[start, end)`` that a reduction to ``bins`` bins keeps:
    per bin its largest sample (the first of equals) and the sample in force at its end (its last one,
    or the next bin's first when that lies on the edge), less those equal to the kept sample before
    them; at most ``2 × bins + 1``. All of them when they fit."""
    idx = np.flatnonzero((ts >= start) & (ts < end))
    if len(idx) <= 2 * max(1, int(bins)):
        return idx
    edges = bin_edges(start, end, bins)
    cell = bin_of(ts[idx], edges)
    first = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]])
    last = np.r_[first[1:], len(idx)] - 1
    v = values[idx]
    peaks = np.maximum.reduceat(v, first)
    group = np.repeat(np.arange(len(first)), np.diff(np.r_[first, len(idx)]))
    at_peak = np.flatnonzero(v == peaks[group])
    heads = at_peak[np.unique(group[at_peak], return_index=True)[1]]  # the first sample at each bin's peak
    on_edge = ts[idx[first]] == edges[cell[first]]  # a bin whose first sample lies on its start edge
    # that sample, not the previous bin's last, is in force at the edge: keep it instead
    replaced = np.r_[on_edge[1:] & (cell[first[1:]] == cell[first[:-1]] + 1), False]
    kept = np.unique(np.r_[heads, last[~replaced], first[on_edge]])
    # a kept sample equal to the kept one before it changes nothing drawn from them: leave it out
    return idx[kept[np.r_[True, v[kept[1:]] != v[kept[:-1]]]]]


def reduce_to(ts: np.ndarray, values: np.ndarray, limit: int) -> np.ndarray:
    """Indices of at most ``limit`` samples of a whole series, in time order: all of them when they fit,
    else :func:`keep_indices` over the series' own span in ``limit // 2`` bins, and the last sample.
    Samples without a finite time are dropped; unsorted input is taken in time order (stable)."""
    order = np.argsort(ts, kind="stable")
    order = order[np.isfinite(ts[order])]
    if len(order) <= limit:
        return order
    t = ts[order]
    kept = keep_indices(t[:-1], values[order[:-1]], float(t[0]), float(t[-1]), max(1, (limit - 1) // 2))
    return order[np.r_[kept, len(t) - 1]]


def reduce_points(ts: np.ndarray, values: np.ndarray, start: float, end: float, bins: int) -> tuple[list, list]:
    """A step series reduced to the window ``[start, end]``: the last sample before ``start`` (the value
    held there), the :func:`keep_indices` samples, and a point at ``end`` with the value held there
    (the last sample at or before it), so a window drawn from it reaches both ends. At most
    ``2 × bins + 3`` points, as lists."""
    idx = keep_indices(ts, values, start, end, bins)
    before = np.searchsorted(ts, start, side="left")
    if before > 0:
        idx = np.r_[before - 1, idx]
    out_t, out_v = ts[idx].tolist(), values[idx].tolist()
    at_end = int(np.searchsorted(ts, end, side="right")) - 1
    if at_end >= 0 and (not out_t or out_t[-1] < end):  # hold the value to the end of the window
        out_t.append(float(end))
        out_v.append(values[at_end].item())
    return out_t, out_v


def split_series(ts: np.ndarray, series: np.ndarray, values: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """``(series id, ts, values)`` of each series of a long table (one row per sample), ascending by id,
    each by time (stable: equal times keep the file's order); samples whose time or value is not finite
    are dropped (a NaN reading is no reading: the previous value holds). Times and values are float64."""
    out: list[tuple[int, np.ndarray, np.ndarray]] = []
    if len(series) == 0:
        return out
    order = np.lexsort((np.arange(len(series)), ts, series))  # NaN times sort last and are dropped below
    s, t, v = series[order], ts[order].astype(np.float64), values[order].astype(np.float64)
    ok = np.isfinite(t) & np.isfinite(v)
    bounds = np.flatnonzero(np.r_[True, s[1:] != s[:-1], True])
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        keep = ok[a:b]
        out.append((int(s[a]), t[a:b][keep], v[a:b][keep]))
    return out
