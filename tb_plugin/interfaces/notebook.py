"""The notebook API, published as ``import kinetoscope``::

    t = kinetoscope.load("runs/resnet", worker="worker0", span="1")   # a run directory or a trace file
    t.overview(); t.operators(group_by="shape"); t.kernels(); t.modules(); t.memory(); t.insights(); t.graphs()
    t.recommendations(); t.runtime_calls()
    kinetoscope.load_run("runs/ddp").distributed()
    kinetoscope.diff(base, exp)
    kinetoscope.hang("dumps/")        # why a job hung: its flight-recorder dumps, as DataFrames

Paths are local or bucket URLs (s3://, gs://, az://); files are parsed once into the parse cache, as
the TensorBoard tab and ``kinetoscope report`` do. Every number comes from the same functions as the
tab (the registry's views, :mod:`tb_plugin.registry.report`): their definitions are in docs/METRICS.md.
Tables are pandas DataFrames (units in the column names: ``host_self_us``, ``size_bytes``, ``_pct``)
when pandas is installed (``pip install kinetoscope[notebook]``), else lists of dicts; set
``KINETOSCOPE_TABLES=records`` for lists of dicts anyway.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping, Sequence

from ..analysis.overview import Overview
from ..api.table_columns import MEMORY_STAT_COLUMNS
from ..errors import UnreadableFileError
from ..registry import graph_siblings, report, report_distributed
from ..registry.cache import ParseCache
from ..registry.graph_siblings import sibling_capture_tables
from ..registry.interface import Registry
from ..registry.runs import RunRegistry
from ..registry.states import FileState
from ..registry.views import FileViews
from ..settings import Settings, current
from ..storage.fs import open_logdir
from ..storage.remote import StorageError, describe_error
from . import queries
from .queries import Invalid

__all__ = ["Invalid", "LoadError", "PathFrames", "Run", "Trace", "diff", "hang", "load", "load_run"]


class LoadError(UnreadableFileError, RuntimeError):
    """A path that does not exist, holds no trace, or a trace that failed to load (the message says
    why). A :class:`~tb_plugin.errors.KinetoscopeError` (and a ``RuntimeError``)."""


Table = Any  # a pandas DataFrame, or a list of dicts (no pandas, or KINETOSCOPE_TABLES=records)


def table(rows: Sequence[Mapping[str, Any]], columns: list[str] | None = None) -> Table:
    """``rows`` as a pandas DataFrame (``columns`` in that order) when pandas is installed, else the list."""
    if current().tables != "records":
        try:
            import pandas as pd
        except ImportError:
            pd = None
        if pd is not None:
            return pd.DataFrame.from_records(rows, columns=columns)
    if columns is None:
        return rows
    return [{c: r.get(c) for c in columns} for r in rows]


def _flatten(row: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts as flat columns: ``{"delta": {"host_total_us": 1}}`` → ``delta_host_total_us``."""
    out: dict[str, Any] = {}
    for k, v in row.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}_"))
        else:
            out[prefix + k] = v
    return out


class Trace:
    """One trace file (a worker's span of a run), loaded. Every method reads the tab's views."""

    def __init__(self, registry: Registry, state: FileState) -> None:
        self.registry, self.state = registry, state

    def __repr__(self) -> str:
        return f"<kinetoscope.Trace {self.state.entry.path} worker={self.worker!r} span={self.span!r}>"

    worker = property(lambda self: self.state.worker, doc="the worker (rank) name from the file name")
    span = property(lambda self: self.state.span, doc="the span (1, 2, … by timestamp within the worker)")
    path = property(lambda self: self.state.entry.path, doc="the file's path (or bucket key)")
    warnings = property(lambda self: list(self.state.warnings), doc="what the loader warned about")

    @property
    def views(self) -> FileViews:
        """The file's :class:`~tb_plugin.registry.views.FileViews` (re-read from the parse cache if evicted)."""
        return self.registry.views(self.state)

    def overview(self) -> Overview:
        """The Overview tab's document (``kinetoscope report --json``'s ``overview``): ``average`` and
        ``steps`` split into the eight categories (µs), ``gpus`` (utilization, SM efficiency, occupancy,
        tensor-core share, %), ``recommendations``."""
        doc = report.overview_document(self.registry, self.state)
        if doc is None:  # not loaded (evicted and not reloaded)
            raise LoadError(f"{self.state.entry.rel}: not loaded")
        return doc

    def steps(self) -> Table:
        """One row per step: bounds and the eight breakdown categories (µs), as the Overview's chart."""
        return table(self.overview()["steps"], queries.STEP_COLUMNS)

    def operators(self, group_by: str = "name") -> Table:
        """The Operator tab's table: per operator (``group_by="name"``), per operator and input shapes
        (``"shape"``) or per operator and call stack (``"stack"``): ``calls``, ``host_self_us``,
        ``host_total_us``, ``device_self_us``, ``device_total_us`` (device time of the kernels it
        launched), tensor-core shares and FLOPs; most device self time first."""
        g = queries.grouping(group_by, queries.OPERATOR_GROUPS, "group_by")
        return table(queries.operators(self.views, g), queries.operator_columns(g))

    def kernels(self, group_by: str = "name") -> Table:
        """The GPU Kernel tab's table: per kernel name (``group_by="name"``) or per kernel, launching
        operator and launch configuration (``"op"``), or per kernel and CUDA graph (``"graph"``, with
        ``graph``: the graph index, None outside graph replays): ``calls``, ``total_us``, ``mean_us``, ``min_us``,
        ``max_us``, ``blocks_per_sm``, ``achieved_occupancy_pct``, ``tensor_cores``; most time first."""
        g = queries.grouping(group_by, queries.KERNEL_GROUPS, "group_by")
        return table(queries.kernels(self.views, g), queries.kernel_columns(g))

    def modules(self) -> Table:
        """The Module tab's tree as rows (``path``, ``depth``, ``occurrences``, ``operators`` and host/device
        self/total µs); empty when the trace has no ``nn.Module`` annotations."""
        return table(queries.module_rows(self.views.modules()), queries.MODULE_COLUMNS)

    def memory(self) -> dict[str, Any]:
        """``devices``: per memory device its peak allocated bytes (and when, µs) and peak reserved bytes;
        ``top_operators``: the operators that allocate most (bytes) — the report's ``memory`` section."""
        doc = self.views.memory_summary()
        return {
            "devices": table(doc["devices"], queries.MEMORY_DEVICE_COLUMNS),
            "top_operators": table(doc["top_operators"], queries.MEMORY_TOP_COLUMNS),
        }

    def memory_stats(self, device: str = "GPU0") -> Table:
        """The Memory tab's per-operator table of one device (``"GPU0"``, ``"CPU"``): allocations, bytes."""
        if device not in self.views.memory_devices():
            raise Invalid(
                f"device must be one of {', '.join(self.views.memory_devices()) or '(none: no memory events)'}"
            )
        return table(self.views.memory_stats(device), MEMORY_STAT_COLUMNS)

    def insights(self) -> dict[str, Any]:
        """The Insights tab's document: ``idle`` (GPU idle time split into host wait, short gaps and
        other, µs), ``launch`` (launch delay percentiles, overhead vs queueing as time-unions), ``exposed``
        (communication and copies not hidden behind compute), ``syncs``, and the file's one list of
        ``recommendations`` with ``recommendation_details``, ``about`` and ``runtime_calls``."""
        return dict(self.views.insights())

    def graphs(self) -> dict[str, Any]:
        """CUDA graph replays and torch.compile regions, as ``kinetoscope report --json``'s ``graphs``:
        ``summary`` (replays, graphs, kernel µs in graphs and its %, the kernel-time ``accounting``),
        tables ``graphs`` (per graph: replays, µs, ``status`` and ``note`` of its capture match),
        ``replays`` (one row each), ``graph_kernels`` (per graph, kernel name and, when attributed, the
        capturing ``op`` and Python ``frame``), ``captures``, ``compiled_regions``, ``triton_kernels``,
        ``compile_steps`` (recompilations, time between regions per step), and ``advice``."""
        found = graph_siblings.graphs_report(
            self.views,
            max_replays=len(self.views.graphs()["cuda_graphs"]["replay_list"]),
            others=lambda: sibling_capture_tables(self.registry, self.state),
        )
        cuda = found["cuda_graphs"]
        compiled = found["compiled"] or {"regions": [], "triton_kernels": [], "steps": [], "advice": []}
        graphs = [{k: v for k, v in g.items() if k != "kernels"} for g in cuda["graph_list"]]
        return {
            "summary": {
                k: cuda[k]
                for k in ("replays", "graphs", "kernel_us", "graph_kernel_us", "graph_kernel_pct", "accounting")
            },
            "graphs": table(graphs),
            "replays": table(cuda["replay_list"]),
            "graph_kernels": table([k for g in cuda["graph_list"] for k in g["kernels"]]),
            "captures": table(cuda["captures"]),
            "compiled_regions": table(compiled["regions"]),
            "triton_kernels": table(compiled["triton_kernels"]),
            "compile_steps": table(compiled["steps"]),
            "advice": cuda["advice"] + compiled["advice"],
        }

    def recommendations(self) -> Table:
        """The file's one list of recommendations, one row each (the Overview's, the report's, MCP's):
        ``rule``, ``addressed_us`` (the time it addresses), ``threshold_us`` (its rule's threshold),
        ``basis`` (``average_step``, ``steps_window`` or ``median_step``),
        ``addressed_bytes``/``threshold_bytes`` (memory advice) and ``text``; most important first."""
        doc = report.advice_document(self.overview())
        return table(doc["recommendation_details"], report.RECOMMENDATION_KEYS)

    def runtime_calls(self) -> Table:
        """The runtime-calls table: per runtime/driver API its ``calls``, ``total_us``, ``window_us`` and
        ``window_pct`` (inside the steps window), whether it ``blocks`` on the device (``blocking_calls``,
        ``blocking_us``, ``blocking_kind``), and the ``operators`` and Python ``frames`` that issued most of
        its time (lists of ``{"name", "calls", "total_us"}``); most time first."""
        doc = report.advice_document(self.overview())
        return table(doc["runtime_calls"]["rows"], report.RUNTIME_CALL_KEYS)


def _open(target: str, cache: bool, settings: Settings | None) -> tuple[RunRegistry, str | None]:
    """``(registry, file name or None)`` for a trace file or a run directory (local or URL), opened
    the way the plugin opens a logdir (storage/: credentials, emulators, confined local reads)."""
    try:
        fs, root = open_logdir(target)
        is_file = fs.isfile(root)
        exists = is_file or fs.isdir(root)
    except StorageError as exc:
        raise LoadError(f"{target}: {exc}") from None
    except Exception as exc:  # no credentials, access denied, a missing bucket
        raise LoadError(f"{target}: {describe_error(exc, target)}") from None
    if not exists:
        raise LoadError(f"{target} does not exist")
    if is_file:
        target = (target.rstrip("/").rsplit("/", 1)[0] or "/") if "/" in target else "."
    settings = Settings.from_env() if settings is None else settings  # the notebook's entry: each load
    registry = RunRegistry(target, cache=ParseCache(settings.cache_dir) if cache else None, settings=settings)
    registry.scan()
    if registry.error is not None:
        raise LoadError(f"{target}: {registry.error}")
    registry.keep_spare_reader()  # a large snapshot's first read pays no reader start
    return registry, (root.rstrip("/").rsplit("/", 1)[-1] if is_file else None)


def _loaded(registry: Registry, state: FileState) -> Trace:
    registry.ensure_loaded(state)
    if state.error:
        raise LoadError(f"{state.entry.rel}: {state.error}")
    return Trace(registry, state)


def load(
    path: str,
    worker: str | None = None,
    span: str | int | None = None,
    cache: bool = True,
    settings: Settings | None = None,
) -> Trace:
    """Load one trace: ``path`` is a trace file, or a run directory (then ``worker``, default the first,
    and ``span``, default 1). Raises :class:`Invalid` naming the workers and spans there are, or
    :class:`LoadError`. ``cache=False`` neither reads nor writes the parse cache; ``settings``: the
    ``KINETOSCOPE_*`` settings (default: read from the environment)."""
    registry, name = _open(str(path), cache, settings)
    if name is not None:
        found = [st for st in registry.files() if st.run == "." and st.entry.name == name]
        if not found:
            raise LoadError(f"{path} is not a trace file (*.pt.trace.json[.gz])")
        return _loaded(registry, found[0])
    runs = queries.layout(registry)
    if "." not in runs:
        raise Invalid(
            f"no trace files directly in {path}: give a run directory or a trace file; {queries.describe(runs)}"
        )
    return _loaded(registry, queries.find_file(registry, ".", worker, None if span is None else str(span)))


class Run:
    """A run directory: its trace files (workers × spans) and the cross-rank view."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    def __repr__(self) -> str:
        return f"<kinetoscope.Run {self.registry.logdir} {queries.describe(queries.layout(self.registry))}>"

    def files(self) -> Table:
        """One row per trace file: ``worker``, ``span``, ``path``, ``size_bytes``, ``state``."""
        return table(
            [
                {
                    "worker": st.worker,
                    "span": st.span,
                    "path": st.entry.rel,
                    "size_bytes": st.entry.size,
                    "state": st.state,
                }
                for st in self.registry.files()
                if st.run == "."
            ],
            queries.FILE_COLUMNS,
        )

    def trace(self, worker: str | None = None, span: str | int | None = None) -> Trace:
        """One worker's span, loaded (defaults: the first worker, span 1)."""
        return _loaded(
            self.registry, queries.find_file(self.registry, ".", worker, None if span is None else str(span))
        )

    def distributed(self, span: str | int = "1") -> dict[str, Any]:
        """The Distributed tab's summary at ``span`` (``kinetoscope report --json``'s ``distributed``):
        ``ranks`` (computation, overlap, communication, other, transfer and sync µs per rank),
        ``collectives`` (calls, bytes, algorithm/bus bandwidth GB/s), ``stragglers`` with their
        ``arrivals`` evidence, ``messages``. None (with the reason in ``reason``) without two ranks."""
        result = self.registry.distributed(".", str(span))
        summary = report_distributed.distributed_summary(result)
        if summary is None:
            return {"reason": result["reason"], "messages": result["messages"]}
        return dict(
            summary,
            ranks=table(summary["ranks"], list(report_distributed.summary_columns().ranks)),
            collectives=table(summary["collectives"], list(report_distributed.summary_columns().collectives)),
            arrivals=table(summary["arrivals"], list(report_distributed.summary_columns().arrivals)),
        )

    def critical_path(self, span: str | int = "1") -> PathFrames:
        """The critical path of each step at ``span`` (``kinetoscope report --json``'s ``critical_path``),
        across the ranks, or the one rank's own path, as two tables (``steps, segments =
        run.critical_path()``): ``steps``, one row per step (``step``, ``length_us``, µs per category
        ``kernel_us``/``cpu_us``/``communication_us``/``waiting_us``, ``host_blocked_us``, ``ranks``,
        ``truncated``), and ``segments``, the ten longest of each step (``step``, ``rank``, ``category``,
        ``name``, ``start_us``, ``at_us``, ``dur_us``, ``row``, ``annotation``, ``python``, ``late_rank``,
        ``wait_us``). ``.items``: per step the work of most time grouped by name (``us``, ``segments``);
        ``.raw``: the report's list."""
        paths = report_distributed.run_critical_path(self.registry.distributed(".", str(span)))
        return PathFrames(paths)


class PathFrames:
    """The critical path as tables (see :meth:`Run.critical_path`); unpacks as ``(steps, segments)``."""

    STEP_COLUMNS = [
        "step",
        "length_us",
        "kernel_us",
        "cpu_us",
        "communication_us",
        "waiting_us",
        "host_blocked_us",
        "ranks",
        "truncated",
    ]
    SEGMENT_COLUMNS = [
        "step",
        "rank",
        "category",
        "name",
        "start_us",
        "at_us",
        "dur_us",
        "row",
        "annotation",
        "python",
        "late_rank",
        "wait_us",
    ]

    def __init__(self, paths: list[dict[str, Any]]) -> None:
        self.raw = paths
        self.steps = table(
            [
                dict(
                    {
                        "step": p["step"],
                        "length_us": p["length_us"],
                        "host_blocked_us": p.get("host_blocked_us", 0.0),
                        "ranks": len(p["by_rank"]),
                        "truncated": p["truncated"],
                    },
                    **{f"{k}_us": v for k, v in p["by_category"].items()},
                )
                for p in paths
            ],
            self.STEP_COLUMNS,
        )
        self.segments = table([dict(s, step=p["step"]) for p in paths for s in p["segments"]], self.SEGMENT_COLUMNS)
        self.items = table(
            [dict(i, step=p["step"]) for p in paths for i in p.get("top_items") or []],
            ["step", "category", "name", "us", "segments"],
        )

    def __iter__(self) -> Iterator[Table]:
        return iter((self.steps, self.segments))

    def __repr__(self) -> str:
        return f"<kinetoscope critical path: {len(self.raw)} steps>"


def load_run(path: str, cache: bool = True, settings: Settings | None = None) -> Run:
    """A run directory (local or URL) whose trace files are one run's ranks (``settings`` as for :func:`load`)."""
    registry, name = _open(str(path), cache, settings)
    if name is not None:
        raise LoadError(f"{path} is a file: give the run directory that holds the ranks' traces")
    if not any(st.run == "." for st in registry.files()):
        runs = queries.layout(registry)
        raise LoadError(f"no trace files directly in {path}" + (f"; runs below it: {', '.join(runs)}" if runs else ""))
    return Run(registry)


def diff(base: Trace, exp: Trace) -> dict[str, Any]:
    """Baseline vs experiment, as ``kinetoscope diff --json``: ``steps`` (one row per Overview category:
    ``baseline_us``, ``experiment_us``, ``delta_us``, ``relative_pct`` of the average step),
    ``operators`` (the operator tree flattened, per average step: ``baseline_*``, ``experiment_*``,
    ``delta_*`` µs and a ``status``) and ``kernels`` (per kernel per average step)."""
    doc = report.diff_document(base.state, base.views, exp.state, exp.views)
    s = doc["steps"]
    steps = [
        {
            "category": key,
            "baseline_us": s["baseline"][key],
            "experiment_us": s["experiment"][key],
            "delta_us": s["delta"][key],
            "relative_pct": s["relative_pct"][key],
        }
        for key in s["baseline"]
    ]
    return {
        "steps": table(steps, queries.DIFF_STEP_COLUMNS),
        "operators": table([_flatten(r) for r in doc["operators"]], queries.DIFF_OPERATOR_COLUMNS),
        "kernels": table(doc["kernels"], queries.DIFF_KERNEL_COLUMNS),
        "thresholds": doc["thresholds"],
    }


def hang(path: str) -> dict[str, Any]:
    """Why a job hung, from the flight-recorder dumps directly in the folder ``path`` (local or URL), as
    ``kinetoscope hang --json``: ``verdict`` (sentences, root cause first) and tables ``findings`` (one
    row per finding: ``kind``, ``pg_name``, ``pg_desc``, ``op``, ``collective_seq_id``,
    ``ranks_present``, ``missing_ranks``, ``sentence``…), ``groups`` (one row per group and rank: the
    last enqueued, started and completed sequence numbers and ops), ``ranks`` (one row per dump read)
    and ``unreadable``. Raises :class:`LoadError` when the folder holds no dump."""
    from ..registry import hang as hang_doc

    try:
        doc = hang_doc.folder_document(str(path))
    except (hang_doc.HangError, StorageError, OSError) as exc:
        raise LoadError(str(exc)) from None
    rows = []
    for g in doc["groups"]:
        for r in g["per_rank"]:
            row = {"pg_name": g["pg_name"], "pg_desc": g["pg_desc"], "rank": r["rank"], "dump": r["dump"]}
            for key in ("last_enqueued", "last_started", "last_completed"):
                got = r.get(key)
                row[f"{key}_seq"], row[f"{key}_op"] = (got["collective_seq_id"], got["op"]) if got else (None, None)
            rows.append(row)
    ranks = [{k: v for k, v in r.items() if k != "pg_status"} for r in doc["ranks"]]
    return {
        "verdict": doc["verdict"],
        "findings": table(doc["findings"]),
        "groups": table(rows),
        "ranks": table(ranks),
        "unreadable": table(doc["unreadable"], ["path", "rank", "error"]),
    }
