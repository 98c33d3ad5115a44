"""Allocator snapshots and memory-timeline exports: every layout, the restricted unpickler, real samples."""

from __future__ import annotations

import os
import pickle
import shutil

import pytest
from conftest import sample
from synth.snapshot import LAYOUTS, replay_peak, synthesize_snapshot

from tb_plugin import api
from tb_plugin.analysis.snapshot import device_summary, timeline
from tb_plugin.artifacts.snapshot import SnapshotError, load_snapshot
from tb_plugin.artifacts.timeline_export import load_timeline_export
from tb_plugin.registry.runs import RunRegistry


class _RunsCode:
    def __reduce__(self):
        return (os.system, ("touch /tmp/kinetoscope-pwned",))


def test_restricted_unpickler_refuses_code(tmp_path):
    if os.path.exists("/tmp/kinetoscope-pwned"):
        os.unlink("/tmp/kinetoscope-pwned")
    with pytest.raises(SnapshotError, match="refused to load global 'posix.system'"):
        load_snapshot(pickle.dumps({"segments": [], "device_traces": [[_RunsCode()]]}))
    assert not os.path.exists("/tmp/kinetoscope-pwned")
    with pytest.raises(SnapshotError, match="not a readable pickle"):
        load_snapshot(b"\x80\x04garbage")
    with pytest.raises(SnapshotError, match="not a CUDA allocator snapshot"):
        load_snapshot(pickle.dumps({"hello": 1}))


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["mem_snapshot.pickle", "memory_forward_bf16_128.pickle"])
def test_real_snapshots_open_and_peak_matches_replay(name):
    data = sample(f"memory_snapshots/{name}").read_bytes()
    snap = load_snapshot(data)
    expected = replay_peak(pickle.loads(data))  # the samples are plain containers; trusted in this test
    assert device_summary(snap, 0)["peak_active_bytes"] == expected > 0
    tl = timeline(snap, 0, None, None, 300)
    assert len(tl["active_bytes"]) == 300 and max(tl["active_bytes"]) == expected


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_layout(layout):
    obj = synthesize_snapshot(layout, entries=300, frames=4, windows_paths=(layout == "no_time"))
    snap = load_snapshot(pickle.dumps(obj))
    if layout in ("segments_only", "empty_history"):
        assert snap.devices == {} and snap.segments[0]["blocks"]
        return
    summary = device_summary(snap, 0)
    assert summary["peak_active_bytes"] == replay_peak(obj)
    assert snap.has_time == (layout == "current")
    tl = timeline(snap, 0, None, None, 100)
    assert tl["time_unit"] == ("us" if layout == "current" else "entry")
    assert [m["action"] for m in tl["markers"]] == ["snapshot", "oom"]
    frame = summary["largest"][0]["frame"]
    assert frame.endswith(":layer0") or ".py:" in frame
    if layout == "no_time":
        assert "C:\\\\work\\\\train" in frame  # Windows paths survive


@pytest.mark.corpus
def test_memory_timeline_export_raw_sample():
    data = load_timeline_export(sample("hta/memory_analysis/memory_timeline.raw.gz").read_bytes())
    assert data["form"] == "raw" and data["bytes"].shape[0] == 8
    assert data["times_us"][0] == 0
    # pre-existing memory (ts -1) is counted from the start: parameters exist at time 0
    assert data["bytes"][0, 0] > 0


def test_times_sizes_export(tmp_path):
    import json

    data = load_timeline_export(
        json.dumps(
            [[1000, 2000, 3000], [[1, 2, 0, 0, 0, 0, 0, 0], [1, 5, 0, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0, 0, 0]]]
        ).encode()
    )
    assert list(data["times_us"]) == [0, 1, 2] and data["bytes"][1].tolist() == [2, 5, 1]


@pytest.mark.corpus
def test_snapshot_runs_routes_and_report(tmp_path, capsys):
    run = tmp_path / "job" / "memprofiler"
    run.mkdir(parents=True)
    shutil.copy(sample("memory_snapshots/mem_snapshot.pickle"), run / "cuda_alloc_rank0.pickle")
    (run / "evil.pkl").write_bytes(pickle.dumps(_RunsCode()))
    reg = RunRegistry(str(tmp_path))
    reg.scan()
    runs = reg.runs_document()["runs"]
    # a memprofiler/ folder's files belong to the run above it
    assert [r["name"] for r in runs] == ["job"] and runs[0]["workers"] == []
    q = {"run": "job", "path": "job/memprofiler/cuda_alloc_rank0.pickle"}
    code, doc = api.snapshot(reg, q)
    assert code == 200 and doc["devices"][0]["peak_active_bytes"] == 3249143816
    code, tl = api.snapshot_timeline(reg, dict(q, width_px="200"))
    assert code == 200 and len(tl["active_bytes"]) == 200 and tl["bands"]
    assert api.snapshot_stack(reg, dict(q, stack=str(tl["bands"][0]["stack"])))[1]["frames"]
    assert api.snapshot_segments(reg, q)[1]["segments"][0]["blocks"]
    code, bad = api.snapshot(reg, {"run": "job", "path": "job/memprofiler/evil.pkl"})
    assert bad["state"] == "error" and "refused" in bad["error"]
    assert api.snapshot(reg, {"run": "job", "path": "../../etc/passwd"})[0] == 404
    from tb_plugin.cli import main

    assert main(["report", str(tmp_path), "--json", "--no-cache"]) == 1  # the evil pickle failed
    out = __import__("json").loads(capsys.readouterr().out)
    snaps = {s["path"]: s for s in out["runs"][0]["snapshots"]}
    good = snaps["job/memprofiler/cuda_alloc_rank0.pickle"]
    assert good["devices"][0]["peak_active_bytes"] == 3249143816 and len(good["devices"][0]["largest"]) == 10
    assert "refused" in snaps["job/memprofiler/evil.pkl"]["error"]
