"""Request → query → analysis → JSON. Validates every parameter; computes nothing itself.

Each function returns ``(http_status, json_document)``; ``plugin.py`` turns that into a response.
Route parameters only ever select entries of the in-memory registry: no parameter is joined into a
filesystem path, so none can reach outside the logdir.
"""

from __future__ import annotations

from typing import Any, Mapping

from .runs import ERROR, LOADING, QUEUED, RunRegistry

MAX_PARAM_CHARS = 4096


class BadRequest(Exception):
    """A missing or malformed parameter (HTTP 400)."""


def _param(args: Mapping[str, str], key: str) -> str:
    value = args.get(key)
    if value is None or value == "":
        raise BadRequest(f"missing parameter '{key}'")
    if len(value) > MAX_PARAM_CHARS or "\x00" in value:
        raise BadRequest(f"parameter '{key}' is malformed")
    return value


def runs(registry: RunRegistry) -> tuple[int, dict[str, Any]]:
    return 200, registry.snapshot()


def overview(registry: RunRegistry, args: Mapping[str, str]) -> tuple[int, dict[str, Any]]:
    try:
        run, worker, span = _param(args, "run"), _param(args, "worker"), _param(args, "span")
    except BadRequest as exc:
        return 400, {"error": str(exc)}
    state = registry.find(run, worker, span)
    if state is None:
        return 404, {"error": f"no trace for run {run!r}, worker {worker!r}, span {span!r}"}
    if state.state in (QUEUED, LOADING):
        registry.want(state)
        return 200, {"state": state.state, "progress": round(state.progress, 4)}
    if state.state == ERROR:
        return 200, {"state": ERROR, "error": state.error, "path": state.entry.rel}
    doc = dict(state.overview or {})
    doc["configuration"] = dict(doc.get("configuration", {}), workers_in_run=registry.workers_in_run(run))
    doc.update(state="ready", run=run, worker=worker, span=span, path=state.entry.rel, warnings=list(state.warnings))
    return 200, doc
