"""Parameter parsing for the routes. A bad parameter raises an
:class:`~tb_plugin.errors.InvalidArgumentError`, a name the registry does not hold a
:class:`~tb_plugin.errors.NotFoundError`; :func:`~tb_plugin.api.routes.route` answers them
(:func:`tb_plugin.errors.http_answer`). A file or artifact that is still loading, or failed, is not an
error: :func:`ready_file` and :func:`ready_artifact` return a :class:`Pending` answer with its state.

Route parameters only ever select entries of the in-memory registry: no parameter is joined into a
filesystem path, so none can reach outside the logdir.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, NamedTuple

from ..errors import InvalidArgumentError, NotFoundError
from ..registry.interface import Registry
from ..registry.states import ERROR, LOADING, QUEUED, READY, ArtifactState, FileState

MAX_PARAM_CHARS = 4096
MAX_WIDTH_PX = 10_000
MAX_OP_PATH = 256  # operator names in the diff's ``path``
MAX_OP_PATH_CHARS = 1 << 20  # characters of the diff's ``path`` parameter

Args = Mapping[str, str]


class Pending(NamedTuple):
    """The answer about a file or artifact that is not ready: its ``state`` document (``loading``
    with the progress, or ``error`` with the reason), HTTP 200; the client polls."""

    doc: dict[str, Any]

    def answer(self) -> tuple[int, dict[str, Any]]:
        return 200, self.doc


def param(args: Mapping[str, str], key: str) -> str:
    value = args.get(key)
    if value is None or value == "":
        raise InvalidArgumentError(f"missing parameter '{key}'")
    if len(value) > MAX_PARAM_CHARS or "\x00" in value:
        raise InvalidArgumentError(f"parameter '{key}' is malformed")
    return value


def choice(args: Mapping[str, str], key: str, choices: tuple[str, ...], default: str) -> str:
    value = args.get(key) or default
    if value not in choices:
        raise InvalidArgumentError(f"parameter '{key}' must be one of {', '.join(choices)}")
    return value


def integer(args: Mapping[str, str], key: str, default: int, lo: int, hi: int) -> int:
    raw = args.get(key)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidArgumentError(f"parameter '{key}' must be an integer") from None
    if not lo <= value <= hi:
        raise InvalidArgumentError(f"parameter '{key}' must be between {lo} and {hi}")
    return value


def number(args: Mapping[str, str], key: str, default: float | None = None) -> float:
    raw = args.get(key)
    if raw in (None, ""):
        if default is None:
            raise InvalidArgumentError(f"missing parameter '{key}'")
        return default
    try:
        value = float(raw)
    except ValueError:
        raise InvalidArgumentError(f"parameter '{key}' must be a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise InvalidArgumentError(f"parameter '{key}' must be finite")
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
        raise InvalidArgumentError(f"parameter 'sort' must be a column: {', '.join(columns)}")
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
        raise InvalidArgumentError("parameter 'tracks' must be comma-separated integers") from None


def device_index(args: Mapping[str, str]) -> int | None:
    """The ``device`` parameter as an index (``0`` or ``GPU0``), or None when it is absent."""
    raw = args.get("device")
    if raw in (None, ""):
        return None
    try:
        device = int(raw.removeprefix("GPU"))
    except ValueError:
        raise InvalidArgumentError("parameter 'device' must be a device index like 0 or GPU0") from None
    if not 0 <= device <= 1024:
        raise InvalidArgumentError("parameter 'device' must be between 0 and 1024")
    return device


def op_path(raw: str) -> list[str]:
    """The diff's ``path`` parameter: a JSON list of at most MAX_OP_PATH operator names, each valid
    text (a lone surrogate such as ``"\\ud800"`` names no operator). Anything else is an InvalidArgumentError."""
    bad = InvalidArgumentError("parameter 'path' must be a JSON list of operator names")
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
            raise InvalidArgumentError("parameter 'path' holds a lone surrogate (not text)") from None
    return path


def ready_file(registry: Registry, args: Args) -> FileState | Pending:
    """The loaded file that ``run``/``worker``/``span`` name, or the :class:`Pending` answer of its
    loading/error state (a queued file is loaded next); raises :class:`NotFoundError`."""
    run, worker, span = param(args, "run"), param(args, "worker"), param(args, "span")
    state = registry.find(run, worker, span)
    if state is None:
        raise NotFoundError(f"no trace for run {run!r}, worker {worker!r}, span {span!r}")
    if state.state in (QUEUED, LOADING):
        registry.want(state)
        return Pending({"state": state.state, "progress": round(state.current_progress(), 4)})
    if state.state == ERROR:
        return Pending({"state": ERROR, "error": state.error, "path": state.entry.rel})
    return state


def ready_artifact(registry: Registry, args: Args, kind: str) -> ArtifactState | Pending:
    """The loaded ``kind`` artifact that ``run``/``path`` name (loaded here on first use), or the
    :class:`Pending` answer of its loading/error state; raises :class:`NotFoundError`."""
    run, path = param(args, "run"), param(args, "path")
    art = registry.find_artifact(run, path)
    if art is None or art.entry.kind != kind:
        raise NotFoundError(f"no {kind.replace('_', ' ')} {path!r} in run {run!r}")
    registry.load_artifact(art, wait=False)  # loads it here, unless another thread is loading it
    if art.state == ERROR:
        return Pending({"state": ERROR, "error": art.error, "path": path})
    if art.state != READY:  # another request (or the artifact loader) is reading it: poll
        return Pending({"state": LOADING, "path": path})
    return art
