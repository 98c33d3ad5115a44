"""Analyses of an allocator snapshot's history (bytes; time in µs, or entry index when untimed).

- **Active memory** after each entry = Σ sizes of ``alloc`` − Σ sizes of ``free_completed`` (older
  ``free``) so far, replayed from 0 at the first recorded entry.
- **Reserved memory** = Σ ``segment_alloc``/``segment_map`` − Σ ``segment_free``/``segment_unmap``.
- **Peak active** = the largest active value; the allocations *alive at the peak* are the ``alloc``
  entries at or before it whose matching free (the next free of the same address) comes after it.
- A **frame** summary is the first frame in a ``.py`` file as ``file:line:function``, or the first frame
  when none is Python.
"""

from __future__ import annotations

import numpy as np

from ..memsnap.snapshot import ACTIONS, DeviceTrace, Snapshot

_A = {a: i for i, a in enumerate(ACTIONS)}
_ALLOC = _A["alloc"]
_FREES = (_A["free_completed"], _A["free"])
_SEG_UP = (_A["segment_alloc"], _A["segment_map"])
_SEG_DOWN = (_A["segment_free"], _A["segment_unmap"])


def time_axis(trace: DeviceTrace) -> np.ndarray:
    """µs since the first timed entry when the snapshot has times, else the entry index."""
    if np.isnan(trace.time).all():
        return np.arange(len(trace.time), dtype=np.float64)
    t = trace.time.copy()
    # entries without a time inherit the previous one
    bad = np.isnan(t)
    if bad.any():
        idx = np.where(~bad, np.arange(len(t)), 0)
        np.maximum.accumulate(idx, out=idx)
        t = t[idx]
    return t - np.nanmin(trace.time)


def active_bytes(trace: DeviceTrace) -> np.ndarray:
    delta = np.where(trace.action == _ALLOC, trace.size, 0) - np.where(np.isin(trace.action, _FREES), trace.size, 0)
    return np.cumsum(delta)


def reserved_bytes(trace: DeviceTrace) -> np.ndarray:
    delta = (np.where(np.isin(trace.action, _SEG_UP), trace.size, 0)
             - np.where(np.isin(trace.action, _SEG_DOWN), trace.size, 0))
    return np.cumsum(delta)


def lifetimes(trace: DeviceTrace) -> tuple[np.ndarray, np.ndarray]:
    """``(alloc_index, free_index)`` per allocation; free_index = len when never freed."""
    allocs, frees = [], []
    open_at: dict[int, int] = {}
    for i, (a, addr) in enumerate(zip(trace.action.tolist(), trace.addr.tolist())):
        if a == _ALLOC:
            open_at[addr] = len(allocs)
            allocs.append(i)
            frees.append(len(trace.action))
        elif a in _FREES:
            k = open_at.pop(addr, None)
            if k is not None:
                frees[k] = i
    return np.array(allocs, dtype=np.int64), np.array(frees, dtype=np.int64)


def frame_summary(snapshot: Snapshot, stack: int) -> str | None:
    if stack < 0:
        return None
    frames = snapshot.stacks[stack]
    for f in frames:
        if str(f["filename"]).endswith(".py"):
            return f"{f['filename']}:{f['line']}:{f['name']}"
    f = frames[0]
    return f"{f['filename']}:{f['line']}:{f['name']}"


def device_summary(snapshot: Snapshot, device: int, top: int = 10) -> dict:
    """Peak active bytes and the ``top`` largest allocations alive at the peak."""
    trace = snapshot.devices[device]
    active = active_bytes(trace)
    t = time_axis(trace)
    peak = int(np.argmax(active)) if len(active) else 0
    allocs, frees = lifetimes(trace)
    alive = allocs[(allocs <= peak) & (frees > peak)]
    order = alive[np.argsort(-trace.size[alive], kind="stable")][:top]
    return {
        "device": f"GPU{device}",
        "peak_active_bytes": int(active[peak]) if len(active) else 0,
        "peak_time": float(t[peak]) if len(t) else None,
        "largest": [{"bytes": int(trace.size[i]), "frame": frame_summary(snapshot, int(trace.stack[i])),
                     "stack": int(trace.stack[i]), "time": float(t[i])} for i in order.tolist()],
    }


def segments_state(snapshot: Snapshot, device: int) -> list[dict]:
    """Segments of one device with their blocks, by address (the allocator state when dumped)."""
    segs = sorted((s for s in snapshot.segments if s["device"] == device), key=lambda s: s["address"])
    return [dict(s, blocks=sorted(s["blocks"], key=lambda b: b["address"])) for s in segs]


def markers(snapshot: Snapshot, device: int) -> list[dict]:
    """OOM and snapshot entries of the history (time per :func:`time_axis`)."""
    trace = snapshot.devices.get(device)
    if trace is None:
        return []
    t = time_axis(trace)
    rows = np.flatnonzero(np.isin(trace.action, (_A["oom"], _A["snapshot"])))
    return [{"action": ACTIONS[int(trace.action[i])], "time": float(t[i]), "bytes": int(trace.size[i])}
            for i in rows.tolist()]


def top_allocations(snapshot: Snapshot, device: int, limit: int = 100) -> list[dict]:
    trace = snapshot.devices[device]
    t = time_axis(trace)
    allocs, frees = lifetimes(trace)
    order = allocs[np.argsort(-trace.size[allocs], kind="stable")][:limit]
    free_of = dict(zip(allocs.tolist(), frees.tolist()))
    n = len(trace.action)
    return [{"bytes": int(trace.size[i]), "alloc_time": float(t[i]),
             "free_time": float(t[free_of[i]]) if free_of[i] < n else None,
             "frame": frame_summary(snapshot, int(trace.stack[i])), "stack": int(trace.stack[i])}
            for i in order.tolist()]


def timeline(snapshot: Snapshot, device: int, start: float | None, end: float | None, width_px: int,
             bands: int = 200) -> dict:
    """Active/reserved curves downsampled to ``width_px`` bins (per bin its maximum), and the
    ``bands`` largest allocations alive in the window, stacked by allocation order."""
    trace = snapshot.devices[device]
    t = time_axis(trace)
    active, reserved = active_bytes(trace), reserved_bytes(trace)
    lo = float(t[0]) if start is None else start
    hi = float(t[-1]) if end is None else end
    if hi <= lo:
        hi = lo + 1.0
    edges = np.linspace(lo, hi, width_px + 1)

    def per_bin(values):
        idx = np.searchsorted(t, edges, side="right") - 1
        out = np.zeros(width_px, dtype=np.int64)
        for k in range(width_px):
            a, b = max(idx[k], 0), max(idx[k + 1], 0)
            out[k] = values[a:b + 1].max() if b >= a and len(values) else 0
        return out.tolist()

    allocs, frees = lifetimes(trace)
    n = len(t)
    free_t = np.where(frees < n, t[np.minimum(frees, n - 1)], np.inf)
    alloc_t = t[allocs]
    inside = (alloc_t <= hi) & (free_t >= lo)
    chosen = allocs[inside]
    chosen_free = free_t[inside]
    pick = np.argsort(-trace.size[chosen], kind="stable")[:bands]
    chosen, chosen_free = chosen[pick], chosen_free[pick]
    order = np.argsort(chosen, kind="stable")
    chosen, chosen_free = chosen[order], chosen_free[order]
    return {
        "start": lo, "end": hi, "time_unit": "us" if snapshot.has_time else "entry",
        "active_bytes": per_bin(active), "reserved_bytes": per_bin(reserved),
        "bands": [{"alloc_time": float(t[i]), "free_time": None if np.isinf(f) else float(f),
                   "bytes": int(trace.size[i]), "stack": int(trace.stack[i]),
                   "frame": frame_summary(snapshot, int(trace.stack[i]))}
                  for i, f in zip(chosen.tolist(), chosen_free.tolist())],
        "markers": [m for m in markers(snapshot, device) if lo <= m["time"] <= hi],
    }
