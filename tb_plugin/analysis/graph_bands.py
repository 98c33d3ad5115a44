"""CUDA/HIP graph replays as bands on the Trace view's tracks (µs on the timeline's clock: trace time −
:func:`analysis.timeline_query.origin`, as ``timeline`` items).

A replay (:mod:`analysis.graph_capture`) that ran on several streams gives one **band** per stream
track (:func:`analysis.timeline.track_of_events`): from the first start to the last end of its device
work on that track. Each band carries its replay's figures from the graphs document
(:func:`analysis.graphs.graphs_document`: the graph, the replay number, its kernels and busy µs over all
its streams) and its graph's attribution ``status`` (``attributed`` / ``ambiguous`` / ``partial`` /
``no_capture``), so the Trace view says them without computing anything.
"""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np

from ..trace.model import Trace
from .graph_capture import replays
from .graphs import GraphsDocument
from .timeline import track_of_events
from .timeline_query import origin

MAX_BANDS = 20_000  # per answer: past it the first MAX_BANDS in time are sent and ``shown`` < ``total``


class ReplayBands(TypedDict):
    """The Trace view's replay bands (:func:`replay_bands`)."""

    total: int  # bands of the trace
    shown: int  # bands listed (at most MAX_BANDS, the first in time)
    graphs: list[dict[str, Any]]  # per graph: graph, status, replays
    bands: dict[
        str, list[Any]
    ]  # columns: start_us, end_us (µs, timeline clock), track, replay, graph, kernels, busy_us


def replay_bands(trace: Trace, doc: GraphsDocument) -> ReplayBands:
    """``doc``: the trace's graphs document. Returns ``total``/``shown`` bands, ``graphs`` (per graph:
    ``status``, ``replays``) and ``bands`` as columns ``start_us``, ``end_us``, ``track``, ``replay``,
    ``graph``, ``kernels``, ``busy_us`` (the last three: the whole replay's), in start order."""
    ev = trace.events
    rep = replays(trace)
    graphs = [{"graph": g["graph"], "status": g["status"], "replays": g["replays"]} for g in doc["graph_list"]]
    empty: dict[str, list] = {k: [] for k in ("start_us", "end_us", "track", "replay", "graph", "kernels", "busy_us")}
    if not len(rep.rows):
        return {"total": 0, "shown": 0, "graphs": graphs, "bands": empty}
    rows, which = rep.rows, rep.replay
    track = track_of_events(trace)[rows].astype(np.int64)
    order = np.lexsort((track, which))  # bands: one per (replay, track)
    rows, which, track = rows[order], which[order], track[order]
    new = np.r_[True, (which[1:] != which[:-1]) | (track[1:] != track[:-1])]
    first = np.flatnonzero(new)
    start = np.minimum.reduceat(ev.ts[rows], first)
    end = np.maximum.reduceat(ev.ts[rows] + ev.dur[rows], first)
    band_replay, band_track = which[first], track[first]
    by_time = np.lexsort((band_track, start))[:MAX_BANDS]
    listed = doc["replay_list"]
    kernels = np.array([r["kernels"] for r in listed], dtype=np.int64)
    busy = np.array([r["busy_us"] for r in listed], dtype=np.float64)
    r = band_replay[by_time]
    base = origin(trace)
    bands = {
        "start_us": np.round(start[by_time] - base, 3).tolist(),
        "end_us": np.round(end[by_time] - base, 3).tolist(),
        "track": band_track[by_time].tolist(),
        "replay": r.tolist(),
        "graph": rep.graph[r].tolist(),
        "kernels": kernels[r].tolist(),
        "busy_us": busy[r].tolist(),
    }
    return {"total": int(len(first)), "shown": int(len(by_time)), "graphs": graphs, "bands": bands}


__all__ = ["MAX_BANDS", "ReplayBands", "replay_bands"]
