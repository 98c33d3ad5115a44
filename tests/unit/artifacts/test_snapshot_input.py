"""The benchmarks' snapshot builder (benchmarks/snapshot_input.py): each entry its own frame list (strings
shared), the shared-frames variant and the shared-dicts one (PyTorch 2.x dumps' layout) unpickle to the
synthesized snapshot, and the streamed reader and the reader child read each field by field as the
whole-file reader does, on protocols 2-5."""

from __future__ import annotations

import pickle

import pytest
from synth.snapshot import synthesize_snapshot
from test_snapshot_stream import assert_same

from benchmarks.snapshot_input import build
from tb_plugin.artifacts.snapshot import parse_pickle, parse_pickle_whole


def _stacks(obj) -> list[list]:
    return [e["frames"] for e in obj["device_traces"][0] if e["frames"]]


@pytest.mark.parametrize("protocol", (2, 3, 4, 5))
def test_distinct_and_shared_frame_lists(tmp_path, protocol):
    expected = synthesize_snapshot("current", entries=2600, frames=8)
    got = {}
    for shared in (False, True):
        path = tmp_path / f"s{int(shared)}.pickle"
        build(str(path), 2600, frames=8, protocol=protocol, shared_frames=shared)
        data = path.read_bytes()
        obj = pickle.loads(data)
        assert obj == expected
        lists = _stacks(obj)
        stacks = {tuple((f["filename"], f["line"], f["name"]) for f in fr) for fr in lists}
        # distinct: one list object per entry (as torch writes them); shared: one per stack
        assert len({id(fr) for fr in lists}) == (len(stacks) if shared else len(lists))
        assert len(stacks) < len(lists)  # stacks do repeat (400 call sites), so the two variants differ
        names = [f["name"] for fr in lists for f in fr]
        assert len({id(n) for n in names}) < len(names) / 2  # the strings are shared objects either way
        assert_same(parse_pickle(data, stream=True), parse_pickle_whole(data))
        got[shared] = len(data)
    assert got[True] < got[False]


@pytest.mark.parametrize("protocol", (2, 3, 4, 5))
def test_shared_frame_dicts(tmp_path, protocol):
    expected = synthesize_snapshot("current", entries=2600, frames=8)
    path = tmp_path / "dicts.pickle"
    build(str(path), 2600, frames=8, protocol=protocol, shared_dicts=True)
    data = path.read_bytes()
    obj = pickle.loads(data)
    assert obj == expected
    lists = _stacks(obj)
    frames = [f for fr in lists for f in fr]
    distinct = {(f["filename"], f["line"], f["name"]) for f in frames}
    assert len({id(fr) for fr in lists}) == len(lists)  # a list per entry, as PyTorch writes them
    assert len({id(f) for f in frames}) == len(distinct) < len(frames) / 2  # one dict per distinct frame
    assert_same(parse_pickle(data, stream=True), parse_pickle_whole(data))  # (the drain: test_drain.py)
    build(str(tmp_path / "own.pickle"), 2600, frames=8, protocol=protocol)
    assert len(data) < (tmp_path / "own.pickle").stat().st_size


def test_one_layout_at_a_time(tmp_path):
    with pytest.raises(ValueError):
        build(str(tmp_path / "x.pickle"), 10, shared_frames=True, shared_dicts=True)
