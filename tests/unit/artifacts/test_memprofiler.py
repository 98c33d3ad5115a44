"""finetuning-scheduler MemProfiler folders: the stats YAML (as PyYAML's default dumper writes it),
the FSDP text reports, allocator snapshot pickles, discovery, routes and the report."""

from __future__ import annotations

import json
import os

import pytest
from synth.fts import MiB, expected_stats, snapshot_values, write_memprofiler

from tb_plugin import api
from tb_plugin.artifacts.memprofiler import MAX_LOG_BYTES, MemProfilerError, load_stats
from tb_plugin.registry.runs import RunRegistry


def test_synthetic_stats_read_back_exactly(tmp_path):
    folder = write_memprofiler(tmp_path, ranks=2, iterations=(2, 3), snapshots=False)
    for rank in range(2):
        name = f"rank_{rank}_memory_stats.yaml"
        data = open(os.path.join(folder, name), "rb").read()
        assert data.startswith(b"!!python/object/apply:collections.defaultdict")  # the real files' form
        doc = load_stats(name, data)
        assert doc["rank"] == rank and doc["warnings"] == []
        assert [s["key"] for s in doc["snapshots"]] == [
            f"{rank}.training_step.{i}.{p}" for i in (2, 3) for p in ("start", "end")
        ]
        assert {s["key"]: s["values"] for s in doc["snapshots"]} == expected_stats(rank, (2, 3))
    end = snapshot_values(1, 2, "end")
    assert end["allocated_bytes.all.current"] == 512 * MiB + 16 * MiB + 64 * MiB
    assert end["npp_diff"] == 708 * MiB and end["rss_diff"] == 6 * MiB


def test_bad_files_are_messages_not_crashes(tmp_path):
    with pytest.raises(MemProfilerError, match="invalid YAML"):
        load_stats("rank_0_memory_stats.yaml", b"a: [1, 2\nb: }")
    with pytest.raises(MemProfilerError, match="expected a mapping"):
        load_stats("rank_0_memory_stats.yaml", b"- 1\n- 2\n")
    with pytest.raises(MemProfilerError, match="no MemProfiler snapshots.*'hello'"):
        load_stats("rank_0_memory_stats.yaml", b"hello: {rss: 1}\n")
    with pytest.raises(MemProfilerError, match="pickled MemProfiler stats are not read"):
        load_stats("rank_0_memory_stats.pickle", b"\x80\x04")
    # any other python tag is refused, and nothing runs
    marker = tmp_path / "pwned"
    evil = f"!!python/object/apply:os.system ['touch {marker}']\n".encode()
    with pytest.raises(MemProfilerError, match="invalid YAML"):
        load_stats("rank_0_memory_stats.yaml", evil)
    assert not marker.exists()
    # unknown keys and non-numeric values are skipped with warnings; None (hook not run) is kept
    doc = load_stats(
        "rank_3_memory_stats.yaml",
        (
            b"3.training_step.2.start: {rss: 100, npp_diff: null, note: text, flag: true}\n"
            b"3.training_step.2.end: {rss: 250}\n"
            b"summary: {rss: 1}\n"
        ),
    )
    assert doc["rank"] == 3
    assert [s["values"] for s in doc["snapshots"]] == [{"rss": 100, "npp_diff": None}, {"rss": 250}]
    assert any("'summary'" in w for w in doc["warnings"]) and any("2 values" in w for w in doc["warnings"])


def test_discovery_routes_and_report(tmp_path, capsys):
    job = tmp_path / "version_0"
    folder = write_memprofiler(job, ranks=2, iterations=(2,))
    with open(os.path.join(folder, "rank_7_memory_stats.yaml"), "w") as f:
        f.write("{{{ not yaml")
    with open(os.path.join(folder, "fsdp_mem_rank_0_big.log"), "wb") as f:
        f.write(b"x" * (MAX_LOG_BYTES + 10))
    reg = RunRegistry(str(tmp_path))
    reg.scan()
    (run,) = reg.runs_document()["runs"]
    assert run["name"] == "version_0"  # the memprofiler/ folder belongs to the run above it
    kinds = {os.path.basename(a["path"]): a["kind"] for a in run["artifacts"]}
    assert kinds["rank_0_memory_stats.yaml"] == "memprofiler_stats"
    assert kinds["fsdp_mem_rank_1_training_step_2.log"] == "memprofiler_log"
    assert kinds["cuda_alloc_rank_1.training_step.2.end.pickle"] == "snapshot"  # the snapshot viewer's

    base = "version_0/memprofiler/"
    code, doc = api.memprofiler_stats(reg, {"run": "version_0", "path": base + "rank_1_memory_stats.yaml"})
    assert code == 200 and doc["state"] == "ready" and doc["rank"] == 1
    assert [m["key"] for m in doc["metrics"]][:3] == [
        "allocated_bytes.all.current",
        "allocated_bytes.all.peak",
        "reserved_bytes.all.current",
    ]
    end = {s["key"]: s for s in doc["snapshots"]}["1.training_step.2.end"]
    assert end["values"]["reserved_bytes.all.current"] == 2048 * MiB + 32 * MiB + 128 * MiB
    code, bad = api.memprofiler_stats(reg, {"run": "version_0", "path": base + "rank_7_memory_stats.yaml"})
    assert code == 200 and bad["state"] == "error" and "invalid YAML" in bad["error"]
    code, log = api.memprofiler_log(reg, {"run": "version_0", "path": base + "fsdp_mem_rank_0_training_step_2.log"})
    assert code == 200 and log["text"].startswith("Iteration 2 training_step Peak FSDP memory stats:")
    assert not log["truncated"]
    code, big = api.memprofiler_log(reg, {"run": "version_0", "path": base + "fsdp_mem_rank_0_big.log"})
    assert big["truncated"] and len(big["text"]) == MAX_LOG_BYTES and big["size_bytes"] == MAX_LOG_BYTES + 10
    assert api.memprofiler_log(reg, {"run": "version_0", "path": base + "rank_0_memory_stats.yaml"})[0] == 404
    code, snap = api.snapshot(
        reg, {"run": "version_0", "path": base + "cuda_alloc_rank_0.training_step.2.start.pickle"}
    )
    assert code == 200 and snap["state"] == "ready" and snap["devices"][0]["peak_active_bytes"] > 0

    from tb_plugin.cli import main

    assert main(["report", str(tmp_path), "--json", "--no-cache"]) == 1  # rank_7 is broken
    out = json.loads(capsys.readouterr().out)
    mp = {os.path.basename(m["path"]): m for m in out["runs"][0]["memprofiler"]}
    assert "invalid YAML" in mp["rank_7_memory_stats.yaml"]["error"]
    r0 = mp["rank_0_memory_stats.yaml"]
    assert [s["key"] for s in r0["snapshots"]] == ["0.training_step.2.start", "0.training_step.2.end"]
    assert r0["snapshots"][1]["values"]["npp_post_forward"] == 700 * MiB
    assert r0["snapshots"][0]["values"]["allocated_bytes.all.peak"] == 512 * MiB + 1400 * MiB
    assert mp["fsdp_mem_rank_0_big.log"]["truncated"] is True
    assert len(out["runs"][0]["snapshots"]) == 4


def test_text_report_lists_memory_artifacts(tmp_path):
    """A run with only MemProfiler files printed nothing in the text report (--json had them)."""
    import io

    from tb_plugin.cli.report import run_report

    write_memprofiler(tmp_path / "version_0", ranks=2, iterations=(2,))
    out, err = io.StringIO(), io.StringIO()
    assert run_report(str(tmp_path), None, False, False, out, err) == 0
    lines = out.getvalue().splitlines()
    assert lines[1] == "== run version_0  memory artifacts (no trace files)"
    assert lines[2] == "   allocator snapshots: 4"
    assert (
        sum(
            line.startswith("     version_0/memprofiler/cuda_alloc_rank_") and " peak active " in line for line in lines
        )
        == 4
    )
    base = "version_0/memprofiler/"
    # allocated peak 512 + 1500 MiB = 2012 MiB = 1.96 GiB; reserved 2048 + 128 MiB = 2.125 GiB -> 2.13
    assert (
        f"   MemProfiler stats {base}rank_0_memory_stats.yaml: rank 0, 2 snapshots, peak allocated 1.96 GiB, "
        "peak reserved 2.13 GiB" in lines
    )
    assert (
        f"   MemProfiler stats {base}rank_1_memory_stats.yaml: rank 1, 2 snapshots, peak allocated 1.98 GiB, "
        "peak reserved 2.16 GiB" in lines
    )
    assert f"   MemProfiler log {base}fsdp_mem_rank_0_training_step_2.log: 909 bytes" in lines
