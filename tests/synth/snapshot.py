"""Synthetic CUDA allocator snapshots in every layout PyTorch has written (for tests and benchmarks).

The published layout (``torch.cuda.memory._snapshot()``): a dict with ``segments`` (each with
``device``, ``address``, ``total_size``, ``stream``, ``segment_type`` and ``blocks`` of ``address``,
``size``, ``state``, ``frames``) and ``device_traces`` (per device, a list of entries with ``action``,
``addr``, ``size``, ``stream``, ``frames`` and, since 2.1, ``time_us``). Older or partial forms:
no ``time_us``; a bare list of segments (``torch.cuda.memory_snapshot()``); empty ``device_traces``
when history was not recorded; Windows paths in frames; ``snapshot``, ``oom`` and ``segment_alloc``
actions.
"""

from __future__ import annotations

import collections
import random

LAYOUTS = ("current", "no_time", "segments_only", "empty_history")
SEGMENT_BYTES = 1 << 26


CALL_SITES = 400  # distinct allocation call sites: real programs allocate from a limited set of places


def _frames(rng: random.Random, depth: int, windows: bool) -> list[dict]:
    """A fresh frame list (new objects each time, as torch writes them) for one of the call sites."""
    site = rng.randrange(CALL_SITES)
    return [dict(f) for f in _site_frames(site, depth, windows)]


_SITES: dict = {}


def _site_frames(site: int, depth: int, windows: bool) -> list[dict]:
    key = (site, depth, windows)
    if key not in _SITES:
        _SITES[key] = _make_frames(random.Random(site), depth, windows)
    return _SITES[key]


def _make_frames(rng: random.Random, depth: int, windows: bool) -> list[dict]:
    root = "C:\\\\work\\\\train" if windows else "/work/train"
    sep = "\\\\" if windows else "/"
    out = [{"filename": "??", "line": 0, "name": "c10::cuda::CUDACachingAllocator::malloc"}]
    for k in range(max(depth - 1, 0)):
        out.append(
            {"filename": f"{root}{sep}model_{rng.randint(0, 3)}.py", "line": rng.randint(1, 400), "name": f"layer{k}"}
        )
    return out[:depth]


def history_entries(
    rng: random.Random, entries: int, frames: int, windows_paths: bool, with_oom: bool, live: list[tuple[int, int]]
):
    """The history of :func:`synthesize_snapshot`, one entry at a time (an entry is yielded once it is
    final); ``live`` ends as the ``(address, size)`` of the blocks still allocated."""
    base = 0x7F0000000000
    pending = collections.deque(
        [
            {
                "action": "segment_alloc",
                "addr": base,
                "size": SEGMENT_BYTES,
                "stream": 0,
                "frames": _frames(rng, frames, windows_paths),
            }
        ]
    )
    count = 1
    next_addr = base
    t = 1_700_000_000_000_000
    i = 0
    while count < entries:
        i += 1
        t += rng.randint(1, 50)
        if len(live) > 8 and (rng.random() < 0.45 or next_addr - base > SEGMENT_BYTES // 2):
            addr, size = live.pop(rng.randrange(len(live)))
            pending.append({"action": "free_requested", "addr": addr, "size": size, "stream": 0, "frames": []})
            pending.append({"action": "free_completed", "addr": addr, "size": size, "stream": 0, "frames": []})
            count += 2
        else:
            size = 512 * rng.randint(1, 4096)
            pending.append(
                {
                    "action": "alloc",
                    "addr": next_addr,
                    "size": size,
                    "stream": 0,
                    "frames": _frames(rng, frames, windows_paths),
                }
            )
            live.append((next_addr, size))
            next_addr += size
            count += 1
        if with_oom and i == entries // 3:
            pending.append({"action": "snapshot", "addr": 0, "size": 0, "stream": 0, "frames": []})
            count += 1
        pending[-1].setdefault("time_us", t)  # the last two entries get this step's time
        if len(pending) > 1:
            pending[-2].setdefault("time_us", t)
        while len(pending) > 2:
            yield pending.popleft()
    yield from pending
    if with_oom:
        yield {"action": "oom", "addr": 0, "size": 1 << 34, "stream": 0, "frames": [], "time_us": t + 1}


def live_segments(
    rng: random.Random, live: list[tuple[int, int]], frames: int, windows_paths: bool, base: int
) -> list[dict]:
    """One segment at ``base`` holding the ``(address, size)`` blocks still live, each with its frames."""
    blocks = [
        {
            "address": a,
            "size": s,
            "requested_size": s,
            "state": "active_allocated",
            "frames": _frames(rng, frames, windows_paths),
        }
        for a, s in live
    ]
    return [
        {
            "device": 0,
            "address": base,
            "total_size": SEGMENT_BYTES,
            "allocated_size": sum(s for _, s in live),
            "active_size": sum(s for _, s in live),
            "requested_size": sum(s for _, s in live),
            "stream": 0,
            "segment_type": "large",
            "segment_pool_id": (0, 0),
            "is_expandable": False,
            "blocks": blocks,
            "frames": [],
        }
    ]


def synthesize_snapshot(
    layout: str = "current",
    entries: int = 200,
    frames: int = 3,
    windows_paths: bool = False,
    with_oom: bool = True,
    seed: int = 0,
):
    """A snapshot object (dict, or list for ``segments_only``) with about ``entries`` history entries."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}")
    rng = random.Random(seed)
    base = 0x7F0000000000
    live: list[tuple[int, int]] = []
    history = list(history_entries(rng, entries, frames, windows_paths, with_oom, live))
    if layout == "no_time":
        for e in history:
            e.pop("time_us", None)
    segments = live_segments(rng, live, frames, windows_paths, base)
    if layout == "segments_only":
        return segments
    return {
        "segments": segments,
        "device_traces": [] if layout == "empty_history" else [history],
        "allocator_settings": {},
        "external_annotations": [{"device": 0, "stage": "forward", "name": "step 1"}],
    }


def replay_peak(obj, device: int = 0) -> int:
    """Peak active bytes of ``device`` by memory_viz's rule, replayed plainly entry by entry (the
    reference the vectorized analysis is tested against). A ``free_completed`` (older ``free``) of an
    address whose last alloc/free is not an ``alloc`` frees a block allocated before the history; a
    segment block ``active_allocated`` whose address is not live at the end was live throughout. Both
    count from the start. A free of a history alloc frees that alloc's size."""
    if isinstance(obj, list) or not obj.get("device_traces") or device >= len(obj["device_traces"]):
        return 0
    live: dict[int, int] = {}  # address -> size of the history alloc live there
    initial = 0
    steps = []  # the change of each alloc/free
    for e in obj["device_traces"][device]:
        if e["action"] == "alloc":
            live[e["addr"]] = e["size"]
            steps.append(e["size"])
        elif e["action"] in ("free_completed", "free"):
            if e["addr"] in live:
                steps.append(-live.pop(e["addr"]))
            else:
                initial += e["size"]
                steps.append(-e["size"])
    for seg in obj.get("segments") or []:
        if seg.get("device", 0) != device:
            continue
        address = seg["address"]
        for b in seg["blocks"]:
            address = b.get("address", address)
            if b["state"] == "active_allocated" and address not in live:
                initial += b.get("requested_size") or b["size"]
            address += b["size"]
    active = peak = initial
    for step in steps:
        active += step
        peak = max(peak, active)
    return peak


def snapshot_with_blocks_before_history() -> tuple[dict, int]:
    """A snapshot whose history began after some blocks were allocated, and its peak by construction.

    Before the history: a 300-byte block at 0x5000 (freed in the history) and a 400-byte block at
    0x9000 (still held at the dump). History: alloc 100 at 0x1000 (→ 700 + 100 = 800, the peak), free
    0x5000 (500), alloc 50 at 0x2000 (550), free 0x1000 (450). A replay from 0 reads 100.
    """
    history = [
        {"action": "alloc", "addr": 0x1000, "size": 100, "stream": 0, "time_us": 10, "frames": []},
        {"action": "free_requested", "addr": 0x5000, "size": 300, "stream": 0, "time_us": 20, "frames": []},
        {"action": "free_completed", "addr": 0x5000, "size": 300, "stream": 0, "time_us": 20, "frames": []},
        {"action": "alloc", "addr": 0x2000, "size": 50, "stream": 0, "time_us": 30, "frames": []},
        {"action": "free_requested", "addr": 0x1000, "size": 100, "stream": 0, "time_us": 40, "frames": []},
        {"action": "free_completed", "addr": 0x1000, "size": 100, "stream": 0, "time_us": 40, "frames": []},
    ]
    weights = [{"filename": "train.py", "line": 12, "name": "build_model"}]
    blocks = [
        {"address": 0x1000, "size": 512, "requested_size": 100, "state": "inactive", "frames": []},
        {"address": 0x2000, "size": 512, "requested_size": 50, "state": "active_allocated", "frames": []},
        {"address": 0x9000, "size": 512, "requested_size": 400, "state": "active_allocated", "frames": weights},
    ]
    segments = [
        {
            "device": 0,
            "address": 0x1000,
            "total_size": 1 << 16,
            "stream": 0,
            "segment_type": "small",
            "blocks": blocks,
            "frames": [],
        }
    ]
    return {"segments": segments, "device_traces": [history]}, 800
