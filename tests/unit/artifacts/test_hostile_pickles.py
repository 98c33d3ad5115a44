"""Pickles that name no global but crash or hang an unpickler.

Each file is built opcode by opcode (``tests/fuzz_files.py``, which the long fuzz run uses too). Before the fix, hashing a deeply nested tuple killed the
process (exit 139) at every start of the server, since the background loader opens snapshots unasked.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys

import pytest
from fuzz_files import deep_tuple_pickle, doubling_tuple_pickle
from synth.snapshot import synthesize_snapshot

from tb_plugin import api
from tb_plugin.artifacts import isolated
from tb_plugin.artifacts.snapshot import SnapshotError, load_snapshot
from tb_plugin.artifacts.unpickle import IN_PROCESS_NESTING, tuple_nesting_bound
from tb_plugin.registry.runs import RunRegistry


def test_nesting_bound_counts_every_wrapping_opcode():
    assert tuple_nesting_bound(deep_tuple_pickle("key", 5000)) >= 5000
    assert tuple_nesting_bound(doubling_tuple_pickle(60)) >= 60
    assert tuple_nesting_bound(pickle.dumps(((((1,),),),), protocol=0)) >= 4  # MARK ... TUPLE in protocol 0
    # MARK starts every SETITEMS, so all but the smallest real snapshots go to the child
    assert tuple_nesting_bound(pickle.dumps({"segments": [], "device_traces": [[]]})) <= IN_PROCESS_NESTING
    assert tuple_nesting_bound(pickle.dumps(synthesize_snapshot("current", entries=50, frames=3))) > IN_PROCESS_NESTING


@pytest.mark.parametrize("where, depth", [("key", 10**6), ("action", 10**6), ("filename", 2 * 10**5)])
def test_deep_tuples_are_the_files_error_not_a_crash(where, depth):
    data = deep_tuple_pickle(where, depth)
    assert len(data) > depth  # the 1 MB / 200 KB files of the review
    with pytest.raises(SnapshotError, match="crashed the reader \\(SIGSEGV\\)|not a CUDA allocator snapshot"):
        load_snapshot(data)


def test_a_hash_that_never_ends_hits_the_time_limit(monkeypatch):
    monkeypatch.setattr(isolated, "BASE_TIME_S", 2.0)
    data = doubling_tuple_pickle(60)
    assert len(data) < 500
    with pytest.raises(SnapshotError, match="took more than 2 s"):  # wall time: benchmarks/bench_bounds.py
        load_snapshot(data)


@pytest.mark.corpus
def test_real_snapshot_read_in_the_child_equals_the_in_process_parse():
    from conftest import sample

    from tb_plugin.artifacts.snapshot import parse_pickle

    data = sample("memory_snapshots/memory_forward_bf16_128.pickle").read_bytes()
    assert tuple_nesting_bound(data) > IN_PROCESS_NESTING  # so load_snapshot used the child
    child, here = load_snapshot(data), parse_pickle(data)
    assert child.frames == here.frames and child.stacks == here.stacks and child.segments == here.segments
    for dev, trace in here.devices.items():
        for field in ("action", "addr", "size", "stack"):
            assert getattr(child.devices[dev], field).tolist() == getattr(trace, field).tolist()


def test_server_and_cli_survive_a_deep_tuple_snapshot(tmp_path):
    """The review's case: the background loader opens the file unasked; the server and `report`
    used to die with SIGSEGV. Now the file is an error and the good snapshot beside it answers."""
    run = tmp_path / "job"
    run.mkdir()
    (run / "evil_snapshot.pickle").write_bytes(deep_tuple_pickle("key", 10**6))
    (run / "good_snapshot.pickle").write_bytes(pickle.dumps(synthesize_snapshot("current", entries=80, frames=2)))
    reg = RunRegistry(str(tmp_path))
    reg.scan()
    code, bad = api.snapshot(reg, {"run": "job", "path": "job/evil_snapshot.pickle"})
    assert code == 200 and bad["state"] == "error" and "SIGSEGV" in bad["error"]
    code, good = api.snapshot(reg, {"run": "job", "path": "job/good_snapshot.pickle"})
    assert code == 200 and good["devices"][0]["peak_active_bytes"] > 0
    done = subprocess.run(
        [sys.executable, "-m", "tb_plugin.cli", "report", str(tmp_path), "--json", "--no-cache"],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr[-2000:]  # one file failed; not 139
    snaps = {s["path"]: s for s in json.loads(done.stdout)["runs"][0]["snapshots"]}
    assert "SIGSEGV" in snaps["job/evil_snapshot.pickle"]["error"]
    assert snaps["job/good_snapshot.pickle"]["devices"][0]["peak_active_bytes"] > 0
