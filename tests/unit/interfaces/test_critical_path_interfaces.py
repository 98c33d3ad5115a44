"""The critical path in the other interfaces: in the MCP tools (a compact answer,
1–4 KB, with a link), in ``kinetoscope report``'s text and in the notebook API, with the report's
numbers (known by construction on the slow-data-loader job, tests/synth/critical.py; real on DLRM)."""

from __future__ import annotations

import io
import json
import shutil
import sys

import orjson
import pytest
from conftest import REPO, sample, write_json
from synth.critical import DATALOADER, dataloader_docs, dataloader_expected

from tb_plugin.interfaces.mcp_tools import Invalid, Tools
from tb_plugin.registry.runs import RunRegistry

pytestmark = pytest.mark.corpus  # reads the external sample corpus (docs/TESTING.md)

DL = [[60, 50], [50, 500]]


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("paths")
    for r, doc in enumerate(dataloader_docs(DL)):
        write_json(root / "job" / f"rank{r}.pt.trace.json", doc)
    write_json(root / "one" / "rank1.pt.trace.json", dataloader_docs(DL)[1])
    shutil.copytree(sample("dlrm_8ranks"), root / "dlrm")
    return root


@pytest.fixture(scope="module")
def tools(logdir):
    registry = RunRegistry(str(logdir)).start()
    yield Tools(registry, wait_s=120)
    registry.stop()


def test_mcp_critical_path_known_answer(tools):
    """The job: the longest step (2) by default: rank 0 waited 450 µs for rank 1, late after its 500 µs
    data loader; the path's shares as constructed; the answer is 1–4 KB with the Distributed tab's link."""
    doc = tools.critical_path("job")
    want = dataloader_expected(DL, 1)
    assert doc["cross_rank"] and doc["steps_total"] == 2
    assert doc["steps"] == [{"step": "2", "length_us": want["length_us"]}, {"step": "1", "length_us": 230.0}]
    step = doc["step"]
    assert step["step"] == "2" and step["by_category"] == pytest.approx(want["by_category"])
    assert {r["rank"]: r["us"] for r in step["by_rank"]} == pytest.approx(want["by_rank"])
    (late,) = step["late"]
    assert (late["rank"], late["late_rank"], late["wait_us"]) == (0, 1, want["wait_us"])
    assert (late["late_work"]["name"], late["late_work"]["dur_us"]) == (DATALOADER, 500.0)
    assert step["segments"][0] == {"rank": 1, "category": "cpu", "at_us": 0.0, "dur_us": 500.0, "name": DATALOADER}
    assert 1024 <= len(orjson.dumps(doc)) <= 4096
    assert "view=distributed" in doc["link"] and "run=job" in doc["link"]
    assert tools.critical_path("job", step="1")["step"]["length_us"] == 230.0
    with pytest.raises(Invalid, match="no step '9'.*steps: 1, 2"):
        tools.critical_path("job", step="9")


def test_mcp_critical_path_single_rank_and_dlrm(tools):
    """A one-rank run answers its own path (no cross-rank edges: rank 1 alone is its whole step); on
    DLRM the collectives on the path waited for rank 7, and the answer stays within 4 KB."""
    one = tools.critical_path("one")
    assert one["cross_rank"] is False and one["step"]["by_rank"] == [
        {"rank": 1, "us": one["step"]["length_us"], "pct": 100.0}
    ]
    assert one["step"]["late"] == []
    dlrm = tools.critical_path("dlrm", limit=50)
    assert {c["late_rank"] for c in dlrm["step"]["late"]} == {7}
    assert dlrm["step"]["length_us"] == 19526.0 and len(dlrm["step"]["segments"]) == 10  # the report keeps ten
    assert len(orjson.dumps(tools.critical_path("dlrm"))) <= 4096


def test_text_report_prints_the_path(logdir):
    from tb_plugin.cli.report import run_report

    out, err = io.StringIO(), io.StringIO()
    assert run_report(str(logdir), "job", False, False, out, err) == 0
    text = out.getvalue()
    # step 2 (670 µs): kernel 100, cpu 10 + 5 + 500, communication 50, waiting 5; rank 1 610, rank 0 60
    assert "critical path across ranks (per step: length = step time):" in text
    assert (
        "step 2: 670.0 µs (kernel 14.9% · cpu 76.9% · communication 7.5% · waiting 0.7%) [rank 1 91.0%, rank 0 9.0%]"
        in text
    )
    assert f"rank 1 cpu {DATALOADER}: 500.0 µs" in text
    assert (
        f"rank 0 waited 450.0 µs in ncclDevKernel_AllReduce_Sum_f32_RING_LL for rank 1, late after {DATALOADER} "
        "(cpu, 500.0 µs)"
    ) in text
    # the work of most time, grouped by name (step 2: the data loader 500, gemm 100, the all-reduce 50)
    assert (
        f"most time: {DATALOADER} 500.0 µs over 1 segment; gemm 100.0 µs over 1 segment; "
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL 50.0 µs over 1 segment"
    ) in text
    out = io.StringIO()
    assert run_report(str(logdir), "one", False, False, out, err) == 0
    assert "   critical path (per step: length = step time):\n     step 1: " in out.getvalue()


def test_notebook_run_critical_path_is_the_reports(logdir):
    sys.path.insert(0, str(REPO / "tb_plugin" / "public"))
    import kinetoscope

    report = io.StringIO()
    from tb_plugin.cli.report import run_report

    assert run_report(str(logdir), "job", True, False, report, io.StringIO()) == 0
    want = next(r for r in json.loads(report.getvalue())["runs"] if r["name"] == "job")["critical_path"]
    got = kinetoscope.load_run(str(logdir / "job")).critical_path()
    assert orjson.loads(orjson.dumps(got.raw)) == want and [p["step"] for p in got.raw] == ["1", "2"]
    steps, segments = got  # two tables: one row per step, one per segment
    rows = steps.to_dict("records") if hasattr(steps, "to_dict") else steps
    assert [r["step"] for r in rows] == ["1", "2"]
    for r, p in zip(rows, want):
        assert r["length_us"] == p["length_us"] and r["host_blocked_us"] == p["host_blocked_us"]
        assert r["cpu_us"] == p["by_category"]["cpu"] and r["waiting_us"] == p["by_category"]["waiting"]
    segs = segments.to_dict("records") if hasattr(segments, "to_dict") else segments
    assert len(segs) == sum(len(p["segments"]) for p in want)
    assert {(s["step"], s["name"], s["dur_us"]) for s in segs} == {
        (p["step"], s["name"], s["dur_us"]) for p in want for s in p["segments"]
    }
