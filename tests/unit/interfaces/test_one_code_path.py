"""One code path: on every trace of samples/, the notebook API (``import kinetoscope``), the
MCP tools (:class:`~tb_plugin.interfaces.mcp_tools.Tools`, the bodies of ``kinetoscope mcp``'s tools;
tests/unit/interfaces/test_mcp_server.py drives them over stdio), ``kinetoscope serve``'s routes and ``kinetoscope
report --json`` give equal numbers: Overview, operators, kernels, modules, memory, insights and the
distributed view."""

from __future__ import annotations

import sys
from urllib.parse import urlencode

import orjson
import pytest
from conftest import REPO, cli_json, settled

sys.path.insert(0, str(REPO / "tb_plugin" / "public"))  # setup.py maps this folder as "kinetoscope"

import kinetoscope

from tb_plugin.interfaces import queries
from tb_plugin.interfaces.mcp_tools import Tools
from tb_plugin.registry.report import report_insights
from tb_plugin.registry.runs import RunRegistry
from tb_plugin.trace import jsonsafe

flask = pytest.importorskip("flask")
from tb_plugin.standalone import ROUTE_BASE, create_app


def plain(doc):
    return orjson.loads(jsonsafe.dumps(doc))


def by_name(rows, keys):
    return {r["name"]: {k: r[k] for k in keys} for r in rows}


@pytest.fixture(scope="module")
def interfaces():
    report = cli_json("report", "samples")
    registry = RunRegistry(str(REPO / "samples")).start()
    client = create_app(str(REPO / "samples")).test_client()
    yield report, Tools(registry, wait_s=120), client
    registry.stop()


def route(client, name: str, **query) -> dict:
    return settled(client, f"{ROUTE_BASE}/{name}?{urlencode(query)}")


def test_every_interface_gives_the_reports_numbers(interfaces, monkeypatch):
    report, tools, client = interfaces
    monkeypatch.setenv("KINETOSCOPE_TABLES", "records")
    files = [(run["name"], w) for run in report["runs"] for w in run["workers"]]
    assert len(files) == 11  # 5 synthetic/CPU traces + the 6 H200 traces of samples/gpu_*
    for run, w in files:
        where = {"run": run, "worker": w["worker"], "span": w["span"]}
        nb = kinetoscope.load(str(REPO / "samples" / run), worker=w["worker"], span=w["span"])
        op_keys, k_keys = list(w["operators"][0]), list((w["kernels"] or [{"name": ""}])[0])
        want_ops, want_kernels = by_name(w["operators"], op_keys), by_name(w["kernels"], k_keys)
        # Overview
        assert plain(nb.overview())["average"] == w["overview"]["average"]
        assert tools.overview(**where)["average_step"] == w["overview"]["average"]
        assert route(client, "overview", **where)["average"] == w["overview"]["average"]
        assert route(client, "overview", **where)["gpus"] == w["overview"]["gpus"] == tools.overview(**where)["gpus"]
        # operators and kernels
        assert by_name(plain(nb.operators()), op_keys) == want_ops
        assert by_name(tools.top_operators(**where, limit=200)["rows"], op_keys) == want_ops
        assert by_name(route(client, "operators", **where, limit=1000)["rows"], op_keys) == want_ops
        assert by_name(plain(nb.kernels()), k_keys) == want_kernels
        assert by_name(tools.top_kernels(**where, limit=200)["rows"], k_keys) == want_kernels
        assert by_name(route(client, "kernels", **where, limit=1000)["rows"], k_keys) == want_kernels
        # modules, memory, insights
        want_modules = plain(queries.module_rows(w["modules"]))
        assert plain(nb.modules()) == want_modules
        assert plain(queries.module_rows(route(client, "modules", **where)["modules"])) == want_modules
        assert sorted(tools.top_modules(**where, limit=200, max_depth=64)["rows"], key=lambda r: r["path"]) == sorted(
            want_modules, key=lambda r: r["path"]
        )
        mem = tools.memory(**where, limit=200)
        assert {"devices": mem["devices"], "top_operators": mem["top_operators"]} == w["memory"]
        assert plain(nb.memory()) == w["memory"]
        ins = tools.insights(**where)
        assert {k: ins[k] for k in w["insights"]} == w["insights"]
        assert plain(report_insights(nb.insights())) == w["insights"]
        assert plain(report_insights(route(client, "insights", **where))) == w["insights"]
    ddp = next(r for r in report["runs"] if r["name"] == "synthetic_ddp")["distributed"]
    assert plain(kinetoscope.load_run(str(REPO / "samples" / "synthetic_ddp")).distributed())["ranks"] == ddp["ranks"]
    assert tools.distributed("synthetic_ddp")["ranks"] == ddp["ranks"]
    # the critical path: notebook, MCP tool, route and report
    paths = next(r for r in report["runs"] if r["name"] == "synthetic_ddp")["critical_path"]
    assert plain(kinetoscope.load_run(str(REPO / "samples" / "synthetic_ddp")).critical_path().raw) == paths
    assert tools.critical_path("synthetic_ddp", step=paths[0]["step"])["step"]["by_category"] == paths[0]["by_category"]
    # the route: every step summarised, each step's detail (asked with step=) as the report's
    listed = route(client, "distributed", run="synthetic_ddp", span="1")["view"]["critical_path"]
    assert [(s["step"], s["length_us"], s["by_category"]) for s in listed] == [
        (p["step"], p["length_us"], p["by_category"]) for p in paths
    ]
    for p in paths:
        got = route(client, "distributed", run="synthetic_ddp", span="1", step=p["step"])["view"]["critical_path"]
        (detailed,) = [s for s in got if s["detailed"]]
        assert {k: detailed[k] for k in p} == p  # by_rank whole: the ranks are fewer than the cap
    view = route(client, "distributed", run="synthetic_ddp", span="1")["view"]
    assert [{k: r[k] for k in ddp["ranks"][0]} for r in view["ranks"]] == ddp["ranks"]
