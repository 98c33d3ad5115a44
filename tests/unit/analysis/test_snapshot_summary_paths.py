"""The snapshot summary's vectorised steps (:mod:`tb_plugin.analysis.snapshot`) against their plain
definitions: the alloc/free rows by address then row (one int64 key, or two keys when the addresses are
too far apart for one), the free matching, the addresses live at the end, and the ``top`` largest
allocations alive at the peak picked before the rows are built (ties: first met), on random histories
and on addresses at the int64 extremes."""

from __future__ import annotations

import numpy as np
import pytest

from tb_plugin.analysis import snapshot as snap
from tb_plugin.artifacts.snapshot import ACTIONS, DeviceTrace, Snapshot

_CODE = {a: i for i, a in enumerate(ACTIONS)}


def _trace(rng: np.random.Generator, n: int, addr_pool: np.ndarray) -> DeviceTrace:
    names = ["alloc", "free_requested", "free_completed", "free", "segment_alloc", "oom", "snapshot"]
    action = np.array([_CODE[a] for a in rng.choice(names, n, p=[0.4, 0.1, 0.3, 0.05, 0.05, 0.05, 0.05])], np.uint8)
    return DeviceTrace(
        action=action,
        addr=rng.choice(addr_pool, n).astype(np.int64),
        size=rng.choice(np.array([512, 1024, 4096, 1 << 20], np.int64), n),  # (ties among the largest)
        time=np.arange(n, dtype=np.float64) * 3.0,
        stack=rng.integers(-1, 3, n).astype(np.int32),
    )


def _snapshot(trace: DeviceTrace) -> Snapshot:
    blocks = [{"address": 7, "size": 1 << 20, "requested_size": 1 << 20, "state": "active_allocated", "stack": 1}]
    segment = {"device": 0, "address": 7, "total_size": 1 << 21, "stream": 0, "segment_type": "large", "blocks": blocks}
    frames = [{"filename": "a.py", "line": 1, "name": "f"}, {"filename": "b.py", "line": 2, "name": "g"}]
    return Snapshot({0: trace}, [segment], [[0], [1], [0, 1]], [], True, "test", frames)


def _plain_free_matches(trace: DeviceTrace) -> np.ndarray:
    """The definition: each free matched to the alloc just before it among the same address's rows."""
    match = np.full(len(trace.action), -1, np.int64)
    last: dict[int, int] = {}
    for i, (a, addr) in enumerate(zip(trace.action.tolist(), trace.addr.tolist())):
        if a in (_CODE["free_completed"], _CODE["free"]):
            j = last.get(addr, -1)
            if j >= 0 and trace.action[j] == _CODE["alloc"]:
                match[i] = j
            last[addr] = i
        elif a == _CODE["alloc"]:
            last[addr] = i
    return match


def _plain_largest(snapshot: Snapshot, device: int, top: int) -> list[dict]:
    """The rows of every allocation alive at the peak, sorted by bytes (stable), the first ``top``."""
    trace, t = snapshot.devices[device], snap.time_axis(snapshot.devices[device])
    alive = snap.alive_at_peak(snapshot, device)
    rows = [(int(trace.size[i]), int(trace.stack[i]), float(t[i]), False) for i in alive["allocs"].tolist()]
    rows += [(int(trace.size[i]), int(trace.stack[i]), None, True) for i in alive["early"].tolist()]
    rows += [(b["bytes"], b["stack"], None, True) for b in alive["blocks"]]
    rows.sort(key=lambda r: -r[0])
    return [
        {"bytes": b, "frame": snap.frame_summary(snapshot, s), "stack": s, "time": tm, "before_history": e}
        for b, s, tm, e in rows[:top]
    ]


@pytest.mark.parametrize(
    "pool",
    (
        np.arange(1, 40) * 512 + (1 << 40),  # near addresses: one int64 key
        np.array([-(2**63), -5, 0, 3, 2**62, 2**63 - 1]),  # the int64 extremes: two keys
    ),
)
@pytest.mark.parametrize("seed", (0, 1, 2))
def test_the_vectorised_summary_steps_equal_their_definitions(pool, seed):
    rng = np.random.default_rng(seed)
    trace = _trace(rng, 3000, pool)
    rows = np.flatnonzero(np.isin(trace.action, (_CODE["alloc"], _CODE["free_completed"], _CODE["free"])))
    assert snap._by_address(trace).tolist() == rows[np.lexsort((rows, trace.addr[rows]))].tolist()
    assert snap.free_matches(trace).tolist() == _plain_free_matches(trace).tolist()
    ends = {}
    for r in rows.tolist():
        ends[int(trace.addr[r])] = int(trace.action[r])
    assert snap._live_at_end(trace).tolist() == sorted(a for a, code in ends.items() if code == _CODE["alloc"])
    snapshot = _snapshot(trace)
    match, sizes = _plain_free_matches(trace), trace.size.tolist()
    allocs = np.flatnonzero(trace.action == _CODE["alloc"]).tolist()
    ends = {a: len(match) for a in allocs} | {int(j): i for i, j in enumerate(match.tolist()) if j >= 0}
    assert [a.tolist() for a in snap.lifetimes(trace)] == [allocs, [ends[a] for a in allocs]]
    active, delta = [], 0  # (the blocks live before the history: those freed in it, the dump's one)
    frees = [i for i, a in enumerate(trace.action.tolist()) if a in (_CODE["free_completed"], _CODE["free"])]
    initial = sum(sizes[i] for i in frees if match[i] < 0) + sum(
        b["bytes"] for b in snap.segment_blocks_before_history(snapshot, 0)
    )
    for i, a in enumerate(trace.action.tolist()):
        delta += (
            sizes[i] if a == _CODE["alloc"] else -(sizes[match[i]] if match[i] >= 0 else sizes[i]) if i in frees else 0
        )
        active.append(initial + delta)
    assert snap.active_bytes(snapshot, 0).tolist() == active
    for top in (0, 1, 10, 10_000):
        assert snap.device_summary(snapshot, 0, top)["largest"] == _plain_largest(snapshot, 0, top)


def test_an_empty_and_a_one_entry_history():
    for n in (0, 1):
        trace = _trace(np.random.default_rng(5), n, np.array([512]))
        summary = snap.device_summary(_snapshot(trace), 0)
        assert summary["largest"] == _plain_largest(_snapshot(trace), 0, 10)
