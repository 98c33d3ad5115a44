"""Histories turned into columns while the C unpickler reads (:mod:`tb_plugin.artifacts.drain`): the same
snapshot as a whole-file read, field by field, on protocols 4 and 5 with a frame list per entry (its own
frame dicts, or shared ones as PyTorch 2.x writes them) and with shared lists, several devices; a file that refers to a drained entry or history again is read again
(:class:`~tb_plugin.artifacts.drain.Redo`)."""

from __future__ import annotations

import gc
import io
import pickle

import pytest
from synth.snapshot_writer import write_snapshot_pickle
from test_snapshot_stream import assert_same

from tb_plugin.artifacts import drain as drain_module
from tb_plugin.artifacts import snapshot_child
from tb_plugin.artifacts.drain import Drain, Redo
from tb_plugin.artifacts.snapshot import load_snapshot, parse_pickle_whole, parse_snapshot


@pytest.fixture(autouse=True)
def _unfrozen():
    yield
    gc.unfreeze()  # (Drain freezes this process's objects: the reader child never collects)


def _drained(data: bytes, step: int = 32 << 10):
    drain = Drain(step)
    obj, count = snapshot_child.read_piped(io.BufferedReader(io.BytesIO(data)), drain)
    assert count == len(data)
    return drain, parse_snapshot(obj, drain.streamed, consume=True)


@pytest.mark.parametrize("protocol", (4, 5))
@pytest.mark.parametrize("layout", ("own dicts", "shared lists", "shared dicts"))
@pytest.mark.parametrize("step", (32 << 10, drain_module.STEP_BYTES))
def test_drained_equals_the_whole_read(protocol, layout, step):
    out = io.BytesIO()
    write_snapshot_pickle(
        out,
        20_000 if layout != "shared dicts" else 40_000,
        frames=8,
        protocol=protocol,
        shared_frames=layout == "shared lists",
        shared_dicts=layout == "shared dicts",
    )
    data = out.getvalue()
    assert len(data) > 4 * step  # (several steps at the child's own step size too)
    drain, snap = _drained(data, step)
    want = parse_pickle_whole(data)
    assert drain.drained == len(want.devices[0].action) > 20_000 and len(drain.histories) == 1
    # frame dicts emptied while none is shared: only with a list per entry and its own dicts
    assert drain.clearing is (layout == "own dicts")
    assert_same(snap, want)
    # the emptied entries are kept past the checks (the child ends without freeing them one by one)
    assert len(drain.shells) == drain.drained and not any(drain.shells)


def _entry(i: int, frames: list) -> dict:
    return {
        "action": "alloc" if i % 3 else "free_completed",
        "addr": 1 << 40 | i,
        "size": 512 * (i % 9 + 1),
        "stream": 0,
        "time_us": 1_700_000_000_000_000 + i,
        "frames": frames,
    }


def _frames(i: int) -> list:
    return [{"filename": f"m{i % 5}.py", "line": 10 + j, "name": f"f{(i + j) % 11}"} for j in range(4)]


def test_several_devices_and_an_empty_one():
    traces = [[_entry(i, _frames(i)) for i in range(6000)], [], [_entry(i, _frames(i + 1)) for i in range(5000)]]
    snap = {
        "segments": [{"device": 0, "address": 1, "total_size": 9, "blocks": [{"size": 9, "frames": _frames(3)}]}],
        "device_traces": traces,
    }
    for protocol in (4, 5):
        data = pickle.dumps(snap, protocol=protocol)
        drain, got = _drained(data)
        assert drain.drained == 11_000 and len(drain.histories) == 2
        assert_same(got, parse_pickle_whole(data))


def test_an_entry_referred_to_again_is_read_again():
    entries = [_entry(i, _frames(i)) for i in range(6000)]
    snap = {"device_traces": [entries], "segments": [], "external_annotations": [entries[5]]}
    data = pickle.dumps(snap, protocol=4)
    with pytest.raises(Redo):
        _drained(data)
    assert_same(load_snapshot(data + bytes(5 << 20)), parse_pickle_whole(data))  # (in a child: read again)


@pytest.mark.parametrize("at", (4000, 6000))
def test_an_entry_met_again_later_in_its_history_is_read_again(at):
    """A history that lists one entry twice, the second time after the first was drained and emptied
    (mid-file, the memo still holding it; or in the last batch, drained after the load) is read again."""
    entries = [_entry(i, _frames(i)) for i in range(6000)]
    entries.insert(at, entries[0])
    data = pickle.dumps({"device_traces": [entries], "segments": []}, protocol=4)
    with pytest.raises(Redo, match="referred to"):
        _drained(data)
    assert_same(load_snapshot(data + bytes(5 << 20)), parse_pickle_whole(data))  # (in a child: read again)


@pytest.mark.parametrize("again", ("list", "dict", "dict, not counted before emptying", "segment"))
def test_an_emptied_frame_referred_to_again_is_read_again(again, monkeypatch):
    """The drained entries' frame dicts are emptied while no frame list or dict has been met twice: a
    later entry (or a segment after the histories) that refers to one of them again makes the file be
    read again (an emptied frame would otherwise read as a frame without a file, line or name)."""
    entries = [_entry(i, _frames(i)) for i in range(6000)]
    snap: dict = {"device_traces": [entries], "segments": []}
    if again == "list":
        entries[-1]["frames"] = entries[0]["frames"]
    elif again.startswith("dict"):
        entries[-1]["frames"] = [entries[0]["frames"][1], *_frames(7)]
        if again != "dict":  # (found by finish's count)
            monkeypatch.setattr(drain_module, "DICTS_CHECKED", 0)
    else:  # (after device_traces in the file)
        snap["segments"] = [{"device": 0, "address": 1, "total_size": 9, "blocks": [{"frames": entries[3]["frames"]}]}]
    data = pickle.dumps(snap, protocol=4)
    with pytest.raises(Redo, match="emptied frame"):
        _drained(data)
    assert_same(load_snapshot(data + bytes(5 << 20)), parse_pickle_whole(data))  # (in a child: read again)


def test_frames_shared_before_any_is_emptied_are_kept():
    shared = _frames(1)
    entries = [_entry(i, shared if i % 2 else _frames(i)) for i in range(6000)]
    data = pickle.dumps({"segments": [], "device_traces": [entries]}, protocol=4)
    drain, snap = _drained(data)
    assert not drain.clearing and drain.drained == 6000
    assert_same(snap, parse_pickle_whole(data))


def test_a_history_referred_to_twice_is_read_again():
    entries = [_entry(i, _frames(i)) for i in range(6000)]
    for snap in (
        {"device_traces": [entries, entries], "segments": []},
        {"device_traces": [entries], "segments": [], "external_annotations": [{"rows": entries}]},
    ):
        with pytest.raises(Redo):
            _drained(pickle.dumps(snap, protocol=4))


def test_a_short_history_before_a_long_one_is_found_too():
    early = [_entry(i, _frames(i + 2)) for i in range(10)]
    late = [_entry(i, _frames(i)) for i in range(6000)]
    data = pickle.dumps({"device_traces": [early, late], "segments": []}, protocol=4)
    drain, snap = _drained(data)
    assert len(drain.histories) == 2 and drain.drained == 6010
    assert_same(snap, parse_pickle_whole(data))


def test_an_undrained_history_before_a_drained_one_is_read_again():
    # (stacks are numbered in the order met: a history the drain missed would be numbered after a later one)
    early = [_entry(i, _frames(i + 2)) for i in range(10)]
    late = [_entry(i, _frames(i)) for i in range(6000)]
    drain = Drain()
    drain.histories.append(late)
    drain._drain(late)
    with pytest.raises(Redo):
        drain.finish({"device_traces": [early, late], "segments": []})


@pytest.mark.corpus
@pytest.mark.parametrize("name", ("mem_snapshot.pickle", "memory_forward_bf16_128.pickle"))
def test_real_snapshots_drained_equal_the_whole_read(name):
    from conftest import sample

    data = sample(f"memory_snapshots/{name}").read_bytes()
    drain, snap = _drained(data, step=4 << 10)  # (small steps: the files are small)
    assert_same(snap, parse_pickle_whole(data))
    assert drain.drained == sum(len(t.action) for t in snap.devices.values())


def test_the_repo_samples_drained_equal_the_whole_read():
    from conftest import REPO

    for path in sorted((REPO / "samples" / "gpu_snapshot").glob("*.pickle")):
        data = path.read_bytes()
        drain, snap = _drained(data, step=4 << 10)
        assert_same(snap, parse_pickle_whole(data))
        assert drain.drained == sum(len(t.action) for t in snap.devices.values()) > 0


def test_a_file_of_many_history_like_lists_is_streamed_not_scanned_quadratically():
    """Each list starting with an ``action`` dict is taken for a history; past ``MAX_HISTORIES`` the file
    goes to the streaming reader (else each new list is compared with every one found: quadratic)."""
    from tb_plugin.artifacts.drain import MAX_HISTORIES

    many = [[_entry(i, _frames(i))] for i in range(4 * MAX_HISTORIES)]
    data = pickle.dumps({"device_traces": many, "segments": []}, protocol=4)
    with pytest.raises(Redo, match="history lists"):
        _drained(data)
    assert_same(load_snapshot(data + bytes(5 << 20)), parse_pickle_whole(data))  # (in a child: read again)


def test_reference_counts_are_checked_as_max_and_sum_checked_them():
    # (list.count passes, the usual count first; each count at least the least one given)
    assert drain_module._each_of([3, 3, 2], 3, 2) and drain_module._each_of([], 3, 2)
    assert not drain_module._each_of([3, 4, 2], 3, 2) and not drain_module._each_of([5, 2**40], 5, 4)
    fresh = [{} for _ in range(drain_module._CHUNK + 2)]  # each held by the list and the argument: 2
    assert drain_module._each_held(fresh, 2) and drain_module._each_held([], 2)
    fresh.append(fresh[0])  # (one held twice by it, in the second chunk: 3)
    assert not drain_module._each_held(fresh, 2)


@pytest.mark.parametrize("after", (0, 5, 1500, 5000, 20_000))
def test_the_search_starts_after_the_entry_appended_last(after):
    """What a step built before the entry appended last to a known history is passed over: the search
    starts right after that entry, found from the end whether the batch being read after it is short or
    long; after the later of two histories' last entries; at the start when none was built since."""
    drain = Drain(1 << 20)
    new = [[i] for i in range(3000)]
    first, last = {"action": "alloc"}, {"action": "free_completed"}
    new[100:100] = [first]
    new += [last] + [[] for _ in range(after)]  # (the batch being read, after the last entry appended)
    drain.histories = [[first]]
    assert drain._fresh_from(new) == 101
    drain.histories = [[{"action": "alloc"}, first], [], [last]]  # (another device's, appended later)
    assert drain._fresh_from(new) == len(new) - after
    drain.histories = [[{"action": "alloc"}]]  # (an entry built before this step)
    assert drain._fresh_from(new) == 0
