"""A synthesized allocator snapshot taken on an OOM, with every forensic value known by construction.

Device 0, streams 0 and 7 (MiB = 2**20 bytes). History (``time_us`` = 1000 + 10·row):

====  ==============================================  ===========================
row   entry                                           site (first ``.py`` frame)
====  ==============================================  ===========================
0     segment_alloc A (20 MiB, stream 0)
1     alloc X 8 MiB at A                              /w/model.py:10:build_weights
2     alloc T1 2 MiB                                  /w/train.py:50:scratch
3     alloc Y 4 MiB                                   /w/layer.py:20:forward
4     alloc T2 6 MiB                                  /w/train.py:50:scratch
5-6   free_requested / free_completed T1
7-8   free_requested / free_completed T2
9     segment_alloc B (2 MiB, stream 0)
10    alloc Z 1 MiB at B                              /w/layer.py:30:forward
11    segment_alloc C (16 MiB, stream 7)
12    alloc W 16 MiB at C (stream 7)                  /w/aux.py:5:side
13    free_completed W
14    oom: 10 MiB requested on stream 0, device_free 5 MiB
====  ==============================================  ===========================

The dump (the allocator state at the OOM) also holds segment D (4 MiB, stream 0) with one
``active_allocated`` block P of 4 MiB (``requested_size`` 3 MiB, /w/weights.py:1:load) that no history
entry explains: live from before the history.

With ``after_oom=True`` three entries follow the OOM (free_requested X, free_completed X, segment_free C)
and the dump is the state after them (A's first 10 MiB free, no C).
"""

from __future__ import annotations

MIB = 1 << 20
A, B, C, D = 0x10000000, 0x20000000, 0x30000000, 0x40000000


def _frames(path: str, line: int, name: str) -> list[dict]:
    return [
        {"filename": "??", "line": 0, "name": "c10::cuda::CUDACachingAllocator::malloc"},
        {"filename": path, "line": line, "name": name},
    ]


SITES = {
    "X": ("/w/model.py", 10, "build_weights"),
    "T": ("/w/train.py", 50, "scratch"),
    "Y": ("/w/layer.py", 20, "forward"),
    "Z": ("/w/layer.py", 30, "forward"),
    "W": ("/w/aux.py", 5, "side"),
    "P": ("/w/weights.py", 1, "load"),
}


def frame(site: str) -> str:
    """The frame summary of a site, as the analysis writes it."""
    path, line, name = SITES[site]
    return f"{path}:{line}:{name}"


def oom_snapshot(after_oom: bool = False) -> dict:
    def e(action, addr, size, site=None, stream=0):
        out = {
            "action": action,
            "addr": addr,
            "size": size,
            "stream": stream,
            "frames": _frames(*SITES[site]) if site else [],
        }
        return out

    hist = [
        e("segment_alloc", A, 20 * MIB),
        e("alloc", A, 8 * MIB, "X"),
        e("alloc", A + 8 * MIB, 2 * MIB, "T"),
        e("alloc", A + 10 * MIB, 4 * MIB, "Y"),
        e("alloc", A + 14 * MIB, 6 * MIB, "T"),
        e("free_requested", A + 8 * MIB, 2 * MIB),
        e("free_completed", A + 8 * MIB, 2 * MIB),
        e("free_requested", A + 14 * MIB, 6 * MIB),
        e("free_completed", A + 14 * MIB, 6 * MIB),
        e("segment_alloc", B, 2 * MIB),
        e("alloc", B, 1 * MIB, "Z"),
        e("segment_alloc", C, 16 * MIB, stream=7),
        e("alloc", C, 16 * MIB, "W", stream=7),
        e("free_completed", C, 16 * MIB, stream=7),
    ]
    oom = {"action": "oom", "size": 10 * MIB, "stream": 0, "device_free": 5 * MIB, "frames": _frames(*SITES["Y"])}
    hist.append(oom)  # PyTorch writes device_free in place of addr for an OOM
    if after_oom:
        hist += [
            e("free_requested", A, 8 * MIB),
            e("free_completed", A, 8 * MIB),
            e("segment_free", C, 16 * MIB, stream=7),
        ]
    for i, h in enumerate(hist):
        h["time_us"] = 1000 + 10 * i

    def blk(addr, size, state, site=None, requested=None):
        return {
            "address": addr,
            "size": size,
            "requested_size": requested or size,
            "state": state,
            "frames": _frames(*SITES[site]) if site else [],
        }

    seg_a = [
        blk(A, 8 * MIB, "active_allocated", "X"),
        blk(A + 8 * MIB, 2 * MIB, "inactive"),
        blk(A + 10 * MIB, 4 * MIB, "active_allocated", "Y"),
        blk(A + 14 * MIB, 6 * MIB, "inactive"),
    ]
    if after_oom:
        seg_a = [blk(A, 10 * MIB, "inactive"), seg_a[2], seg_a[3]]
    segments = [
        {"device": 0, "address": A, "total_size": 20 * MIB, "stream": 0, "segment_type": "large", "blocks": seg_a},
        {
            "device": 0,
            "address": B,
            "total_size": 2 * MIB,
            "stream": 0,
            "segment_type": "large",
            "blocks": [blk(B, 1 * MIB, "active_allocated", "Z"), blk(B + MIB, 1 * MIB, "inactive")],
        },
        {
            "device": 0,
            "address": D,
            "total_size": 4 * MIB,
            "stream": 0,
            "segment_type": "large",
            "blocks": [blk(D, 4 * MIB, "active_allocated", "P", requested=3 * MIB)],
        },
    ]
    if not after_oom:
        segments.insert(
            2,
            {
                "device": 0,
                "address": C,
                "total_size": 16 * MIB,
                "stream": 7,
                "segment_type": "large",
                "blocks": [blk(C, 16 * MIB, "inactive")],
            },
        )
    return {"segments": segments, "device_traces": [hist], "allocator_settings": {}, "external_annotations": []}


def rank_snapshot(peak_bytes: int, seed: int = 0) -> dict:
    """A one-device snapshot whose active peak is ``peak_bytes``: alloc it in two halves, free both."""
    half = peak_bytes // 2
    rest = peak_bytes - half
    base = 0x50000000 + seed * 0x1000000
    hist = [
        {"action": "alloc", "addr": base, "size": half, "stream": 0, "frames": _frames(*SITES["X"])},
        {"action": "alloc", "addr": base + half, "size": rest, "stream": 0, "frames": _frames(*SITES["Y"])},
        {"action": "free_completed", "addr": base, "size": half, "stream": 0, "frames": []},
        {"action": "free_completed", "addr": base + half, "size": rest, "stream": 0, "frames": []},
    ]
    for i, h in enumerate(hist):
        h["time_us"] = 500 + i
    return {"segments": [], "device_traces": [hist]}
