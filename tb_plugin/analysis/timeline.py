"""Timeline level-of-detail index: tracks, nesting depth, and a pyramid of merged slices.

Tracks: one per CPU thread (pid, tid) for host events; one per GPU stream (device, stream) for
kernels and GPU-side annotations; one "Memcpy" and one "Memset" track per device.

Level 0 holds every event of a track. Level ``l ≥ 1`` has bucket width ``B_l = 4**(l-1)`` µs: items of
level ``l-1`` shorter than ``B_l`` that share a depth and a bucket are merged into one item that keeps
the depth, the count of events it hides, and the dominant name (the name with the largest summed
duration). Longer items are kept as they are. A query for a window of ``W`` pixels answers from the
coarsest level whose bucket is at most one pixel, so at most a few items are drawn per pixel and depth,
and at full zoom the answer is exactly the events of the window.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..trace.categories import Kind
from ..trace.model import Trace
from .op_tree import ancestor_counts

LEVEL_FACTOR = 4


@dataclasses.dataclass
class Level:
    """Items of one track at one level, sorted by start (µs, absolute)."""

    start: np.ndarray
    end: np.ndarray
    depth: np.ndarray  # int32
    name: np.ndarray  # int32 string id (dominant name of merged items)
    count: np.ndarray  # int64 events behind the item (1 = a real event)
    row: np.ndarray  # int64 event row, -1 for merged items
    reach: np.ndarray  # running max of end, for window search

    @classmethod
    def build(cls, start, end, depth, name, count, row) -> Level:
        order = np.lexsort((depth, start))
        start, end = start[order], end[order]
        return cls(
            start,
            end,
            depth[order],
            name[order],
            count[order],
            row[order],
            np.maximum.accumulate(end) if len(end) else end,
        )

    def window(self, t0: float, t1: float) -> np.ndarray:
        """Indices of items overlapping ``[t0, t1]``."""
        lo = int(np.searchsorted(self.reach, t0, side="left"))
        hi = int(np.searchsorted(self.start, t1, side="right"))
        if hi <= lo:
            return np.zeros(0, dtype=np.int64)
        idx = np.arange(lo, hi)
        return idx[self.end[idx] >= t0]


@dataclasses.dataclass
class Track:
    id: int
    kind: str  # "thread" | "stream" | "memcpy" | "memset"
    process: str  # group label: process name or GPU
    name: str
    max_depth: int
    levels: list[Level]  # levels[0] = events; levels[l] has bucket 4**(l-1) µs

    def bucket(self, level: int) -> float:
        return 0.0 if level == 0 else float(LEVEL_FACTOR ** (level - 1))


INDEX_FORMAT = 1
_LEVEL_FIELDS = ("start", "end", "depth", "name", "count", "row")


def timeline_index(trace: Trace) -> list[Track]:
    return trace.memo("timeline_index", lambda: _build(trace))


def pack_index(trace: Trace) -> tuple[dict, dict[str, np.ndarray]]:
    """The index as a JSON header plus flat arrays, for the parse cache."""
    tracks = timeline_index(trace)
    header: dict[str, Any] = {"format": INDEX_FORMAT, "tracks": []}
    arrays: dict[str, np.ndarray] = {"track_of": trace.derived["track_of"]}
    for t in tracks:
        header["tracks"].append(
            {
                "id": t.id,
                "kind": t.kind,
                "process": t.process,
                "name": t.name,
                "max_depth": t.max_depth,
                "levels": len(t.levels),
            }
        )
        for l, level in enumerate(t.levels):
            for f in _LEVEL_FIELDS:
                arrays[f"{t.id}.{l}.{f}"] = getattr(level, f)
    return header, arrays


def unpack_index(trace: Trace, header: dict, arrays) -> bool:
    """Install a cached index on ``trace``; False when it is of another format."""
    if header.get("format") != INDEX_FORMAT:
        return False
    tracks = []
    for t in header["tracks"]:
        levels = []
        for l in range(t["levels"]):
            cols = {f: arrays[f"{t['id']}.{l}.{f}"] for f in _LEVEL_FIELDS}
            cols["reach"] = np.maximum.accumulate(cols["end"]) if len(cols["end"]) else cols["end"]
            levels.append(Level(**cols))
        tracks.append(Track(t["id"], t["kind"], t["process"], t["name"], t["max_depth"], levels))
    trace.derived["track_of"] = arrays["track_of"]
    trace.derived["timeline_index"] = tracks
    return True


def track_of_events(trace: Trace) -> np.ndarray:
    """Track id of every event (all events belong to a track)."""
    timeline_index(trace)
    return trace.derived["track_of"]


def _build(trace: Trace) -> list[Track]:
    ev = trace.events
    kind = ev.kind
    is_stream = (kind == Kind.KERNEL) | (kind == Kind.GPU_USER_ANNOTATION)
    is_copy, is_set = kind == Kind.MEMCPY, kind == Kind.MEMSET
    host = ~(is_stream | is_copy | is_set)
    stream = np.where(ev.stream >= 0, ev.stream, ev.tid.astype(np.int64))
    # one integer key per track: (category, a, b)
    cat = np.where(host, 0, np.where(is_stream, 1, np.where(is_copy, 2, 3))).astype(np.int64)
    a = np.where(host, ev.pid.astype(np.int64), ev.device.astype(np.int64))
    b = np.where(host, ev.tid.astype(np.int64), np.where(is_stream, stream, 0))
    packed = cat << 58 | (a & 0x3FFFFFF) << 32 | (b & 0xFFFFFFFF)
    uniq_packed, track_of = np.unique(packed, return_inverse=True)
    uniq = np.stack([uniq_packed >> 58, (uniq_packed >> 32) & 0x3FFFFFF, uniq_packed & 0xFFFFFFFF], axis=1)
    track_of = track_of.reshape(-1)
    trace.derived["track_of"] = track_of
    depth = _depths(ev.ts, ev.ts + ev.dur, track_of)
    order_tracks = sorted(range(len(uniq)), key=lambda t: _track_sort_key(trace, uniq[t]))
    tracks = []
    by_track = np.argsort(track_of, kind="stable")
    bounds = np.searchsorted(track_of[by_track], np.arange(len(uniq) + 1))
    for new_id, t in enumerate(order_tracks):
        rows = by_track[bounds[t] : bounds[t + 1]]
        c, x, y = (int(v) for v in uniq[t])
        kind_name, process, name = _labels(trace, c, x, y)
        levels = _pyramid(ev.ts[rows], ev.ts[rows] + ev.dur[rows], depth[rows], ev.name[rows], ev.dur[rows], rows)
        tracks.append(Track(new_id, kind_name, process, name, int(depth[rows].max()) if len(rows) else 0, levels))
    remap = np.empty(len(uniq), dtype=np.int64)
    remap[order_tracks] = np.arange(len(uniq))
    trace.derived["track_of"] = remap[track_of] if len(track_of) else track_of
    return tracks


def _labels(trace: Trace, c: int, x: int, y: int) -> tuple[str, str, str]:
    if c == 0:
        pid, tid = trace.strings[x], trace.strings[y]
        process = trace.meta.get("process_names", {}).get(pid) or f"process {pid}"
        thread = trace.meta.get("thread_names", {}).get(f"{pid}/{tid}") or f"thread {tid}"
        return "thread", f"{process} ({pid})", thread
    gpu = f"GPU {x}"
    if c == 1:
        return "stream", gpu, f"stream {y}"
    return ("memcpy", gpu, "Memcpy") if c == 2 else ("memset", gpu, "Memset")


def _track_sort_key(trace: Trace, key) -> tuple:
    c, x, y = (int(v) for v in key)
    if c == 0:
        return (0, _num(trace.strings[x]), trace.strings[x], _num(trace.strings[y]), trace.strings[y])
    return (1, x, "", c, str(y).zfill(12))


def _num(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return float("inf")


def _depths(start: np.ndarray, end: np.ndarray, track: np.ndarray) -> np.ndarray:
    """Nesting depth per event within its track (0 = outermost). Crossing slices go one level deeper
    than the slice they cross, like chrome://tracing does; zero and negative durations are points.
    A point at a slice's start or end lies inside it, but a point never holds another slice: points at
    one timestamp are siblings at one depth (as in :mod:`.op_tree`).

    In (track, start, −end) order this is the stack of open slices: an event's depth is one more
    than its *holder*'s, the nearest earlier slice of its track that reaches past its start
    (``end > start``, or ``end == start`` for a point). Both are found for all events at once by
    pointer jumping (rounds grow with the logarithm of the nesting depth), no loop over events."""
    n = len(start)
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    order = np.lexsort((-np.maximum(end, start), start, track))
    s = np.asarray(start, dtype=np.float64)[order]
    e = np.maximum(np.asarray(end, dtype=np.float64)[order], s)
    t = track[order]
    point = e <= s
    holder = _holders(s, e, point, t)
    depth = np.empty(n, dtype=np.int32)
    depth[order] = ancestor_counts(holder)
    return depth


def _holders(s: np.ndarray, e: np.ndarray, point: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Per position (sorted by track, start, −end): the nearest earlier slice of its track that holds
    it, or −1. A failed candidate is replaced by its own candidate: every position between them fails
    the candidate's test, hence this one's (its start is no earlier)."""
    cand = np.arange(len(s)) - 1
    cand[np.flatnonzero(np.r_[True, t[1:] != t[:-1]])] = -1  # a track's first event has no holder
    todo = np.flatnonzero(cand >= 0)
    while len(todo):
        c = cand[todo]
        held = ~point[c] & ((e[c] > s[todo]) | ((e[c] == s[todo]) & point[todo]))
        todo = todo[~held]
        cand[todo] = cand[cand[todo]]
        todo = todo[cand[todo] >= 0]
    return cand


def _pyramid(start, end, depth, name, dur, rows) -> list[Level]:
    end = np.maximum(end, start)
    levels = [
        Level.build(
            start, end, depth, name.astype(np.int32), np.ones(len(start), dtype=np.int64), rows.astype(np.int64)
        )
    ]
    weight = np.maximum(dur, 0.0)
    span = float(end.max() - start.min()) if len(start) else 0.0
    bucket = 1.0
    cur = levels[0]
    cur_weight = weight[np.lexsort((depth, start))]
    # (bounded even for a non-finite span: 64 levels of ×4 reach far beyond any real trace)
    while len(cur.start) > 1 and bucket <= max(span, 1.0) * LEVEL_FACTOR and len(levels) < 64:
        cur, cur_weight = _merge(cur, cur_weight, bucket)
        levels.append(cur)
        bucket *= LEVEL_FACTOR
    return levels


def _merge(level: Level, weight: np.ndarray, bucket: float) -> tuple[Level, np.ndarray]:
    short = (level.end - level.start) < bucket
    keep = ~short
    s_idx = np.flatnonzero(short)
    if len(s_idx) == 0:
        return level, weight
    cell = np.floor((level.start[s_idx] - level.start[0]) / bucket).astype(np.int64)
    key = level.depth[s_idx].astype(np.int64) << 40 | cell
    uniq, inv = np.unique(key, return_inverse=True)
    g = len(uniq)
    by_group = np.argsort(inv, kind="stable")
    group_starts = np.searchsorted(inv[by_group], np.arange(g))
    m_start = np.minimum.reduceat(level.start[s_idx][by_group], group_starts)
    m_end = np.maximum.reduceat(level.end[s_idx][by_group], group_starts)
    m_count = np.bincount(inv, weights=level.count[s_idx], minlength=g).astype(np.int64)
    m_weight = np.bincount(inv, weights=weight[s_idx], minlength=g)
    m_depth = (uniq >> 40).astype(np.int32)
    # dominant name: the (group, name) pair with the largest summed duration
    pair = inv.astype(np.int64) << 32 | level.name[s_idx].astype(np.int64)
    pairs, pinv = np.unique(pair, return_inverse=True)
    pw = np.bincount(pinv, weights=weight[s_idx] + 1e-9, minlength=len(pairs))
    p_group = pairs >> 32
    best = np.lexsort((-pw, p_group))
    first = np.ones(len(best), dtype=bool)
    first[1:] = p_group[best[1:]] != p_group[best[:-1]]
    m_name = np.zeros(g, dtype=np.int32)
    m_name[p_group[best[first]]] = (pairs[best[first]] & 0xFFFFFFFF).astype(np.int32)
    # a group of one real event stays that event
    single_rows = np.full(g, -1, dtype=np.int64)
    lone = np.flatnonzero(np.bincount(inv, minlength=g) == 1)
    if len(lone):
        where = np.zeros(g, dtype=np.int64)
        where[inv] = s_idx
        single_rows[lone] = level.row[where[lone]]
        single_rows[lone[m_count[lone] != 1]] = -1
    starts = np.concatenate([level.start[keep], m_start])
    depths = np.concatenate([level.depth[keep], m_depth])
    order = np.lexsort((depths, starts))
    new = Level(
        starts[order],
        np.concatenate([level.end[keep], m_end])[order],
        depths[order],
        np.concatenate([level.name[keep], m_name])[order],
        np.concatenate([level.count[keep], m_count])[order],
        np.concatenate([level.row[keep], single_rows])[order],
        np.zeros(0),
    )
    new.reach = np.maximum.accumulate(new.end)
    return new, np.concatenate([weight[keep], m_weight])[order]
