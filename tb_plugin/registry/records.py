"""The typed records the registry hands across a module boundary: the ``runs`` document
(docs/http_api.md, ``GET runs``) and a rank's aggregate (registry/executors/task.py). They are
``TypedDict``s: at run time plain dicts, so the JSON the routes, the CLI and the MCP tools return and
the aggregates kept in the analysis cache are unchanged, while the type checker holds every key the
callers read."""

from __future__ import annotations

from typing import Any, TypedDict

from ..analysis.overview import Overview


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
    operators: list[dict[str, Any]]
    kernels: list[dict[str, Any]]
    modules: Any  # the module tree, or None without one
    memory: Any  # the memory summary, or None without memory events


class RankTables(RankTablesBase, total=False):
    """:class:`RankTablesBase` and the CUDA-graph section (missing from aggregates cached before it existed)."""

    graphs: Any


class RankAggregateBase(TypedDict):
    """The part of a rank's aggregate every aggregate holds."""

    distributed: dict[str, Any]  # analysis/distributed.py rank_reduce (µs, bytes)


class RankAggregate(RankAggregateBase, total=False):
    """A rank's aggregate (registry/executors/task.py): ``insights`` when a task computed it, ``tables``
    when the job asked for the report's sections (packed while it travels, see task.pack)."""

    insights: dict[str, Any]
    tables: RankTables
