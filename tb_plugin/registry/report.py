"""The one builder of report documents: what the CLI prints (``kinetoscope report|diff``) and what the
UI's routes answer are shaped here, from the registry's states and views, so the two never differ.

Numbers come from analysis/ (through :class:`~tb_plugin.registry.views.FileViews`); this module only
selects, orders and nests them. Units are in the field names (µs, bytes, %).
"""

from __future__ import annotations

import logging
from typing import Any

from ..analysis import advice_ranks
from ..analysis import distributed as distributed_analysis
from ..analysis.breakdown import CATEGORY_LABELS
from ..analysis.call_stacks import differing_frames, parse_frame
from ..analysis.memory import memory_window
from ..storage.naming import names_oom
from ..trace.heap import release_after
from . import graph_siblings
from .artifacts import MEMPROFILER_KINDS
from .interface import Registry

logger = logging.getLogger(__name__)

OPERATOR_KEYS = [
    "name",
    "calls",
    "host_self_us",
    "host_total_us",
    "device_self_us",
    "device_total_us",
    "graph_replay_self_us",
    "tc_eligible",
]
KERNEL_KEYS = [
    "name",
    "calls",
    "total_us",
    "mean_us",
    "min_us",
    "max_us",
    "blocks_per_sm",
    "achieved_occupancy_pct",
    "tensor_cores",
]
MAX_STACKS = 200  # distinct call stacks sent per operator row
MAX_FRAMES = 500  # frames sent per call stack
MAX_DIFF_KERNELS = 500  # kernel rows of the UI's diff


# -- one file -------------------------------------------------------------------------------------
def overview_document(registry: Registry, state) -> dict[str, Any] | None:
    """A loaded file's Overview with ``configuration.workers_in_run`` (the files' workers in its run)."""
    if state.overview is None:
        return None
    doc = dict(state.overview)
    doc["configuration"] = dict(doc.get("configuration", {}), workers_in_run=registry.workers_in_run(state.run))
    return doc


#: The columns of one recommendation every interface shows (the rule's own values follow in the details).
RECOMMENDATION_KEYS = ["rule", "addressed_us", "threshold_us", "basis", "addressed_bytes", "threshold_bytes", "text"]
RUNTIME_CALL_KEYS = [
    "api",
    "calls",
    "total_us",
    "window_us",
    "window_pct",
    "blocks",
    "blocking_calls",
    "blocking_us",
    "blocking_kind",
    "operators",
    "frames",
]


def advice_document(overview: dict, top_calls: int | None = None) -> dict[str, Any]:
    """A file's one list of recommendations as every interface serves it (the Overview's, computed once
    in analysis/overview.py): ``recommendations`` (sentences), ``recommendation_details`` (rule, addressed
    µs, threshold µs, basis and the rule's values), ``about`` (the "About this trace" warnings) and
    ``runtime_calls`` (its first ``top_calls`` rows, all without)."""
    calls = overview.get("runtime_calls") or {"window_us": 0.0, "apis": 0, "rows": []}
    return {
        "recommendations": list(overview["recommendations"]),
        "recommendation_details": list(overview["recommendation_details"]),
        "about": list(overview.get("about") or []),
        "runtime_calls": dict(calls, rows=calls["rows"][:top_calls]),
    }


def rank_aggregate(views, tables: bool) -> dict[str, Any]:
    """The aggregate of one parsed trace's views (pure; see registry/executors/task.py): ``distributed``,
    ``insights`` and, with ``tables``, the report's per-worker sections."""
    sections = [("distributed", views.rank_reduce), ("insights", lambda: report_insights(views.insights()))]
    if tables:
        sections += [
            ("overview", views.overview),
            ("operators", lambda: operator_table(views)),
            ("kernels", lambda: kernel_table(views)),
            ("modules", views.modules),
            ("memory", views.memory_summary),
            ("graphs", lambda: graph_siblings.graphs_report(views)),
        ]
    got: dict[str, Any] = {}
    items = len(views.trace.events) + len(views.trace.memory)
    for key, make in sections:
        got[key] = make()
        release_after(items)  # each section's temporaries (a large trace): the next one starts from what is kept
    out: dict[str, Any] = {"distributed": got["distributed"], "insights": got["insights"]}
    if tables:
        out["tables"] = {key: got[key] for key in ("overview", "operators", "kernels", "modules", "memory", "graphs")}
    return out


def operator_table(views, group_by: str = "operator", keys: list[str] = OPERATOR_KEYS) -> list[dict[str, Any]]:
    """The operator rows of one grouping (:func:`~tb_plugin.analysis.operators.operator_rows`) with
    ``keys``, most device self time first, then host self time, then name (µs)."""
    return [
        {k: r[k] for k in keys}
        for r in sorted(views.operators(group_by), key=lambda r: (-r["device_self_us"], -r["host_self_us"], r["name"]))
    ]


def kernel_table(views, group_by: str = "kernel", keys: list[str] = KERNEL_KEYS) -> list[dict[str, Any]]:
    """The kernel rows of one grouping (:func:`~tb_plugin.analysis.kernels.kernel_rows`) with ``keys``,
    most total time first, then name (µs)."""
    return [{k: r[k] for k in keys} for r in sorted(views.kernels(group_by), key=lambda r: (-r["total_us"], r["name"]))]


def report_insights(found: dict) -> dict:
    """The insight figures the report prints, from :meth:`FileViews.insights` (µs)."""
    return {
        "idle": {
            "gpus": [
                {k: g[k] for k in ("device", "window_us", "idle_us", "host_wait_us", "short_gap_us", "other_us")}
                for g in found["idle"]["gpus"]
            ]
        },
        "launch_delay_us": {
            "p50": found["launch"]["p50"],
            "p95": found["launch"]["p95"],
            "overhead_p50": found["launch"]["overhead_us"]["p50"],
            "queueing_p50": found["launch"]["queueing_us"]["p50"],
        },
        "exposed": {k: found["exposed"][k] for k in ("compute_us", "exposed_comm_us", "exposed_memcpy_us", "idle_us")},
    }


def operator_stacks(views, group_by: str, key: int) -> dict[str, Any] | None:
    """The distinct call stacks of one operator row (most device time first, at most
    :data:`MAX_STACKS`, each with at most :data:`MAX_FRAMES` parsed frames); None for no such row."""
    stacks = views.stacks(group_by, key)
    if stacks is None:
        return None
    total = len(stacks)
    stacks = stacks[:MAX_STACKS]  # the rest is counted, not sent
    for s in stacks:
        s["frames"] = [parse_frame(f) for f in s.pop("text").split("\n")[:MAX_FRAMES]] if s.get("text") else []
    for s, at in zip(stacks, differing_frames([[f["text"] for f in s["frames"]] for s in stacks])):
        s["differs_at"] = at
    return {"stacks": stacks, "total_stacks": total}


def memory_document(views, start_us: float | None, end_us: float | None, width_px: int) -> dict[str, Any]:
    """Per device: peaks and the allocated/reserved curves over ``[start_us, end_us]`` (default: the
    whole trace), downsampled to ``width_px`` bins."""
    devices = views.memory_curves()
    lo = 0.0 if start_us is None else start_us
    hi = (
        end_us
        if end_us is not None
        else max((float(d["ts_us"].max()) for d in devices if len(d["ts_us"])), default=0.0)
    )
    return {
        "devices": [memory_window(d, lo, hi, width_px) for d in devices],
        "pairs_reason": views.memory_pairs()["reason"],
    }


# -- diff -----------------------------------------------------------------------------------------
def diff_document(base_state, base_views, exp_state, exp_views, path: list[str] | None = None) -> dict[str, Any]:
    """Baseline vs experiment: ``steps`` (Overview categories), ``operators`` and ``kernels``. With
    ``path`` (the UI) the operator-tree level below that path and the first :data:`MAX_DIFF_KERNELS`
    kernels; without (the CLI) the whole tree flattened and every kernel. ``waterfall``: the level's
    (the CLI: the top level's) rows, remainder and step-total Δ (analysis/diff.py)."""
    # imported here: a report (the common command) never needs the diff's module
    from ..analysis.diff import kernel_diff, op_diff, op_diff_flat, step_diff, thresholds, waterfall_totals

    b, e = base_views.trace, exp_views.trace
    kernels = kernel_diff(b, e)
    steps = step_diff(base_state.overview, exp_state.overview)
    doc = {"steps": steps, "thresholds": thresholds(), "category_labels": dict(CATEGORY_LABELS)}
    if path is None:
        operators = op_diff_flat(b, e)
        top = [r for r in operators if len(r["path"]) == 1]
        return dict(
            doc, operators=operators, kernels=kernels, waterfall=waterfall_totals(steps["delta"]["total_us"], top)
        )
    operators = op_diff(b, e, tuple(path))
    return dict(
        doc,
        path=path,
        operators=operators,
        kernels=kernels[:MAX_DIFF_KERNELS],
        waterfall=waterfall_totals(steps["delta"]["total_us"], operators),
    )


# -- the CLI's report -----------------------------------------------------------------------------
def report_document(registry: Registry, files: list, run: str | None) -> tuple[dict[str, Any], list]:
    """``(document, failed artifacts)`` of ``kinetoscope report`` over analysed ``files`` (see the
    README): per run its workers, ``distributed`` (runs of several ranks), ``snapshots`` and
    ``memprofiler``."""
    doc: dict[str, Any] = {"runs": []}
    for st in files:
        if not doc["runs"] or doc["runs"][-1]["name"] != st.run:
            doc["runs"].append({"name": st.run, "workers": []})
        doc["runs"][-1]["workers"].append(worker_entry(registry, st))
    _add_distributed(registry, doc, files)
    for entry in doc["runs"]:
        _add_run_advice(entry)
    failed = _add_artifacts(registry, doc, run)
    _add_hang(registry, doc)
    return doc, failed


def _add_hang(registry: Registry, doc: dict) -> None:
    """Each run with flight-recorder dumps gains ``hang``: its verdict, findings and unreadable dumps
    (:meth:`~.hang.HangRuns.hang`; the full document is ``kinetoscope hang``'s)."""
    runs = {r["name"]: r for r in doc["runs"]}
    for name in sorted({a.run for a in registry.artifacts() if a.entry.kind == "flight_recorder"}):
        entry = runs.get(name)
        if entry is None:  # a run of dumps only
            entry = runs[name] = {"name": name, "workers": [], "snapshots": [], "snapshot_ranks": []}
            doc["runs"].append(entry)
        got = registry.hang(name)
        entry["hang"] = None if got is None else {k: got[k] for k in ("dumps", "verdict", "findings", "unreadable")}
    doc["runs"].sort(key=lambda r: (r["name"] != ".", r["name"]))


def _add_run_advice(entry: dict) -> None:
    """A run of several ranks gains ``recommendations`` (:func:`run_advice`); each file's own list is
    unchanged."""
    found = run_advice(entry["workers"])
    if found is not None:
        entry["recommendations"] = found


def run_advice(workers: list[dict]) -> list[dict] | None:
    """The advice that holds on several ranks of a run, once for the run
    (:func:`~tb_plugin.analysis.advice_ranks.across_ranks`), from its workers' ``{"worker", "overview"}``
    (a worker's first span stands for its rank); None for fewer than two ranks."""
    per_rank, seen = [], set()
    for position, w in enumerate(workers):
        if w["overview"] is None or w["worker"] in seen:
            continue
        seen.add(w["worker"])
        info = (w["overview"].get("configuration") or {}).get("distributed")
        rank, _ = distributed_analysis.rank_of_info(info, w["worker"], position)
        per_rank.append((rank, w["overview"].get("recommendation_details") or []))
    return advice_ranks.across_ranks(per_rank) if len(per_rank) >= 2 else None


def worker_entry(registry: Registry, st) -> dict[str, Any]:
    """One file of the report: its Overview and, when analysed, its tables and insight figures."""
    overview = overview_document(registry, st)
    entry = {
        "worker": st.worker,
        "span": st.span,
        "path": st.entry.rel,
        "error": st.error,
        "warnings": st.warnings,
        "notes": st.notes,
        "overview": overview,
        "operators": None,
        "kernels": None,
        "modules": None,
        "memory": None,
        "insights": None,
        "graphs": None,
    }
    if overview is not None:
        tables = st.aggregate["tables"]
        for key in ("operators", "kernels", "modules", "memory"):
            entry[key] = tables[key]
        # an aggregate cached before graphs existed has none; a capture in another trace as the routes find it
        entry["graphs"] = graph_siblings.report_graphs(registry, st, tables.get("graphs"))
        entry["insights"] = st.aggregate["insights"]
    return entry


# the distributed section's tables (µs, bytes, GB/s)
RANK_COLUMNS = (
    "rank",
    "worker",
    "computation_us",
    "overlap_us",
    "communication_us",
    "other_us",
    "transfer_us",
    "sync_us",
)
COLLECTIVE_COLUMNS = (
    "name",
    "calls",
    "bytes",
    "calls_without_bytes",
    "group_size",
    "transfer_us",
    "sync_us",
    "algbw_gbps",
    "busbw_gbps",
    "bus_factor",
)
ARRIVAL_COLUMNS = ("rank", "instances", "last", "wait_total_us", "wait_mean_us", "straggler", "text")


def distributed_summary(result: dict) -> dict[str, Any] | None:
    """The report's ``distributed`` section from :meth:`RunRegistry.distributed` (None without a view)."""
    view = result["view"]
    if view is None:
        return None
    return {
        "world_size": view["world_size"],
        "ranks": [{k: r[k] for k in RANK_COLUMNS} for r in view["ranks"]],
        "collectives": [{k: c.get(k) for k in COLLECTIVE_COLUMNS} for c in view["collectives"]],
        "bandwidth_caveat": view.get("bandwidth_caveat"),
        "matching": {k: view["matching"][k] for k in ("method", "by_type")},
        "stragglers": view["stragglers"],
        "groups": [group_summary(g) for g in view["groups"]],
        # the evidence: per rank, how often it arrived last and how long the others waited for it
        "arrivals": [{k: e[k] for k in ARRIVAL_COLUMNS} for e in view["arrivals"]],
        "messages": result["messages"],
    }


def group_summary(group: dict) -> dict[str, Any]:
    """One process group of the report (see analysis.process_groups.combine_groups)."""
    return {
        k: group[k]
        for k in (
            "name",
            "description",
            "role",
            "ranks",
            "size",
            "calls",
            "time_us",
            "bytes",
            "exposed_us",
            "bandwidth_gbps",
            "by_rank",
        )
    }


def run_critical_path(result: dict) -> list[dict]:
    """The critical path per step of a ``registry.distributed`` result: across the ranks with a view,
    the one rank's own without (``single_rank``), else [] (see analysis.critical_path_combine)."""
    if result.get("view") is not None:
        return result["view"]["critical_path"]
    return (result.get("single_rank") or {}).get("critical_path", [])


def _add_distributed(registry: Registry, doc: dict, files: list) -> None:
    """Runs with more than one rank gain ``distributed`` and ``critical_path`` (span 1, across ranks);
    the workers of a single-rank run gain ``distributed.groups``, their own process groups, and their
    own ``critical_path`` (see analysis.critical_path_combine)."""
    by_path = {st.entry.rel: st for st in files}
    for entry in doc["runs"]:
        workers = {w["worker"] for w in entry["workers"] if w["error"] is None}
        if len(workers) < 2:
            for w in entry["workers"]:
                st = by_path.get(w["path"])
                if w["overview"] is not None and st is not None and "groups" in st.aggregate["distributed"]:
                    agg = st.aggregate["distributed"]
                    rank, _ = distributed_analysis.rank_of_info(agg["distributed_info"], st.worker, 0)
                    own = distributed_analysis.single_rank_view(rank, st.worker, agg)
                    w["distributed"] = {
                        "groups": [group_summary(g) for g in own["groups"]],
                        "messages": own["groups_messages"],
                    }
                    if "critical_path" in agg:  # the same walk, without cross-rank edges
                        w["critical_path"] = own["critical_path"]
            continue
        result = registry.distributed(entry["name"], "1")
        summary = distributed_summary(result)
        if summary is not None:
            entry["distributed"] = summary
            entry["critical_path"] = result["view"]["critical_path"]


def _add_artifacts(registry: Registry, doc: dict, run: str | None) -> list:
    """Each run gains ``snapshots`` (allocator snapshots: peaks and the largest live allocations) and,
    when it has finetuning-scheduler MemProfiler files, ``memprofiler`` (see :func:`memprofiler_item`)."""
    failed = []
    runs = {r["name"]: r for r in doc["runs"]}
    for art in registry.artifacts(run):
        if art.entry.kind != "snapshot" and art.entry.kind not in MEMPROFILER_KINDS:
            continue
        registry.load_artifact(art)
        entry = runs.get(art.run)
        if entry is None:
            entry = runs[art.run] = {"name": art.run, "workers": []}
            doc["runs"].append(entry)
        memprofiler = art.entry.kind != "snapshot"
        try:
            item = memprofiler_item(art) if memprofiler else snapshot_item(art, registry)
        except Exception as exc:  # an analysis bug on one odd file is that file's error, not a traceback
            logger.debug("reporting %s failed", art.entry.rel, exc_info=True)
            art.error = f"internal error while reporting this file: {type(exc).__name__}: {exc}"[:500]
            item = {"path": art.entry.rel, "error": art.error} | (
                {"kind": art.entry.kind} if memprofiler else {"devices": []}
            )
        if art.error:
            failed.append(art)
        entry.setdefault("memprofiler" if memprofiler else "snapshots", []).append(item)
    for entry in doc["runs"]:
        entry.setdefault("snapshots", [])
        entry["snapshot_ranks"] = rank_groups(registry, entry["name"])
    doc["runs"].sort(key=lambda r: (r["name"] != ".", r["name"]))
    return failed


def snapshot_item(art, registry: Registry | None = None) -> dict:
    """An allocator snapshot in the report: per device its peak active bytes, largest allocations and
    (with ``registry``) the bytes alive at the peak by operator/step/module/frame (:func:`alive_item`)."""
    item = {"path": art.entry.rel, "error": art.error, "devices": []}
    if not art.error:
        item["devices"] = [
            {
                "device": d["device"],
                "peak_active_bytes": d["peak_active_bytes"],
                "allocated_at_dump_bytes": d.get("allocated_at_dump_bytes"),
                "largest": [{"bytes": x["bytes"], "frame": x["frame"]} for x in d["largest"]],
            }
            for d in art.views.summary()["devices"]
        ]
        if registry is not None:
            for d, dev in zip(item["devices"], art.views.devices()):
                d["alive_at_peak"] = alive_item(registry, art, dev)
        item["oom"] = oom_item(art)
    return item


def alive_item(registry: Registry, art, device: int, top: int = 5) -> dict:
    """The ``top`` rows of each ``snapshot_attribution`` table of ``device`` and the matched trace's path."""
    link, trace, _ = registry.snapshot_trace(art, device)
    doc = art.views.attribution(device, trace, None if link is None else (link["path"], link["version"]))
    tables = {
        k: None if doc[k] is None else [{"name": r["name"], "bytes": r["bytes"]} for r in doc[k][:top]]
        for k in ("by_operator", "by_step", "by_module", "by_frame")
    }
    return dict(tables, trace=None if link is None else link["path"])


def oom_item(art) -> dict | None:
    """An allocator snapshot's OOM in the report (``analysis/snapshot_oom.py``), None without one."""
    doc = art.views.oom(None, names_oom(art.entry.name), 1000, 5)
    if doc["detected_by"] is None:
        return None
    oom = doc["oom"] or {}
    stream = next((r for r in doc["streams"] if r["is_oom_stream"]), None)
    return {
        "device": doc["device"],
        "detected_by": doc["detected_by"],
        "state_at": doc["state_at"],
        "requested_bytes": oom.get("requested_bytes"),
        "device_free_bytes": oom.get("device_free_bytes"),
        "stream_largest_free_block_bytes": stream["largest_free_block_bytes"] if stream else None,
        "fragmentation_pct": doc["totals"]["fragmentation_pct"] if doc["totals"] else None,
        "largest_live": [{"bytes": r["bytes"], "frame": r["frame"]} for r in doc["largest_live"]],
        "growth_net_bytes": doc["growth"]["net_bytes"] if doc["growth"] else None,
    }


def rank_groups(registry: Registry, run: str) -> list[dict]:
    """Per-rank snapshot groups of two ranks or more whose lowest rank lies in ``run`` (a group of
    ``rank_<N>/`` runs is reported once): peaks per rank and the outlier."""
    out, seen = [], set()
    for art in registry.artifacts(run):
        if art.entry.kind != "snapshot" or art.entry.rel in seen:
            continue
        group = registry.rank_group(art)
        seen.update(a.entry.rel for _, a in group)
        if len(group) >= 2 and group[0][1].run == run:
            doc = registry.snapshot_ranks(art)
            out.append(
                {
                    "ranks": [
                        {"rank": r["rank"], "path": r["path"], "peak_active_bytes": r["peak_active_bytes"]}
                        for r in doc["ranks"]
                    ],
                    "median_peak_bytes": doc["median_peak_bytes"],
                    "outlier_rank": doc["outlier_rank"],
                    "outlier_peak_to_median": doc["outlier_peak_to_median"],
                }
            )
    return out


def memprofiler_item(art) -> dict:
    """A MemProfiler file in the report: stats files list each snapshot with its headline values
    (bytes or counts), text reports their size."""
    item = {"path": art.entry.rel, "kind": art.entry.kind, "error": art.error}
    if art.error:
        return item
    if art.entry.kind == "memprofiler_log":
        doc = art.views.text()
        return dict(item, size_bytes=doc["size_bytes"], truncated=doc["truncated"])
    doc = art.views.stats()
    keys = [m["key"] for m in doc["metrics"]]
    return dict(
        item,
        rank=doc["rank"],
        warnings=doc["warnings"],
        snapshots=[
            {
                "key": s["key"],
                "function": s["function"],
                "iteration": s["iteration"],
                "phase": s["phase"],
                "values": {k: s["values"][k] for k in keys if k in s["values"]},
            }
            for s in doc["snapshots"]
        ],
    )
