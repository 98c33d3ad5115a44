"""Request → query → analysis → JSON. Validates every parameter; computes nothing itself.

Each function returns ``(http_status, json_document)``; ``plugin.py`` turns that into a response.
Route parameters only ever select entries of the in-memory registry: no parameter is joined into a
filesystem path, so none can reach outside the logdir.
"""

from __future__ import annotations

from typing import Any, Mapping

from . import query
from .analysis.call_stacks import parse_frame
from .runs import ERROR, LOADING, QUEUED, READY, RunRegistry

MAX_PARAM_CHARS = 4096
MAX_STACKS = 200  # distinct call stacks sent per operator row
MAX_FRAMES = 500  # frames sent per call stack


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


def _ready_file(registry: RunRegistry, args: Mapping[str, str]):
    """``(state, None)`` for a loaded file, or ``(None, (status, doc))`` to answer right away."""
    try:
        run, worker, span = _param(args, "run"), _param(args, "worker"), _param(args, "span")
    except BadRequest as exc:
        return None, (400, {"error": str(exc)})
    state = registry.find(run, worker, span)
    if state is None:
        return None, (404, {"error": f"no trace for run {run!r}, worker {worker!r}, span {span!r}"})
    if state.state in (QUEUED, LOADING):
        registry.want(state)
        return None, (200, {"state": state.state, "progress": round(state.progress, 4)})
    if state.state == ERROR:
        return None, (200, {"state": ERROR, "error": state.error, "path": state.entry.rel})
    return state, None


def _choice(args: Mapping[str, str], key: str, choices: tuple, default: str) -> str:
    value = args.get(key) or default
    if value not in choices:
        raise BadRequest(f"parameter '{key}' must be one of {', '.join(choices)}")
    return value


def _int(args: Mapping[str, str], key: str, default: int, lo: int, hi: int) -> int:
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


def overview(registry: RunRegistry, args: Mapping[str, str]) -> tuple[int, dict[str, Any]]:
    state, answer = _ready_file(registry, args)
    if answer:
        return answer
    run, worker, span = args["run"], args["worker"], args["span"]
    doc = dict(state.overview or {})
    doc["configuration"] = dict(doc.get("configuration", {}), workers_in_run=registry.workers_in_run(run))
    doc.update(state="ready", run=run, worker=worker, span=span, path=state.entry.rel, warnings=list(state.warnings),
               notes=list(state.notes))
    return 200, doc


OPERATOR_GROUPS = ("operator", "input_shape", "call_stack")
KERNEL_GROUPS = ("kernel", "kernel_op_config")
OPERATOR_COLUMNS = ["name", "input_shape", "call_stack", "calls", "host_self_us", "host_total_us", "device_self_us",
                    "device_total_us", "tc_eligible", "tc_self_pct", "tc_total_pct", "flops", "tflops_per_s"]
KERNEL_COLUMNS = ["name", "op", "grid", "block", "registers_per_thread", "shared_memory_bytes", "tc_eligible", "calls",
                  "total_us", "mean_us", "min_us", "max_us", "blocks_per_sm", "achieved_occupancy_pct", "tensor_cores"]


def _table_query(args: Mapping[str, str], columns: list[str], default_sort: str) -> dict[str, Any]:
    sort = args.get("sort") or default_sort
    if sort not in columns:
        raise BadRequest(f"parameter 'sort' must be a column: {', '.join(columns)}")
    return {
        "sort": sort,
        "descending": _choice(args, "order", ("desc", "asc"), "desc") == "desc",
        "offset": _int(args, "offset", 0, 0, 10**9),
        "limit": _int(args, "limit", 100, 1, query.MAX_LIMIT),
        "search": (args.get("search") or "")[:MAX_PARAM_CHARS],
        "op_search": (args.get("op_search") or "")[:MAX_PARAM_CHARS],
    }


def operators(registry: RunRegistry, args: Mapping[str, str], as_csv: bool = False):
    state, answer = _ready_file(registry, args)
    if answer:
        return answer
    try:
        group_by = _choice(args, "group_by", OPERATOR_GROUPS, "operator")
        tables = registry.tables(state)
        has_device = tables.has_device
        default_sort = "device_self_us" if has_device else "host_self_us"
        q = _table_query(args, OPERATOR_COLUMNS, default_sort)
        q["op_search"] = ""  # operator rows have no launching op
    except BadRequest as exc:
        return 400, {"error": str(exc)}
    all_rows = tables.operators(group_by)
    columns = [c for c in OPERATOR_COLUMNS if not (c == "input_shape" and group_by != "input_shape")
               and not (c == "call_stack" and group_by != "call_stack")]
    if as_csv:
        return 200, query.to_csv(_selected(all_rows, q), columns)
    top = {k: query.top(all_rows, k) for k in ("device_self_us", "device_total_us", "host_self_us", "host_total_us")}
    return 200, _page(all_rows, q, group_by=group_by, has_device=has_device, default_sort=default_sort, top=top)


def _selected(rows: list[dict], q: dict[str, Any]) -> list[dict]:
    """The rows a query shows, filtered and sorted, before paging."""
    return query.sort_rows(query.filter_rows(rows, q["search"], q["op_search"]), q["sort"], q["descending"])


def _page(all_rows: list[dict], q: dict[str, Any], **extra) -> dict[str, Any]:
    rows = _selected(all_rows, q)
    return {"state": "ready", "sort": q["sort"], "order": "desc" if q["descending"] else "asc",
            "total_rows": len(rows), "offset": q["offset"], "rows": rows[q["offset"]: q["offset"] + q["limit"]],
            **extra}


def operator_stacks(registry: RunRegistry, args: Mapping[str, str]):
    state, answer = _ready_file(registry, args)
    if answer:
        return answer
    try:
        group_by = _choice(args, "group_by", OPERATOR_GROUPS, "operator")
        key = _int(args, "key", 0, 0, 10**9)
    except BadRequest as exc:
        return 400, {"error": str(exc)}
    stacks = registry.tables(state).stacks(group_by, key)
    if stacks is None:
        return 404, {"error": f"no operator row {key}"}
    total = len(stacks)
    stacks = stacks[:MAX_STACKS]  # most device time first; the rest is counted, not sent
    for s in stacks:
        s["frames"] = [parse_frame(f) for f in s.pop("text").split("\n")[:MAX_FRAMES]] if s.get("text") else []
    return 200, {"stacks": stacks, "total_stacks": total}


def kernels(registry: RunRegistry, args: Mapping[str, str], as_csv: bool = False):
    state, answer = _ready_file(registry, args)
    if answer:
        return answer
    try:
        group_by = _choice(args, "group_by", KERNEL_GROUPS, "kernel")
        q = _table_query(args, KERNEL_COLUMNS, "total_us")
    except BadRequest as exc:
        return 400, {"error": str(exc)}
    tables = registry.tables(state)
    all_rows = tables.kernels(group_by)
    columns = KERNEL_COLUMNS if group_by == "kernel_op_config" else [
        c for c in KERNEL_COLUMNS if c not in ("op", "grid", "block", "registers_per_thread", "shared_memory_bytes",
                                               "tc_eligible")]
    if as_csv:
        return 200, query.to_csv(_selected(all_rows, q), columns)
    return 200, _page(all_rows, q, group_by=group_by, top=query.top(all_rows, "total_us"),
                      tensor_core=tables.tensor_core_split())


def modules(registry: RunRegistry, args: Mapping[str, str]):
    return _file_view(registry, args, lambda views: {"modules": views.modules()})


MAX_WIDTH_PX = 10_000


def _float(args: Mapping[str, str], key: str, default: float | None = None) -> float:
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


def _file_view(registry: RunRegistry, args: Mapping[str, str], view):
    """Answer with ``view(FileViews)`` of a loaded file, or with its loading/error state."""
    state, answer = _ready_file(registry, args)
    if answer:
        return answer
    return 200, dict(view(registry.tables(state)), state="ready")


def timeline_meta(registry: RunRegistry, args: Mapping[str, str]):
    return _file_view(registry, args, lambda views: views.timeline_meta())


def timeline(registry: RunRegistry, args: Mapping[str, str]):
    state, answer = _ready_file(registry, args)
    if answer:
        return answer
    views = registry.tables(state)
    meta = views.timeline_meta()
    try:
        t0 = _float(args, "start_us", 0.0)
        t1 = _float(args, "end_us", meta["end_us"])
        width = _int(args, "width_px", 2000, 1, MAX_WIDTH_PX)
        track_ids = _track_ids(args)
        if t1 <= t0:
            raise BadRequest("'end_us' must be greater than 'start_us'")
    except BadRequest as exc:
        return 400, {"error": str(exc)}
    return 200, dict(views.timeline_window(t0, t1, width, track_ids), state="ready")


def _track_ids(args: Mapping[str, str]) -> set[int] | None:
    """The ``tracks`` parameter: comma-separated track ids (the first 10 000), or None for every track."""
    raw = args.get("tracks")
    if not raw:
        return None
    try:
        return {int(t) for t in raw.split(",")[:10_000]}
    except ValueError:
        raise BadRequest("parameter 'tracks' must be comma-separated integers") from None


def timeline_range(registry: RunRegistry, args: Mapping[str, str]):
    """Exact statistics of the events in ``[start_us, end_us]`` (analysis/timeline_range.py)."""
    from .analysis.timeline_range import MAX_TOP

    state, answer = _ready_file(registry, args)
    if answer:
        return answer
    try:
        t0, t1 = _float(args, "start_us"), _float(args, "end_us")
        track_ids, top = _track_ids(args), _int(args, "top", 10, 0, MAX_TOP)
    except BadRequest as exc:
        return 400, {"error": str(exc)}
    return 200, dict(registry.tables(state).timeline_range(t0, t1, track_ids, top), state="ready")


def timeline_search(registry: RunRegistry, args: Mapping[str, str]):
    state, answer = _ready_file(registry, args)
    if answer:
        return answer
    try:
        pattern = _param(args, "q")
        if len(pattern) > 500:
            raise BadRequest("search pattern is too long (500 characters at most)")
        regex = _choice(args, "regex", ("0", "1"), "0") == "1"
        return 200, dict(registry.tables(state).timeline_search(pattern, regex), state="ready")
    except (BadRequest, ValueError) as exc:
        return 400, {"error": str(exc)}


def timeline_event(registry: RunRegistry, args: Mapping[str, str]):
    state, answer = _ready_file(registry, args)
    if answer:
        return answer
    try:
        row = _int(args, "row", 0, 0, 10**12)
    except BadRequest as exc:
        return 400, {"error": str(exc)}
    doc = registry.tables(state).event(row)
    if doc is None:
        return 404, {"error": f"no event {row}"}
    return 200, dict(doc, state="ready")


MEMORY_EVENT_COLUMNS = ["op", "device", "size_bytes", "alloc_us", "free_us", "duration_us", "addr"]
MEMORY_STAT_COLUMNS = ["name", "calls", "size_increase_bytes", "self_size_increase_bytes", "allocations",
                       "self_allocations", "allocation_bytes", "self_allocation_bytes", "self_not_freed_bytes"]


def memory(registry: RunRegistry, args: Mapping[str, str]):
    """Per device: peaks and the allocated/reserved curves, downsampled to the requested window."""
    state, answer = _ready_file(registry, args)
    if answer:
        return answer
    views = registry.tables(state)
    devices = views.memory_curves()
    try:
        width = _int(args, "width_px", 2000, 1, MAX_WIDTH_PX)
        lo = _float(args, "start_us", 0.0)
        hi = _float(args, "end_us", max((float(d["ts_us"].max()) for d in devices if len(d["ts_us"])), default=0.0))
    except BadRequest as exc:
        return 400, {"error": str(exc)}
    from .analysis.memory import memory_window

    out = [memory_window(d, lo, hi, width) for d in devices]
    return 200, {"state": "ready", "devices": out, "pairs_reason": views.memory_pairs()["reason"]}


def _range(args: Mapping[str, str]) -> tuple[float | None, float | None]:
    lo = _float(args, "start_us", float("-inf")) if args.get("start_us") else None
    hi = _float(args, "end_us", float("inf")) if args.get("end_us") else None
    return lo, hi


def memory_events(registry: RunRegistry, args: Mapping[str, str], as_csv: bool = False):
    """Allocation/free pairs, filtered by device, time range (lifetime overlaps it), size and op name."""
    state, answer = _ready_file(registry, args)
    if answer:
        return answer
    try:
        lo, hi = _range(args)
        min_b = _int(args, "min_bytes", 0, 0, 2**62)
        max_b = _int(args, "max_bytes", 2**62, 0, 2**62)
        q = _table_query(args, MEMORY_EVENT_COLUMNS, "size_bytes")
    except BadRequest as exc:
        return 400, {"error": str(exc)}
    pairs = registry.tables(state).memory_pairs()
    device = args.get("device")
    needle = q["search"].lower()
    rows = []
    for r in pairs["rows"]:
        if device and r["device"] != device:
            continue
        if not min_b <= r["size_bytes"] <= max_b:
            continue
        start = r["alloc_us"] if r["alloc_us"] is not None else float("-inf")
        end = r["free_us"] if r["free_us"] is not None else float("inf")
        if (lo is not None and end < lo) or (hi is not None and start > hi):
            continue
        if needle and needle not in (r["op"] or "").lower():
            continue
        rows.append(dict(r, name=r["op"] or ""))
    rows = query.sort_rows(rows, q["sort"], q["descending"])
    if as_csv:
        return 200, query.to_csv(rows, MEMORY_EVENT_COLUMNS)
    return 200, {"state": "ready", "reason": pairs["reason"], "sort": q["sort"],
                 "order": "desc" if q["descending"] else "asc", "total_rows": len(rows), "offset": q["offset"],
                 "rows": rows[q["offset"]: q["offset"] + q["limit"]]}


def memory_stats(registry: RunRegistry, args: Mapping[str, str], as_csv: bool = False):
    """Per-operator memory statistics of one device, optionally restricted to a time range."""
    state, answer = _ready_file(registry, args)
    if answer:
        return answer
    try:
        device = _param(args, "device")
        lo, hi = _range(args)
        q = _table_query(args, MEMORY_STAT_COLUMNS, "allocation_bytes")
        q["op_search"] = ""
    except BadRequest as exc:
        return 400, {"error": str(exc)}
    rows = registry.tables(state).memory_stats(device, lo, hi)
    if as_csv:
        return 200, query.to_csv(_selected(rows, q), MEMORY_STAT_COLUMNS)
    return 200, _page(rows, q, device=device)


def _artifact(registry: RunRegistry, args: Mapping[str, str], kind: str):
    """``(artifact, None)`` when loaded, else ``(None, (status, doc))``. Loads on first use."""
    try:
        run, path = _param(args, "run"), _param(args, "path")
    except BadRequest as exc:
        return None, (400, {"error": str(exc)})
    art = registry.find_artifact(run, path)
    if art is None or art.entry.kind != kind:
        return None, (404, {"error": f"no {kind.replace('_', ' ')} {path!r} in run {run!r}"})
    registry.load_artifact(art, wait=False)  # loads it here, unless another thread is loading it
    if art.state == ERROR:
        return None, (200, {"state": ERROR, "error": art.error, "path": path})
    if art.state != READY:  # another request (or the artifact loader) is reading it: poll
        return None, (200, {"state": LOADING, "path": path})
    return art, None


def _artifact_view(registry: RunRegistry, args: Mapping[str, str], kind: str, view):
    """Answer with ``view(artifact views)`` of a loaded ``kind`` artifact and its path, or with its
    error state (the artifact twin of :func:`_file_view`)."""
    art, answer = _artifact(registry, args, kind)
    if answer:
        return answer
    return 200, dict(view(art.views), state="ready", path=art.entry.rel)


def _device_index(args: Mapping[str, str]) -> int | None:
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


def _snapshot_device(art, args) -> int:
    """A device with recorded history: the one asked for, or the first."""
    devices = art.views.devices()
    device = _device_index(args)
    if device is None:
        if not devices:
            raise BadRequest("this snapshot has no recorded history (device_traces is empty)")
        return devices[0]
    if device not in devices:
        raise BadRequest(f"no history for device {device}; recorded: {devices}")
    return device


def snapshot(registry: RunRegistry, args: Mapping[str, str]):
    return _artifact_view(registry, args, "snapshot", lambda views: views.summary())


def snapshot_timeline(registry: RunRegistry, args: Mapping[str, str]):
    art, answer = _artifact(registry, args, "snapshot")
    if answer:
        return answer
    try:
        device = _snapshot_device(art, args)
        width = _int(args, "width_px", 1000, 1, MAX_WIDTH_PX)
        start = _float(args, "start", 0.0) if args.get("start") else None
        end = _float(args, "end", 0.0) if args.get("end") else None
    except BadRequest as exc:
        return 400, {"error": str(exc)}
    return 200, dict(art.views.timeline(device, start, end, width), state="ready", device=f"GPU{device}")


def snapshot_segments(registry: RunRegistry, args: Mapping[str, str]):
    art, answer = _artifact(registry, args, "snapshot")
    if answer:
        return answer
    try:
        device = _device_index(args)
    except BadRequest as exc:
        return 400, {"error": str(exc)}
    device = 0 if device is None else device  # segments exist without history: any device index
    return 200, {"state": "ready", "device": f"GPU{device}", "segments": art.views.segments(device)}


def snapshot_allocations(registry: RunRegistry, args: Mapping[str, str]):
    art, answer = _artifact(registry, args, "snapshot")
    if answer:
        return answer
    try:
        device = _snapshot_device(art, args)
        limit = _int(args, "limit", 100, 1, 10_000)
    except BadRequest as exc:
        return 400, {"error": str(exc)}
    return 200, {"state": "ready", "device": f"GPU{device}", "rows": art.views.allocations(device, limit)}


def snapshot_stack(registry: RunRegistry, args: Mapping[str, str]):
    art, answer = _artifact(registry, args, "snapshot")
    if answer:
        return answer
    try:
        index = _int(args, "stack", 0, 0, 10**9)
    except BadRequest as exc:
        return 400, {"error": str(exc)}
    frames = art.views.stack(index)
    if frames is None:
        return 404, {"error": f"no stack {index}"}
    return 200, {"state": "ready", "frames": frames}


def memory_timeline_export(registry: RunRegistry, args: Mapping[str, str]):
    return _artifact_view(registry, args, "memory_timeline", lambda views: views.series())


def memprofiler_stats(registry: RunRegistry, args: Mapping[str, str]):
    """A MemProfiler ``rank_<r>_memory_stats.yaml``: snapshots with their values, headline metrics."""
    return _artifact_view(registry, args, "memprofiler_stats", lambda views: views.stats())


def memprofiler_log(registry: RunRegistry, args: Mapping[str, str]):
    """A MemProfiler ``fsdp_mem_*.log`` report as text (the first MAX_LOG_BYTES bytes)."""
    return _artifact_view(registry, args, "memprofiler_log", lambda views: views.text())


def distributed(registry: RunRegistry, args: Mapping[str, str]):
    from .analysis.distributed import no_view_code

    try:
        run = _param(args, "run")
        span = str(_int(args, "span", 1, 1, 10**6))
    except BadRequest as exc:
        return 400, {"error": str(exc)}
    if not any(st.run == run for st in registry.files()):
        return 404, {"error": f"no run {run!r} with traces"}
    doc = registry.distributed(run, span)
    return 200, dict(doc, reason_code=no_view_code(doc["files"], doc["ranks_loaded"]))


def insights(registry: RunRegistry, args: Mapping[str, str]):
    return _file_view(registry, args, lambda views: views.insights())


MAX_OP_PATH = 256  # operator names in the diff's ``path``
MAX_OP_PATH_CHARS = 1 << 20  # characters of the diff's ``path`` parameter


def _op_path(raw: str) -> list[str]:
    """The diff's ``path`` parameter: a JSON list of at most MAX_OP_PATH operator names, each valid
    text (a lone surrogate such as ``"\\ud800"`` names no operator). Anything else is a BadRequest."""
    import json

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


def diff(registry: RunRegistry, args: Mapping[str, str]):
    """Baseline vs experiment: steps, operator-tree level at ``path`` (a JSON list), kernels."""
    from .analysis.diff import kernel_diff, op_diff, step_diff, thresholds

    sides = []
    for side in ("base", "exp"):
        sub = {k[len(side) + 1:]: v for k, v in args.items() if k.startswith(side + "_")}
        state, answer = _ready_file(registry, sub)
        if answer:
            status, doc = answer
            return status, dict(doc, side=side) if isinstance(doc, dict) else doc
        sides.append(state)
    try:
        path = _op_path(args.get("path") or "[]")
    except BadRequest as exc:
        return 400, {"error": str(exc)}
    b, e = (registry.tables(s) for s in sides)
    return 200, {"state": "ready", "steps": step_diff(sides[0].overview, sides[1].overview),
                 "path": path, "operators": op_diff(b.trace, e.trace, tuple(path)),
                 "kernels": kernel_diff(b.trace, e.trace)[:500], "thresholds": thresholds()}
