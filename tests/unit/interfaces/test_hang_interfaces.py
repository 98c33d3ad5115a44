"""The hang document through every interface: the registry's run (dumps found by content in a
logdir), the ``hang``/``hang_entries`` routes, ``kinetoscope report``, the MCP tool and the notebook —
all give the same verdict as ``kinetoscope hang`` on samples/fr_gloo_skip."""

from __future__ import annotations

import io
import os
import shutil

import conftest
import pytest

from tb_plugin import api
from tb_plugin.interfaces import notebook
from tb_plugin.registry import hang
from tb_plugin.registry.runs import RunRegistry

REPO = str(conftest.REPO)
SAMPLE = os.path.join(REPO, "samples", "fr_gloo_skip")


@pytest.fixture(scope="module")
def expected():
    return hang.folder_document(SAMPLE)["verdict"]


@pytest.fixture()
def logdir(tmp_path):
    shutil.copytree(SAMPLE, tmp_path / "job")
    return tmp_path


def test_registry_finds_dumps_by_content_and_routes_answer(logdir, expected):
    (logdir / "job" / "renamed_dump_0.pkl").write_bytes((logdir / "job" / "nccl_trace_rank_0").read_bytes())
    (logdir / "job" / "nccl_trace_rank_0").unlink()
    (logdir / "job" / "rank3.1.pt.trace.json").write_text('{"traceEvents": []}')  # a trace of rank 3, never loaded
    reg = RunRegistry(str(logdir))
    reg.scan()
    kinds = {a.entry.name: a.entry.kind for a in reg.artifacts("job")}
    assert kinds["renamed_dump_0.pkl"] == "flight_recorder" and kinds["nccl_trace_rank_3"] == "flight_recorder"
    status, doc = api.hang(reg, {"run": "job"})
    assert status == 200 and doc["verdict"] == expected
    assert doc["traces"] == {"3": {"path": "job/rank3.1.pt.trace.json", "worker": "rank3", "span": "1"}}
    status, doc = api.hang_entries(reg, {"run": "job", "rank": "2"})
    assert status == 200 and doc["entries"][-1]["collective_seq_id"] == 4
    assert api.hang_entries(reg, {"run": "job", "rank": "7"})[0] == 404
    assert api.hang(reg, {"run": "nope"})[0] == 404
    runs = {r["name"]: r for r in reg.runs_document()["runs"]}
    assert sum(a["kind"] == "flight_recorder" for a in runs["job"]["artifacts"]) == 4


def test_report_has_the_verdict(logdir, expected):
    from tb_plugin.cli import report as cli_report

    out, err = io.StringIO(), io.StringIO()
    status = cli_report.run_report(str(logdir), "job", True, False, out, err, executor="local:1")
    import json

    doc = json.loads(out.getvalue())
    run = next(r for r in doc["runs"] if r["name"] == "job")
    assert status == 0 and run["hang"]["verdict"] == expected and run["hang"]["dumps"] == 4


def test_mcp_tool_is_compact_with_a_link(logdir, expected):
    from tb_plugin.interfaces.mcp_tools import Tools
    from tb_plugin.interfaces.queries import Invalid

    reg = RunRegistry(str(logdir))
    reg.scan()
    got = Tools(reg).hang("job", limit=1)
    assert got["verdict"] == expected and got["findings_total"] == 2 and len(got["findings"]) == 1
    assert got["findings"][0]["missing_ranks"] == [3] and got["findings"][0]["root_cause"]
    assert "view=hang" in got["link"] and "run=job" in got["link"]
    with pytest.raises(Invalid, match="runs with dumps: job"):
        Tools(reg).hang(".")


def test_notebook_tables(expected):
    got = notebook.hang(SAMPLE)
    assert got["verdict"] == expected
    findings = notebook.table(got["findings"]) if isinstance(got["findings"], list) else got["findings"]
    assert len(findings) == 2
    with pytest.raises(notebook.LoadError):
        notebook.hang(os.path.join(REPO, "samples", "torch_cpu_cnn"))


def test_background_loading_reads_the_dumps_once_and_marks_each(logdir):
    """The artifact loader reads a run's dumps together: each listed ready, an unreadable one an error."""
    import time

    data = (logdir / "job" / "nccl_trace_rank_3").read_bytes()
    (logdir / "job" / "nccl_trace_rank_3").write_bytes(data[: len(data) // 2])
    reg = RunRegistry(str(logdir)).start()
    try:
        reg.wait_scanned(30)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(a.state in ("queued", "loading") for a in reg.artifacts("job")):
            time.sleep(0.2)
        states = {a.entry.name: (a.state, a.error) for a in reg.artifacts("job")}
    finally:
        reg.stop()
    assert states["nccl_trace_rank_0"] == ("ready", None)
    assert states["nccl_trace_rank_3"][0] == "error" and "not a readable pickle" in states["nccl_trace_rank_3"][1]
