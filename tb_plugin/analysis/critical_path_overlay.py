"""The critical path's segments on one rank's timeline, for the Trace view's overlay (µs on the
timeline's clock: trace time − :func:`analysis.timeline_query.origin`, as ``timeline`` items; definitions in :mod:`analysis.critical_path` and docs/METRICS.md "Critical path").

The report keeps each chain's summary only (its ten longest segments); the overlay needs every
segment of the path on this rank. :func:`critical_path_combine.path_trails` says which chains of which
rank the path followed in each step; the chains of this rank are walked again on its trace (the same
walk, so the same segments) and the segments the combination adds (communication, waiting before the
rank's step) are taken as they are. Each segment is placed on a timeline track
(:func:`analysis.timeline.track_of_events`): the track of its event (kernel: its stream; cpu: its
thread; communication: its kernel's stream); a **waiting** segment, which has no event, on the track
of the work that waited (the next segment of the path on this rank, else the previous one).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..trace.model import Trace
from .collective_matching import match_collectives
from .critical_path import RankGraph
from .critical_path_chain import CATEGORIES
from .critical_path_combine import path_trails
from .distributed import comm_kernels
from .timeline import track_of_events
from .timeline_query import origin

MAX_SEGMENTS = 5_000  # per step; past it the longest are kept and ``shown`` < ``total``
MAX_TOTAL = 20_000  # per answer: with more steps each keeps MAX_TOTAL // steps, at least MIN_PER_STEP
MIN_PER_STEP = 100
MAX_NAME = 200  # characters of a segment's name


def rank_overlay(ranks: list[tuple[int, str, dict]], rank: int, trace: Trace) -> dict:
    """The path on ``rank`` (whose trace is ``trace``) per step. ``ranks``: ``(rank, worker,
    rank_reduce aggregate)`` of the run's loaded ranks at one span (one for a single-rank run: the path
    without cross-rank edges). Returns ``cross_rank`` (more than one rank) and ``steps``: per step
    ``step``, ``length_us`` (the path's length, as the report has it), ``truncated``, ``top_items`` (its five
    items of most time) and ``host_blocked_us`` (as the report has them), ``on_rank_us`` (its part on this
    rank), ``total``/``shown`` segments and ``segments`` as columns ``start_us``, ``dur_us``,
    ``category``, ``name``, ``row`` (−1: waiting), ``track`` (timeline track id), in time order."""
    chains = [(r, agg["critical_path"]) for r, _, agg in ranks if "critical_path" in agg]
    matching = match_collectives({r: agg["comm"] for r, _, agg in ranks}) if len(chains) > 1 else None
    trails = path_trails(chains, matching)
    g = RankGraph(trace, np.asarray(comm_kernels(trace)["rows"], dtype=np.int64))
    tracks = track_of_events(trace)
    base = origin(trace)
    cap = min(MAX_SEGMENTS, max(MIN_PER_STEP, MAX_TOTAL // max(1, len(trails))))
    return {
        "cross_rank": len(chains) > 1,
        "steps": [
            {
                "step": name,
                "length_us": path["length_us"],
                "truncated": path["truncated"],
                "top_items": path["top_items"][:5],
                "host_blocked_us": path["host_blocked_us"],
                **_segments(trail, rank, g, tracks, base, cap),
            }
            for name, (path, trail) in trails.items()
        ],
    }


def _segments(trail: list[tuple], rank: int, g: RankGraph, tracks: np.ndarray, base: float, cap: int) -> dict:
    """One step's segments on ``rank`` from its trail (the ``cap`` longest), ``base`` subtracted from
    their starts."""
    segs: list[tuple] = []
    for item in trail:
        if item[0] == "seg":
            s = item[2]
            if item[1] == rank:
                segs.append(
                    (s["start_us"], s["start_us"] + s["dur_us"], CATEGORIES.index(s["category"]), s["name"], s["row"])
                )
            continue
        _, r, key, lo, hi = item
        if r == rank:
            g.memo = {}  # a fresh walk: every segment, no memoized tail
            w = g.from_end(lo, hi) if key < 0 else g.from_kernel(int(g.comm_dev[key]), lo)
            segs.extend(w.segs)
    if not segs:
        return {"on_rank_us": 0.0, "total": 0, "shown": 0, "segments": _columns([], np.zeros(0), base)}
    start = np.array([s[0] for s in segs])
    end = np.array([s[1] for s in segs])
    cat = np.array([s[2] for s in segs])
    row = np.array([s[4] for s in segs], dtype=np.int64)
    order = np.argsort(start, kind="stable")
    segs, start, end, cat, row = [segs[i] for i in order.tolist()], start[order], end[order], cat[order], row[order]
    track = np.where(row >= 0, tracks[np.maximum(row, 0)], -1)
    # waiting: the track of the next placed segment (the work that waited), else of the previous one
    placed = np.flatnonzero(track >= 0)
    if len(placed):
        nxt = np.searchsorted(placed, np.arange(len(track)))
        fill = np.where(nxt < len(placed), track[placed[np.minimum(nxt, len(placed) - 1)]], track[placed[-1]])
        track = np.where(track >= 0, track, fill)
    keep = np.arange(len(segs))
    if len(keep) > cap:
        keep = np.sort(np.argsort(-(end - start), kind="stable")[:cap])
    out: dict[str, Any] = {"on_rank_us": float((end - start).sum()), "total": len(segs), "shown": len(keep)}
    out["segments"] = _columns([segs[i] for i in keep.tolist()], track[keep], base)
    return out


def _columns(segs: list[tuple], track: np.ndarray, base: float) -> dict:
    """Segments ``(start, end, category, name, row)`` as columns (what the route sends)."""
    return {
        "start_us": [round(float(s[0] - base), 3) for s in segs],
        "dur_us": [float(s[1] - s[0]) for s in segs],
        "category": [CATEGORIES[s[2]] for s in segs],
        "name": [s[3][:MAX_NAME] for s in segs],
        "row": [int(s[4]) for s in segs],
        "track": [int(t) for t in track.tolist()],
    }


__all__ = ["MAX_SEGMENTS", "MAX_TOTAL", "rank_overlay"]
