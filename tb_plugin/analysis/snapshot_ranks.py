"""Per-rank allocator snapshots side by side (one snapshot per rank of a job, e.g. torchtitan's
``rank<N>_memory_snapshot.pickle`` or FSDP jobs): each rank's peak and the outlier.

- A rank's **peak** is the largest ``peak_active_bytes`` over its snapshot's devices (bytes; the
  definition of :func:`.snapshot.device_summary`).
- **Median** = the median of the peaks of the ranks that have one (bytes).
- **Deviation** of a rank = (peak − median) / median × 100 (%).
- The **outlier** is the rank whose |deviation| is largest (ties: the larger peak, then the lower
  rank); it is named only when at least two ranks have a peak and its |deviation| ≥
  :data:`OUTLIER_PCT`, else ``outlier_rank`` is None.
"""

from __future__ import annotations

import numpy as np

OUTLIER_PCT = 10.0  # % from the median peak at which a rank is named the outlier


def compare(rows: list[dict]) -> dict:
    """``rows``: ``{"rank", "peak_active_bytes" | None, …}`` per rank. Returns ``{"ranks": rows with
    "deviation_pct" added, "median_peak_bytes", "max_peak_bytes", "min_peak_bytes", "outlier_rank",
    "outlier_deviation_pct", "outlier_threshold_pct"}``."""
    with_peak = [r for r in rows if r.get("peak_active_bytes") is not None]
    peaks = np.array([r["peak_active_bytes"] for r in with_peak], dtype=np.float64)
    median = float(np.median(peaks)) if len(peaks) else None
    out_rows = []
    for r in rows:
        dev = None
        if r.get("peak_active_bytes") is not None and median:
            dev = (r["peak_active_bytes"] - median) / median * 100.0
        out_rows.append(dict(r, deviation_pct=dev))
    outlier, outlier_dev = None, None
    scored = [r for r in out_rows if r["deviation_pct"] is not None]
    if len(scored) >= 2:
        best = min(scored, key=lambda r: (-abs(r["deviation_pct"]), -r["peak_active_bytes"], r["rank"]))
        if abs(best["deviation_pct"]) >= OUTLIER_PCT:
            outlier, outlier_dev = best["rank"], best["deviation_pct"]
    return {"ranks": out_rows,
            "median_peak_bytes": None if median is None else int(round(median)),
            "max_peak_bytes": int(peaks.max()) if len(peaks) else None,
            "min_peak_bytes": int(peaks.min()) if len(peaks) else None,
            "outlier_rank": outlier, "outlier_deviation_pct": outlier_dev, "outlier_threshold_pct": OUTLIER_PCT}
