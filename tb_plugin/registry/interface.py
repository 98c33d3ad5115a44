"""The one registry interface: what the routes, the CLI, the notebook API, the MCP tools and the
server call on a registry. :class:`~.runs.RunRegistry` (one logdir) and :class:`~.multi.MultiRegistry`
(several, ``--logdir_spec``) both subclass :class:`Registry`, so a method one of them lacks is a
``TypeError`` when it is constructed, not an HTTP 500 when a view asks for it."""

from __future__ import annotations

import abc
import dataclasses
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

    from ..analysis.advice_ranks import RunAdvice
    from ..trace.model import Trace
    from .records import DistributedResult, HangDocument, RunsDocument, SnapshotRanksDocument
    from .states import ArtifactState, FileState
    from .views import FileViews

#: ``progress(fraction)``: a load's progress, 0..1
Progress = Callable[[float], None]
#: ``progress(done, total, result)``: per rank of :meth:`Registry.analyse` (executors.base.Progress)
RankProgress = Callable[[int, int, Any], None]


@dataclasses.dataclass(frozen=True)
class RankRun:
    """How :meth:`Registry.analyse` runs the per-rank tasks: ``tables`` (the report's per-worker
    sections; each file ends READY or ERROR), ``progress`` per rank, ``warn`` for the executor's
    messages, and ``failed`` (rel → message; filled without ``tables``, where errors go)."""

    tables: bool = True
    progress: RankProgress | None = None
    warn: Callable[[str], object] | None = None
    failed: dict[str, str] | None = None


class Registry(abc.ABC):
    """The data provider behind every interface: runs → workers → spans of trace files, and the
    memory artifacts and flight-recorder dumps of each run."""

    #: the logdir as shown and logged (credentials in a URL are never shown)
    logdir: str

    # -- lifecycle -------------------------------------------------------------------------------
    @property
    @abc.abstractmethod
    def error(self) -> str | None:
        """Why a logdir cannot be listed (None when every one can)."""

    @abc.abstractmethod
    def start(self) -> Registry:
        """Start the background scanner and loaders; returns the registry."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop the background threads and close the executor."""

    @abc.abstractmethod
    def scan(self) -> None:
        """List the logdir(s) once and reconcile the registry with what was found."""

    @abc.abstractmethod
    def wait_scanned(self, timeout: float | None = None) -> bool:
        """Wait (at most ``timeout`` s) for the first scan; False when it has not finished."""

    # -- trace files -----------------------------------------------------------------------------
    @abc.abstractmethod
    def files(self) -> list[FileState]:
        """Every trace file, by (run, worker, span)."""

    @abc.abstractmethod
    def find(self, run: str, worker: str, span: str) -> FileState | None:
        """The file of one (run, worker, span), None when there is none."""

    @abc.abstractmethod
    def workers_in_run(self, run: str) -> int:
        """How many workers the run's files name."""

    @abc.abstractmethod
    def runs_document(self) -> RunsDocument:
        """The ``runs`` document of docs/http_api.md."""

    @abc.abstractmethod
    def want(self, state: FileState) -> None:
        """Load this file next (a user is looking at it)."""

    @abc.abstractmethod
    def load(self, state: FileState, progress: Progress | None = None) -> FileState:
        """Parse and analyse one file now, in this thread."""

    @abc.abstractmethod
    def ensure_loaded(self, state: FileState) -> FileState:
        """Load this file unless it is loaded (or failed) already."""

    @abc.abstractmethod
    def parse_in_parallel(self, states: list[FileState]) -> int:
        """Parse queued files in a process pool; returns the number of processes used."""

    @abc.abstractmethod
    def views(self, state: FileState) -> FileViews:
        """The detail views of a loaded file."""

    @abc.abstractmethod
    def fs_of(self, state: FileState) -> AbstractFileSystem:
        """The filesystem holding this file (a listed file's logdir was opened)."""

    @abc.abstractmethod
    def client_message_of(self, state: FileState, message: str) -> str:
        """A message about this file as clients see it (no absolute server path)."""

    # -- the distributed aggregate ---------------------------------------------------------------
    @abc.abstractmethod
    def distributed(self, run: str, span: str = "1") -> DistributedResult:
        """The distributed view of a run's ranks at one span."""

    @abc.abstractmethod
    def critical_path_overlay(self, state: FileState) -> dict[str, Any]:
        """The critical path on one loaded file's timeline."""

    @abc.abstractmethod
    def span_advice(self, run: str, span: str) -> list[RunAdvice] | None:
        """The advice that holds on several of the run's loaded files at ``span``, said once for the run
        (None with fewer than two)."""

    @abc.abstractmethod
    def analyse(
        self,
        states: list[FileState],
        executor: Any,  # an executors.base.Executor (not imported: executors import the report)
        how: RankRun = RankRun(),
    ) -> None:
        """Run the per-rank task of each file on ``executor`` (the CLI's report), as ``how`` says."""

    # -- artifacts -------------------------------------------------------------------------------
    @abc.abstractmethod
    def artifacts(self, run: str | None = None) -> list[ArtifactState]:
        """The memory artifacts and flight-recorder dumps (of one run, or all)."""

    @abc.abstractmethod
    def find_artifact(self, run: str, path: str) -> ArtifactState | None:
        """The artifact at ``path`` of ``run``, None when there is none."""

    @abc.abstractmethod
    def load_artifact(self, art: ArtifactState, wait: bool = True) -> ArtifactState:
        """Load an artifact (without ``wait``: unless another thread is loading it)."""

    @abc.abstractmethod
    def rank_group(self, art: ArtifactState) -> list[tuple[int, ArtifactState]]:
        """The snapshots of ``art``'s job, one per rank: ``[(rank, artifact)]``."""

    @abc.abstractmethod
    def snapshot_ranks(self, art: ArtifactState) -> SnapshotRanksDocument:
        """Peak active bytes per rank of ``art``'s rank group, and the outlier."""

    @abc.abstractmethod
    def snapshot_trace(self, art: ArtifactState, device: int) -> tuple[dict[str, Any] | None, Trace | None, int]:
        """The loaded trace that matches ``device`` of a snapshot best: ``(link, trace, loading)``."""

    @abc.abstractmethod
    def snapshot_counters(
        self, state: FileState, trace: Trace, t0: float, t1: float, bins: int
    ) -> list[dict[str, Any]]:
        """Counter tracks of the run's matching snapshots over ``[t0, t1]`` (µs of the timeline)."""

    @abc.abstractmethod
    def hang_records(self, run: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
        """``(records, unreadable)`` of the run's flight-recorder dumps; None when it has none."""

    @abc.abstractmethod
    def hang(self, run: str) -> HangDocument | None:
        """The run's hang document; None without dumps."""
