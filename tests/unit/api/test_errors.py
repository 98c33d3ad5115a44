"""The one error root (``tb_plugin/errors.py``): each error's HTTP status and document, the routes'
one mapping (``api.routes.route``), a file still loading answered as a state (not an error), and the
CLI's and the MCP server's own forms of the same errors."""

from __future__ import annotations

import json

import pytest

from tb_plugin import api, cli, errors
from tb_plugin.api.params import Pending, ready_file
from tb_plugin.interfaces import mcp_bound, queries
from tb_plugin.interfaces.notebook import LoadError
from tb_plugin.registry.runs import RunRegistry
from tb_plugin.registry.states import LOADING


def _trace(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    events = [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 10}]
    path.write_text(json.dumps({"traceEvents": events}))


def test_each_error_has_its_status_and_a_json_document():
    cases = [
        (errors.InvalidArgumentError("bad x"), 400),
        (errors.NotFoundError("no y"), 404),
        (errors.PermissionDeniedError("denied"), 403),
        (errors.UnreadableFileError("cannot read z"), 502),
        (errors.BudgetExceededError("too big"), 413),
        (errors.KinetoscopeError("other"), 500),
    ]
    for exc, status in cases:
        assert errors.http_answer(exc) == (status, {"error": str(exc)})
    assert errors.http_answer(errors.NoLogdirError()) == (404, {"error": "TensorBoard was started without --logdir"})
    # the interfaces' own errors are in the hierarchy (and keep their built-in bases)
    assert issubclass(queries.Invalid, errors.InvalidArgumentError) and issubclass(queries.Invalid, ValueError)
    assert issubclass(mcp_bound.PageError, errors.InvalidArgumentError)
    assert issubclass(LoadError, errors.KinetoscopeError) and issubclass(LoadError, RuntimeError)


def test_a_route_answers_a_raised_error_with_its_status(tmp_path):
    _trace(tmp_path / "r" / "w.1.pt.trace.json")
    reg = RunRegistry(str(tmp_path))
    reg.scan()
    assert api.overview(reg, {"run": "r", "worker": "w"}) == (400, {"error": "missing parameter 'span'"})
    status, doc = api.overview(reg, {"run": "r", "worker": "nope", "span": "1"})
    assert status == 404 and doc["error"].startswith("no trace for run 'r'")
    # not loaded yet: an answer with the state (the client polls), not an error
    got = ready_file(reg, {"run": "r", "worker": "w", "span": "1"})
    assert isinstance(got, Pending) and got.doc["state"] in ("queued", LOADING)
    assert api.overview(reg, {"run": "r", "worker": "w", "span": "1"})[1]["state"] in ("queued", LOADING)
    reg.load(reg.files()[0])
    status, doc = api.overview(reg, {"run": "r", "worker": "w", "span": "1"})
    assert status == 200 and doc["state"] == "ready"
    status, doc = api.diff(reg, {"base_run": "r", "base_worker": "w", "base_span": "1", "exp_run": "x"})
    assert (status, doc) == (400, {"error": "missing parameter 'worker'", "side": "exp"})


def test_the_cli_answers_an_error_with_exit_status_2(monkeypatch, capsys):
    def fails(argv, whole_process=False):
        raise errors.NotFoundError("no run 'x'")

    monkeypatch.setattr(cli, "_command", fails)
    assert cli.main(["report", "."]) == errors.CLI_EXIT_STATUS == 2
    assert capsys.readouterr().err == "kinetoscope: no run 'x'\n"


def test_the_mcp_server_answers_an_error_as_the_tool_error_text():
    pytest.importorskip("mcp")
    from mcp.server.mcpserver.exceptions import ToolError

    from tb_plugin.interfaces.mcp_app import _answer

    def overview(run: str) -> dict:
        """A tool."""
        raise queries.Invalid(f"no run {run!r}; runs: a")

    with pytest.raises(ToolError, match=r"^no run 'x'; runs: a$"):
        _answer(overview)("x")
