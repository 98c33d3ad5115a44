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
        np.arange(1, 40) * 512 + (1 << 40),  # near addresses: one int64 key, the row in its low bits
        np.array([0, 3, 2**51 + 5]),  # too far apart for the row's bits, not for the row as a remainder
        np.array([-(2**63), -5, 0, 3, 2**62, 2**63 - 1]),  # the int64 extremes: two keys
    ),
)
@pytest.mark.parametrize("seed", (0, 1, 2))
def test_the_vectorised_summary_steps_equal_their_definitions(pool, seed):
    rng = np.random.default_rng(seed)
    trace = _trace(rng, 3000, pool)
    rows = np.flatnonzero(np.isin(trace.action, (_CODE["alloc"], _CODE["free_completed"], _CODE["free"])))
    order, same = snap._by_address(trace)
    assert order.tolist() == rows[np.lexsort((rows, trace.addr[rows]))].tolist()
    assert same.tolist() == (trace.addr[order[1:]] == trace.addr[order[:-1]]).tolist()
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


def _plain_time_axis(times: list[float]) -> list[float]:
    """The definition: µs since the least time, an entry without one taking the one before it (NaN before
    the first timed entry); the entry index when none is timed."""
    timed = [x for x in times if x == x]
    if not timed:
        return [float(i) for i in range(len(times))]
    out, last = [], float("nan")
    for x in times:
        last = x if x == x else last
        out.append(last - min(timed))
    return out


@pytest.mark.parametrize(
    "times",
    (
        [],
        [float("nan")] * 4,
        [5.0, 3.0, 9.0],
        [float("nan"), 7.0, float("nan"), float("nan"), 2.5, float("nan")],
        [4.0, float("nan"), -1.5],
    ),
)
def test_the_time_axis_equals_its_definition(times):
    n = len(times)
    trace = DeviceTrace(
        action=np.zeros(n, np.uint8),
        addr=np.zeros(n, np.int64),
        size=np.zeros(n, np.int64),
        time=np.array(times, np.float64),
        stack=np.full(n, -1, np.int32),
    )
    got = snap.time_axis(trace)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, np.array(_plain_time_axis(times), np.float64))  # (NaN where NaN)
    assert not np.shares_memory(got, trace.time)  # (the column itself is never changed or handed out)


@pytest.mark.parametrize("seed", (0, 3))
@pytest.mark.parametrize("segments", (True, False))
def test_the_reserved_curve_and_the_early_frees_equal_their_definitions(seed, segments):
    rng = np.random.default_rng(seed)
    trace = _trace(rng, 2000, np.arange(1, 30) * 512)
    trace.action[rng.choice(2000, 40, replace=False)] = _CODE["segment_free"]
    snapshot = _snapshot(trace)
    if not segments:  # (no segment information at all: an all-0 curve)
        trace.action[np.isin(trace.action, (_CODE["segment_alloc"], _CODE["segment_free"]))] = _CODE["snapshot"]
        snapshot.segments.clear()
    active, sizes, replay, up_down = snap.active_bytes(snapshot, 0).tolist(), trace.size.tolist(), [], 0
    for a, z in zip(trace.action.tolist(), sizes):
        up_down += z if a == _CODE["segment_alloc"] else -z if a == _CODE["segment_free"] else 0
        replay.append(up_down)
    at_dump = sum(s["total_size"] for s in snapshot.segments)
    if not segments:
        expected = [0] * len(replay)
    else:
        before = max(at_dump - replay[-1], 0)
        expected = [max(before + r, x) for r, x in zip(replay, active)]
    assert snap.reserved_bytes(snapshot, 0).tolist() == expected
    alive, match = snap.alive_at_peak(snapshot, 0), _plain_free_matches(trace)
    frees = (_CODE["free_completed"], _CODE["free"])
    early = [i for i, a in enumerate(trace.action.tolist()) if a in frees and match[i] < 0 and i > alive["peak"]]
    assert alive["early"].tolist() == early
