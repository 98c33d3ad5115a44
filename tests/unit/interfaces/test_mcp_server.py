"""``kinetoscope mcp LOGDIR`` through the mcp package's own client over stdio (a real subprocess):
the tools are listed with their schemas, every tool answers on samples/ with the numbers of
``kinetoscope report --json`` (and ``kinetoscope diff --json``), bad arguments are tool errors that
list the valid values, and a file still loading is said to be loading."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from urllib.parse import parse_qs, urlsplit

import orjson
import pytest
from conftest import REPO, cli_json, run_async

pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters, stdio_client

from tb_plugin.interfaces import queries
from tb_plugin.interfaces.mcp_tools import NotLoaded, Tools
from tb_plugin.registry.runs import RunRegistry

TOOLS = {
    "list_runs",
    "overview",
    "top_operators",
    "top_kernels",
    "top_modules",
    "memory",
    "insights",
    "graphs",
    "distributed",
    "critical_path",
    "diff",
    "hang",
    "search_timeline",
    "event",
}


def session_calls(calls: list[tuple[str, dict]]) -> tuple[list, list]:
    """``(tools, results)``: the server's tool list and each call's CallToolResult, in one stdio session."""

    async def main():
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "tb_plugin.cli", "mcp", "samples"],
            cwd=str(REPO),
            env=dict(os.environ, KINETOSCOPE_MCP_MAX_ANSWER_BYTES="100000000"),
        )
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = (await session.list_tools()).tools
                return tools, [await session.call_tool(name, args) for name, args in calls]

    return run_async(main)


def by_name(rows: list[dict]) -> dict[str, dict]:
    return {r["name"]: r for r in rows}


@pytest.fixture(scope="module")
def answers():
    report = cli_json("report", "samples")
    files = [(run["name"], w) for run in report["runs"] for w in run["workers"]]
    calls: list[tuple[str, dict]] = [("list_runs", {})]
    for run, w in files:
        where = {"run": run, "worker": w["worker"], "span": w["span"]}
        calls += [
            ("overview", where),
            ("top_operators", dict(where, limit=200)),
            ("top_kernels", dict(where, limit=200)),
            ("top_modules", dict(where, limit=200, max_depth=64)),
            ("memory", dict(where, limit=200)),
            ("insights", where),
            ("graphs", dict(where, limit=200)),
        ]
    calls += [
        ("distributed", {"run": "synthetic_ddp", "limit": 200}),
        ("critical_path", {"run": "synthetic_ddp", "step": "2"}),
        ("diff", {"base_run": "synthetic_kineto2021", "exp_run": "synthetic_resnet", "limit": 3}),
        ("search_timeline", {"run": "synthetic_resnet", "query": "cudnn_convolution", "limit": 5}),
        # bad arguments
        ("overview", {"run": "nope"}),
        ("top_operators", {"run": "synthetic_resnet", "group_by": "shapes"}),
        ("top_kernels", {"run": "synthetic_resnet", "sort": "speed"}),
        ("overview", {"run": "synthetic_ddp", "worker": "rank9"}),
        ("event", {"run": "synthetic_resnet", "row": 10**9}),
        ("search_timeline", {"run": "synthetic_resnet", "query": "(", "regex": True}),
    ]
    tools, results = session_calls(calls)
    return report, files, tools, list(zip(calls, results))


def test_tools_are_listed_with_schemas(answers):
    _, _, tools, _ = answers
    assert {t.name for t in tools} == TOOLS
    schemas = {t.name: t.input_schema for t in tools}
    assert schemas["top_operators"]["properties"]["group_by"]["enum"] == ["name", "shape", "stack"]
    assert schemas["top_kernels"]["properties"]["group_by"]["enum"] == ["name", "op", "graph"]
    assert schemas["top_operators"]["properties"]["limit"]["maximum"] == 200
    assert schemas["event"]["required"] == ["run", "row"]
    assert all(t.annotations.read_only_hint for t in tools)


def test_every_tool_equals_report_json(answers):
    report, files, _, results = answers
    got = {(name, json.dumps(args, sort_keys=True)): r for (name, args), r in results}

    def answer(name, **args):
        r = got[(name, json.dumps(args, sort_keys=True))]
        assert not r.is_error, r.content[0].text
        return r.structured_content["file_data"]

    runs = answer("list_runs")
    assert {(r["run"], w["worker"]) for r in runs["runs"] for w in r["workers"]} == {
        (run, w["worker"]) for run, w in files
    }
    for run, w in files:
        where = {"run": run, "worker": w["worker"], "span": w["span"]}
        ov = answer("overview", **where)
        assert ov["average_step"] == w["overview"]["average"] and ov["gpus"] == w["overview"]["gpus"]
        assert ov["steps"] == len(w["overview"]["steps"])
        ops = answer("top_operators", **where, limit=200)
        assert ops["rows_total"] == len(w["operators"])
        want = by_name(w["operators"])
        assert {n: {k: r[k] for k in want[n]} for n, r in by_name(ops["rows"]).items()} == want
        kernels = answer("top_kernels", **where, limit=200)
        want = by_name(w["kernels"])
        assert {n: {k: r[k] for k in want[n]} for n, r in by_name(kernels["rows"]).items()} == want
        modules = answer("top_modules", **where, limit=200, max_depth=64)
        assert sorted(modules["rows"], key=lambda r: r["path"]) == sorted(
            orjson.loads(orjson.dumps(queries.module_rows(w["modules"]))), key=lambda r: r["path"]
        )
        mem = answer("memory", **where, limit=200)
        assert {"devices": mem["devices"], "top_operators": mem["top_operators"]} == w["memory"]
        ins = answer("insights", **where)
        assert {k: ins[k] for k in w["insights"]} == w["insights"]
        assert parse_qs(urlsplit(ins["link"]).fragment) == {
            "run": [run],
            "worker": [w["worker"]],
            "span": [w["span"]],
            "view": ["insights"],
        }
        graphs = answer("graphs", **where, limit=200)
        for key in ("replays", "graphs", "graph_kernel_pct", "captures", "accounting", "advice", "replay_list"):
            assert graphs["cuda_graphs"][key] == w["graphs"]["cuda_graphs"][key]
        assert [g["kernels"] for g in graphs["cuda_graphs"]["graph_list"]] == [
            g["kernels"][:200] for g in w["graphs"]["cuda_graphs"]["graph_list"]
        ]
        assert (graphs["compiled"] or {}).get("steps") == (w["graphs"]["compiled"] or {}).get("steps")
    ddp = next(r for r in report["runs"] if r["name"] == "synthetic_ddp")["distributed"]
    dist = answer("distributed", run="synthetic_ddp", limit=200)
    assert dist["ranks"] == ddp["ranks"] and dist["collectives"]["rows"] == ddp["collectives"]
    assert dist["stragglers"] == ddp["stragglers"]
    path = next(r for r in report["runs"] if r["name"] == "synthetic_ddp")["critical_path"][1]
    brief = answer("critical_path", run="synthetic_ddp", step="2")["step"]
    assert (brief["length_us"], brief["by_category"]) == (path["length_us"], path["by_category"])
    assert [(s["rank"], s["dur_us"]) for s in brief["segments"]] == [
        (s["rank"], s["dur_us"]) for s in path["segments"][:5]
    ]
    diff = answer("diff", base_run="synthetic_kineto2021", exp_run="synthetic_resnet", limit=3)
    want = cli_json("diff", "samples/synthetic_kineto2021", "samples/synthetic_resnet")
    assert diff["steps"] == want["steps"]
    assert diff["operators_total"] == len(want["operators"]) and len(diff["operators"]) == 3
    assert parse_qs(urlsplit(diff["link"]).fragment)["exp_run"] == ["synthetic_resnet"]


def test_search_then_event_with_call_stack():
    """A match found by search_timeline opens with event: same name and start, and its call stack ends
    in it under the step (synthetic_resnet: ProfilerStep#1 > … > aten::cudnn_convolution)."""
    tools, results = session_calls([("search_timeline", {"run": "synthetic_resnet", "query": "cudnn_convolution"})])
    found = results[0].structured_content["file_data"]
    assert found["total"] == 16 and len(found["matches"]) == 16  # 4 convolutions a step, forward, 4 steps
    first = found["matches"][0]
    _, (ev,) = session_calls([("event", {"run": "synthetic_resnet", "row": first["row"]})])
    ev = ev.structured_content["file_data"]
    assert (ev["name"], ev["start_us"]) == (first["name"], first["start_us"])
    assert ev["call_stack"][0] == "ProfilerStep#1" and ev["call_stack"][-1] == "aten::cudnn_convolution"
    assert "aten::conv2d" in ev["call_stack"]


def test_bad_arguments_are_tool_errors_listing_valid_values(answers):
    *_, results = answers
    errors = {(name, json.dumps(args, sort_keys=True)): r for (name, args), r in results if r.is_error}
    assert len(errors) == 6
    texts = [r.content[0].text for r in errors.values()]
    assert all("Traceback" not in t for t in texts)
    want = [
        "run 'synthetic_resnet'",
        "'name', 'shape' or 'stack'",
        "sort must be one of name, calls, total_us",
        "workers rank0 (span 1), rank1 (span 1)",
        "0 to ",
        "regular expression",
    ]
    for fragment in want:
        assert any(fragment in t for t in texts), (fragment, texts)


def test_a_file_still_loading_is_said_to_be_loading():
    """No loader thread runs here: the file stays queued, and the tool says so with the progress."""
    registry = RunRegistry(str(REPO / "samples"))
    registry.scan()
    tools = Tools(registry, wait_s=0.1)
    listing = tools.list_runs()
    assert listing["still_loading"] and listing["loading"]["files_done"] == 0
    with pytest.raises(NotLoaded, match=r"synthetic_resnet/worker0\..* is still loading \(queued, 0%\); 0 of 11 files"):
        tools.overview("synthetic_resnet")


def test_a_missing_logdir_is_a_bad_argument(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "tb_plugin.cli", "mcp", str(tmp_path / "nothing")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 2 and "nothing: no such directory" in out.stderr and out.stdout == ""


def test_the_readme_agent_config_serves(tmp_path):
    """The README's agent configuration, as written (``kinetoscope`` run as ``python -m tb_plugin.cli``
    from this checkout, the logdir replaced by samples/): the server starts and lists the runs."""
    section = (REPO / "README.md").read_text().split("## MCP server for coding agents\n", 1)[1].split("\n## ", 1)[0]
    config = json.loads(section.split("```json\n", 1)[1].split("```", 1)[0])
    entry = config["mcpServers"]["kinetoscope"]
    assert entry["command"] == "kinetoscope" and entry["args"][0] == "mcp"
    args = [str(REPO / "samples") if a == "/path/to/logdir" else a for a in entry["args"]]

    async def main():
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "tb_plugin.cli", *args],
            cwd=str(tmp_path),
            env=dict(os.environ, PYTHONPATH=str(REPO)),
        )
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return (await session.call_tool("list_runs", {})).structured_content["file_data"]

    runs = run_async(main)
    assert {r["run"] for r in runs["runs"]} >= {"synthetic_resnet", "synthetic_ddp", "torch_cpu_cnn"}
