"""OOM forensics of an allocator snapshot (bytes; times as :func:`.snapshot.time_axis`).

- **The OOM**: the last ``oom`` entry of the device's history. ``requested_bytes`` is its ``size`` (the
  allocation that failed), ``device_free_bytes`` the free memory CUDA reported then (PyTorch writes it
  as ``device_free`` instead of ``addr``), ``stream`` its stream. A snapshot without an ``oom`` entry
  whose file name says OOM (``taken_on_oom``) is analysed at its dump, with no requested size.
- **Allocator state** per stream, from the dump's segments of the device: ``reserved_bytes`` = Σ
  segment ``total_size``; ``free_bytes`` = Σ sizes of ``inactive`` blocks; ``allocated_bytes`` = Σ sizes
  of the other blocks; ``largest_free_block_bytes`` = the largest ``inactive`` block;
  **fragmentation** ``fragmentation_pct`` = (1 − largest free block / total free) × 100 (0 when nothing
  is free): the share of the free memory that a single allocation cannot use. The caching allocator
  serves a request only from blocks of its own stream, so the OOM stream's row is the one that
  refused it. ``state_at`` says which moment that is: ``"oom"`` when no alloc, free or segment entry
  follows the OOM in the history (a snapshot taken on the OOM: the dump *is* the OOM's state);
  ``"reconstructed"`` when ``entries_after_oom`` such entries followed (a dump taken later, e.g. in an
  ``except`` block after tensors were freed): the segments at the OOM are the dump's minus the segments
  allocated after it plus those freed after it (their stream from their entry), and the blocks live at
  the OOM are laid into them by address, each with the dump's block size when the same block is still
  live at the dump, else its requested size rounded up to 512 B (history sizes are requested sizes,
  so free memory may read up to that rounding too high); free blocks are the gaps between live blocks.
  ``dump_totals`` keeps the dump's own totals. ``"dump"`` when there is no OOM entry.
- ``active_bytes_at_oom``: active bytes after the OOM entry (:func:`.snapshot.active_bytes`, blocks
  live before the history included). ``reserved_bytes_at_oom`` = the dump's reserved bytes − the net
  ``segment_alloc``/``segment_map`` − ``segment_free``/``segment_unmap`` bytes after the OOM.
- **Largest live allocations** at the OOM: history ``alloc`` entries at or before it whose free comes
  after it, and the blocks live before the history not freed by then (``before_history``); without
  history, the dump's ``active_allocated`` blocks. Largest first, with their stacks.
- **Growth** in the last ``last_n`` entries before the OOM: per allocation site (the frame summary of
  the allocating stack, :func:`.snapshot.frame_summary`), ``net_bytes`` = bytes allocated there in the
  window − bytes freed in the window of allocations made there (a free counts for the stack of the
  ``alloc`` it frees; the free of a block from before the history for its own stack). ``net_bytes`` of
  the window = Σ over sites = active bytes after the entry before the OOM − active bytes before the
  window.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..artifacts.snapshot import ACTIONS, Snapshot
from .snapshot import active_bytes, frame_summary, free_matches, lifetimes, segment_blocks_before_history, time_axis

_A = {a: i for i, a in enumerate(ACTIONS)}
_FREES = (_A["free_completed"], _A["free"])
_SEG_UP = (_A["segment_alloc"], _A["segment_map"])
_SEG_DOWN = (_A["segment_free"], _A["segment_unmap"])
_ALLOCATOR = (_A["alloc"], *_FREES, _A["free_requested"], *_SEG_UP, *_SEG_DOWN)
MAX_LAST_N = 10_000_000
BLOCK_ROUND = 512  # bytes: the caching allocator's smallest block and rounding


def fragmentation_pct(free: int, largest: int) -> float:
    """(1 − largest free block / total free) × 100; 0 when nothing is free."""
    return 0.0 if free <= 0 else (1.0 - largest / free) * 100.0


def _stream(value):
    """A stream as a grouping key: NaN (which reads back from the cache as null) is None."""
    return None if isinstance(value, float) and value != value else value


def _by_stream(segs: list[dict]) -> tuple[list[dict], dict]:
    """Per stream and in total, from ``{"stream", "reserved_bytes", "allocated_bytes", "free_bytes",
    "largest_free_block_bytes", "free_blocks"}`` per segment (see the module doc)."""
    per: dict = {}
    for seg in segs:
        row = per.setdefault(
            seg["stream"],
            {
                "stream": seg["stream"],
                "segments": 0,
                "reserved_bytes": 0,
                "allocated_bytes": 0,
                "free_bytes": 0,
                "largest_free_block_bytes": 0,
                "free_blocks": 0,
            },
        )
        row["segments"] += 1
        for key in ("reserved_bytes", "allocated_bytes", "free_bytes", "free_blocks"):
            row[key] += seg[key]
        row["largest_free_block_bytes"] = max(row["largest_free_block_bytes"], seg["largest_free_block_bytes"])
    rows = sorted(per.values(), key=lambda r: str(r["stream"]))
    for r in rows:
        r["fragmentation_pct"] = fragmentation_pct(r["free_bytes"], r["largest_free_block_bytes"])
        r["is_oom_stream"] = False
    totals = {
        k: sum(r[k] for r in rows)
        for k in ("segments", "reserved_bytes", "allocated_bytes", "free_bytes", "free_blocks")
    }
    totals["largest_free_block_bytes"] = max((r["largest_free_block_bytes"] for r in rows), default=0)
    totals["fragmentation_pct"] = fragmentation_pct(totals["free_bytes"], totals["largest_free_block_bytes"])
    return rows, totals


def streams_state(snapshot: Snapshot, device: int) -> tuple[list[dict], dict]:
    """Per stream of ``device``'s segments at the dump, and the device totals (see the module doc)."""
    segs = []
    for seg in snapshot.segments:
        if seg["device"] != device:
            continue
        free = [b["size"] for b in seg["blocks"] if b["state"] == "inactive"]
        segs.append(
            {
                "stream": _stream(seg["stream"]),
                "reserved_bytes": seg["total_size"],
                "allocated_bytes": sum(b["size"] for b in seg["blocks"]) - sum(free),
                "free_bytes": sum(free),
                "largest_free_block_bytes": max(free, default=0),
                "free_blocks": len(free),
            }
        )
    return _by_stream(segs)


def streams_at(snapshot: Snapshot, device: int, index: int) -> tuple[list[dict], dict]:
    """The per-stream state after entry ``index``, rebuilt from the dump and the entries after it (see
    the module doc, *reconstructed*)."""
    trace = snapshot.devices[device]
    segs = {s["address"]: (s["total_size"], _stream(s["stream"])) for s in snapshot.segments if s["device"] == device}
    streams = {o["index"]: _stream(o["stream"]) for o in snapshot.segment_streams if o["device"] == device}
    post = np.flatnonzero(np.isin(trace.action[index + 1 :], _SEG_UP + _SEG_DOWN)) + index + 1
    for i in post[::-1].tolist():  # undo the segment entries after the OOM, last first
        if trace.action[i] in _SEG_UP:
            segs.pop(int(trace.addr[i]), None)
        else:
            segs[int(trace.addr[i])] = (int(trace.size[i]), streams.get(i))
    addr, size = _live_blocks(snapshot, device, index)
    starts = np.array(sorted(segs), dtype=np.int64)
    totals = np.array([segs[a][0] for a in starts.tolist()], dtype=np.int64)
    seg_of = np.searchsorted(starts, addr, side="right") - 1
    safe = np.maximum(seg_of, 0)
    inside = (seg_of >= 0) & (addr < starts[safe] + totals[safe]) if len(starts) else np.zeros(len(addr), dtype=bool)
    order = np.lexsort((addr[inside], seg_of[inside]))
    a, z, k = addr[inside][order], size[inside][order], seg_of[inside][order]
    used = np.bincount(k, weights=z, minlength=len(starts)).astype(np.int64)
    largest = np.zeros(len(starts), dtype=np.int64)
    n_free = np.zeros(len(starts), dtype=np.int64)
    last_end = starts.copy()
    if len(k):
        first = np.r_[True, k[1:] != k[:-1]]
        prev_end = np.where(first, starts[k], np.r_[starts[k[0]], (a + z)[:-1]])
        gap = np.maximum(a - prev_end, 0)  # free bytes between a live block and the one before it
        np.maximum.at(largest, k, gap)
        np.add.at(n_free, k, (gap > 0).astype(np.int64))
        np.maximum.at(last_end, k, a + z)
    tail = np.maximum(starts + totals - last_end, 0)
    largest = np.maximum(largest, tail)
    n_free += tail > 0
    rows = [
        {
            "stream": segs[int(st)][1],
            "reserved_bytes": int(tot),
            "allocated_bytes": int(min(u, tot)),
            "free_bytes": int(max(tot - u, 0)),
            "largest_free_block_bytes": int(lg),
            "free_blocks": int(g),
        }
        for st, tot, u, lg, g in zip(starts.tolist(), totals.tolist(), used.tolist(), largest.tolist(), n_free.tolist())
    ]
    return _by_stream(rows)


def _live_blocks(snapshot: Snapshot, device: int, index: int) -> tuple[np.ndarray, np.ndarray]:
    """``(address, block bytes)`` of the blocks live after entry ``index``: the dump's size for a block
    still live at the dump, else the requested size rounded up to :data:`BLOCK_ROUND`."""
    trace = snapshot.devices[device]
    n = len(trace.action)
    dump = {
        b["address"]: b["size"]
        for s in snapshot.segments
        if s["device"] == device
        for b in s["blocks"]
        if b["state"] != "inactive"
    }
    allocs, frees = lifetimes(trace)
    cond = (allocs <= index) & (frees > index)
    addr = trace.addr[allocs[cond]]
    size = _block_size(trace.size[allocs[cond]])
    exact = np.array([dump.get(x, -1) for x in addr.tolist()], dtype=np.int64)  # one per live block
    size = np.where((frees[cond] == n) & (exact >= 0), exact, size)
    match = free_matches(trace)
    early = np.flatnonzero(np.isin(trace.action, _FREES) & (match < 0) & (np.arange(n) > index))
    before = segment_blocks_before_history(snapshot, device)
    addr = np.concatenate([addr, trace.addr[early], np.array([b["address"] for b in before], dtype=np.int64)])
    size = np.concatenate(
        [
            size,
            _block_size(trace.size[early]),
            np.array([dump.get(b["address"], b["bytes"]) for b in before], dtype=np.int64),
        ]
    )
    return addr.astype(np.int64), size.astype(np.int64)


def _block_size(requested: np.ndarray) -> np.ndarray:
    """The allocator's block for a request: rounded up to 512 bytes (history sizes are requested sizes)."""
    return ((np.maximum(requested, 1) + BLOCK_ROUND - 1) // BLOCK_ROUND) * BLOCK_ROUND


def live_at(snapshot: Snapshot, device: int, index: int, top: int) -> list[dict]:
    """The ``top`` largest allocations live after entry ``index`` of ``device``'s history."""
    trace = snapshot.devices[device]
    t = time_axis(trace)
    allocs, frees = lifetimes(trace)
    alive = allocs[(allocs <= index) & (frees > index)]
    alive = alive[np.argsort(-trace.size[alive], kind="stable")][:top]
    rows: list[dict[str, Any]] = [
        {"bytes": int(trace.size[i]), "stack": int(trace.stack[i]), "time": float(t[i]), "before_history": False}
        for i in alive.tolist()
    ]
    match = free_matches(trace)
    early = np.flatnonzero(np.isin(trace.action, _FREES) & (match < 0) & (np.arange(len(match)) > index))
    early = early[np.argsort(-trace.size[early], kind="stable")][:top]
    rows += [
        {"bytes": int(trace.size[i]), "stack": int(trace.stack[i]), "time": None, "before_history": True}
        for i in early.tolist()
    ]
    rows += [
        {"bytes": b["bytes"], "stack": b["stack"], "time": None, "before_history": True}
        for b in segment_blocks_before_history(snapshot, device)
    ]
    return _with_frames(snapshot, rows, top)


def dump_live(snapshot: Snapshot, device: int, top: int) -> list[dict]:
    """The ``top`` largest ``active_allocated`` blocks of ``device`` at the dump."""
    rows = [
        {"bytes": int(b.get("requested_size") or b["size"]), "stack": b["stack"], "time": None, "before_history": False}
        for s in snapshot.segments
        if s["device"] == device
        for b in s["blocks"]
        if b["state"] == "active_allocated"
    ]
    return _with_frames(snapshot, rows, top)


def _with_frames(snapshot: Snapshot, rows: list[dict], top: int) -> list[dict]:
    rows.sort(key=lambda r: -r["bytes"])
    return [dict(r, frame=frame_summary(snapshot, r["stack"])) for r in rows[:top]]


def growth_before(snapshot: Snapshot, device: int, index: int, last_n: int, top: int) -> dict:
    """Net bytes per allocation site over the ``last_n`` entries before entry ``index``."""
    trace = snapshot.devices[device]
    lo = max(0, index - last_n)
    act, size, stack = trace.action[lo:index], trace.size[lo:index], trace.stack[lo:index]
    match = free_matches(trace)[lo:index]
    is_alloc = act == _A["alloc"]
    is_free = np.isin(act, _FREES)
    owner = np.where(is_free & (match >= 0), trace.stack[np.maximum(match, 0)], stack)
    freed = np.where(match >= 0, trace.size[np.maximum(match, 0)], size)
    plus = np.where(is_alloc, size, 0)
    minus = np.where(is_free, freed, 0)
    sel = is_alloc | is_free
    stacks, inv = np.unique(owner[sel], return_inverse=True)
    added = np.zeros(len(stacks), dtype=np.int64)
    removed = np.zeros(len(stacks), dtype=np.int64)
    np.add.at(added, inv, plus[sel])
    np.add.at(removed, inv, minus[sel])
    n_alloc = np.bincount(inv, weights=is_alloc[sel], minlength=len(stacks)).astype(np.int64)
    n_free = np.bincount(inv, weights=is_free[sel], minlength=len(stacks)).astype(np.int64)
    sites: dict = {}  # one pass over the distinct stacks, never over the entries
    for k, sid in enumerate(stacks.tolist()):
        frame = frame_summary(snapshot, sid)
        row = sites.setdefault(
            frame,
            {
                "frame": frame,
                "stack": sid,
                "net_bytes": 0,
                "allocated_bytes": 0,
                "freed_bytes": 0,
                "allocs": 0,
                "frees": 0,
                "_best": -1,
            },
        )
        row["allocated_bytes"] += int(added[k])
        row["freed_bytes"] += int(removed[k])
        row["net_bytes"] += int(added[k] - removed[k])
        row["allocs"] += int(n_alloc[k])
        row["frees"] += int(n_free[k])
        if abs(int(added[k] - removed[k])) > row["_best"]:
            row["_best"], row["stack"] = abs(int(added[k] - removed[k])), sid
    rows = sorted(sites.values(), key=lambda r: (-r["net_bytes"], str(r["frame"])))
    t = time_axis(trace)
    return {
        "last_n": last_n,
        "entries": index - lo,
        "start_time": float(t[lo]) if index > lo else None,
        "net_bytes": int(plus.sum() - minus.sum()),
        "rows": [{k: v for k, v in r.items() if k != "_best"} for r in rows[:top]],
    }


def _pick_device(snapshot: Snapshot, device: int | None) -> int | None:
    if device is not None:
        return device
    if snapshot.ooms:
        return snapshot.ooms[-1]["device"]
    for dev in sorted(snapshot.devices):
        if np.any(snapshot.devices[dev].action == _A["oom"]):
            return dev
    if snapshot.devices:
        return min(snapshot.devices)
    return min((s["device"] for s in snapshot.segments), default=None)


def oom_report(
    snapshot: Snapshot, device: int | None = None, taken_on_oom: bool = False, last_n: int = 1000, top: int = 20
) -> dict:
    """The OOM forensics of ``device`` (None: the device of the last OOM); see the module doc."""
    device = _pick_device(snapshot, device)
    doc: dict[str, Any] = {
        "device": None if device is None else f"GPU{device}",
        "detected_by": None,
        "oom": None,
        "ooms": [],
        "state_at": "dump",
        "entries_after_oom": None,
        "streams": [],
        "totals": None,
        "dump_totals": None,
        "largest_live": [],
        "growth": None,
    }
    if device is None:
        return doc
    doc["streams"], doc["totals"] = streams_state(snapshot, device)
    trace = snapshot.devices.get(device)
    rows = np.flatnonzero(trace.action == _A["oom"]) if trace is not None else np.zeros(0, dtype=np.int64)
    if trace is None or len(rows) == 0:  # (no trace: no rows)
        if taken_on_oom:
            doc["detected_by"] = "file_name"
            doc["largest_live"] = (
                live_at(snapshot, device, len(trace.action) - 1, top)
                if trace is not None and len(trace.action)
                else dump_live(snapshot, device, top)
            )
        return doc
    t = time_axis(trace)
    extra = {o["index"]: o for o in snapshot.ooms if o["device"] == device}
    doc["ooms"] = [{"index": int(i), "time": float(t[i]), "requested_bytes": int(trace.size[i])} for i in rows.tolist()]
    index = int(rows[-1])
    after = trace.action[index + 1 :]
    seg_after = int(
        np.where(np.isin(after, _SEG_UP), trace.size[index + 1 :], 0).sum()
        - np.where(np.isin(after, _SEG_DOWN), trace.size[index + 1 :], 0).sum()
    )
    doc["entries_after_oom"] = int(np.isin(after, _ALLOCATOR).sum())
    doc["state_at"] = "oom" if doc["entries_after_oom"] == 0 else "reconstructed"
    doc["dump_totals"] = doc["totals"]
    if doc["state_at"] == "reconstructed":
        doc["streams"], doc["totals"] = streams_at(snapshot, device, index)
    doc["detected_by"] = "history"
    info = extra.get(index, {})
    doc["oom"] = {
        "index": index,
        "time": float(t[index]),
        "requested_bytes": int(trace.size[index]),
        "device_free_bytes": info.get("device_free"),
        "stream": info.get("stream"),
        "active_bytes_at_oom": int(active_bytes(snapshot, device)[index]),
        "reserved_bytes_at_oom": (doc["dump_totals"]["reserved_bytes"] - seg_after if snapshot.segments else None),
    }
    for r in doc["streams"]:
        r["is_oom_stream"] = info.get("stream") is not None and r["stream"] == info["stream"]
    doc["largest_live"] = live_at(snapshot, device, index, top)
    doc["growth"] = growth_before(snapshot, device, index, min(max(last_n, 1), MAX_LAST_N), top)
    return doc
