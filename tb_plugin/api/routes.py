"""The routes: parse the parameters (:mod:`.params`), call one function of the registry or of
:mod:`tb_plugin.registry.report`, answer. Each returns ``(http_status, document)``; a
:class:`~tb_plugin.errors.KinetoscopeError` it raises (a bad parameter, a name the registry does not
hold) is answered by :func:`route`, the routes' one error → HTTP mapping. A file that is not ready is
answered with its state (:class:`~.params.Pending`) by :func:`file_route` / :func:`artifact_route`.
``plugin.py`` turns the pair into a response (JSON, or CSV for the ``as_csv`` routes).
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Mapping, cast

from ..analysis.counters import counter_bins
from ..analysis.distributed import no_view_code
from ..analysis.timeline_range import MAX_TOP
from ..errors import InvalidArgumentError, KinetoscopeError, NotFoundError, http_answer
from ..registry import graph_siblings, report
from ..registry import memory_events as pairs_table
from ..registry.graph_siblings import sibling_capture_tables
from ..registry.interface import Registry
from ..registry.states import LOADING, QUEUED, ArtifactState, FileState
from ..registry.views import FileViews
from ..storage.naming import names_oom
from . import paging
from .distributed_pages import MAX_STEP_ROWS, bounded_view
from .params import (
    MAX_PARAM_CHARS,
    MAX_WIDTH_PX,
    Args,
    Pending,
    choice,
    device_index,
    integer,
    number,
    op_path,
    param,
    ready_artifact,
    ready_file,
    table_query,
    time_range,
    track_ids,
)
from .table_columns import (
    KERNEL_COLUMNS,
    KERNEL_GROUPS,
    MEMORY_EVENT_COLUMNS,
    MEMORY_STAT_COLUMNS,
    OPERATOR_COLUMNS,
    OPERATOR_GROUPS,
    kernel_columns,
    operator_columns,
)

Answer = tuple[int, Any]  # (HTTP status, JSON document, or CSV text for the as_csv routes)


def route(handler: Callable[..., Answer]) -> Callable[..., Answer]:
    """``handler``'s ``(status, doc)``, or the status and document of the
    :class:`~tb_plugin.errors.KinetoscopeError` it raised (:func:`~tb_plugin.errors.http_answer`)."""

    @functools.wraps(handler)
    def answer(*args: Any, **kwargs: Any) -> Answer:
        try:
            return handler(*args, **kwargs)
        except KinetoscopeError as exc:
            return http_answer(exc)

    return answer


def file_route(handler: Callable[..., Answer]) -> Callable[..., Answer]:
    """A route of one loaded file: ``handler(registry, args, state, **kwargs)`` once the file that
    ``run``/``worker``/``span`` name is ready; before that, its loading or error state (HTTP 200)."""

    @route
    @functools.wraps(handler)
    def answer(registry: Registry, args: Args, **kwargs: Any) -> Answer:
        state = ready_file(registry, args)
        if isinstance(state, Pending):
            return state.answer()
        return handler(registry, args, state, **kwargs)

    return answer


def artifact_route(kind: str) -> Callable[[Callable[..., Answer]], Callable[..., Answer]]:
    """A route of one loaded ``kind`` artifact (the twin of :func:`file_route`):
    ``handler(registry, args, art)`` once the artifact that ``run``/``path`` name is ready."""

    def decorate(handler: Callable[..., Answer]) -> Callable[..., Answer]:
        @route
        @functools.wraps(handler)
        def answer(registry: Registry, args: Args) -> Answer:
            art = ready_artifact(registry, args, kind)
            if isinstance(art, Pending):
                return art.answer()
            return handler(registry, args, art)

        return answer

    return decorate


def _loading(art: ArtifactState) -> Answer:
    """The answer while a file this artifact's view needs is still loading (the client polls)."""
    return 200, {"state": LOADING, "path": art.entry.rel}


def _file_view(registry: Registry, state: FileState, view: Callable[[FileViews], Mapping[str, Any]]) -> Answer:
    """``view(FileViews)`` of a loaded file, with ``state: ready``."""
    return 200, dict(view(registry.views(state)), state="ready")


def _artifact_view(art: ArtifactState, view: Callable[[Any], dict[str, Any]]) -> Answer:
    """``view(artifact views)`` of a loaded artifact, with its path (the twin of :func:`_file_view`)."""
    return 200, dict(view(art.views), state="ready", path=art.entry.rel)


def runs(registry: Registry) -> Answer:
    return 200, registry.runs_document()


@file_route
def overview(registry: Registry, args: Args, state: FileState) -> Answer:
    overview = report.overview_document(registry, state)
    doc: dict[str, Any] = {**overview} if overview is not None else {}
    doc.update(
        state="ready",
        run=args["run"],
        worker=args["worker"],
        span=args["span"],
        path=state.entry.rel,
        warnings=list(state.warnings),
        notes=list(state.notes),
    )
    return 200, doc


@file_route
def operators(registry: Registry, args: Args, state: FileState, as_csv: bool = False) -> Answer:
    group_by = choice(args, "group_by", OPERATOR_GROUPS, "operator")
    views = registry.views(state)
    default_sort = "device_self_us" if views.has_device else "host_self_us"
    q = dict(table_query(args, OPERATOR_COLUMNS, default_sort, paging.MAX_LIMIT), op_search="")  # no launching op
    rows = cast("list[paging.Row]", views.operators(group_by))  # the pager reads rows by column name
    columns = operator_columns(group_by)
    if as_csv:
        return 200, paging.to_csv(paging.selected(rows, q), columns)
    top = {k: paging.top(rows, k) for k in ("device_self_us", "device_total_us", "host_self_us", "host_total_us")}
    return 200, paging.page(rows, q, group_by=group_by, has_device=views.has_device, default_sort=default_sort, top=top)


@file_route
def operator_stacks(registry: Registry, args: Args, state: FileState) -> Answer:
    group_by = choice(args, "group_by", OPERATOR_GROUPS, "operator")
    key = integer(args, "key", 0, 0, 10**9)
    doc = report.operator_stacks(registry.views(state), group_by, key)
    if doc is None:
        raise NotFoundError(f"no operator row {key}")
    return 200, doc


@file_route
def kernels(registry: Registry, args: Args, state: FileState, as_csv: bool = False) -> Answer:
    group_by = choice(args, "group_by", KERNEL_GROUPS, "kernel")
    q = table_query(args, KERNEL_COLUMNS, "total_us", paging.MAX_LIMIT)
    views = registry.views(state)
    rows = cast("list[paging.Row]", views.kernels(group_by))  # the pager reads rows by column name
    columns = kernel_columns(group_by)
    if as_csv:
        return 200, paging.to_csv(paging.selected(rows, q), columns)
    return 200, paging.page(
        rows, q, group_by=group_by, top=paging.top(rows, "total_us"), tensor_core=views.tensor_core_split()
    )


@file_route
def modules(registry: Registry, args: Args, state: FileState) -> Answer:
    return _file_view(registry, state, lambda views: {"modules": views.modules()})


@file_route
def timeline_meta(registry: Registry, args: Args, state: FileState) -> Answer:
    return _file_view(registry, state, lambda views: views.timeline_meta())


@file_route
def timeline(registry: Registry, args: Args, state: FileState) -> Answer:
    views = registry.views(state)
    t0 = number(args, "start_us", 0.0)
    t1 = number(args, "end_us", views.timeline_meta()["end_us"])
    width = integer(args, "width_px", 2000, 1, MAX_WIDTH_PX)
    tracks = track_ids(args)
    if t1 <= t0:
        raise InvalidArgumentError("'end_us' must be greater than 'start_us'")
    doc = views.timeline_window(t0, t1, width, tracks)
    extra = registry.snapshot_counters(state, views.trace, t0, t1, counter_bins(width))
    return 200, dict(doc, counters=doc["counters"] + extra, state="ready")


@file_route
def timeline_range(registry: Registry, args: Args, state: FileState) -> Answer:
    """Exact statistics of the events in ``[start_us, end_us]`` (analysis/timeline_range.py)."""
    t0, t1 = number(args, "start_us"), number(args, "end_us")
    tracks, top = track_ids(args), integer(args, "top", 10, 0, MAX_TOP)
    return 200, dict(registry.views(state).timeline_range(t0, t1, tracks, top), state="ready")


@file_route
def timeline_search(registry: Registry, args: Args, state: FileState) -> Answer:
    pattern = param(args, "q")
    if len(pattern) > 500:
        raise InvalidArgumentError("search pattern is too long (500 characters at most)")
    regex = choice(args, "regex", ("0", "1"), "0") == "1"
    try:
        return 200, dict(registry.views(state).timeline_search(pattern, regex), state="ready")
    except ValueError as exc:  # a bad or too slow regular expression
        raise InvalidArgumentError(str(exc)) from None


@file_route
def timeline_event(registry: Registry, args: Args, state: FileState) -> Answer:
    row = integer(args, "row", 0, 0, 10**12)
    doc = registry.views(state).event(row)
    if doc is None:
        raise NotFoundError(f"no event {row}")
    return 200, dict(doc, state="ready")


@file_route
def memory(registry: Registry, args: Args, state: FileState) -> Answer:
    """Per device: peaks and the allocated/reserved curves, downsampled to the requested window."""
    views = registry.views(state)
    width = integer(args, "width_px", 2000, 1, MAX_WIDTH_PX)
    lo = number(args, "start_us", 0.0)
    hi = number(args, "end_us") if args.get("end_us") else None
    return 200, dict(report.memory_document(views, lo, hi, width), state="ready")


@file_route
def memory_events(registry: Registry, args: Args, state: FileState, as_csv: bool = False) -> Answer:
    """Allocation/free pairs, filtered by device, time range (lifetime overlaps it), size and op name."""
    lo, hi = time_range(args)
    min_b = integer(args, "min_bytes", 0, 0, 2**62)
    max_b = integer(args, "max_bytes", 2**62, 0, 2**62)
    q = table_query(args, MEMORY_EVENT_COLUMNS, "size_bytes", paging.MAX_LIMIT)
    views = registry.views(state)
    pairs = views.memory_pairs()
    query = pairs_table.PairsQuery(args.get("device"), lo, hi, min_b, max_b, q["search"], q["sort"], q["descending"])
    rows = pairs_table.select(views.memory_pairs_index(), query)
    if as_csv:
        return 200, paging.to_csv(rows, MEMORY_EVENT_COLUMNS)
    return 200, dict(paging.window(rows, q), reason=pairs["reason"])


@file_route
def memory_stats(registry: Registry, args: Args, state: FileState, as_csv: bool = False) -> Answer:
    """Per-operator memory statistics of one device, optionally restricted to a time range."""
    device = param(args, "device")
    lo, hi = time_range(args)
    q = dict(table_query(args, MEMORY_STAT_COLUMNS, "allocation_bytes", paging.MAX_LIMIT), op_search="")
    rows = registry.views(state).memory_stats(device, lo, hi)
    if as_csv:
        return 200, paging.to_csv(paging.selected(rows, q), MEMORY_STAT_COLUMNS)
    return 200, paging.page(rows, q, device=device)


def _snapshot_device(art: ArtifactState, args: Args) -> int:
    """A device with recorded history: the one asked for, or the first."""
    devices = art.views.devices()
    device = device_index(args)
    if device is None:
        if not devices:
            raise InvalidArgumentError("this snapshot has no recorded history (device_traces is empty)")
        return int(devices[0])
    if device not in devices:
        raise InvalidArgumentError(f"no history for device {device}; recorded: {devices}")
    return device


@artifact_route("snapshot")
def snapshot(registry: Registry, args: Args, art: ArtifactState) -> Answer:
    return _artifact_view(art, lambda views: views.summary())


@artifact_route("snapshot")
def snapshot_timeline(registry: Registry, args: Args, art: ArtifactState) -> Answer:
    device = _snapshot_device(art, args)
    width = integer(args, "width_px", 1000, 1, MAX_WIDTH_PX)
    start = number(args, "start", 0.0) if args.get("start") else None
    end = number(args, "end", 0.0) if args.get("end") else None
    return 200, dict(art.views.timeline(device, start, end, width), state="ready", device=f"GPU{device}")


@artifact_route("snapshot")
def snapshot_segments(registry: Registry, args: Args, art: ArtifactState) -> Answer:
    device = device_index(args)
    device = 0 if device is None else device  # segments exist without history: any device index
    return 200, {"state": "ready", "device": f"GPU{device}", "segments": art.views.segments(device)}


@artifact_route("snapshot")
def snapshot_allocations(registry: Registry, args: Args, art: ArtifactState) -> Answer:
    device = _snapshot_device(art, args)
    limit = integer(args, "limit", 100, 1, 10_000)
    return 200, {"state": "ready", "device": f"GPU{device}", "rows": art.views.allocations(device, limit)}


@artifact_route("snapshot")
def snapshot_stack(registry: Registry, args: Args, art: ArtifactState) -> Answer:
    index = integer(args, "stack", 0, 0, 10**9)
    frames = art.views.stack(index)
    if frames is None:
        raise NotFoundError(f"no stack {index}")
    return 200, {"state": "ready", "frames": frames}


@artifact_route("snapshot")
def snapshot_oom(registry: Registry, args: Args, art: ArtifactState) -> Answer:
    """OOM forensics (``analysis/snapshot_oom.py``): the last OOM of ``device`` (default: the device of
    the last OOM), the allocator state per stream, the largest live allocations, the recent growth."""
    device = device_index(args)
    last_n = integer(args, "last_n", 1000, 1, 10_000_000)
    top = integer(args, "top", 20, 1, 1000)
    doc = art.views.oom(device, names_oom(art.entry.name), last_n, top)
    return 200, dict(doc, state="ready", path=art.entry.rel)


@artifact_route("snapshot")
def snapshot_attribution(registry: Registry, args: Args, art: ArtifactState) -> Answer:
    """Bytes alive at the peak of ``device`` by frame, and by operator, step and module when a trace of
    the run matches the snapshot (``analysis/snapshot_attribution.py``). While a trace of the run is
    still loading and none matches yet, the answer is ``loading`` (poll)."""
    device = _snapshot_device(art, args)
    link, trace, loading = registry.snapshot_trace(art, device)
    if link is None and loading:
        return _loading(art)
    key = None if link is None else (link["path"], link["version"])
    doc = art.views.attribution(device, trace, key)
    matched = None if link is None else {k: link[k] for k in ("worker", "span", "path", "overlap_us")}
    return 200, dict(doc, state="ready", path=art.entry.rel, trace=matched)


@artifact_route("snapshot")
def snapshot_ranks(registry: Registry, args: Args, art: ArtifactState) -> Answer:
    """The snapshots of ``path``'s rank group side by side: peak per rank, the outlier rank. While
    another thread still reads one of them the answer is ``loading`` (poll), as for one artifact."""
    doc = registry.snapshot_ranks(art)
    if any(r["state"] in (LOADING, QUEUED) for r in doc["ranks"]):
        return _loading(art)
    return 200, dict(doc, state="ready", path=art.entry.rel)


@artifact_route("memory_html")
def memory_html(registry: Registry, args: Args, art: ArtifactState) -> Answer:
    """An ``export_memory_timeline`` HTML file: the size of its PNG (served by ``memory_html_image``)."""
    return _artifact_view(art, lambda views: views.meta())


@artifact_route("memory_html")
def memory_html_image(registry: Registry, args: Args, art: ArtifactState) -> Answer:
    """``(200, png bytes)`` of a loaded ``memory_html`` artifact; before that (or on an error) a JSON
    document as for every route (``plugin.py`` answers bytes as the image, a document as JSON)."""
    return 200, art.views.image()


@artifact_route("memory_timeline")
def memory_timeline_export(registry: Registry, args: Args, art: ArtifactState) -> Answer:
    return _artifact_view(art, lambda views: views.series())


@artifact_route("memprofiler_stats")
def memprofiler_stats(registry: Registry, args: Args, art: ArtifactState) -> Answer:
    """A MemProfiler ``rank_<r>_memory_stats.yaml``: snapshots with their values, headline metrics."""
    return _artifact_view(art, lambda views: views.stats())


@artifact_route("memprofiler_log")
def memprofiler_log(registry: Registry, args: Args, art: ArtifactState) -> Answer:
    """A MemProfiler ``fsdp_mem_*.log`` report as text (the first MAX_LOG_BYTES bytes)."""
    return _artifact_view(art, lambda views: views.text())


@route
def distributed(registry: Registry, args: Args) -> Answer:
    run = param(args, "run")
    span = str(integer(args, "span", 1, 1, 10**6))
    if not any(st.run == run for st in registry.files()):
        raise NotFoundError(f"no run {run!r} with traces")
    step = args.get("step") or None
    if step is not None and (len(step) > MAX_PARAM_CHARS or "\x00" in step):
        raise InvalidArgumentError("parameter 'step' is malformed")
    rank = integer(args, "rank", -1, -1, 10**9)
    offset = integer(args, "offset", 0, 0, 10**9)
    limit = integer(args, "limit", MAX_STEP_ROWS, 1, MAX_STEP_ROWS)
    # the cached whole view, trimmed to the 2 MB bound: per-step rows and path details paged
    doc = bounded_view(registry.distributed(run, span), step, rank if rank >= 0 else None, offset, limit)
    # the advice that holds on several ranks, said once for the run (as the report's and MCP's)
    advice = registry.span_advice(run, span)
    return 200, dict(doc, reason_code=no_view_code(doc["files"], doc["ranks_loaded"]), recommendations=advice)


@file_route
def critical_path(registry: Registry, args: Args, state: FileState) -> Answer:
    """The critical path's segments on one file's timeline, per step (the Trace view's overlay)."""
    return 200, dict(registry.critical_path_overlay(state), state="ready")


@file_route
def insights(registry: Registry, args: Args, state: FileState) -> Answer:
    return _file_view(registry, state, lambda views: views.insights())


@file_route
def graphs(registry: Registry, args: Args, state: FileState) -> Answer:
    """CUDA graph replays and compiled regions, as the report's ``graphs`` section (a graph without its
    capture here attributed from the run's other traces when one holds it)."""
    found = graph_siblings.graphs_report(registry.views(state), others=lambda: sibling_capture_tables(registry, state))
    return 200, dict(found, state="ready")


@file_route
def graph_replays(registry: Registry, args: Args, state: FileState) -> Answer:
    """CUDA graph replays as bands on the timeline's stream tracks (the Trace view's replay bands), each
    graph's status as the ``graphs`` route has it (a capture in another trace of the run included)."""
    views = registry.views(state)
    doc = views.replay_bands()
    cuda = graph_siblings.graphs_report(views, max_replays=0, others=lambda: sibling_capture_tables(registry, state))[
        "cuda_graphs"
    ]
    status = {g["graph"]: g["status"] for g in cuda["graph_list"]}
    graphs = [dict(g, status=status.get(g["graph"], g["status"])) for g in doc["graphs"]]
    return 200, dict(doc, graphs=graphs, state="ready")


@route
def diff(registry: Registry, args: Args) -> Answer:
    """Baseline vs experiment: steps, operator-tree level at ``path`` (a JSON list), kernels."""
    sides = []
    for side in ("base", "exp"):
        sub = {k[len(side) + 1 :]: v for k, v in args.items() if k.startswith(side + "_")}
        try:
            got = ready_file(registry, sub)
        except KinetoscopeError as exc:
            status, doc = http_answer(exc)
            return status, dict(doc, side=side)
        if isinstance(got, Pending):
            return 200, dict(got.doc, side=side)
        sides.append(got)
    path = op_path(args.get("path") or "[]")
    b, e = (registry.views(s) for s in sides)
    return 200, dict(report.diff_document(sides[0], b, sides[1], e, path), state="ready")


__all__ = [
    "MAX_PARAM_CHARS",
    "InvalidArgumentError",
    "critical_path",
    "diff",
    "distributed",
    "graph_replays",
    "graphs",
    "insights",
    "kernels",
    "memory",
    "memory_events",
    "memory_html",
    "memory_html_image",
    "memory_stats",
    "memory_timeline_export",
    "memprofiler_log",
    "memprofiler_stats",
    "modules",
    "operator_stacks",
    "operators",
    "overview",
    "runs",
    "snapshot",
    "snapshot_allocations",
    "snapshot_attribution",
    "snapshot_oom",
    "snapshot_ranks",
    "snapshot_segments",
    "snapshot_stack",
    "snapshot_timeline",
    "timeline",
    "timeline_event",
    "timeline_meta",
    "timeline_range",
    "timeline_search",
]
