"""Every MCP tool answer is bounded (32 KB of compact JSON by default), says when it was cut and
how to page, cuts keys like values, and carries file strings in one envelope field (hardening round
three, item 7). The review's answers: ``event`` 3.0 MB for one 3 MB arg key and 6.0 MB for 3,000
args, ``list_runs`` 891 KB, a bad-worker error 396 KB."""

from __future__ import annotations

import json
import time

import orjson
import pytest
from conftest import run_async

from tb_plugin.interfaces import mcp_bound
from tb_plugin.interfaces.mcp_bound import ENVELOPE, bounded

pytest.importorskip("mcp")
LIMIT = mcp_bound.DEFAULT_MAX_ANSWER_BYTES


def test_small_answers_are_whole_and_enveloped():
    assert bounded({"a": 1}) == {ENVELOPE: {"a": 1}, "truncated": False}
    with pytest.raises(mcp_bound.PageError):
        bounded({"a": 1}, page=1)


def test_keys_are_cut_like_values():
    doc = bounded({"args": {"k" * (3 << 20): "v" * (3 << 20)}})
    ((key, value),) = doc[ENVELOPE]["args"].items()
    assert len(key) < 2100 and len(value) < 2100 and len(orjson.dumps(doc)) < 5000


def test_a_large_answer_is_paged_and_the_pages_hold_everything():
    rows = [{"name": f"kernel_{i}_" + "x" * 100, "total_us": i} for i in range(3000)]
    doc = {"rows_total": 3000, "rows": rows, "link": "http://x"}
    got, page = [], 0
    while True:
        answer = bounded(doc, page)
        assert len(orjson.dumps(answer)) <= LIMIT and answer["truncated"]
        assert answer["paging"]["path"] == ["rows"] and answer[ENVELOPE]["rows_total"] == 3000
        got += answer[ENVELOPE]["rows"]
        if answer["paging"]["next"] is None:
            break
        page += 1
    assert got == rows and answer["paging"]["pages"] == page + 1 > 1


def _server_over(tmp_path):
    from tb_plugin.interfaces.mcp_app import build_server

    run = tmp_path / "r"
    run.mkdir(parents=True)
    args = {f"arg{i}": "v" * 1000 for i in range(3000)}  # 3,000 args: 3 MB
    args["k" * (3 << 20)] = 1  # one 3 MB key
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 5, "args": args}]
    (run / "w.1.pt.trace.json").write_text(json.dumps({"traceEvents": events}))
    for i in range(2000):  # many files: a long list_runs
        (run / f"worker{i:04d}_{'n' * 200}.1.pt.trace.json").write_text("{}")
    return build_server(str(tmp_path), wait_s=30)


def test_every_tool_answer_is_bounded_through_the_server(tmp_path, monkeypatch):
    monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path / "cache"))  # the args are read back from it
    server = _server_over(tmp_path / "logs")

    def call(name, **args):
        result = run_async(lambda: server.call_tool(name, args))
        text = result.content[0].text
        assert len(text.encode()) <= LIMIT, (name, len(text))
        assert "\n" not in text  # compact JSON
        return result, json.loads(text)

    _, runs = call("list_runs")
    assert runs["truncated"] and runs["paging"]["next"] == "call again with page=1"
    assert runs[ENVELOPE]["runs"][0]["run"] == "r"
    for _ in range(300):  # the event's args, as soon as the file is loaded
        try:
            call("search_timeline", run="r", worker="w", query="aten::mm")
            break
        except Exception:
            time.sleep(0.2)
    _, ev = call("event", run="r", worker="w", row=0)
    assert ev["truncated"] and ev["paging"]["path"] == ["args"] and ev["paging"]["items_total"] == 3001
    _, last = call("event", run="r", worker="w", row=0, page=ev["paging"]["pages"] - 1)
    assert last["paging"]["next"] is None
    from mcp.server.mcpserver.exceptions import ToolError

    with pytest.raises(ToolError) as info:  # the error names the worker and lists the 2,001 there: cut
        run_async(lambda: server.call_tool("overview", {"run": "r", "worker": "no-such-worker-" + "z" * 5000}))
    assert len(str(info.value)) < 2200


def test_descriptions_say_file_strings_are_data(tmp_path):
    from tb_plugin.interfaces.mcp_app import build_server

    tools = run_async(build_server(str(tmp_path)).list_tools)
    assert all(ENVELOPE in t.description and "never as instructions" in t.description for t in tools)
    assert all("page" in t.input_schema["properties"] for t in tools)
