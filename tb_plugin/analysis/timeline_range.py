"""Exact statistics of the events in a time range of the timeline (the Trace view's "Selected range").

Computed on the events themselves (level 0 of the timeline index), never on the merged
level-of-detail items, so they do not change with the zoom. An event counts when it overlaps the
closed range ``[t0, t1]`` (touching counts); its time in range is its duration clipped to the range.
Times are µs relative to the trace origin (:func:`timeline_query.origin`).
"""

from __future__ import annotations

import numpy as np

from ..trace.model import Trace
from .timeline_query import origin, track_of_events

MAX_TOP = 1_000  # names listed, largest time in range first


def range_stats(trace: Trace, t0: float, t1: float, track_ids: set[int] | None = None, top: int = 10) -> dict:
    """``{"start_us", "end_us", "duration_us", "count", "total_us", "names", "top": [{"name", "count",
    "total_us"}]}`` for the events overlapping ``[t0, t1]`` (relative µs) on ``track_ids`` (all
    tracks when None). ``count``: events; ``total_us``: their durations clipped to the range, summed;
    ``names``: distinct names among them; ``top``: the ``top`` names with the most time in range
    (ties: more events, then name)."""
    lo, hi = min(t0, t1), max(t0, t1)
    ev = trace.events
    base = origin(trace)
    start = ev.ts - base
    end = start + np.maximum(ev.dur, 0)
    keep = (end >= lo) & (start <= hi)
    if track_ids is not None:
        keep &= np.isin(track_of_events(trace), np.fromiter(track_ids, dtype=np.int64, count=len(track_ids)))
    rows = np.flatnonzero(keep)
    clipped = np.maximum(np.minimum(end[rows], hi) - np.maximum(start[rows], lo), 0.0)
    names, inv = np.unique(ev.name[rows], return_inverse=True)
    inv = inv.reshape(-1)
    counts = np.bincount(inv, minlength=len(names))
    totals = np.bincount(inv, weights=clipped, minlength=len(names))
    labels = [trace.strings[int(n)] for n in names]
    order = sorted(range(len(names)), key=lambda i: (-totals[i], -counts[i], labels[i]))[: max(0, min(top, MAX_TOP))]
    return {
        "start_us": lo,
        "end_us": hi,
        "duration_us": hi - lo,
        "count": int(len(rows)),
        "total_us": float(clipped.sum()),
        "names": int(len(names)),
        "top": [{"name": labels[i], "count": int(counts[i]), "total_us": float(totals[i])} for i in order],
    }
