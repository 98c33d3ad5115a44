"""The routes: parse the parameters (:mod:`.params`), call one function of the registry or of
:mod:`tb_plugin.registry.report`, answer. Each returns ``(http_status, document)``; a parameter
error or a file that is not ready is raised as an :class:`~.params.ApiError` and answered by
:func:`route`. ``plugin.py`` turns the pair into a response (JSON, or CSV for the ``as_csv`` routes).
"""

from __future__ import annotations

import functools
from typing import Any, Mapping

from ..analysis.counters import counter_bins
from ..analysis.distributed import no_view_code
from ..analysis.timeline_range import MAX_TOP
from ..registry import graph_siblings, report
from ..registry import memory_events as pairs_table
from ..registry.graph_siblings import sibling_capture_tables
from ..registry.interface import Registry
from ..registry.states import LOADING, QUEUED
from ..storage.naming import names_oom
from . import paging
from .kernel_columns import KERNEL_COLUMNS, KERNEL_GROUPS, kernel_columns
from .params import (
    MAX_PARAM_CHARS,
    MAX_WIDTH_PX,
    ApiError,
    BadRequest,
    NotFound,
    NotReady,
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

Args = Mapping[str, str]

OPERATOR_GROUPS = ("operator", "input_shape", "call_stack")
OPERATOR_COLUMNS = [
    "name",
    "input_shape",
    "call_stack",
    "calls",
    "host_self_us",
    "host_total_us",
    "device_self_us",
    "device_total_us",
    "graph_replay_self_us",
    "tc_eligible",
    "tc_self_pct",
    "tc_total_pct",
    "flops",
    "tflops_per_s",
]
MEMORY_EVENT_COLUMNS = ["op", "device", "size_bytes", "alloc_us", "free_us", "duration_us", "addr"]
MEMORY_STAT_COLUMNS = [
    "name",
    "calls",
    "size_increase_bytes",
    "self_size_increase_bytes",
    "allocations",
    "self_allocations",
    "allocation_bytes",
    "self_allocation_bytes",
    "self_not_freed_bytes",
]


def route(handler):
    """``handler``'s ``(status, doc)``, or the status and document of the :class:`ApiError` it raised."""

    @functools.wraps(handler)
    def answer(*args, **kwargs):
        try:
            return handler(*args, **kwargs)
        except ApiError as exc:
            return exc.status, exc.doc

    return answer


def _file_view(registry: Registry, args: Args, view) -> tuple[int, dict[str, Any]]:
    """``view(FileViews)`` of a loaded file, with ``state: ready``."""
    state = ready_file(registry, args)
    return 200, dict(view(registry.views(state)), state="ready")


def _artifact_view(registry: Registry, args: Args, kind: str, view) -> tuple[int, dict[str, Any]]:
    """``view(artifact views)`` of a loaded ``kind`` artifact, with its path (the twin of :func:`_file_view`)."""
    art = ready_artifact(registry, args, kind)
    return 200, dict(view(art.views), state="ready", path=art.entry.rel)


def runs(registry: Registry) -> tuple[int, dict[str, Any]]:
    return 200, registry.runs_document()


@route
def overview(registry: Registry, args: Args):
    state = ready_file(registry, args)
    doc = report.overview_document(registry, state) or {}
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


@route
def operators(registry: Registry, args: Args, as_csv: bool = False):
    state = ready_file(registry, args)
    group_by = choice(args, "group_by", OPERATOR_GROUPS, "operator")
    views = registry.views(state)
    default_sort = "device_self_us" if views.has_device else "host_self_us"
    q = dict(table_query(args, OPERATOR_COLUMNS, default_sort, paging.MAX_LIMIT), op_search="")  # no launching op
    rows = views.operators(group_by)
    columns = [
        c
        for c in OPERATOR_COLUMNS
        if not (c == "input_shape" and group_by != "input_shape")
        and not (c == "call_stack" and group_by != "call_stack")
    ]
    if as_csv:
        return 200, paging.to_csv(paging.selected(rows, q), columns)
    top = {k: paging.top(rows, k) for k in ("device_self_us", "device_total_us", "host_self_us", "host_total_us")}
    return 200, paging.page(rows, q, group_by=group_by, has_device=views.has_device, default_sort=default_sort, top=top)


@route
def operator_stacks(registry: Registry, args: Args):
    state = ready_file(registry, args)
    group_by = choice(args, "group_by", OPERATOR_GROUPS, "operator")
    key = integer(args, "key", 0, 0, 10**9)
    doc = report.operator_stacks(registry.views(state), group_by, key)
    if doc is None:
        raise NotFound(f"no operator row {key}")
    return 200, doc


@route
def kernels(registry: Registry, args: Args, as_csv: bool = False):
    state = ready_file(registry, args)
    group_by = choice(args, "group_by", KERNEL_GROUPS, "kernel")
    q = table_query(args, KERNEL_COLUMNS, "total_us", paging.MAX_LIMIT)
    views = registry.views(state)
    rows = views.kernels(group_by)
    columns = kernel_columns(group_by)
    if as_csv:
        return 200, paging.to_csv(paging.selected(rows, q), columns)
    return 200, paging.page(
        rows, q, group_by=group_by, top=paging.top(rows, "total_us"), tensor_core=views.tensor_core_split()
    )


@route
def modules(registry: Registry, args: Args):
    return _file_view(registry, args, lambda views: {"modules": views.modules()})


@route
def timeline_meta(registry: Registry, args: Args):
    return _file_view(registry, args, lambda views: views.timeline_meta())


@route
def timeline(registry: Registry, args: Args):
    state = ready_file(registry, args)
    views = registry.views(state)
    t0 = number(args, "start_us", 0.0)
    t1 = number(args, "end_us", views.timeline_meta()["end_us"])
    width = integer(args, "width_px", 2000, 1, MAX_WIDTH_PX)
    tracks = track_ids(args)
    if t1 <= t0:
        raise BadRequest("'end_us' must be greater than 'start_us'")
    doc = views.timeline_window(t0, t1, width, tracks)
    extra = registry.snapshot_counters(state, views.trace, t0, t1, counter_bins(width))
    return 200, dict(doc, counters=doc["counters"] + extra, state="ready")


@route
def timeline_range(registry: Registry, args: Args):
    """Exact statistics of the events in ``[start_us, end_us]`` (analysis/timeline_range.py)."""
    state = ready_file(registry, args)
    t0, t1 = number(args, "start_us"), number(args, "end_us")
    tracks, top = track_ids(args), integer(args, "top", 10, 0, MAX_TOP)
    return 200, dict(registry.views(state).timeline_range(t0, t1, tracks, top), state="ready")


@route
def timeline_search(registry: Registry, args: Args):
    state = ready_file(registry, args)
    pattern = param(args, "q")
    if len(pattern) > 500:
        raise BadRequest("search pattern is too long (500 characters at most)")
    regex = choice(args, "regex", ("0", "1"), "0") == "1"
    try:
        return 200, dict(registry.views(state).timeline_search(pattern, regex), state="ready")
    except ValueError as exc:  # a bad or too slow regular expression
        raise BadRequest(str(exc)) from None


@route
def timeline_event(registry: Registry, args: Args):
    state = ready_file(registry, args)
    row = integer(args, "row", 0, 0, 10**12)
    doc = registry.views(state).event(row)
    if doc is None:
        raise NotFound(f"no event {row}")
    return 200, dict(doc, state="ready")


@route
def memory(registry: Registry, args: Args):
    """Per device: peaks and the allocated/reserved curves, downsampled to the requested window."""
    state = ready_file(registry, args)
    views = registry.views(state)
    width = integer(args, "width_px", 2000, 1, MAX_WIDTH_PX)
    lo = number(args, "start_us", 0.0)
    hi = number(args, "end_us") if args.get("end_us") else None
    return 200, dict(report.memory_document(views, lo, hi, width), state="ready")


@route
def memory_events(registry: Registry, args: Args, as_csv: bool = False):
    """Allocation/free pairs, filtered by device, time range (lifetime overlaps it), size and op name."""
    state = ready_file(registry, args)
    lo, hi = time_range(args)
    min_b = integer(args, "min_bytes", 0, 0, 2**62)
    max_b = integer(args, "max_bytes", 2**62, 0, 2**62)
    q = table_query(args, MEMORY_EVENT_COLUMNS, "size_bytes", paging.MAX_LIMIT)
    views = registry.views(state)
    pairs = views.memory_pairs()
    rows = pairs_table.select(
        views.memory_pairs_index(), args.get("device"), lo, hi, min_b, max_b, q["search"], q["sort"], q["descending"]
    )
    if as_csv:
        return 200, paging.to_csv(rows, MEMORY_EVENT_COLUMNS)
    return 200, dict(paging.window(rows, q), reason=pairs["reason"])


@route
def memory_stats(registry: Registry, args: Args, as_csv: bool = False):
    """Per-operator memory statistics of one device, optionally restricted to a time range."""
    state = ready_file(registry, args)
    device = param(args, "device")
    lo, hi = time_range(args)
    q = dict(table_query(args, MEMORY_STAT_COLUMNS, "allocation_bytes", paging.MAX_LIMIT), op_search="")
    rows = registry.views(state).memory_stats(device, lo, hi)
    if as_csv:
        return 200, paging.to_csv(paging.selected(rows, q), MEMORY_STAT_COLUMNS)
    return 200, paging.page(rows, q, device=device)


def _snapshot_device(art, args: Args) -> int:
    """A device with recorded history: the one asked for, or the first."""
    devices = art.views.devices()
    device = device_index(args)
    if device is None:
        if not devices:
            raise BadRequest("this snapshot has no recorded history (device_traces is empty)")
        return devices[0]
    if device not in devices:
        raise BadRequest(f"no history for device {device}; recorded: {devices}")
    return device


@route
def snapshot(registry: Registry, args: Args):
    return _artifact_view(registry, args, "snapshot", lambda views: views.summary())


@route
def snapshot_timeline(registry: Registry, args: Args):
    art = ready_artifact(registry, args, "snapshot")
    device = _snapshot_device(art, args)
    width = integer(args, "width_px", 1000, 1, MAX_WIDTH_PX)
    start = number(args, "start", 0.0) if args.get("start") else None
    end = number(args, "end", 0.0) if args.get("end") else None
    return 200, dict(art.views.timeline(device, start, end, width), state="ready", device=f"GPU{device}")


@route
def snapshot_segments(registry: Registry, args: Args):
    art = ready_artifact(registry, args, "snapshot")
    device = device_index(args)
    device = 0 if device is None else device  # segments exist without history: any device index
    return 200, {"state": "ready", "device": f"GPU{device}", "segments": art.views.segments(device)}


@route
def snapshot_allocations(registry: Registry, args: Args):
    art = ready_artifact(registry, args, "snapshot")
    device = _snapshot_device(art, args)
    limit = integer(args, "limit", 100, 1, 10_000)
    return 200, {"state": "ready", "device": f"GPU{device}", "rows": art.views.allocations(device, limit)}


@route
def snapshot_stack(registry: Registry, args: Args):
    art = ready_artifact(registry, args, "snapshot")
    index = integer(args, "stack", 0, 0, 10**9)
    frames = art.views.stack(index)
    if frames is None:
        raise NotFound(f"no stack {index}")
    return 200, {"state": "ready", "frames": frames}


@route
def snapshot_oom(registry: Registry, args: Args):
    """OOM forensics (``analysis/snapshot_oom.py``): the last OOM of ``device`` (default: the device of
    the last OOM), the allocator state per stream, the largest live allocations, the recent growth."""
    art = ready_artifact(registry, args, "snapshot")
    device = device_index(args)
    last_n = integer(args, "last_n", 1000, 1, 10_000_000)
    top = integer(args, "top", 20, 1, 1000)
    doc = art.views.oom(device, names_oom(art.entry.name), last_n, top)
    return 200, dict(doc, state="ready", path=art.entry.rel)


@route
def snapshot_attribution(registry: Registry, args: Args):
    """Bytes alive at the peak of ``device`` by frame, and by operator, step and module when a trace of
    the run matches the snapshot (``analysis/snapshot_attribution.py``). While a trace of the run is
    still loading and none matches yet, the answer is ``loading`` (poll)."""
    art = ready_artifact(registry, args, "snapshot")
    device = _snapshot_device(art, args)
    link, trace, loading = registry.snapshot_trace(art, device)
    if link is None and loading:
        raise NotReady({"state": LOADING, "path": art.entry.rel})
    key = None if link is None else (link["path"], link["version"])
    doc = art.views.attribution(device, trace, key)
    matched = None if link is None else {k: link[k] for k in ("worker", "span", "path", "overlap_us")}
    return 200, dict(doc, state="ready", path=art.entry.rel, trace=matched)


@route
def snapshot_ranks(registry: Registry, args: Args):
    """The snapshots of ``path``'s rank group side by side: peak per rank, the outlier rank. While
    another thread still reads one of them the answer is ``loading`` (poll), as for one artifact."""
    art = ready_artifact(registry, args, "snapshot")
    doc = registry.snapshot_ranks(art)
    if any(r["state"] in (LOADING, QUEUED) for r in doc["ranks"]):
        raise NotReady({"state": LOADING, "path": art.entry.rel})
    return 200, dict(doc, state="ready", path=art.entry.rel)


@route
def memory_html(registry: Registry, args: Args):
    """An ``export_memory_timeline`` HTML file: the size of its PNG (served by ``memory_html_image``)."""
    return _artifact_view(registry, args, "memory_html", lambda views: views.meta())


def memory_html_image(registry: Registry, args: Args) -> tuple[int, Any]:
    """``(200, png bytes)`` of a loaded ``memory_html`` artifact; raises :class:`ApiError` otherwise
    (``plugin.py`` answers it as JSON)."""
    return 200, ready_artifact(registry, args, "memory_html").views.image()


@route
def memory_timeline_export(registry: Registry, args: Args):
    return _artifact_view(registry, args, "memory_timeline", lambda views: views.series())


@route
def memprofiler_stats(registry: Registry, args: Args):
    """A MemProfiler ``rank_<r>_memory_stats.yaml``: snapshots with their values, headline metrics."""
    return _artifact_view(registry, args, "memprofiler_stats", lambda views: views.stats())


@route
def memprofiler_log(registry: Registry, args: Args):
    """A MemProfiler ``fsdp_mem_*.log`` report as text (the first MAX_LOG_BYTES bytes)."""
    return _artifact_view(registry, args, "memprofiler_log", lambda views: views.text())


@route
def distributed(registry: Registry, args: Args):
    run = param(args, "run")
    span = str(integer(args, "span", 1, 1, 10**6))
    if not any(st.run == run for st in registry.files()):
        raise NotFound(f"no run {run!r} with traces")
    doc = registry.distributed(run, span)
    return 200, dict(doc, reason_code=no_view_code(doc["files"], doc["ranks_loaded"]))


@route
def critical_path(registry: Registry, args: Args):
    """The critical path's segments on one file's timeline, per step (the Trace view's overlay)."""
    state = ready_file(registry, args)
    return 200, dict(registry.critical_path_overlay(state), state="ready")


@route
def insights(registry: Registry, args: Args):
    return _file_view(registry, args, lambda views: views.insights())


@route
def graphs(registry: Registry, args: Args):
    """CUDA graph replays and compiled regions, as the report's ``graphs`` section (a graph without its
    capture here attributed from the run's other traces when one holds it)."""
    state = ready_file(registry, args)
    found = graph_siblings.graphs_report(registry.views(state), others=lambda: sibling_capture_tables(registry, state))
    return 200, dict(found, state="ready")


@route
def graph_replays(registry: Registry, args: Args):
    """CUDA graph replays as bands on the timeline's stream tracks (the Trace view's replay bands), each
    graph's status as the ``graphs`` route has it (a capture in another trace of the run included)."""
    state = ready_file(registry, args)
    views = registry.views(state)
    doc = views.replay_bands()
    cuda = graph_siblings.graphs_report(views, max_replays=0, others=lambda: sibling_capture_tables(registry, state))[
        "cuda_graphs"
    ]
    status = {g["graph"]: g["status"] for g in cuda["graph_list"]}
    graphs = [dict(g, status=status.get(g["graph"], g["status"])) for g in doc["graphs"]]
    return 200, dict(doc, graphs=graphs, state="ready")


@route
def diff(registry: Registry, args: Args):
    """Baseline vs experiment: steps, operator-tree level at ``path`` (a JSON list), kernels."""
    sides = []
    for side in ("base", "exp"):
        sub = {k[len(side) + 1 :]: v for k, v in args.items() if k.startswith(side + "_")}
        try:
            sides.append(ready_file(registry, sub))
        except ApiError as exc:
            return exc.status, dict(exc.doc, side=side)
    path = op_path(args.get("path") or "[]")
    b, e = (registry.views(s) for s in sides)
    return 200, dict(report.diff_document(sides[0], b, sides[1], e, path), state="ready")


__all__ = [
    "MAX_PARAM_CHARS",
    "BadRequest",
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
