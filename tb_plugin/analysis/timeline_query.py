"""Answers for the timeline: a window of tracks at a pixel width, search, one event's details.

All times in responses are µs relative to the trace origin (its earliest event), rounded to ns.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from ..trace.links import device_mask, launch_of
from ..trace.model import Trace
from .bounded_regex import compile_bounded, matching
from .timeline import Track, timeline_index, track_of_events

MAX_ITEMS_PER_TRACK = 20_000
MAX_FLOWS = 2_000
MAX_SEARCH_RESULTS = 1_000


def origin(trace: Trace) -> float:
    """The earliest event start (absolute µs): time 0 of every timeline response."""

    def build():
        ev = trace.events
        return float(ev.ts.min()) if len(ev) else 0.0

    return trace.memo("timeline_origin", build)


def extent(trace: Trace) -> tuple[float, float]:
    """``(0, end)`` of the whole trace in relative µs."""
    ev = trace.events
    if len(ev) == 0:
        return 0.0, 0.0
    return 0.0, float((ev.ts + np.maximum(ev.dur, 0)).max() - origin(trace))


def tracks_meta(trace: Trace) -> list[dict]:
    return [
        {
            "id": t.id,
            "kind": t.kind,
            "process": t.process,
            "name": t.name,
            "max_depth": t.max_depth,
            "events": int(len(t.levels[0].start)),
        }
        for t in timeline_index(trace)
    ]


def choose_level(track: Track, px_us: float) -> int:
    """The coarsest level whose bucket is at most one pixel."""
    level = 0
    for l in range(1, len(track.levels)):
        if track.bucket(l) <= px_us:
            level = l
    return level


def window(trace: Trace, t0: float, t1: float, width_px: int, track_ids: Collection[int] | None = None) -> dict:
    """Drawable items of each track overlapping ``[t0, t1]`` (relative µs) at ``width_px`` pixels."""
    base = origin(trace)
    px = max(t1 - t0, 1e-9) / max(width_px, 1)
    a0, a1 = t0 + base, t1 + base
    out_tracks, name_ids = [], set()
    for track in timeline_index(trace):
        if track_ids is not None and track.id not in track_ids:
            continue
        level = choose_level(track, px)
        idx = track.levels[level].window(a0, a1)
        while len(idx) > MAX_ITEMS_PER_TRACK and level + 1 < len(track.levels):
            level += 1
            idx = track.levels[level].window(a0, a1)
        lv = track.levels[level]
        names = lv.name[idx]
        name_ids.update(np.unique(names).tolist())
        out_tracks.append(
            {
                "id": track.id,
                "level": level,
                "bucket_us": track.bucket(level),
                "items": {
                    "start": np.round(lv.start[idx] - base, 3).tolist(),
                    "dur": np.round(lv.end[idx] - lv.start[idx], 3).tolist(),
                    "depth": lv.depth[idx].tolist(),
                    "name": names.tolist(),
                    "count": lv.count[idx].tolist(),
                    "row": lv.row[idx].tolist(),
                },
                "hidden_events": int(lv.count[idx].sum() - len(idx)),
            }
        )
    return {
        "start_us": t0,
        "end_us": t1,
        "width_px": width_px,
        "tracks": out_tracks,
        "names": {str(i): trace.strings[i] for i in sorted(name_ids)},
        "flows": flows_in_window(trace, a0, a1),
    }


def flows_in_window(trace: Trace, a0: float, a1: float) -> dict:
    """Launch → device flows (correlation) with an end inside the window (absolute µs in, relative out)."""
    ev = trace.events
    dev, src, dev_ts, src_ts = launch_pairs(trace)
    inside = ((dev_ts >= a0) & (dev_ts <= a1)) | ((src_ts >= a0) & (src_ts <= a1))
    dev, src = dev[inside], src[inside]
    total = len(dev)
    dev, src = dev[:MAX_FLOWS], src[:MAX_FLOWS]
    track_of = track_of_events(trace)
    base = origin(trace)
    return {
        "from_row": src.tolist(),
        "from_track": track_of[src].tolist(),
        "from_us": np.round(ev.ts[src] - base, 3).tolist(),
        "to_row": dev.tolist(),
        "to_track": track_of[dev].tolist(),
        "to_us": np.round(ev.ts[dev] - base, 3).tolist(),
        "hidden": int(max(total - MAX_FLOWS, 0)),
    }


def launch_pairs(trace: Trace):
    def build():
        ev = trace.events
        launcher = launch_of(trace)
        dev = np.flatnonzero(device_mask(trace) & (launcher >= 0))
        src = launcher[dev]
        return dev, src, ev.ts[dev], ev.ts[src]

    return trace.memo("launch_pairs", build)


def search(trace: Trace, pattern: str, regex: bool = False, limit: int = MAX_SEARCH_RESULTS) -> dict:
    """Events whose name contains ``pattern`` (case-insensitive), or matches it as a regex.

    Only the distinct names are tested. A regex is bounded (:mod:`.bounded_regex`): its size, and
    one deadline of ``SEARCH_SECONDS`` for all names; past it a :class:`ValueError` says so."""
    ev = trace.events
    ids = trace.memo("distinct_name_ids", lambda: np.unique(ev.name))
    strings = trace.strings
    if regex:
        rx = compile_bounded(pattern)
        hits = matching(rx, ((i, strings[i]) for i in ids.tolist()))
    else:
        needle = pattern.lower()
        hits = [i for i in ids.tolist() if needle in strings[i].lower()]
    lookup = np.zeros(len(strings) + 1, dtype=bool)
    lookup[np.array(hits, dtype=np.int64)] = True
    rows = np.flatnonzero(lookup[ev.name])
    rows = rows[np.argsort(ev.ts[rows], kind="stable")]
    track_of = track_of_events(trace)
    base = origin(trace)
    shown = rows[:limit]
    return {
        "total": int(len(rows)),
        "rows": shown.tolist(),
        "start_us": np.round(ev.ts[shown] - base, 3).tolist(),
        "dur_us": np.round(ev.dur[shown], 3).tolist(),
        "track": track_of[shown].tolist(),
        "name": [trace.strings[i] for i in ev.name[shown]],
    }


def parents(trace: Trace, row: int) -> list[dict]:
    """Enclosing slices of an event on its track, outermost first."""
    ev = trace.events
    track = timeline_index(trace)[int(track_of_events(trace)[row])]
    lv = track.levels[0]
    s, e = float(ev.ts[row]), float(ev.ts[row] + max(ev.dur[row], 0))
    here = np.flatnonzero((lv.start <= s) & (lv.end >= e) & (lv.row != row))
    depth_of_row = lv.depth[lv.row == row]
    if len(depth_of_row):
        here = here[lv.depth[here] < depth_of_row[0]]
    here = here[np.argsort(lv.depth[here])]
    base = origin(trace)
    return [
        {
            "row": int(lv.row[i]),
            "name": trace.strings[lv.name[i]],
            "start_us": round(float(lv.start[i] - base), 3),
            "dur_us": round(float(lv.end[i] - lv.start[i]), 3),
        }
        for i in here
    ]


def flow_partners(trace: Trace, row: int) -> list[dict]:
    """Events linked to ``row``: its launch, or the device work it launched."""
    ev = trace.events
    launcher = launch_of(trace)
    partners = []
    if launcher[row] >= 0:
        partners.append(("launch", int(launcher[row])))
    for r in np.flatnonzero(launcher == row)[:100].tolist():
        partners.append(("device", r))
    track_of = track_of_events(trace)
    base = origin(trace)
    return [
        {
            "type": kind,
            "row": r,
            "name": trace.strings[ev.name[r]],
            "track": int(track_of[r]),
            "start_us": round(float(ev.ts[r] - base), 3),
            "dur_us": round(float(ev.dur[r]), 3),
        }
        for kind, r in partners
    ]
