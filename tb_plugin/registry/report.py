"""The one builder of report documents: what the CLI prints (``kinetoscope report|diff``) and what the
UI's routes answer are shaped here, from the registry's states and views, so the two never differ.

Numbers come from analysis/ (through :class:`~tb_plugin.registry.views.FileViews`); this module only
selects, orders and nests them. Units are in the field names (µs, bytes, %). The report's distributed
sections are built in :mod:`.report_distributed`, its memory-artifact and hang sections in
:mod:`.report_artifacts`.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from ..analysis.breakdown import CATEGORY_LABELS
from ..analysis.call_stacks import differing_frames, parse_frame
from ..analysis.memory import memory_window
from ..analysis.runtime_calls import RuntimeCallRow
from ..logs import module_logger
from ..trace.heap import STEP_TRIM_GROWTH_BYTES, release_after, trimmed_steps
from . import graph_siblings
from .interface import Registry
from .report_artifacts import add_artifacts, add_hang
from .report_distributed import add_distributed, run_advice

if TYPE_CHECKING:
    from ..analysis.insights import Insights
    from ..analysis.overview import Overview
    from ..analysis.runtime_calls import RuntimeCalls
    from .records import AdviceDocument, DiffDocument, ReportDocument, ReportInsights, RunReport, WorkerReport
    from .states import ArtifactState, FileState
    from .views import FileViews

logger = module_logger(__name__)

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
def overview_document(registry: Registry, state: FileState) -> Overview | None:
    """A loaded file's Overview with ``configuration.workers_in_run`` (the files' workers in its run)."""
    if state.overview is None:
        return None
    doc = state.overview.copy()
    doc["configuration"] = doc["configuration"].copy()  # the cached Overview is not changed
    doc["configuration"]["workers_in_run"] = registry.workers_in_run(state.run)
    return doc


#: The columns of one recommendation every interface shows (the rule's own values follow in the details).
RECOMMENDATION_KEYS = ["rule", "addressed_us", "threshold_us", "basis", "addressed_bytes", "threshold_bytes", "text"]
RUNTIME_CALL_KEYS = list(RuntimeCallRow.__annotations__)


def advice_document(overview: Overview, top_calls: int | None = None) -> AdviceDocument:
    """A file's one list of recommendations as every interface serves it (the Overview's, computed once
    in analysis/overview.py): ``recommendations`` (sentences), ``recommendation_details`` (rule, addressed
    µs, threshold µs, basis and the rule's values), ``about`` (the "About this trace" warnings) and
    ``runtime_calls`` (its first ``top_calls`` rows, all without)."""
    calls: RuntimeCalls = (overview.get("runtime_calls") or {"window_us": 0.0, "apis": 0, "rows": []}).copy()
    calls["rows"] = calls["rows"][:top_calls]  # in its place: the JSON's key order is the table's
    return {
        "recommendations": list(overview["recommendations"]),
        "recommendation_details": list(overview["recommendation_details"]),
        "about": list(overview.get("about") or []),
        "runtime_calls": calls,
    }


Sections = list[tuple[str, Callable[[], object]]]


#: The sections of every aggregate, then those only a report with ``tables`` computes, in the order
#: :func:`rank_aggregate` computes them: the memory section last (its per-operator sums peak highest, and
#: by then the memos only the graphs section read, launches and graph matches, are dropped).
AGGREGATE_SECTIONS = ("distributed", "insights")
TABLE_SECTIONS = ("overview", "operators", "kernels", "modules", "graphs", "memory")


def section_keys(tables: bool) -> tuple[str, ...]:
    """The sections :func:`rank_aggregate` computes, in its order (``tables``: the report's tables too)."""
    return AGGREGATE_SECTIONS + TABLE_SECTIONS if tables else AGGREGATE_SECTIONS


def rank_aggregate(
    views: FileViews, tables: bool, run: Callable[[Sections, int], dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The aggregate of one parsed trace's views (pure; see registry/executors/task.py): ``distributed``,
    ``insights`` and, with ``tables``, the report's per-worker sections. ``run(sections, items)``, when
    given, computes the named sections (each ``(key, make)``) into a dict, perhaps on two cores
    (``registry/executors/sections.py``); by default one after the other with :func:`run_sections`."""
    makers: dict[str, Callable[[], Any]] = {  # (views read when a section runs: a report without tables
        # reads nothing of the tables' views)
        "distributed": lambda: views.rank_reduce(),
        "insights": lambda: report_insights(views.insights()),
        "overview": lambda: views.overview(),
        "operators": lambda: operator_table(views),
        "kernels": lambda: kernel_table(views),
        "modules": lambda: views.modules(),
        "graphs": lambda: graph_siblings.graphs_report(views),
        "memory": lambda: views.memory_summary(),
    }
    sections: Sections = [(key, makers[key]) for key in section_keys(tables)]
    items = len(views.trace.events) + len(views.trace.memory)
    got = (run or functools.partial(run_sections, memos=views.trace.derived))(sections, items)
    out: dict[str, Any] = {"distributed": got["distributed"], "insights": got["insights"]}
    if tables:
        out["tables"] = {key: got[key] for key in TABLE_SECTIONS}
    return out


#: The per-trace memos (:meth:`~tb_plugin.trace.model.Trace.memo` keys) each section reads, at any depth,
#: when the sections run in :func:`rank_aggregate`'s order, all in one process or split as
#: ``registry/executors/sections.py`` splits them (measured on the sample traces; the overview section
#: reads the Overview the insights section computed). A memo missing here is computed again by the
#: section that reads it: the same values, more time (``tests/unit/registry/test_section_memos.py``).
SECTION_MEMOS: dict[str, frozenset[str]] = {
    "distributed": frozenset(
        "block_threads blocking_calls category_flags comm_kernels device_mask event_name_ids gpu_summary "
        "graph_captures graph_matches graph_replays kernel_blocks kernel_occupancy launch_mask launch_of "
        "op_tree steps".split()
    ),
    "insights": frozenset(
        "blocking_calls category_flags counter_series device_mask event_name_ids gpu_idle gpu_idle_work_rows graph_use named_calls "
        "gpu_summary graph_captures graph_matches graph_replays insights launch_mask launch_of memory_curves "
        "memory_device_rows op_groups:operator op_times op_tree outside_trace_rows runtime_calls steps".split()
    ),
    "overview": frozenset(),
    "operators": frozenset(
        "device_mask event_name_ids graph_captures graph_matches graph_replays launch_mask launch_of "
        "op_groups:operator op_rows op_times op_tree".split()
    ),
    "kernels": frozenset("block_threads kernel_occupancy kernel_rows:kernel launch_of op_times".split()),
    "modules": frozenset("event_name_ids module_tree op_times op_tree".split()),
    "graphs": frozenset(
        "device_mask event_name_ids graph_captures graph_matches graph_replays launch_mask launch_of "
        "op_groups:operator op_times op_tree steps".split()
    ),
    "memory": frozenset("event_name_ids memory_curves memory_data memory_device_rows op_rows op_tree".split()),
}


def run_sections(
    sections: Sections,
    items: int,
    memos: dict[str, Any] | None = None,
    trim: bool = True,
    untrimmed: frozenset[str] = frozenset(),
    lazily_trimmed: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """Each section computed in turn (``items``: the trace's events and memory events). With ``memos``
    (the trace's :attr:`~tb_plugin.trace.model.Trace.derived`, which nothing reads after the sections),
    each section is followed by dropping the memos no later section reads (:data:`SECTION_MEMOS`), so
    that a section's peak does not stack on arrays only earlier sections needed (a 4.5 GB trace: the
    idle-time, kernel and launch memos, ~0.2 GB, under the memory section's sums). ``trim``: the freed
    heap pages given back after each section (``release_after``); a section child that exits after its
    few sections keeps them for the next one instead (no page faults to take them again), unless the trace
    is very large (:class:`~.executors.sections.SectionFork`). With ``trim``,
    a very large trace's steps inside each section give them back too (``trimmed_steps``: its sections'
    peaks held ~0.2-0.4 GB of freed temporaries). The sections named in ``untrimmed`` keep theirs
    (neither their steps nor their end give pages back); those in ``lazily_trimmed`` give their steps'
    back only past :data:`~tb_plugin.trace.heap.STEP_TRIM_GROWTH_BYTES` of growth (their end, all)."""
    got: dict[str, Any] = {}
    for done, (key, make) in enumerate(sections, 1):
        trims = trim and key not in untrimmed
        with trimmed_steps(items if trims else 0, STEP_TRIM_GROWTH_BYTES if key in lazily_trimmed else 0):
            got[key] = make()
        if memos is not None:
            drop_unread(memos, [later for later, _ in sections[done:]])
        if trims:
            release_after(items)  # the section's temporaries (a large trace): the next starts from what is kept
    return got


def drop_unread(memos: dict[str, Any], sections: Sequence[str]) -> None:
    """Drop from ``memos`` every key that none of ``sections`` reads (:data:`SECTION_MEMOS`; a section
    not listed there keeps every memo)."""
    if any(key not in SECTION_MEMOS for key in sections):
        return
    wanted = frozenset().union(*(SECTION_MEMOS[key] for key in sections))
    for key in [k for k in memos if k not in wanted]:
        del memos[key]


def operator_table(
    views: FileViews, group_by: str = "operator", keys: list[str] = OPERATOR_KEYS
) -> list[dict[str, Any]]:
    """The operator rows of one grouping (:func:`~tb_plugin.analysis.operators.operator_rows`) with
    ``keys``, most device self time first, then host self time, then name (µs): with the default
    ``keys`` a :class:`~.table_rows.OperatorReportRow` each, with the tab's columns an ``OperatorTableRow``."""
    rows: Sequence[Mapping[str, Any]] = views.operators(group_by)  # read by column name
    return [
        {k: r[k] for k in keys}
        for r in sorted(rows, key=lambda r: (-r["device_self_us"], -r["host_self_us"], r["name"]))
    ]


def kernel_table(views: FileViews, group_by: str = "kernel", keys: list[str] = KERNEL_KEYS) -> list[dict[str, Any]]:
    """The kernel rows of one grouping (:func:`~tb_plugin.analysis.kernels.kernel_rows`) with ``keys``,
    most total time first, then name (µs): with the default ``keys`` a :class:`~.table_rows.KernelReportRow`
    each, with the tab's columns a ``KernelTableRow``."""
    rows: Sequence[Mapping[str, Any]] = views.kernels(group_by)  # read by column name
    return [{k: r[k] for k in keys} for r in sorted(rows, key=lambda r: (-r["total_us"], r["name"]))]


def report_insights(found: Insights) -> ReportInsights:
    """The insight figures the report prints, from :meth:`FileViews.insights` (µs)."""
    exposed = found["exposed"]
    return {
        "idle": {
            "gpus": [
                {
                    "device": g["device"],
                    "window_us": g["window_us"],
                    "idle_us": g["idle_us"],
                    "host_wait_us": g["host_wait_us"],
                    "short_gap_us": g["short_gap_us"],
                    "other_us": g["other_us"],
                }
                for g in found["idle"]["gpus"]
            ]
        },
        "launch_delay_us": {
            "p50": found["launch"]["p50"],
            "p95": found["launch"]["p95"],
            "overhead_p50": found["launch"]["overhead_us"]["p50"],
            "queueing_p50": found["launch"]["queueing_us"]["p50"],
        },
        "exposed": {
            "compute_us": exposed["compute_us"],
            "exposed_comm_us": exposed["exposed_comm_us"],
            "exposed_memcpy_us": exposed["exposed_memcpy_us"],
            "idle_us": exposed["idle_us"],
        },
    }


def operator_stacks(views: FileViews, group_by: str, key: int) -> dict[str, Any] | None:
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


def memory_document(views: FileViews, start_us: float | None, end_us: float | None, width_px: int) -> dict[str, Any]:
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
def diff_document(
    base_state: FileState,
    base_views: FileViews,
    exp_state: FileState,
    exp_views: FileViews,
    path: list[str] | None = None,
) -> DiffDocument:
    """Baseline vs experiment: ``steps`` (Overview categories), ``operators`` and ``kernels``. With
    ``path`` (the UI) the operator-tree level below that path and the first :data:`MAX_DIFF_KERNELS`
    kernels; without (the CLI) the whole tree flattened and every kernel. ``waterfall``: the level's
    (the CLI: the top level's) rows, remainder and step-total Δ (analysis/diff.py)."""
    # imported here: a report (the common command) never needs the diff's module
    from ..analysis.diff import kernel_diff, op_diff, op_diff_flat, step_diff, thresholds, waterfall_totals

    b, e = base_views.trace, exp_views.trace
    kernels = kernel_diff(b, e)
    assert base_state.overview is not None and exp_state.overview is not None, "a diff compares two loaded files"
    steps = step_diff(base_state.overview, exp_state.overview)
    labels = dict(CATEGORY_LABELS)
    if path is None:
        operators = op_diff_flat(b, e)
        top = [r for r in operators if len(r["path"]) == 1]
        return {
            "steps": steps,
            "thresholds": thresholds(),
            "category_labels": labels,
            "operators": operators,
            "kernels": kernels,
            "waterfall": waterfall_totals(steps["delta"]["total_us"], top),
        }
    operators = op_diff(b, e, tuple(path))
    return {
        "steps": steps,
        "thresholds": thresholds(),
        "category_labels": labels,
        "path": path,
        "operators": operators,
        "kernels": kernels[:MAX_DIFF_KERNELS],
        "waterfall": waterfall_totals(steps["delta"]["total_us"], operators),
    }


# -- the CLI's report -----------------------------------------------------------------------------
def report_document(
    registry: Registry, files: list[FileState], run: str | None
) -> tuple[ReportDocument, list[ArtifactState]]:
    """``(document, failed artifacts)`` of ``kinetoscope report`` over analysed ``files`` (see the
    README): per run its workers, ``distributed`` (runs of several ranks), ``snapshots`` and
    ``memprofiler``."""
    doc: ReportDocument = {"runs": []}
    for st in files:
        if not doc["runs"] or doc["runs"][-1]["name"] != st.run:
            doc["runs"].append({"name": st.run, "workers": []})
        doc["runs"][-1]["workers"].append(worker_entry(registry, st))
    add_distributed(registry, doc, files)
    for entry in doc["runs"]:
        _add_run_advice(entry)
    failed = add_artifacts(registry, doc, run)
    add_hang(registry, doc)
    return doc, failed


def _add_run_advice(entry: RunReport) -> None:
    """A run of several ranks gains ``recommendations`` (:func:`run_advice`); each file's own list is
    unchanged."""
    found = run_advice(entry["workers"])
    if found is not None:
        entry["recommendations"] = found


def worker_entry(registry: Registry, st: FileState) -> WorkerReport:
    """One file of the report: its Overview and, when analysed, its tables and insight figures."""
    overview = overview_document(registry, st)
    entry: WorkerReport = {
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
        assert st.aggregate is not None, "a loaded file of the report has its aggregate"
        tables = st.aggregate["tables"]
        entry["operators"], entry["kernels"] = tables["operators"], tables["kernels"]
        entry["modules"], entry["memory"] = tables["modules"], tables["memory"]
        # an aggregate cached before graphs existed has none; a capture in another trace as the routes find it
        entry["graphs"] = graph_siblings.report_graphs(registry, st, tables.get("graphs"))
        entry["insights"] = st.aggregate["insights"]
    return entry
