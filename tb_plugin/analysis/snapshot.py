"""Analyses of an allocator snapshot's history (bytes; time in µs, or entry index when untimed).

- **Blocks live before the history** (``_record_memory_history`` is usually turned on after the model
  was built, so its weights were allocated earlier): a free (``free_completed``, older ``free``) of an
  address whose last earlier alloc/free in the history is not an ``alloc`` frees such a block (its size
  is the free's); and a block the dump's segments hold as ``active_allocated`` whose address is not
  live at the end of the history replay is one too (its size is its ``requested_size``, else ``size``;
  it lives to the end). This is the rule of PyTorch's memory_viz "Active Memory Timeline"; we differ
  from a replay from 0, which misses them (3× low on a model whose weights predate the history).
- **Active memory** after each entry = the bytes of the blocks live before the history + Σ sizes of
  ``alloc`` − Σ sizes freed so far, where a free of a history ``alloc`` frees that alloc's size.
- **Reserved memory** = the bytes of the segments that existed before the history + Σ
  ``segment_alloc``/``segment_map`` − Σ ``segment_free``/``segment_unmap`` so far. The segments before
  the history are the dump's segments (their ``total_size``) less the history's net change: the dump
  and the history end together. Where the device has segments at all, Reserved is never below Active
  (a history whose segment events were dropped cannot make it so). We differ from a replay from 0,
  which read 688 MiB reserved under a 919 MiB active peak on ``samples/gpu_snapshot``.
- **Sizes are requested bytes**: the history's ``alloc``/``free`` sizes are what the caller asked for
  (a 4-byte tensor reads 4), as are the ``requested_size`` of the blocks live before it; so is the peak.
  ``torch.cuda.max_memory_allocated`` counts block bytes: requests rounded up to 512 B, and a
  large-pool block keeps a remainder ≤ 1 MiB that is not split off (a 3 MiB request in a 4 MiB block),
  which the history does not record; it reads higher (H200 sample: 919.2 MiB peak active, 925.2 MiB
  max allocated: 31 KB of rounding, 6 MiB of remainders). ``allocated_at_dump_bytes`` (the dump's
  block sizes) is ``memory_allocated()`` at the dump exactly.
- **Peak active** = the largest active value; the allocations *alive at the peak* are the ``alloc``
  entries at or before it whose matching free (the next free of the same address) comes after it,
  and the blocks live before the history that are not freed by then (``before_history``).
- A **frame** summary (the "Top frame") is ``file:line:function`` of the first ``.py`` frame outside
  installed packages, else the first ``.py`` frame, else the first frame that is neither the stack
  unwinder's (``torch::unwind``, ``??``) nor the caching allocator's (``c10::cuda::CUDACachingAllocator``,
  ``at::detail::empty_*``); a native frame without a file is its function name alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..artifacts.snapshot import ACTIONS, DeviceTrace, Snapshot
from .series import held_max

_A = {a: i for i, a in enumerate(ACTIONS)}
_ALLOC = _A["alloc"]
_FREES = (_A["free_completed"], _A["free"])
_SEG_UP = (_A["segment_alloc"], _A["segment_map"])
_SEG_DOWN = (_A["segment_free"], _A["segment_unmap"])


def _kept(trace: DeviceTrace, name: str, compute):
    """``compute()`` once per trace object: kept on it (read-only arrays), since the summary, the OOM
    report and the timeline all need the same alloc/free matching (a sort of every alloc and free:
    seconds on a 20 M-entry history)."""
    memo = trace.__dict__.setdefault("_kept", {})
    if name not in memo:
        got = compute()
        for arr in got if isinstance(got, tuple) else (got,):
            arr.flags.writeable = False
        memo[name] = got
    return memo[name]


def time_axis(trace: DeviceTrace) -> np.ndarray:
    """µs since the first timed entry when the snapshot has times, else the entry index."""
    return _kept(trace, "time_axis", lambda: _time_axis(trace))


def _time_axis(trace: DeviceTrace) -> np.ndarray:
    time = trace.time  # (``fmin`` passes over NaN as ``nanmin`` does: NaN when no entry is timed)
    lo = np.fmin.reduce(time) if len(time) else np.nan
    if np.isnan(lo):
        return np.arange(len(time), dtype=np.float64)
    bad = np.isnan(time)
    if not bad.any():
        return time - lo
    # entries without a time inherit the previous one
    idx = np.where(~bad, np.arange(len(time)), 0)
    np.maximum.accumulate(idx, out=idx)
    t = time[idx]
    return np.subtract(t, lo, out=t)


def is_free(trace: DeviceTrace) -> np.ndarray:
    """Per entry: whether it is a free (``free_completed``, older ``free``)."""
    return _kept(trace, "is_free", lambda: _any_of(trace.action, _FREES))


def _any_of(action: np.ndarray, codes: tuple[int, ...]) -> np.ndarray:
    """Per entry: whether its action code is one of ``codes`` (a comparison per code: ~40× ``np.isin``'s
    speed on a uint8 column)."""
    out = action == codes[0]
    for code in codes[1:]:
        out |= action == code
    return out


def free_matches(trace: DeviceTrace) -> np.ndarray:
    """Per entry: for a free, the row of the history ``alloc`` it frees (the last alloc/free of the
    same address before it, when that is an alloc); −1 for every other entry and for frees of blocks
    allocated before the history."""
    return _kept(trace, "free_matches", lambda: _free_matches(trace))


def _by_address(trace: DeviceTrace) -> tuple[np.ndarray, np.ndarray]:
    """The rows of the ``alloc`` and free entries, by address, then row, and whether each but the last has the
    next one's address (kept: the free matching and the addresses live at the end both walk them)."""
    return _kept(trace, "by_address", lambda: _by_address_of(trace))


def _by_address_of(trace: DeviceTrace) -> tuple[np.ndarray, np.ndarray]:
    rows = np.flatnonzero((trace.action == _ALLOC) | is_free(trace))
    if len(rows) < 2:
        return rows, np.zeros(0, dtype=bool)
    addr = trace.addr[rows]  # (a copy: the key is made in it)
    lo, n = int(addr.min()), len(rows)
    span, bits = int(addr.max()) - lo + 1, (n - 1).bit_length()
    if span << bits <= 2**63:  # one int64 key per row, (address, row), the row in the low bits: a plain sort
        addr -= lo
        addr <<= bits
        addr |= np.arange(n)
        addr.sort()
        same = np.diff(addr >> bits) == 0
        addr &= (1 << bits) - 1  # (the row's place, taken from the key without a division)
        return rows[addr], same
    if span * n > 2**63:  # (addresses too far apart for one key: two keys)
        order = rows[np.lexsort((rows, addr))]
        return order, trace.addr[order[1:]] == trace.addr[order[:-1]]
    key = (addr - lo) * n + np.arange(n)  # (the same key, the row as a multiple's remainder)
    key.sort()
    return rows[key % n], np.diff(key // n) == 0


def _free_matches(trace: DeviceTrace) -> np.ndarray:
    n = len(trace.action)
    is_alloc = trace.action == _ALLOC
    order, same = _by_address(trace)
    match = np.full(n, -1, dtype=np.int64)
    if len(order) > 1:
        a, b = order[:-1], order[1:]
        ok = same & is_alloc[a] & is_free(trace)[b]
        match[b[ok]] = a[ok]
    return match


def _live_at_end(trace: DeviceTrace) -> np.ndarray:
    """Addresses whose last alloc/free in the history is an ``alloc`` (sorted)."""
    return _kept(trace, "live_at_end", lambda: _live_at_end_of(trace))


def _live_at_end_of(trace: DeviceTrace) -> np.ndarray:
    order, same = _by_address(trace)
    if len(order) == 0:
        return np.zeros(0, dtype=np.int64)
    last = np.ones(len(order), dtype=bool)
    np.logical_not(same, out=last[:-1])
    ends = order[last]
    return np.sort(trace.addr[ends[trace.action[ends] == _ALLOC]])


def segment_blocks_before_history(snapshot: Snapshot, device: int) -> list[dict]:
    """Blocks the dump holds as ``active_allocated`` that no history ``alloc`` explains: live from
    before the history to the end. Each ``{"address", "bytes", "stack"}``."""
    trace = snapshot.devices.get(device)
    live = _live_at_end(trace) if trace is not None else np.zeros(0, dtype=np.int64)
    out = []
    for seg in snapshot.segments:
        if seg["device"] != device:
            continue
        for b in seg["blocks"]:
            if b["state"] != "active_allocated":
                continue
            i = np.searchsorted(live, b["address"])
            if i < len(live) and live[i] == b["address"]:
                continue
            out.append(
                {"address": b["address"], "bytes": int(b.get("requested_size") or b["size"]), "stack": b["stack"]}
            )
    return out


def active_bytes(snapshot: Snapshot, device: int) -> np.ndarray:
    """Active bytes after each entry of ``device``'s history, blocks live before it included."""
    return _kept(snapshot.devices[device], "active_bytes", lambda: _active_bytes(snapshot, device))


def _active_bytes(snapshot: Snapshot, device: int) -> np.ndarray:
    trace = snapshot.devices[device]
    frees = np.flatnonzero(is_free(trace))
    match = free_matches(trace)[frees]
    # a free takes back its alloc's size, or its own (a block allocated before the history)
    freed = trace.size[frees]
    matched = match >= 0
    freed[matched] = trace.size[match[matched]]
    delta = np.where(trace.action == _ALLOC, trace.size, 0)
    delta[frees] -= freed
    initial = int(trace.size[frees[~matched]].sum()) + sum(
        b["bytes"] for b in segment_blocks_before_history(snapshot, device)
    )
    return np.add(np.cumsum(delta, out=delta), initial, out=delta)  # (in place: no array of the history's length)


def reserved_bytes(snapshot: Snapshot, device: int) -> np.ndarray:
    """Reserved bytes after each entry of ``device``'s history, segments from before it included."""
    trace = snapshot.devices[device]
    delta = np.where(_any_of(trace.action, _SEG_UP), trace.size, 0)
    np.subtract(delta, trace.size, out=delta, where=_any_of(trace.action, _SEG_DOWN))  # (no entry up and down)
    replay = np.cumsum(delta, out=delta)  # (in place: all 0 exactly when every delta is)
    at_dump = sum(int(seg["total_size"]) for seg in snapshot.segments if seg["device"] == device)
    if at_dump == 0 and not replay.any():
        return replay  # no segment information: no reserved curve (all 0), not a copy of Active
    before = max(at_dump - (int(replay[-1]) if len(replay) else 0), 0)
    return np.maximum(np.add(replay, before, out=replay), active_bytes(snapshot, device), out=replay)


def lifetimes(trace: DeviceTrace) -> tuple[np.ndarray, np.ndarray]:
    """``(alloc_index, free_index)`` per history allocation: the free that ends it (see
    :func:`free_matches`); ``free_index`` = number of entries when it is never freed."""
    return _kept(trace, "lifetimes", lambda: _lifetimes(trace))


def _lifetimes(trace: DeviceTrace) -> tuple[np.ndarray, np.ndarray]:
    n = len(trace.action)
    match = free_matches(trace)
    allocs = np.flatnonzero(trace.action == _ALLOC)
    frees = np.full(len(allocs), n, dtype=np.int64)
    ended = np.flatnonzero(match >= 0)
    slot = np.empty(n, dtype=np.int64)  # per alloc row, its place in ``allocs`` (a scatter, not a search)
    slot[allocs] = np.arange(len(allocs))
    frees[slot[match[ended]]] = ended
    return allocs, frees


# Frames of the stack capture and of the caching allocator itself: never the "top frame" of an allocation
# (and ATen's tensor-allocation helpers, ``at::detail::empty_cuda``…, which only pass the request on)
_INTERNAL_FRAME = (
    "torch::unwind",
    "torch::CapturedTraceback",
    "c10::cuda::CUDACachingAllocator",
    "c10::CachingDeviceAllocator",
    "gather_with_cpp",
    "at::detail::",
    "at::TensorBase at::detail::",
)
_LIBRARY_DIRS = ("/site-packages/", "/dist-packages/", "/lib/python")


def _is_internal(frame: dict) -> bool:
    """A frame of the unwinder or the allocator, or one with neither a file nor a name (``??``)."""
    name, filename = str(frame.get("name") or ""), str(frame.get("filename") or "")
    if any(k in name for k in _INTERNAL_FRAME) or "CUDACachingAllocator" in filename:
        return True
    return filename in ("", "??") and name in ("", "??")


def top_frame(frames: list[dict]) -> dict | None:
    """The frame an allocation is attributed to: the first ``.py`` frame outside installed packages
    (the user's code), else the first ``.py`` frame, else the first frame that is not the unwinder's or
    the allocator's (:func:`_is_internal`), else the first frame; None for no frames."""
    py = [f for f in frames if str(f.get("filename") or "").endswith(".py")]
    for f in py:  # each group looked at only when the one before is empty (most stacks have user code)
        if not any(d in str(f["filename"]) for d in _LIBRARY_DIRS):
            return f
    if py:
        return py[0]
    return next((f for f in frames if not _is_internal(f)), frames[0] if frames else None)


def frame_summary(snapshot: Snapshot, stack: int) -> str | None:
    """:func:`top_frame` of a stack as ``file:line:function``; None without a stack. Kept per stack on the
    snapshot (at most one string per stack it holds): the summary, the OOM report and each timeline
    request (its 200 bands) name the same stacks again."""
    if stack < 0:
        return None
    if stack >= len(snapshot.stacks):  # (no such stack: not kept, so what is kept stays one per stack held)
        return _frame_summary(snapshot, stack)
    kept: dict[int, str | None] = snapshot.__dict__.setdefault("_frame_summaries", {})
    if stack not in kept:
        kept[stack] = _frame_summary(snapshot, stack)
    return kept[stack]


def _frame_summary(snapshot: Snapshot, stack: int) -> str | None:
    f = top_frame(snapshot.stack_frames(stack) or [])  # (an index beyond the stacks: no frames)
    if f is None:
        return None
    if str(f.get("filename") or "") in ("", "??"):  # a native frame without its file: the function alone
        return str(f["name"])
    return f"{f['filename']}:{f['line']}:{f['name']}"


def alive_at_peak(snapshot: Snapshot, device: int) -> dict:
    """What is alive at the peak of active bytes (the first largest value): ``peak`` (its entry row,
    −1 for an empty history), ``peak_bytes``, ``allocs`` (rows of the history ``alloc`` entries alive
    then), ``early`` (rows of the frees, after the peak, of blocks allocated before the history: each
    such block is alive at the peak with the free's size and stack) and ``blocks`` (the dump's blocks
    live before the history, :func:`segment_blocks_before_history`). Their bytes sum to ``peak_bytes``."""
    trace = snapshot.devices[device]
    active = active_bytes(snapshot, device)
    peak = int(np.argmax(active)) if len(active) else -1
    allocs, frees = lifetimes(trace)
    match = free_matches(trace)
    return {
        "peak": peak,
        "peak_bytes": int(active[peak]) if len(active) else 0,
        "allocs": allocs[(allocs <= peak) & (frees > peak)],
        "early": np.flatnonzero(is_free(trace)[peak + 1 :] & (match[peak + 1 :] < 0)) + (peak + 1),
        "blocks": segment_blocks_before_history(snapshot, device),
    }


def device_summary(snapshot: Snapshot, device: int, top: int = 10) -> dict:
    """Peak active bytes and the ``top`` largest allocations alive at the peak (blocks live before
    the history included, marked ``before_history`` with time ``None``)."""
    trace = snapshot.devices[device]
    t = time_axis(trace)
    alive = alive_at_peak(snapshot, device)
    peak = alive["peak"]
    # the history's rows alive at the peak, the ``top`` largest (first met on a tie) picked in numpy: the
    # stable sort below keeps the same ``top`` whatever else it holds
    history = np.concatenate([alive["allocs"], alive["early"]])
    sizes = trace.size[history]
    largest = len(history) - 1 - np.argsort(sizes[::-1], kind="stable")[::-1][:top]  # (no negation: int64)
    n_allocs = len(alive["allocs"])
    rows: list[dict[str, Any]] = [
        {
            "bytes": int(trace.size[i]),
            "frame": frame_summary(snapshot, int(trace.stack[i])),
            "stack": int(trace.stack[i]),
            "time": None if at >= n_allocs else float(t[i]),
            "before_history": at >= n_allocs,
        }
        for at, i in sorted(zip(largest.tolist(), history[largest].tolist()))
    ]
    rows += [
        {
            "bytes": b["bytes"],
            "frame": frame_summary(snapshot, b["stack"]),
            "stack": b["stack"],
            "time": None,
            "before_history": True,
        }
        for b in alive["blocks"]
    ]
    rows.sort(key=lambda r: -r["bytes"])
    return {
        "device": f"GPU{device}",
        "peak_active_bytes": alive["peak_bytes"],
        "peak_time": float(t[peak]) if len(t) else None,
        "allocated_at_dump_bytes": allocated_at_dump(snapshot, device),
        "largest": rows[:top],
    }


def allocated_at_dump(snapshot: Snapshot, device: int) -> int:
    """Σ ``size`` of the device's ``active_allocated`` blocks in the dump: block bytes, which is
    ``torch.cuda.memory_allocated()`` at the dump exactly (the H200 sample: 388,331,520 B both)."""
    return sum(
        int(b["size"])
        for s in snapshot.segments
        if s["device"] == device
        for b in s["blocks"]
        if b["state"] == "active_allocated"
    )


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
    rows = np.flatnonzero(_any_of(trace.action, (_A["oom"], _A["snapshot"])))
    return [
        {"action": ACTIONS[int(trace.action[i])], "time": float(t[i]), "bytes": int(trace.size[i])}
        for i in rows.tolist()
    ]


def top_allocations(snapshot: Snapshot, device: int, limit: int = 100) -> list[dict]:
    trace = snapshot.devices[device]
    t = time_axis(trace)
    allocs, frees = lifetimes(trace)
    order = allocs[np.argsort(-trace.size[allocs], kind="stable")][:limit]
    free_of = dict(zip(allocs.tolist(), frees.tolist()))
    n = len(trace.action)
    return [
        {
            "bytes": int(trace.size[i]),
            "alloc_time": float(t[i]),
            "free_time": float(t[free_of[i]]) if free_of[i] < n else None,
            "frame": frame_summary(snapshot, int(trace.stack[i])),
            "stack": int(trace.stack[i]),
        }
        for i in order.tolist()
    ]


def timeline(
    snapshot: Snapshot,
    device: int,
    start: float | None,
    end: float | None,
    width_px: int,
    bands: int = 200,
    cache: dict | None = None,
) -> dict:
    """Active/reserved curves downsampled to ``width_px`` bins (per bin its held maximum), and the
    ``bands`` largest allocations alive in the window, stacked by allocation order, below them the
    blocks live before the history (:func:`before_history_bands`). ``bands_alive``: the history's
    allocations alive in the window; ``bands_left_out`` of them are not drawn, none larger than
    ``left_out_max_bytes`` (None when none is left out): they are in the Active curve only.
    ``cache`` keeps the per-device arrays between calls."""
    trace = snapshot.devices[device]
    cache = {} if cache is None else cache
    if "t" not in cache:
        cache.update(
            t=time_axis(trace),
            active=active_bytes(snapshot, device),
            reserved=reserved_bytes(snapshot, device),
            lifetimes=lifetimes(trace),
        )
    t, active, reserved = cache["t"], cache["active"], cache["reserved"]
    lo = float(t[0]) if start is None else start
    hi = float(t[-1]) if end is None else end
    if hi <= lo:
        hi = lo + 1.0

    def per_bin(values):
        """Per bin: the largest value held during it (:func:`.series.held_max`)."""
        return held_max(t, values, lo, hi, width_px).astype(np.int64).tolist()

    allocs, frees = cache.get("lifetimes") or lifetimes(trace)
    n = len(t)
    free_t = np.where(frees < n, t[np.minimum(frees, n - 1)], np.inf)
    alloc_t = t[allocs]
    inside = (alloc_t <= hi) & (free_t >= lo)
    chosen = allocs[inside]  # (by row: ``allocs`` is)
    pick, left_out_max = largest_first_met(trace.size[chosen], bands)
    left_out = len(chosen) - len(pick)
    chosen, chosen_free = chosen[pick], free_t[inside][pick]
    drawn = [
        {
            "alloc_time": float(t[i]),
            "free_time": None if np.isinf(f) else float(f),
            "bytes": int(trace.size[i]),
            "stack": int(trace.stack[i]),
            "frame": frame_summary(snapshot, int(trace.stack[i])),
            "before_history": False,
            "blocks": 1,
        }
        for i, f in zip(chosen.tolist(), chosen_free.tolist())
    ]
    return {
        "start": lo,
        "end": hi,
        "time_unit": "us" if snapshot.has_time else "entry",
        "active_bytes": per_bin(active),
        "reserved_bytes": per_bin(reserved),
        "bands": before_history_bands(snapshot, device, lo) + drawn,
        "bands_alive": int(inside.sum()),
        "bands_left_out": left_out,
        "left_out_max_bytes": left_out_max,
        "markers": [m for m in markers(snapshot, device) if lo <= m["time"] <= hi],
    }


def largest_first_met(sizes: np.ndarray, k: int) -> tuple[np.ndarray, int | None]:
    """The places of the ``k`` largest of ``sizes`` (a tie: the first met), in place order, and the
    largest size left out (None when none is): the set a stable sort by size, largest first, takes
    first, found in linear time (a partition, then the places at the threshold in order)."""
    n = len(sizes)
    if n <= k:
        return np.arange(n), None
    if k <= 0:
        return np.zeros(0, dtype=np.int64), int(sizes.max())
    threshold = np.partition(sizes, n - k)[n - k]  # the k-th largest
    above = sizes > threshold
    at = np.flatnonzero(sizes == threshold)
    taken_at = at[: k - int(np.count_nonzero(above))]  # the first met of those equal to it
    keep = above
    keep[taken_at] = True
    # what is left out: the rest at the threshold, else the largest below it
    left_max = int(threshold) if len(at) > len(taken_at) else int(sizes[~keep].max())
    return np.flatnonzero(keep), left_max


def before_history_bands(snapshot: Snapshot, device: int, lo: float) -> list[dict]:
    """The blocks live before the history as bands from its first entry, drawn below the others (as
    memory_viz stacks them): one band for those still live at the end (``blocks``: how many), and one
    per block freed during the history at or after ``lo`` (its free's stack). ``before_history``: True."""
    trace = snapshot.devices[device]
    t = time_axis(trace)
    if len(t) == 0:
        return []
    start = float(t[0])
    match = free_matches(trace)
    early = np.flatnonzero(is_free(trace) & (match < 0) & (t >= lo))
    kept = segment_blocks_before_history(snapshot, device)
    out = []
    if kept:
        out.append(
            {
                "alloc_time": start,
                "free_time": None,
                "bytes": sum(b["bytes"] for b in kept),
                "stack": -1,
                "frame": None,
                "before_history": True,
                "blocks": len(kept),
            }
        )
    out += [
        {
            "alloc_time": start,
            "free_time": float(t[i]),
            "bytes": int(trace.size[i]),
            "stack": int(trace.stack[i]),
            "frame": frame_summary(snapshot, int(trace.stack[i])),
            "before_history": True,
            "blocks": 1,
        }
        for i in early[np.argsort(-t[early], kind="stable")].tolist()
    ]  # freed last: lowest
    return out
