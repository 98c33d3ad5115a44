"""Parameter parsing for the routes. Every error carries its HTTP status and JSON document
(:class:`ApiError`): a route raises, and one place answers (:func:`~tb_plugin.api.routes.route` for a
route's return value, ``plugin._guarded`` for anything that escapes).

Route parameters only ever select entries of the in-memory registry: no parameter is joined into a
filesystem path, so none can reach outside the logdir.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from ..registry.interface import Registry
from ..registry.states import ERROR, LOADING, QUEUED, READY

MAX_PARAM_CHARS = 4096
MAX_WIDTH_PX = 10_000
MAX_OP_PATH = 256  # operator names in the diff's ``path``
MAX_OP_PATH_CHARS = 1 << 20  # characters of the diff's ``path`` parameter


class ApiError(Exception):
    """An answer other than the route's own: ``status`` (HTTP) and the JSON ``doc``."""

    def __init__(self, status: int, doc: dict[str, Any]) -> None:
        super().__init__(doc.get("error", ""))
        self.status, self.doc = status, doc


class BadRequest(ApiError):
    """A missing or malformed parameter (HTTP 400)."""

    def __init__(self, message: str) -> None:
        super().__init__(400, {"error": message})


class NotFound(ApiError):
    """The parameters name nothing the registry holds (HTTP 404)."""

    def __init__(self, message: str) -> None:
        super().__init__(404, {"error": message})


class NotReady(ApiError):
    """The file or artifact is loading or failed: answered with its state (HTTP 200; the client polls)."""

    def __init__(self, doc: dict[str, Any]) -> None:
        super().__init__(200, doc)


def param(args: Mapping[str, str], key: str) -> str:
    value = args.get(key)
    if value is None or value == "":
        raise BadRequest(f"missing parameter '{key}'")
    if len(value) > MAX_PARAM_CHARS or "\x00" in value:
        raise BadRequest(f"parameter '{key}' is malformed")
    return value


def choice(args: Mapping[str, str], key: str, choices: tuple, default: str) -> str:
    value = args.get(key) or default
    if value not in choices:
        raise BadRequest(f"parameter '{key}' must be one of {', '.join(choices)}")
    return value


def integer(args: Mapping[str, str], key: str, default: int, lo: int, hi: int) -> int:
    raw = args.get(key)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"parameter '{key}' must be an integer") from None
    if not lo <= value <= hi:
        raise BadRequest(f"parameter '{key}' must be between {lo} and {hi}")
    return value


def number(args: Mapping[str, str], key: str, default: float | None = None) -> float:
    raw = args.get(key)
    if raw in (None, ""):
        if default is None:
            raise BadRequest(f"missing parameter '{key}'")
        return default
    try:
        value = float(raw)
    except ValueError:
        raise BadRequest(f"parameter '{key}' must be a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise BadRequest(f"parameter '{key}' must be finite")
    return value


def time_range(args: Mapping[str, str]) -> tuple[float | None, float | None]:
    """``start_us``/``end_us`` when given (µs), else None."""
    lo = number(args, "start_us", float("-inf")) if args.get("start_us") else None
    hi = number(args, "end_us", float("inf")) if args.get("end_us") else None
    return lo, hi


def table_query(args: Mapping[str, str], columns: list[str], default_sort: str, max_limit: int) -> dict[str, Any]:
    """Sort column and order, paging and search of a table route."""
    sort = args.get("sort") or default_sort
    if sort not in columns:
        raise BadRequest(f"parameter 'sort' must be a column: {', '.join(columns)}")
    return {
        "sort": sort,
        "descending": choice(args, "order", ("desc", "asc"), "desc") == "desc",
        "offset": integer(args, "offset", 0, 0, 10**9),
        "limit": integer(args, "limit", 100, 1, max_limit),
        "search": (args.get("search") or "")[:MAX_PARAM_CHARS],
        "op_search": (args.get("op_search") or "")[:MAX_PARAM_CHARS],
    }


def track_ids(args: Mapping[str, str]) -> set[int] | None:
    raw = args.get("tracks")
    if not raw:
        return None
    try:
        return {int(t) for t in raw.split(",")[:10_000]}
    except ValueError:
        raise BadRequest("parameter 'tracks' must be comma-separated integers") from None


def device_index(args: Mapping[str, str]) -> int | None:
    """The ``device`` parameter as an index (``0`` or ``GPU0``), or None when it is absent."""
    raw = args.get("device")
    if raw in (None, ""):
        return None
    try:
        device = int(raw.removeprefix("GPU"))
    except ValueError:
        raise BadRequest("parameter 'device' must be a device index like 0 or GPU0") from None
    if not 0 <= device <= 1024:
        raise BadRequest("parameter 'device' must be between 0 and 1024")
    return device


def op_path(raw: str) -> list[str]:
    """The diff's ``path`` parameter: a JSON list of at most MAX_OP_PATH operator names, each valid
    text (a lone surrogate such as ``"\\ud800"`` names no operator). Anything else is a BadRequest."""
    bad = BadRequest("parameter 'path' must be a JSON list of operator names")
    if len(raw) > MAX_OP_PATH_CHARS:
        raise bad
    try:
        path = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: "[[[[…" nested deeper than the stack
        raise bad from None
    if not isinstance(path, list) or len(path) > MAX_OP_PATH or not all(isinstance(p, str) for p in path):
        raise bad
    for p in path:
        try:
            p.encode("utf-8")
        except UnicodeEncodeError:
            raise BadRequest("parameter 'path' holds a lone surrogate (not text)") from None
    return path


def ready_file(registry: Registry, args: Mapping[str, str]):
    """The loaded file that ``run``/``worker``/``span`` name; raises :class:`NotFound`, or
    :class:`NotReady` with its loading/error state (a queued file is loaded next)."""
    run, worker, span = param(args, "run"), param(args, "worker"), param(args, "span")
    state = registry.find(run, worker, span)
    if state is None:
        raise NotFound(f"no trace for run {run!r}, worker {worker!r}, span {span!r}")
    if state.state in (QUEUED, LOADING):
        registry.want(state)
        raise NotReady({"state": state.state, "progress": round(state.current_progress(), 4)})
    if state.state == ERROR:
        raise NotReady({"state": ERROR, "error": state.error, "path": state.entry.rel})
    return state


def ready_artifact(registry: Registry, args: Mapping[str, str], kind: str):
    """The loaded ``kind`` artifact that ``run``/``path`` name (loaded here on first use); raises
    :class:`NotFound`, or :class:`NotReady` with its loading/error state."""
    run, path = param(args, "run"), param(args, "path")
    art = registry.find_artifact(run, path)
    if art is None or art.entry.kind != kind:
        raise NotFound(f"no {kind.replace('_', ' ')} {path!r} in run {run!r}")
    registry.load_artifact(art, wait=False)  # loads it here, unless another thread is loading it
    if art.state == ERROR:
        raise NotReady({"state": ERROR, "error": art.error, "path": path})
    if art.state != READY:  # another request (or the artifact loader) is reading it: poll
        raise NotReady({"state": LOADING, "path": path})
    return art
