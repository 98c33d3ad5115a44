"""Per-rank allocator snapshots side by side (one snapshot per rank of a job, e.g. torchtitan's
``rank<N>_memory_snapshot.pickle`` or FSDP jobs): each rank's peak and the outlier.

- A rank's **peak** is the largest ``peak_active_bytes`` over its snapshot's devices (bytes; the
  definition of :func:`.snapshot.device_summary`).
- **Median** = the median of the peaks of the ranks that have one (bytes).
- **Peak to median** of a rank = peak / median (a ratio; 1.0 is the median); **vs median** = (peak to
  median − 1) × 100 (%, signed: +48.5 is 48.5 % above the median), the one percentage every interface shows.
- The **outlier** is the rank whose |peak to median − 1| is largest (ties: the larger peak, then the
  lower rank); it is named only when at least two ranks have a peak and |peak to median − 1| ≥
  :data:`OUTLIER_DEVIATION` (10 %), else ``outlier_rank`` is None.
"""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np

OUTLIER_DEVIATION = 0.10  # |peak / median − 1| at which a rank is named the outlier


class RankOutlier(TypedDict):
    """The group's figures of :func:`compare` (bytes; ratios; %)."""

    median_peak_bytes: int | None
    max_peak_bytes: int | None
    min_peak_bytes: int | None
    outlier_rank: int | None  # None: no rank is OUTLIER_DEVIATION away from the median
    outlier_peak_to_median: float | None
    outlier_vs_median_pct: float | None  # the one percentage every interface shows
    outlier_threshold: float  # OUTLIER_DEVIATION
    outlier_threshold_pct: float


class SnapshotRanks(RankOutlier):
    """:func:`compare`'s result: the rows given, each with ``peak_to_median`` and ``vs_median_pct``
    added, and the group's figures."""

    ranks: list[dict[str, Any]]


def compare(rows: list[dict[str, Any]]) -> SnapshotRanks:
    """``rows``: ``{"rank", "peak_active_bytes" | None, …}`` per rank. Returns ``{"ranks": rows with
    "peak_to_median" and "vs_median_pct" added, "median_peak_bytes", "max_peak_bytes", "min_peak_bytes",
    "outlier_rank", "outlier_peak_to_median", "outlier_vs_median_pct", "outlier_threshold",
    "outlier_threshold_pct"}``."""
    with_peak = [r for r in rows if r.get("peak_active_bytes") is not None]
    peaks = np.array([r["peak_active_bytes"] for r in with_peak], dtype=np.float64)
    median = float(np.median(peaks)) if len(peaks) else None
    out_rows = []
    for r in rows:
        ratio = None
        if r.get("peak_active_bytes") is not None and median:
            ratio = r["peak_active_bytes"] / median
        out_rows.append(dict(r, peak_to_median=ratio, vs_median_pct=vs_median_pct(ratio)))
    outlier, outlier_ratio = None, None
    scored = [r for r in out_rows if r["peak_to_median"] is not None]
    if len(scored) >= 2:
        best = min(scored, key=lambda r: (-abs(r["peak_to_median"] - 1), -r["peak_active_bytes"], r["rank"]))
        if abs(best["peak_to_median"] - 1) >= OUTLIER_DEVIATION - 1e-12:
            outlier, outlier_ratio = best["rank"], best["peak_to_median"]
    return {
        "ranks": out_rows,
        "median_peak_bytes": None if median is None else int(round(median)),
        "max_peak_bytes": int(peaks.max()) if len(peaks) else None,
        "min_peak_bytes": int(peaks.min()) if len(peaks) else None,
        "outlier_rank": outlier,
        "outlier_peak_to_median": outlier_ratio,
        "outlier_vs_median_pct": vs_median_pct(outlier_ratio),
        "outlier_threshold": OUTLIER_DEVIATION,
        "outlier_threshold_pct": OUTLIER_DEVIATION * 100,
    }


def vs_median_pct(peak_to_median: float | None) -> float | None:
    """A peak's distance from the median in % (signed; None without a ratio): (peak to median − 1) × 100."""
    return None if peak_to_median is None else (peak_to_median - 1) * 100
