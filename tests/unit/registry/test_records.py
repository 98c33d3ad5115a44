"""The typed records at the registry boundary hold the documents their builders make: every required key
of a record is in the document, and the document has no key its record lacks, down every nested record
(so a record that drifted from its builder is found here, not by a caller's KeyError). The documents
are built from the repository's own samples and synthetic snapshots."""

from __future__ import annotations

import io
import json
import pickle
import sys
import types
import typing
from pathlib import Path

import pytest
from synth import graphs as synth_graphs
from synth.advice import allocator_trace, gpu_summary, item_copy_trace, outside_trace_trace, with_events
from synth.composer import composer_trace
from synth.idle import tiny_kernels
from synth.oom import MIB, rank_snapshot

from tb_plugin.analysis import advice_ranks
from tb_plugin.analysis.advice_ranks import RunAdvice
from tb_plugin.analysis.compiled_regions import CompiledRegions, compiled_regions
from tb_plugin.analysis.gpu_idle import StreamIdleRow
from tb_plugin.analysis.graph_bands import ReplayBands
from tb_plugin.analysis.graphs import GraphsDocument, graphs_document
from tb_plugin.analysis.kernels import KernelRow
from tb_plugin.analysis.memory import MemorySummary
from tb_plugin.analysis.modules import ModuleNode
from tb_plugin.analysis.operators import OperatorRow
from tb_plugin.analysis.overview import Overview, compute_overview
from tb_plugin.analysis.recommendations import Recommendation, recommend
from tb_plugin.api.table_columns import KERNEL_GROUPS, OPERATOR_GROUPS
from tb_plugin.cli.report import run_report
from tb_plugin.cli.tables import print_tables
from tb_plugin.interfaces import queries
from tb_plugin.registry import graph_siblings, report, report_distributed
from tb_plugin.registry import hang as hang_registry
from tb_plugin.registry.records import (
    AdviceDocument,
    DiffDocument,
    DistributedResult,
    DistributedSummary,
    GraphsReport,
    HangDocument,
    HangTrace,
    InsightsDocument,
    ReportDocument,
    SnapshotRanksDocument,
    WorkerReport,
)
from tb_plugin.registry.runs import RunRegistry
from tb_plugin.registry.table_rows import KernelReportRow, KernelTableRow, OperatorReportRow, OperatorTableRow
from tb_plugin.trace.decode import decode_trace

pytestmark = pytest.mark.skipif(sys.version_info < (3, 10), reason="the records' `X | None` hints evaluate on 3.10+")

REPO_SAMPLES = Path(__file__).resolve().parents[3] / "samples"


def conforms(value: object, hint: object, where: str = "doc") -> list[str]:
    """Where ``value`` differs from the type ``hint`` in the keys of its TypedDicts (their values'
    other types are not checked): ``[]`` when it conforms."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return []
        records = [a for a in args if a is not type(None)]
        return conforms(value, records[0], where) if len(records) == 1 else []
    if origin is list and isinstance(value, list):
        return [p for i, item in enumerate(value) for p in conforms(item, args[0], f"{where}[{i}]")]
    if not typing.is_typeddict(hint):
        return []
    if not isinstance(value, dict):
        return [f"{where}: a {type(value).__name__}, not a {hint.__name__}"]
    required, optional = hint.__required_keys__, hint.__optional_keys__
    problems = [f"{where}: no {key!r} ({hint.__name__})" for key in sorted(required - set(value))]
    problems += [f"{where}: {key!r} is not in {hint.__name__}" for key in sorted(set(value) - required - optional)]
    hints = typing.get_type_hints(hint)
    for key in sorted(set(value) & set(hints)):
        problems += conforms(value[key], hints[key], f"{where}[{key!r}]")
    return problems


def loaded(folder: str) -> RunRegistry:
    """A registry of a repository sample with every file loaded."""
    reg = RunRegistry(str(REPO_SAMPLES / folder))
    reg.scan()
    for st in reg.files():
        reg.load(st)
    return reg


def report_json(folder: Path) -> dict:
    out, err = io.StringIO(), io.StringIO()
    run_report(str(folder), None, True, False, out, err, executor="local")
    return json.loads(out.getvalue())


@pytest.mark.parametrize(
    "folder", ["gpu_cudagraph", "gpu_compile", "synthetic_ddp", "fts_memprofiler", "fr_gloo_skip", "gpu_snapshot"]
)
def test_the_report_document_conforms_to_its_record(folder):
    doc = report_json(REPO_SAMPLES / folder)
    assert doc["runs"], folder
    assert conforms(doc, ReportDocument) == []


def test_the_report_of_several_ranks_has_its_distributed_sections():
    (run,) = report_json(REPO_SAMPLES / "synthetic_ddp")["runs"]
    assert {"distributed", "critical_path", "snapshots", "snapshot_ranks"} <= set(run)
    assert run["distributed"]["world_size"] == 2 and len(run["workers"]) == 2
    summary = run["distributed"]  # rows that the report's conformance check walked into
    assert [len(summary[k]) for k in ("ranks", "collectives", "groups", "arrivals")] == [2, 1, 1, 2]
    assert len(summary["groups"][0]["by_rank"]) == 2 and summary["matching"]["by_type"][0]["matched"] == 3
    assert conforms(summary, DistributedSummary) == []
    assert tuple(summary["ranks"][0]) == report_distributed.summary_columns().ranks  # the columns are the record's keys
    assert tuple(summary["collectives"][0]) == report_distributed.summary_columns().collectives
    assert tuple(summary["arrivals"][0]) == report_distributed.summary_columns().arrivals
    assert tuple(summary["groups"][0]) == report_distributed.summary_columns().groups


def test_the_views_documents_conform_to_their_records():
    found = 0
    for folder in ("gpu_cudagraph", "gpu_compile", "torch_cpu_cnn"):
        reg = loaded(folder)
        for st in reg.files():
            views = reg.views(st)
            assert st.overview is not None
            assert conforms(report.advice_document(st.overview, 5), AdviceDocument) == []
            assert conforms(views.memory_summary(), MemorySummary) == []
            assert conforms(views.graphs(), GraphsReport) == []
            assert conforms(graph_siblings.graphs_report(views, max_replays=1), GraphsReport) == []
            assert conforms(views.replay_bands(), ReplayBands) == []
            assert conforms(views.insights(), InsightsDocument) == []
            found += 1
    assert found == 3
    memory = RunRegistry(str(REPO_SAMPLES / "gpu_compile"))
    memory.scan()
    (st,) = memory.files()
    memory.load(st)
    summary = memory.views(st).memory_summary()  # a memory section with rows was checked
    assert [d["device"] for d in summary["devices"]] == ["CPU", "GPU0"] and len(summary["top_operators"]) == 20
    assert list(summary["top_operators"][0]) == queries.MEMORY_TOP_COLUMNS  # the columns are the record's keys
    cuda = RunRegistry(str(REPO_SAMPLES / "gpu_cudagraph"))
    cuda.scan()
    (st,) = cuda.files()
    cuda.load(st)
    assert cuda.views(st).graphs()["cuda_graphs"]["replays"] == 3  # a document with rows was checked
    calls = report.advice_document(st.overview, 5)["runtime_calls"]["rows"]  # and runtime-call rows
    assert len(calls) == 5 and calls[0]["operators"] and list(calls[0]) == report.RUNTIME_CALL_KEYS
    found = cuda.views(st).insights()  # and insights with GPU, sync and exposed rows
    assert [len(found["idle"]["gpus"]), len(found["exposed"]["gpus"])] == [1, 1] and found["syncs"]["by_operator"]
    streams = found["idle"]["per_stream"]  # and per-stream idle rows, with their record's keys in its order
    assert streams and list(streams[0]) == list(StreamIdleRow.__annotations__)


def _synthetic_recommendations() -> list[Recommendation]:
    """The rules no repository sample fires: byte-based, per-GPU and step rules, the allocator and
    blocking-copy calls, torch.compile's."""
    gpu = gpu_summary(utilization_pct=20.0)
    step = {"kernel_us": 200.0, "dataloader_us": 10.0, "other_us": 790.0}
    recs = recommend(
        {"total_us": 1750.0, "kernel_us": 200.0, "other_us": 1540.0, "dataloader_us": 10.0},
        [1000.0, 1000.0, 1000.0, 4000.0],
        ["1", "2", "3", "4"],
        [gpu],
        {0: 500.0},
        {0: 79 * 2**30},
        step_breakdown=[step, step, step, dict(step, other_us=3790.0)],
        window_us=7000.0,
    )
    for doc in (allocator_trace(), item_copy_trace()):
        recs += compute_overview(decode_trace(json.dumps(doc).encode()))["recommendation_details"]
    compiled = compiled_regions(decode_trace(json.dumps(synth_graphs.compiled_steps()).encode()))
    assert compiled is not None
    return recs + compiled["advice"]


def test_recommendation_rows_conform_to_their_record():
    """Every rule's row, from the samples' reports and synthetic traces, has exactly keys of
    :class:`Recommendation` (each rule only its own values)."""
    recs = [
        rec
        for folder in ("gpu_cudagraph", "gpu_compile", "synthetic_ddp", "synthetic_resnet")
        for run in report_json(REPO_SAMPLES / folder)["runs"]
        for worker in run["workers"]
        for rec in worker["overview"]["recommendation_details"]
    ]
    recs += _synthetic_recommendations()
    assert conforms(recs, list[Recommendation]) == []
    assert {r["rule"] for r in recs} >= {
        "dataloader",
        "communication",
        "low_utilization",
        "mixed_precision",
        "memory_peak",
        "unbalanced_steps",
        "cuda_graphs",
        "cpu_overhead",
        "allocator",
        "blocking_copy",
        "synchronize",
        "graphs.capture_missing",
        "compile.graph_breaks",
        "compile.recompilation",
    }


def test_graph_rows_conform_to_their_records(tmp_path):
    """Graph, kernel, replay and capture rows of every status, an attribution from another trace of the
    run (``capture_file``) included, have exactly their records' keys."""
    docs = [
        graphs_document(decode_trace(json.dumps(doc).encode()))
        for doc in (synth_graphs.captured_replays(), synth_graphs.ambiguous_captures(), synth_graphs.partial_capture())
    ]
    capture, replayed = synth_graphs.split_capture()
    for name, doc in (("a_capture", capture), ("b_replay", replayed)):
        (tmp_path / "job").mkdir(exist_ok=True)
        (tmp_path / "job" / f"{name}.pt.trace.json").write_text(json.dumps(doc))
    reg = RunRegistry(str(tmp_path))
    reg.scan()
    for st in reg.files():
        reg.load(st)
    st = reg.find("job", "b_replay", "1")
    assert st is not None
    others = lambda: graph_siblings.sibling_capture_tables(reg, st)
    docs.append(graph_siblings.graphs_report(reg.views(st), others=others)["cuda_graphs"])
    for doc in docs:
        assert conforms(doc, GraphsDocument) == []
    rows = [g for doc in docs for g in doc["graph_list"]]
    assert {g["status"] for g in rows} == {"attributed", "ambiguous", "partial", "other_trace"}
    assert all(g["kernels"] for g in rows) and all(doc["replay_list"] for doc in docs)
    assert sum(len(doc["captures"]) for doc in docs) >= 3
    assert list(rows[-1])[-1] == "capture_file"  # added last: the JSON's key order


def test_snapshot_ranks_conforms_to_its_record(tmp_path):
    for rank, peak in ((0, 100 * MIB), (1, 150 * MIB)):
        (tmp_path / f"rank{rank}_memory_snapshot.pickle").write_bytes(pickle.dumps(rank_snapshot(peak, rank)))
    reg = RunRegistry(str(tmp_path))
    reg.scan()
    art = reg.find_artifact(".", "rank1_memory_snapshot.pickle")
    assert art is not None
    reg.load_artifact(art)
    doc = reg.snapshot_ranks(art)
    assert [r["rank"] for r in doc["ranks"]] == [0, 1] and doc["outlier_rank"] is not None
    assert conforms(doc, SnapshotRanksDocument) == []


def test_a_record_that_drifts_is_found():
    assert conforms({"runs": [{"name": ".", "workers": [], "extra": 1}]}, ReportDocument) == [
        "doc['runs'][0]: 'extra' is not in RunReport"
    ]
    assert conforms({}, ReportDocument) == ["doc: no 'runs' (ReportDocument)"]


def test_the_text_report_names_a_file_without_an_overview():
    """A file neither failed nor loaded (no Overview) prints as not analysed, never a TypeError."""
    worker = dict.fromkeys(WorkerReport.__required_keys__)  # every section None: the file has no Overview
    worker.update(worker="w", span="1", path="w.pt.trace.json", warnings=[], notes=[])
    out = io.StringIO()
    print_tables({"runs": [{"name": ".", "workers": [worker]}]}, out)
    assert "ERROR: not analysed" in out.getvalue()


def test_the_table_rows_conform_to_their_records():
    """The operator, kernel and module rows of every grouping: the analysis rows, the report's and
    the tab's (the routes', MCP's and the notebook's) have exactly their records' keys."""
    counts = {}
    for folder in ("gpu_cudagraph", "gpu_compile", "torch_cpu_cnn"):
        reg = loaded(folder)
        for st in reg.files():
            views = reg.views(st)
            for g in OPERATOR_GROUPS:
                assert conforms(views.operators(g), list[OperatorRow]) == []
                assert conforms(queries.operators(views, g), list[OperatorTableRow]) == []
                counts[folder, g] = len(views.operators(g))
            for g in KERNEL_GROUPS:
                assert conforms(views.kernels(g), list[KernelRow]) == []
                assert conforms(queries.kernels(views, g), list[KernelTableRow]) == []
                counts[folder, g] = len(views.kernels(g))
            assert conforms(views.modules(), typing.Optional[list[ModuleNode]]) == []
            counts[folder, "modules"] = len(queries.module_rows(views.modules()))
            assert conforms(report.operator_table(views), list[OperatorReportRow]) == []
            assert conforms(report.kernel_table(views), list[KernelReportRow]) == []
    # rows were checked: every grouping's, GPU kernels and module trees
    assert counts["gpu_compile", "call_stack"] == 410 and counts["gpu_cudagraph", "kernel_op_config"] == 69
    assert counts["gpu_cudagraph", "graph"] == 49 and counts["torch_cpu_cnn", "modules"] == 10
    assert report.OPERATOR_KEYS == list(OperatorReportRow.__annotations__)  # the report's columns are its keys
    assert report.KERNEL_KEYS == list(KernelReportRow.__annotations__)


def test_the_overview_rows_conform_to_their_records():
    """The Overview's step, "About this trace", trainer-event and system-metric rows: a sample's and
    synthetic traces' (both kinds of note, Composer's events and counters)."""
    capture = with_events(
        tiny_kernels(200),
        ("cudaStreamBeginCapture", "cuda_runtime", 0, 1),
        ("cudaStreamEndCapture", "cuda_runtime", 7990, 5),
    )
    composer = {"traceEvents": composer_trace()}
    overviews = [
        compute_overview(decode_trace(json.dumps(d).encode())) for d in (outside_trace_trace(), capture, composer)
    ]
    (st,) = loaded("gpu_cudagraph").files()
    assert st.overview is not None
    for ov in [*overviews, st.overview]:
        assert conforms(ov, Overview) == []
    assert [a["kind"] for ov in overviews for a in ov["about"]] == ["work_outside_trace", "graph_capture"]
    rows = [len(overviews[2][k]) for k in ("steps", "trainer_events", "system_metrics")]
    assert rows == [4, 2, 7] and len(st.overview["steps"]) == 3  # rows were checked
    assert list(st.overview["steps"][0]) == queries.STEP_COLUMNS  # the columns are the record's keys


def test_the_hang_document_conforms_to_its_record():
    """A folder's hang document: its dump, unreadable-dump and trace rows have exactly their records' keys."""
    doc = hang_registry.folder_document(str(REPO_SAMPLES / "fr_gloo_skip"))
    assert conforms(doc, HangDocument) == [] and len(doc["ranks"]) == 4
    bad = {"path": "nccl_trace_rank_9", "rank": 9, "error": "not a dump"}
    linked = hang_registry.traces_by_rank(["host_rank0.1700000000000.pt.trace.json"])
    assert [list(t) for t in linked.values()] == [list(HangTrace.__annotations__)]  # a trace row's keys
    doc = hang_registry.job_document([], [bad], linked)  # with an unreadable dump and a linked trace
    assert conforms(doc, HangDocument) == [] and doc["unreadable"] == [bad] and doc["traces"] == {"0": linked[0]}


def test_the_diff_document_conforms_to_its_record():
    """The diff of two samples, the CLI's (the whole tree flattened) and the UI's (one level): its step,
    operator, kernel and waterfall rows have exactly their records' keys."""
    sides = []
    for folder in ("gpu_compile", "gpu_cudagraph"):
        reg = loaded(folder)
        st = reg.files()[0]
        sides += [st, reg.views(st)]
    flat = report.diff_document(*sides)
    level = report.diff_document(*sides, path=[])
    assert conforms(flat, DiffDocument) == [] and conforms(level, DiffDocument) == []
    assert len(flat["operators"]) > len(level["operators"]) > 0 and flat["kernels"]  # rows were checked
    assert {r["status"] for r in flat["kernels"]} == {"added", "removed", "present"}


def test_the_distributed_view_conforms_to_its_record():
    """The distributed result of two ranks (``view``) and of one (``single_rank``) have exactly their
    records' top-level keys, and the view's matching and instance counts theirs."""
    two = loaded("synthetic_ddp")
    (run,) = {st.run for st in two.files()}
    got = two.distributed(run)
    assert got["view"] is not None and conforms(got, DistributedResult) == []
    assert got["view"]["ranks_present"] == 2 and got["view"]["matching"]["by_type"]  # rows were checked
    one = loaded("gpu_cudagraph")
    (st,) = one.files()
    alone = one.distributed(st.run)
    assert alone["view"] is None and alone.get("single_rank") is not None
    assert conforms(alone, DistributedResult) == []


def test_the_compiled_regions_rows_conform_to_their_records():
    """A sample's and a synthetic trace's compiled regions: region, Triton-kernel and step rows."""
    synthetic = compiled_regions(decode_trace(json.dumps(synth_graphs.compiled_steps()).encode()))
    reg = loaded("gpu_compile")
    (st,) = reg.files()
    sample = reg.views(st).graphs()["compiled"]
    for doc in (synthetic, sample):
        assert doc is not None and conforms(doc, CompiledRegions) == []
        assert doc["regions"] and doc["steps"]  # rows were checked
    assert sample is not None and sample["triton_kernels"]


def test_the_run_advice_rows_conform_to_their_record():
    """Advice that holds on several ranks, of time and of memory rules: each row has exactly the keys of
    :class:`RunAdvice` (a time rule its ``addressed_us``/``threshold_us``, a memory rule ``addressed_bytes``)."""
    recs = _synthetic_recommendations()
    rows = advice_ranks.across_ranks([(0, recs), (1, recs), (2, recs[1:])])
    assert conforms(rows, list[RunAdvice]) == []
    assert {"addressed_us" in r for r in rows} == {True, False} and rows[0]["rank_count"] == 3
