"""Bytes alive at an allocator snapshot's peak by operator / step / module (with a trace
of the same process, on the wall clock) and by Python frame (always)."""

from __future__ import annotations

import json
import pickle

import orjson
import pytest
from conftest import sample
from synth.snapshot import replay_peak, synthesize_snapshot
from synth.snapshot_trace import (
    EXPECTED_BY_FRAME,
    EXPECTED_BY_MODULE,
    EXPECTED_BY_OPERATOR,
    EXPECTED_BY_STEP,
    EXPECTED_PEAK,
    MIB,
    paired_snapshot,
    paired_trace,
)

from tb_plugin import api
from tb_plugin.analysis.snapshot import device_summary, frame_summary
from tb_plugin.analysis.snapshot_attribution import attribute, match_overlap
from tb_plugin.artifacts.snapshot import load_snapshot, pack_snapshot, unpack_snapshot
from tb_plugin.registry.runs import RunRegistry
from tb_plugin.trace.decode import decode_trace


def _table(rows) -> dict:
    return {r["name"]: r["bytes"] for r in rows}


@pytest.mark.parametrize("protocol", [2, 5])
def test_alive_at_the_peak_by_operator_step_module_equals_the_construction(protocol):
    snap = load_snapshot(pickle.dumps(paired_snapshot(), protocol=protocol))
    trace = decode_trace(orjson.dumps(paired_trace()))
    doc = attribute(snap, 0, trace)
    assert _table(doc["by_operator"]) == EXPECTED_BY_OPERATOR
    assert _table(doc["by_step"]) == EXPECTED_BY_STEP
    assert _table(doc["by_module"]) == EXPECTED_BY_MODULE
    assert _table(doc["by_frame"]) == EXPECTED_BY_FRAME
    # the peak is the snapshot's (unchanged), and every table adds up to it
    assert doc["peak_active_bytes"] == device_summary(snap, 0)["peak_active_bytes"] == EXPECTED_PEAK
    assert EXPECTED_PEAK == replay_peak(paired_snapshot())
    assert doc["alive_bytes"] == EXPECTED_PEAK and doc["allocations"] == 9
    ops = {r["name"]: r for r in doc["by_operator"]}
    assert ops["aten::addmm"]["allocations"] == 2 and ops["(before history)"]["allocations"] == 2
    # a row's stack is that of its largest allocation: addmm's is A's (4 MiB, model.py:10)
    assert frame_summary(snap, ops["aten::addmm"]["stack"]) == "/work/train/model.py:10:linear_fwd"
    assert [r["name"] for r in doc["by_operator"]][:2] == ["aten::empty", "aten::mm"]  # largest first
    # the parse cache's packed form answers the same
    assert attribute(unpack_snapshot(*pack_snapshot(snap)), 0, trace) == doc


def test_without_a_trace_frames_group_and_the_others_are_absent():
    snap = load_snapshot(pickle.dumps(paired_snapshot()))
    doc = attribute(snap, 0, None)
    assert _table(doc["by_frame"]) == EXPECTED_BY_FRAME
    assert doc["by_operator"] is doc["by_step"] is doc["by_module"] is None
    assert doc["peak_active_bytes"] == EXPECTED_PEAK


def test_a_trace_without_a_wall_clock_base_groups_frames_only():
    # no baseTimeNanoseconds: no wall-clock span, so nothing to place the allocations on (it used to
    # raise TypeError indexing the missing span)
    snap = load_snapshot(pickle.dumps(paired_snapshot()))
    unclocked = {k: v for k, v in paired_trace().items() if k != "baseTimeNanoseconds"}
    doc = attribute(snap, 0, decode_trace(orjson.dumps(unclocked)))
    assert _table(doc["by_frame"]) == EXPECTED_BY_FRAME
    assert doc["by_operator"] is doc["by_step"] is doc["by_module"] is None


def test_match_needs_the_same_rank_device_and_overlapping_wall_clock():
    snap = load_snapshot(pickle.dumps(paired_snapshot()))
    trace = decode_trace(orjson.dumps(paired_trace()))
    assert match_overlap(snap, 0, trace, 0) == 1960.0  # history [1040, 5200] ∩ trace [1000, 3000] µs
    assert match_overlap(snap, 0, trace, None) == 1960.0  # the snapshot's path names no rank
    assert match_overlap(snap, 0, trace, 1) is None  # another rank's snapshot
    later = load_snapshot(pickle.dumps(paired_snapshot(shift_us=10_000_000)))
    assert match_overlap(later, 0, trace, 0) is None  # 10 s later: no overlap
    no_base = paired_trace()
    del no_base["baseTimeNanoseconds"]
    assert match_overlap(snap, 0, decode_trace(orjson.dumps(no_base)), 0) is None
    other_gpu = paired_trace()
    other_gpu["deviceProperties"][0]["id"] = 3
    assert match_overlap(snap, 0, decode_trace(orjson.dumps(other_gpu)), 0) is None
    # a rank's trace lists every visible GPU: the GPUs its kernels ran on decide
    on_gpu1 = paired_trace()
    on_gpu1["deviceProperties"].append(dict(on_gpu1["deviceProperties"][0], id=1))
    on_gpu1["traceEvents"].append(
        {
            "ph": "X",
            "cat": "kernel",
            "name": "k",
            "pid": 1,
            "tid": 7,
            "ts": 1040,
            "dur": 5,
            "args": {"device": 1, "stream": 7},
        }
    )
    assert match_overlap(snap, 0, decode_trace(orjson.dumps(on_gpu1)), None) is None
    on_gpu1["traceEvents"][-1]["args"]["device"] = 0
    assert match_overlap(snap, 0, decode_trace(orjson.dumps(on_gpu1)), None) == 1960.0
    untimed = synthesize_snapshot("no_time", entries=50)
    assert match_overlap(load_snapshot(pickle.dumps(untimed)), 0, trace, 0) is None


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["mem_snapshot.pickle", "memory_forward_bf16_128.pickle"])
def test_real_snapshots_group_by_frame_and_add_up_to_the_peak(name):
    with open(sample(f"memory_snapshots/{name}"), "rb") as f:
        snap = load_snapshot(f.read())
    for device in snap.devices:
        doc = attribute(snap, device, None)
        assert doc["alive_bytes"] == doc["peak_active_bytes"] == device_summary(snap, device)["peak_active_bytes"]
        assert sum(r["allocations"] for r in doc["by_frame"]) == doc["allocations"] > 0
        names = [r["name"] for r in doc["by_frame"]]
        assert len(names) == len(set(names)) and all(isinstance(n, str) and n for n in names)
        assert [r["bytes"] for r in doc["by_frame"]] == sorted((r["bytes"] for r in doc["by_frame"]), reverse=True)
    if name == "memory_forward_bf16_128.pickle":  # the weights predate the history and carry no frames
        rows = {r["name"]: r for r in attribute(snap, 0, None)["by_frame"]}
        assert (rows["(before history)"]["bytes"], rows["(before history)"]["allocations"]) == (523_811_840, 137)
        assert (
            rows["/root/autodl-tmp/assignment1-basics/cs336_basics/model/linear.py:15:forward"]["bytes"] == 83_009_536
        )


def test_route_matches_the_runs_trace_and_answers_frames_otherwise(tmp_path):
    run = tmp_path / "job"
    run.mkdir()
    (run / "host.pt.trace.json").write_text(json.dumps(paired_trace()))
    (run / "rank0_memory_snapshot.pickle").write_bytes(pickle.dumps(paired_snapshot()))
    (run / "rank1_memory_snapshot.pickle").write_bytes(pickle.dumps(paired_snapshot()))
    reg = RunRegistry(str(tmp_path))
    reg.scan()
    q = {"run": "job", "path": "job/rank0_memory_snapshot.pickle"}
    code, first = api.snapshot_attribution(reg, q)
    assert code == 200 and first == {"state": "loading", "path": q["path"]}  # the trace is still queued
    for st in reg.files():
        reg.load(st)
    code, doc = api.snapshot_attribution(reg, q)
    assert code == 200 and doc["state"] == "ready" and doc["device"] == "GPU0"
    assert doc["trace"]["path"] == "job/host.pt.trace.json" and doc["trace"]["overlap_us"] == 1960.0
    assert _table(doc["by_operator"]) == EXPECTED_BY_OPERATOR and _table(doc["by_step"]) == EXPECTED_BY_STEP
    assert _table(doc["by_module"]) == EXPECTED_BY_MODULE
    # rank 1's snapshot does not match the rank-0 trace: frames only
    code, other = api.snapshot_attribution(reg, dict(q, path="job/rank1_memory_snapshot.pickle"))
    assert other["trace"] is None and other["by_operator"] is None
    assert _table(other["by_frame"]) == EXPECTED_BY_FRAME
    assert api.snapshot_attribution(reg, dict(q, device="5"))[0] == 400
    assert api.snapshot_attribution(reg, dict(q, path="job/nope.pickle"))[0] == 404
    assert _table(doc["by_frame"])["/work/train/train.py:12:build_model"] == 3 * MIB


def test_report_lists_the_top_rows_alive_at_the_peak(tmp_path, capsys):
    from tb_plugin.cli import main

    run = tmp_path / "job"
    run.mkdir()
    (run / "host.pt.trace.json").write_text(json.dumps(paired_trace()))
    (run / "rank0_memory_snapshot.pickle").write_bytes(pickle.dumps(paired_snapshot()))
    assert main(["report", str(tmp_path), "--json", "--no-cache"]) == 0
    (snap,) = json.loads(capsys.readouterr().out)["runs"][0]["snapshots"]
    alive = snap["devices"][0]["alive_at_peak"]
    assert alive["trace"] == "job/host.pt.trace.json"
    assert [(r["name"], r["bytes"]) for r in alive["by_operator"]] == sorted(
        EXPECTED_BY_OPERATOR.items(), key=lambda kv: (-kv[1], kv[0])
    )[:5]
    assert alive["by_step"][0] == {"name": "ProfilerStep#2", "bytes": EXPECTED_BY_STEP["ProfilerStep#2"]}
    assert alive["by_frame"][0] == {"name": "/work/train/model.py:40:empty", "bytes": 32 * MIB}
    assert main(["report", str(tmp_path), "--no-cache"]) == 0
    text = capsys.readouterr().out
    assert "GPU0 alive at the peak: top operator aten::empty 32" in text and "top step ProfilerStep#2" in text


def test_trace_view_gains_the_snapshots_active_memory_as_a_counter_track(tmp_path):
    run = tmp_path / "job"
    run.mkdir()
    (run / "host.pt.trace.json").write_text(json.dumps(paired_trace()))
    (run / "rank0_memory_snapshot.pickle").write_bytes(pickle.dumps(paired_snapshot()))
    (run / "rank1_memory_snapshot.pickle").write_bytes(pickle.dumps(paired_snapshot()))  # another rank: no track
    reg = RunRegistry(str(tmp_path))
    reg.scan()
    (st,) = reg.files()
    q = {"run": "job", "worker": st.worker, "span": st.span, "start_us": "0", "end_us": "2000", "width_px": "2000"}
    reg.load(st)
    code, before = api.timeline(reg, q)  # the snapshots are not loaded yet: no track
    assert code == 200 and not [c for c in before["counters"] if "snapshot" in c["name"]]
    for art in reg.artifacts():
        reg.load_artifact(art)
    code, doc = api.timeline(reg, q)
    (track,) = [c for c in doc["counters"] if "snapshot" in c["name"]]
    assert track["name"] == "GPU 0 snapshot active (rank0_memory_snapshot.pickle)" and track["unit"] == "bytes"
    values = track["values"]  # 1 µs bins from the trace's first event (ts 1000)
    assert len(values) == 2000 and values[0] == values[39] == 0  # before the first entry (ts 1040)
    assert values[40] == 5 * MIB + 4 * MIB  # blocks before the history + A
    assert values[599] == 5 * MIB + (4 + 2 + 8 + 16) * MIB  # A B D C alive until D's free at 1600
    assert values[600] == 5 * MIB + (4 + 2 + 8 + 16) * MIB and values[601] == 5 * MIB + (4 + 2 + 8) * MIB
    assert max(values) == EXPECTED_PEAK - (512 << 10)  # the peak (H at 5000) lies after the trace
    assert values[-1] == EXPECTED_PEAK - (512 << 10)
