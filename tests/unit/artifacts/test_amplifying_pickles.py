"""Snapshots that amplify shared references or ask for a huge memo, and the bounded reader child
(hardening round three, items 1 and 2).

The review's files are rebuilt opcode by opcode (``tests/fuzz_files.py``): a 919 KB pickle with one
2,000-key annotation dict referenced 300,000 times (4 GB in the server before), a 1.07 MB one with a
1,000-block segment referenced 340,000 times (3 GB), and a 71-byte one that shares a history entry and
then asks for memo slot 750,000,000 (the fallback to ``pickle``'s unpickler: 12 GB).
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap
import tracemalloc

import pytest
from fuzz_files import (
    deep_tuple_pickle,
    doubling_tuple_pickle,
    memo_index_pickle,
    shared_annotation_pickle,
    shared_segment_pickle,
)
from synth.snapshot import synthesize_snapshot

from tb_plugin.artifacts import expansion, isolated
from tb_plugin.artifacts.snapshot import SnapshotError, load_snapshot, load_snapshots, parse_pickle


def test_shared_annotation_dict_is_refused_by_the_object_bound():
    data = shared_annotation_pickle(2000, 300_000)
    assert len(data) < 1_000_000
    with pytest.raises(SnapshotError, match=r"more than 14,703,184 objects .* \(16 objects per byte"):
        load_snapshot(data)


def test_shared_segment_is_refused_by_the_object_bound():
    data = shared_segment_pickle(1000, 340_000)
    with pytest.raises(SnapshotError, match="objects through shared references, the bound for its 1,069,045 bytes"):
        load_snapshot(data)


def test_the_same_shapes_small_enough_still_read():
    snap = load_snapshot(shared_segment_pickle(3, 10))
    assert len(snap.segments) == 10 and all(len(s["blocks"]) == 3 for s in snap.segments)
    assert len(load_snapshot(shared_annotation_pickle(5, 100)).annotations) == 100


def test_memo_index_and_shared_entry_never_reach_pickles_unpickler(monkeypatch):
    data = memo_index_pickle(750_000_000)
    assert len(data) < 100
    monkeypatch.setattr(pickle, "Unpickler", None)  # any use of it here would raise
    tracemalloc.start()
    try:
        snap = parse_pickle(data)  # what the child runs: the shared entry is read by the same reader
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 10 << 20
    assert snap.devices[0].size.tolist() == [8, 8]
    assert load_snapshot(data).devices[0].size.tolist() == [8, 8]  # and in the child


def test_expansion_counts_each_reference_and_refuses_cycles():
    shared = {"a": 1, "b": [1, 2]}
    assert expansion.check([shared] * 10, 100) == 1 + 10 * (1 + 2 + 1 + 3)
    loop: list = []
    loop.append(loop)
    with pytest.raises(expansion.TooManyObjects, match="inside itself"):
        expansion.check(loop, 10)
    deep: list = []
    for _ in range(200_000):  # any depth: counted without recursion
        deep = [deep]
    assert expansion.check(deep, 1 << 20) == 200_001


@pytest.mark.corpus
def test_real_snapshots_stay_far_under_the_object_bound():
    from conftest import sample

    for name in ("memory_forward_bf16_128.pickle", "mem_snapshot.pickle"):
        data = sample(f"memory_snapshots/{name}").read_bytes()
        # even read whole (histories kept), a real snapshot expands to under 2 objects per byte
        assert expansion.check(pickle.loads(data), len(data)) < 2 * len(data)


def test_child_limits_are_sized_from_the_file_and_capped_by_the_budget(monkeypatch):
    monkeypatch.setenv("KINETOSCOPE_MEMORY_BUDGET_MB", "4096")
    assert isolated.memory_limit_bytes(1000) == isolated.MEMORY_FLOOR_BYTES == 1 << 30
    assert isolated.memory_limit_bytes(100 << 20) == 1600 << 20
    assert isolated.memory_limit_bytes(10 << 30) == 4096 << 20
    monkeypatch.setenv("KINETOSCOPE_MEMORY_BUDGET_MB", "100")  # below the floor: the floor
    assert isolated.memory_limit_bytes(10 << 30) == 1 << 30
    assert isolated.time_limit_s(10**6) == 32.0


@pytest.mark.corpus
def test_a_reader_past_its_memory_limit_is_that_files_error(monkeypatch):
    from conftest import sample

    # 64 MB of address space: less than the interpreter maps, so the first big allocation fails
    monkeypatch.setattr(isolated, "MEMORY_FLOOR_BYTES", 64 << 20)
    monkeypatch.setattr(isolated, "MEMORY_PER_BYTE", 1)
    data = sample("memory_snapshots/memory_forward_bf16_128.pickle").read_bytes()
    with pytest.raises(SnapshotError, match="more than 64 MB of memory|crashed the reader|exit status"):
        isolated.parse_in_child(data)  # a child of its own (the shared one keeps its limits)


def test_small_files_share_one_child_that_a_crash_or_a_time_limit_ends(monkeypatch):
    starts = []
    real = isolated._child
    monkeypatch.setattr(isolated, "_child", lambda argv: starts.append(argv) or real(argv))
    with isolated._shared_lock:
        while isolated._shared:
            isolated._end(isolated._shared.pop())
    good = pickle.dumps(synthesize_snapshot("current", entries=40, frames=2))
    assert load_snapshot(good).devices[0].size.tolist() == load_snapshot(good).devices[0].size.tolist()
    assert len(starts) == 1  # two files, one child
    with pytest.raises(SnapshotError, match="SIGSEGV"):
        load_snapshot(deep_tuple_pickle("key", 10**6))
    usual = isolated.BASE_TIME_S
    monkeypatch.setattr(isolated, "BASE_TIME_S", 2.0)
    with pytest.raises(SnapshotError, match="took more than 2 s"):
        load_snapshot(doubling_tuple_pickle(60))
    # the next file gets a fresh child under the usual limit (a 2 s one can end a cold start on a loaded box)
    monkeypatch.setattr(isolated, "BASE_TIME_S", usual)
    assert load_snapshot(good).devices[0].size.tolist()
    assert len(starts) == 3  # a fresh child after the crash and after the time limit


def test_many_files_share_one_child_and_each_gets_its_own_answer(monkeypatch):
    starts = []
    real = isolated._child
    monkeypatch.setattr(isolated, "_child", lambda argv: starts.append(argv) or real(argv))
    good = pickle.dumps(synthesize_snapshot("current", entries=40, frames=2))
    files = [
        good,
        b"\x80\x04garbage",
        shared_annotation_pickle(2000, 300_000),
        deep_tuple_pickle("key", 10**6),
        good,
        b"\0\0",
    ]
    got = load_snapshots(files)
    assert got[0].devices[0].size.tolist() == got[4].devices[0].size.tolist()
    assert isinstance(got[1], SnapshotError) and "not a readable pickle" in str(got[1])
    assert isinstance(got[2], SnapshotError) and "objects through shared references" in str(got[2])
    assert isinstance(got[3], SnapshotError) and "SIGSEGV" in str(got[3])  # the child died on it ...
    assert isinstance(got[5], SnapshotError) and "not a pickle" in str(got[5])  # (refused before any child)
    assert len(starts) == 2  # ... and the file after it went to a fresh one: two starts for five files


def test_read_pickles_answers_plain_values_from_one_bounded_child():
    dump = {"version": "2.4", "entries": [{"record_id": i, "state": "completed", "sizes": [[4, 4]]} for i in range(3)]}
    got = isolated.read_pickles([pickle.dumps(dump), pickle.dumps({(1, 2): 2**70}), b"\x80\x04c\nos\nsystem\n."])
    assert got[0] == dump
    assert got[1] == {"(1, 2)": str(2**70)}
    assert isinstance(got[2], isolated.SnapshotError) and "refused" in str(got[2])


def test_server_and_report_answer_beside_the_amplifying_files(tmp_path):
    """The review's files in a logdir the registry loads (as ``serve`` and ``mcp`` do in the background):
    each is its own error naming the bound, the good snapshot answers, and this process's peak
    stays under 400 MB (it used to reach 4 GB)."""
    run = tmp_path / "job"
    run.mkdir()
    (run / "ann_snapshot.pickle").write_bytes(shared_annotation_pickle(2000, 300_000))
    (run / "seg_snapshot.pickle").write_bytes(shared_segment_pickle(1000, 340_000))
    (run / "memo_snapshot.pickle").write_bytes(memo_index_pickle(750_000_000))
    (run / "good_snapshot.pickle").write_bytes(pickle.dumps(synthesize_snapshot("current", entries=80, frames=2)))
    script = textwrap.dedent(f"""
        from tb_plugin import api
        from tb_plugin.registry.runs import RunRegistry
        reg = RunRegistry({str(tmp_path)!r})
        reg.scan()
        for name in ("ann", "seg"):
            code, doc = api.snapshot(reg, {{"run": "job", "path": f"job/{{name}}_snapshot.pickle"}})
            assert code == 200 and doc["state"] == "error" and "objects per byte" in doc["error"], doc
        code, doc = api.snapshot(reg, {{"run": "job", "path": "job/memo_snapshot.pickle"}})
        assert code == 200, doc
        code, doc = api.snapshot(reg, {{"run": "job", "path": "job/good_snapshot.pickle"}})
        assert code == 200 and doc["devices"][0]["peak_active_bytes"] > 0, doc
        hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM")][0].split()[1]
        print("VmHWM_kB", hwm)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert int(done.stdout.split("VmHWM_kB")[1].split()[0]) < 400_000
