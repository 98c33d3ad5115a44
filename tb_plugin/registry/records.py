"""The typed records the registry hands across a module boundary: the ``runs`` document
(docs/http_api.md, ``GET runs``), a rank's aggregate (registry/executors/task.py), the hang
document (registry/hang.py), the distributed view (registry/distributed.py) with its summary, the
diff of two files (registry/report.py) and the regression gate's document (registry/gate.py). They are
``TypedDict``s: at run time plain dicts, so the JSON the routes, the CLI and the MCP tools return and
the aggregates kept in the analysis cache are unchanged, while the type checker holds every key the
callers read."""

from __future__ import annotations

from typing import Any, TypedDict

from ..analysis.advice import AboutNote
from ..analysis.advice_ranks import RunAdvice
from ..analysis.compiled_regions import CompiledRegions
from ..analysis.diff_records import KernelDiffRow, OperatorDiffRow, StepDiff, Waterfall
from ..analysis.distributed_records import DistributedView, SingleRankView
from ..analysis.graphs import GraphsDocument
from ..analysis.hang_records import DumpRankRow, UnreadableDump
from ..analysis.insights import ExposedParts, Insights
from ..analysis.memory import MemorySummary
from ..analysis.modules import ModuleNode
from ..analysis.overview import Overview
from ..analysis.recommendations import Recommendation
from ..analysis.runtime_calls import RuntimeCalls
from ..analysis.snapshot_ranks import RankOutlier
from .table_rows import KernelReportRow, OperatorReportRow


class GraphsReport(TypedDict):
    """CUDA graphs and torch.compile regions of one trace (registry/views.py ``FileViews.graphs``; the
    report's ``graphs`` section and the ``graphs`` route's, registry/graph_siblings.py ``graphs_report``)."""

    cuda_graphs: GraphsDocument  # analysis/graphs.py (µs)
    compiled: CompiledRegions | None  # analysis/compiled_regions.py; None without a compiled region


class AdviceDocument(TypedDict):
    """A file's one list of recommendations as every interface serves it (registry/report.py
    ``advice_document``, from the Overview's, computed once in analysis/overview.py)."""

    recommendations: list[str]  # the sentences, most important first
    recommendation_details: list[Recommendation]  # analysis/recommendations.py (µs, bytes)
    about: list[AboutNote]  # the "About this trace" warnings (analysis/advice.py)
    runtime_calls: RuntimeCalls  # its first rows (analysis/runtime_calls.py)


class SnapshotRankRow(TypedDict):
    """One rank's snapshot of a rank group (registry/artifacts.py ``snapshot_ranks``; bytes)."""

    rank: int
    run: str
    path: str  # logdir-relative
    state: str  # the snapshot's load state (states.py): the route answers "loading" until each is read
    error: str | None
    peak_active_bytes: int | None  # the largest over its devices; None until read (or without devices)
    device: str | None  # the device of that peak
    peak_time: float | None  # when the peak was reached (the snapshot's clock; analysis/snapshot.py)
    peak_to_median: float | None  # analysis/snapshot_ranks.py
    vs_median_pct: float | None


class SnapshotRanksDocument(RankOutlier):
    """The snapshots of a rank group side by side (registry/artifacts.py ``snapshot_ranks``;
    docs/http_api.md ``GET snapshot_ranks``): one row per rank and the outlier."""

    ranks: list[SnapshotRankRow]


class LoadingCounts(TypedDict):
    """How far the loads of the listed trace files are."""

    files_total: int
    files_done: int  # ready or failed
    files_queued: int  # waiting for a load


class LogdirError(TypedDict):
    """A logdir that cannot be listed (missing extra, credentials, …)."""

    logdir: str  # as shown: credentials in a URL are never shown
    run: str  # the run its error is shown on ("." or the ``--logdir_spec`` name)
    error: str


class WorkerRow(TypedDict):
    """One worker of a run: its files, one per span (FileState.as_json plus ``queued_before``)."""

    worker: str
    spans: list[dict[str, Any]]


class RunRow(TypedDict):
    """One run of the ``runs`` document."""

    name: str  # logdir-relative, "/" separators; "." is the logdir itself
    workers: list[WorkerRow]
    artifacts: list[dict[str, Any]]  # ArtifactState.as_json plus its links (registry/artifacts.py)
    error: str | None  # why the logdir holding this run cannot be listed


class RunsDocument(TypedDict):
    """The ``runs`` document of docs/http_api.md."""

    logdir: str
    loading: LoadingCounts
    errors: list[LogdirError]
    notices: list[str]  # logdir-level notes (skipped symlinks)
    runs: list[RunRow]


class RankTablesBase(TypedDict):
    """The report's per-worker sections of one rank (what every aggregate with tables holds)."""

    overview: Overview
    operators: list[OperatorReportRow]  # registry/table_rows.py (µs)
    kernels: list[KernelReportRow]
    modules: list[ModuleNode] | None  # the module tree (analysis/modules.py), or None without one
    memory: MemorySummary


class RankTables(RankTablesBase, total=False):
    """:class:`RankTablesBase` and the CUDA-graph section (missing from aggregates cached before it existed)."""

    graphs: GraphsReport


class InsightsDocument(Insights):
    """The Insights tab's document (registry/views.py ``FileViews.insights``; docs/http_api.md ``GET
    insights``): the trace's figures and its one list of recommendations."""

    recommendations: list[str]
    recommendation_details: list[Recommendation]
    about: list[AboutNote]  # the "About this trace" warnings (analysis/advice.py)
    runtime_calls: RuntimeCalls


class ReportIdleRow(TypedDict):
    """One GPU's idle time and its parts in the report (µs)."""

    device: int
    window_us: float
    idle_us: float
    host_wait_us: float
    short_gap_us: float
    other_us: float


class ReportIdle(TypedDict):
    gpus: list[ReportIdleRow]


class ReportLaunchDelay(TypedDict):
    """Launch delay percentiles and the overhead/queueing medians (µs; None without launched kernels)."""

    p50: float | None
    p95: float | None
    overhead_p50: float | None
    queueing_p50: float | None


class ReportInsights(TypedDict):
    """The insight figures the report prints (registry/report.py ``report_insights``; µs)."""

    idle: ReportIdle
    launch_delay_us: ReportLaunchDelay
    exposed: ExposedParts  # over all GPUs


class RankAggregateBase(TypedDict):
    """The part of a rank's aggregate every aggregate holds."""

    distributed: dict[str, Any]  # analysis/distributed.py rank_reduce (µs, bytes)


class RankAggregate(RankAggregateBase, total=False):
    """A rank's aggregate (registry/executors/task.py): ``insights`` when a task computed it, ``tables``
    when the job asked for the report's sections (packed while it travels, see task.pack)."""

    insights: ReportInsights
    tables: RankTables


class HangTrace(TypedDict):
    """The profiler trace of a rank beside its dump (registry/hang.py ``traces_by_rank``)."""

    path: str  # logdir-relative
    worker: str
    span: str


class HangTraceError(TypedDict):
    """A trace beside the dumps that could not be read (registry/hang.py ``link_folder_traces``)."""

    rank: int
    path: str
    error: str  # at most 500 characters


class HangDocumentBase(TypedDict):
    """The hang document of a run's or a folder's flight-recorder dumps (registry/hang.py
    ``job_document``; docs/http_api.md ``GET hang``), keys in the order the JSON shows them."""

    ranks: list[DumpRankRow]  # one row per dump read (analysis/hang.py)
    groups: list[dict[str, Any]]  # the process groups, with their stuck instance
    findings: list[dict[str, Any]]  # ranked: the root cause first (analysis/hang_verdict.py)
    unreadable: list[UnreadableDump]  # dumps that could not be read
    latest_ns: int | None  # the latest time any dump recorded (ns)
    verdict: list[str]  # the findings' sentences in order
    traces: dict[str, HangTrace]  # rank → the profiler trace of that rank
    dumps: int  # dump files found (read or not)


class HangDocument(HangDocumentBase, total=False):
    """:class:`HangDocumentBase` and what a folder's document adds (``kinetoscope hang DIR``)."""

    folder: str
    trace_errors: list[HangTraceError]


class DistributedResultBase(TypedDict):
    """The distributed view of a run's ranks at one span (registry/distributed.py; docs/http_api.md
    ``GET distributed``), keys in the order the JSON shows them."""

    state: str  # "ready"
    run: str
    span: str
    spans: list[str]  # the spans of the run's files
    files: int  # the run's files at this span
    ranks_loaded: int  # those that loaded: the ranks compared
    reason: str | None  # why there is no view (None with one)
    view: DistributedView | None  # analysis/distributed.py combine_ranks; None with fewer than two ranks
    messages: list[str]  # the files' own failures, how ranks were read, matching problems


class DistributedResult(DistributedResultBase, total=False):
    """:class:`DistributedResultBase` and, with one rank or none, that rank's own view."""

    notes: list[str]  # how the one rank's number was read
    single_rank: SingleRankView | None  # analysis/distributed.py single_rank_view


# The rows of the report's distributed section: each a selection, in this key order, of the rows of
# analysis/distributed.py ``combine_ranks`` (registry/report_distributed.py takes its columns from here).
class RankSummaryRow(TypedDict):
    """One rank: its mean step split by overlap (analysis/distributed.py) and its collectives' time (µs)."""

    rank: int
    worker: str
    computation_us: float
    overlap_us: float
    communication_us: float
    other_us: float
    transfer_us: float  # its collectives' data transfer (the instance's shortest kernel)
    sync_us: float  # its collectives' waiting for the other ranks


class CollectiveSummaryRow(TypedDict):
    """One collective type across the ranks (bytes, µs, GB/s)."""

    name: str
    calls: int
    bytes: int | None  # None when no call's size is known
    calls_without_bytes: int
    group_size: int
    transfer_us: float
    sync_us: float
    algbw_gbps: float | None  # None without sized calls with transfer time
    busbw_gbps: float | None
    bus_factor: float


class ArrivalSummaryRow(TypedDict):
    """One rank's arrivals at collectives: the stragglers' evidence (analysis/stragglers.py, µs)."""

    rank: int
    instances: int  # matched collective instances it took part in
    last: int  # those it arrived at last
    wait_total_us: float  # how long the others waited for it
    wait_mean_us: float
    straggler: bool
    text: str


class GroupRankRow(TypedDict):
    """One member rank of a process group (analysis/process_groups.py; µs, bytes)."""

    rank: int
    calls: int
    time_us: float
    bytes: int | None  # None when no kernel's size is known
    exposed_us: float


class GroupSummary(TypedDict):
    """One process group of the report (analysis/process_groups.py ``combine_groups``; means per member
    rank: µs, bytes, GB/s)."""

    name: str
    description: str | None
    role: str | None
    ranks: list[int]
    size: int
    calls: int
    time_us: float
    bytes: int | None
    exposed_us: float
    bandwidth_gbps: float | None
    by_rank: list[GroupRankRow]


class CollectiveTypeMatching(TypedDict):
    """How the instances of one collective type matched across the ranks."""

    name: str
    matched: int
    unmatched: int


class MatchingSummary(TypedDict):
    """How collective instances were matched across the ranks (analysis/collective_matching.py)."""

    method: str
    by_type: list[CollectiveTypeMatching]


class DistributedSummary(TypedDict):
    """The report's ``distributed`` section (registry/report_distributed.py ``distributed_summary``)."""

    world_size: int
    ranks: list[RankSummaryRow]
    collectives: list[CollectiveSummaryRow]
    bandwidth_caveat: str | None
    matching: MatchingSummary
    stragglers: list[int]  # their ranks
    groups: list[GroupSummary]
    arrivals: list[ArrivalSummaryRow]
    messages: list[str]


class DiffDocumentBase(TypedDict):
    """Baseline vs experiment (registry/report.py ``diff_document``; docs/http_api.md ``GET diff``)."""

    steps: StepDiff  # the Overview's categories: base, exp and delta of the average step (µs)
    thresholds: dict[str, float]  # the verdict rule's thresholds (analysis/diff.py)
    category_labels: dict[str, str]
    operators: list[OperatorDiffRow]  # the tree level below ``path`` (the UI), or the whole tree flattened
    kernels: list[KernelDiffRow]
    waterfall: Waterfall  # the level's rows, remainder and step-total Δ (µs per step)


class DiffDocument(DiffDocumentBase, total=False):
    """:class:`DiffDocumentBase` and, for the UI, the operator-tree ``path`` its rows are below."""

    path: list[str]


class GateExplain(TypedDict):
    """What explains a gate's difference (registry/gate.py ``explain``; µs per average step)."""

    operators: list[dict[str, Any]]  # path, status, compared, baseline_us, experiment_us, delta_us
    kernels: list[dict[str, Any]]  # name, status, baseline/experiment/delta_per_step_us


class GateDocument(TypedDict):
    """The CI regression gate's document (registry/gate.py ``gate_document``)."""

    verdict: str  # regression, improvement or no_regression (analysis/regression.py)
    method: dict[str, Any]  # the test and its constants
    checks: list[dict[str, Any]]  # one per --fail-on rule (analysis/regression.py compare)
    explain: GateExplain


# -- the report document (registry/report.py, report_artifacts.py, report_distributed.py) ------------
class WorkerDistributed(TypedDict):
    """A single-rank worker's own process groups in the report (registry/report_distributed.py)."""

    groups: list[GroupSummary]  # µs, bytes, GB/s
    messages: list[str]


class RankOverview(TypedDict):
    """A worker's Overview, what the advice across ranks reads (registry/report_distributed.py ``run_advice``)."""

    worker: str
    overview: Overview | None  # None when the file did not load


class WorkerReportBase(TypedDict):
    """One trace file of ``kinetoscope report`` (registry/report.py ``worker_entry``): its Overview and,
    when analysed, the report's per-worker sections (None when the file did not load)."""

    worker: str
    span: str
    path: str  # logdir-relative
    error: str | None
    warnings: list[str]
    notes: list[str]
    overview: Overview | None
    operators: list[OperatorReportRow] | None  # registry/table_rows.py (µs)
    kernels: list[KernelReportRow] | None
    modules: list[ModuleNode] | None  # the module tree (analysis/modules.py), or None without one
    memory: MemorySummary | None  # None when the file did not load
    insights: ReportInsights | None
    graphs: GraphsReport | None  # graph_siblings.graphs_report; None when the file did not load


class WorkerReport(WorkerReportBase, total=False):
    """:class:`WorkerReportBase` and, for the worker of a single-rank run, its own process groups and
    critical path (registry/report_distributed.py ``add_distributed``)."""

    distributed: WorkerDistributed
    critical_path: list[dict[str, Any]]  # per step (µs; analysis/critical_path_combine.py)


class SnapshotDeviceItemBase(TypedDict):
    """One device of an allocator snapshot in the report (bytes)."""

    device: str
    peak_active_bytes: int
    allocated_at_dump_bytes: int | None
    largest: list[dict[str, Any]]  # bytes, frame


class SnapshotDeviceItem(SnapshotDeviceItemBase, total=False):
    """:class:`SnapshotDeviceItemBase` and, when the report matched it, the bytes alive at its peak."""

    alive_at_peak: dict[str, Any]  # by_operator/by_step/by_module/by_frame: top rows (name, bytes); trace


class SnapshotItemBase(TypedDict):
    """An allocator snapshot in the report (registry/report_artifacts.py ``snapshot_item``)."""

    path: str
    error: str | None
    devices: list[SnapshotDeviceItem]


class SnapshotItem(SnapshotItemBase, total=False):
    """:class:`SnapshotItemBase` and, for a snapshot that was read, its OOM (None without one)."""

    oom: dict[str, Any] | None  # report_artifacts.oom_item (bytes, %)


class SnapshotRankGroup(TypedDict):
    """A per-rank snapshot group in the report (registry/report_artifacts.py ``rank_groups``; bytes)."""

    ranks: list[dict[str, Any]]  # rank, path, peak_active_bytes
    median_peak_bytes: int | None
    outlier_rank: int | None
    outlier_peak_to_median: float | None
    outlier_vs_median_pct: float | None  # analysis/snapshot_ranks.py: the one percentage


class MemProfilerItemBase(TypedDict):
    """A finetuning-scheduler MemProfiler file in the report (registry/report_artifacts.py
    ``memprofiler_item``)."""

    path: str
    kind: str  # memprofiler_stats or memprofiler_log
    error: str | None


class MemProfilerItem(MemProfilerItemBase, total=False):
    """:class:`MemProfilerItemBase` and what a file that was read adds: a log's size, a stats file's
    rank, warnings and snapshots (values: bytes or counts)."""

    size_bytes: int
    truncated: bool
    rank: int | None
    warnings: list[str]
    snapshots: list[dict[str, Any]]  # key, function, iteration, phase, values


class ReportHang(TypedDict):
    """A run's flight-recorder verdict in the report (the full document is ``kinetoscope hang``'s)."""

    dumps: int
    verdict: list[str]
    findings: list[dict[str, Any]]
    unreadable: list[UnreadableDump]


class RunReportBase(TypedDict):
    """A run of ``kinetoscope report``: its trace files, one per worker and span."""

    name: str  # logdir-relative, "." for the logdir itself
    workers: list[WorkerReport]


class RunReport(RunReportBase, total=False):
    """:class:`RunReportBase` and the sections the report's builders add, keys in the order the JSON
    shows them: the distributed view and the advice of several ranks, then (every run of a finished
    report) ``snapshots``, the MemProfiler files, ``snapshot_ranks`` (every run) and the hang verdict."""

    distributed: DistributedSummary
    critical_path: list[dict[str, Any]]  # per step across the ranks (µs)
    recommendations: list[RunAdvice]  # the advice that holds on several ranks (analysis/advice_ranks.py)
    snapshots: list[SnapshotItem]
    memprofiler: list[MemProfilerItem]
    snapshot_ranks: list[SnapshotRankGroup]
    hang: ReportHang | None


class ReportDocument(TypedDict):
    """``kinetoscope report --json`` (registry/report.py ``report_document``): one entry per run."""

    runs: list[RunReport]
