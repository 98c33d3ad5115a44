"""The run registry: logdir → runs → workers → spans, with background loading and progress.

A *run* is a directory (relative to the logdir, "/" separators, "." for the root) that directly holds
trace files. Each file is one (worker, span) of its run (see :mod:`tb_plugin.storage.naming`). A
scanner thread re-lists the logdir every ``reload_interval`` seconds, so new runs and files appear
without a restart and changed files are read again. This module lists the runs (scanning, lookups,
the ``runs`` document); the loads (:mod:`.loader`, with the memory budget of :mod:`.budget`), the memory
artifacts (:mod:`.artifacts`), the flight-recorder dumps (:mod:`.hang`) and the cross-rank view
(:mod:`.distributed`) are collaborators the registry composes (see docs/ARCHITECTURE.md).
"""

from __future__ import annotations

import collections
import dataclasses
import os
import posixpath
import threading
import time
from typing import TYPE_CHECKING, Any, Iterable

from ..logs import module_logger
from ..settings import Settings
from ..storage.fs import FileEntry, list_files, open_logdir
from ..storage.naming import assign_spans
from ..storage.remote import StorageError, describe_error
from ..storage.sniff import SniffCache
from ..storage.urls import redact
from .artifacts import ArtifactStore, artifact_links
from .cache import ParseCache
from .distributed import DistributedAggregate
from .hang import HangDumps
from .interface import Progress, RankRun, Registry
from .loader import Listing, TraceLoader
from .states import ERROR, LOADING, READY, ArtifactState, DumpRecords, FileState
from .trace_files import TraceFiles

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

    from ..analysis.advice_ranks import RunAdvice
    from ..trace.model import Trace
    from .executors.task import RankJob
    from .records import (  # (types only: a report never imports them, ~3 ms)
        DistributedResult,
        HangDocument,
        LogdirError,
        RunRow,
        RunsDocument,
        SnapshotRanksDocument,
    )
    from .views import FileViews

logger = module_logger(__name__)

RUNS_PROGRESS_S = 0.5  # while a file loads, the runs document shows its progress at most this stale


class RunRegistry(Registry, TraceFiles):
    """Thread-safe registry of the trace files (and memory artifacts) under one logdir. It lists the
    runs itself; the loads (:class:`~.loader.TraceLoader`, given the listing as a
    :class:`~.loader.Listing`), the memory artifacts (:class:`~.artifacts.ArtifactStore`), the
    flight-recorder dumps (:class:`~.hang.HangDumps`) and the cross-rank aggregate
    (:class:`~.distributed.DistributedAggregate`) are collaborators it composes and calls, the last
    three given what they use of the trace files (:class:`~.trace_files.TraceFiles`, which the
    registry implements)."""

    def __init__(
        self,
        logdir: str,
        cache: ParseCache | None = None,
        reload_interval: float = 10.0,
        prefix: str = "",
        executor: str | None = None,
        settings: Settings | None = None,
    ) -> None:
        """``settings``: an entry point's settings (the memory budget, the executor); None in a library
        call: the defaults and the environment (:func:`tb_plugin.settings.current`)."""
        self.settings = settings
        if executor is None and settings is not None:
            executor = settings.executor
        self.logdir = redact(str(logdir))  # as shown and logged: credentials in a URL are never shown
        self._logdir_url = str(logdir)  # as given: only opened
        self.prefix = prefix.strip("/")  # run-name prefix (the name of a --logdir_spec entry)
        self._error: str | None = None  # why the logdir cannot be listed (missing extra, credentials, …)
        self.skipped_links: list[str] = []  # symlinks the last listing did not follow (logdir-relative)
        try:
            self.fs, self.root = open_logdir(self._logdir_url)
        except StorageError as exc:
            self.fs, self.root, self.error = None, "", redact(str(exc))
        self.cache = cache
        self.reload_interval = max(1.0, float(reload_interval))
        self._sniff = SniffCache(os.path.join(cache.root, "sniff.json") if cache is not None else None)
        self._files: dict[str, FileState] = {}
        self._lock = threading.RLock()
        self._scan_lock = threading.Lock()  # scan() calls one at a time (the scanner thread, a request, the CLI)
        self._wake = threading.Condition(self._lock)
        self._by_key: dict[tuple[str, str, str], FileState] = {}  # (run, worker, span) -> file
        self._order: list[FileState] | None = None  # files() order, rebuilt after a scan changes it
        self._runs_doc: tuple[Any, float, RunsDocument, bool] | None = None  # (changes, time, doc, loading)
        self._workers_of_run: dict[str, int] = {}
        self._scanned = threading.Event()
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self._loader = TraceLoader(
            Listing(
                files=self._files,
                lock=self._lock,
                wake=self._wake,
                stop=self._stop,
                fs=self.fs,
                fs_error=self.error,
                cache=cache,
                settings=settings,
                reload_interval=self.reload_interval,
                client_message=self.client_message,
            )
        )
        self._distributed = DistributedAggregate(self, self.fs, cache, executor)
        self._dumps = HangDumps(self.fs, executor, self.artifacts, self)
        self._artifacts = ArtifactStore(self.fs, cache, self, self._dumps.records)

    @property
    def executor(self) -> str | None:
        """Where the per-rank work of the distributed view and the dumps' reading run (registry/executors)."""
        return self._distributed.executor

    @property
    def error(self) -> str | None:
        """Why the logdir cannot be listed (a missing extra, credentials, …); None when it can."""
        return self._error

    @error.setter
    def error(self, message: str | None) -> None:
        self._error = message

    # -- lifecycle ----------------------------------------------------------------------------
    def keep_spare_reader(self) -> None:
        """Keep a snapshot reader child started ahead while a large local snapshot awaits its first read
        (a live server, MCP server or notebook: see :meth:`~.artifacts.ArtifactStore.tend_spare`); ended by
        :meth:`stop` or at exit."""
        self._artifacts.spare_reader = True
        self._artifacts.tend_spare()

    def start(self) -> RunRegistry:
        """Start the scanner and loader threads (daemons), and the spare snapshot reader (:meth:`keep_spare_reader`)."""
        self.keep_spare_reader()
        for target, name in (
            (self._scan_loop, "kinetoscope-scan"),
            (lambda: self._artifacts.run(self._stop, self.reload_interval), "kinetoscope-artifacts"),
        ):
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)
        self._threads.append(self._loader.start_thread())
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._artifacts.spare_reader:
            from ..artifacts.spare import end_spare

            self._artifacts.spare_reader = False
            end_spare(self._artifacts)
        self._distributed.close()
        self._artifacts.wake()
        with self._wake:
            self._wake.notify_all()

    def wait_scanned(self, timeout: float | None = None) -> bool:
        return self._scanned.wait(timeout)

    def _scan_loop(self) -> None:
        while not self._stop.is_set():
            self.scan()
            self._stop.wait(self.reload_interval)

    # -- scanning -----------------------------------------------------------------------------
    def scan(self) -> None:
        """List the logdir once and reconcile the registry with it. One scan at a time: a listing taken
        before another scan's must not be applied after it (it would drop the files that one found)."""
        with self._scan_lock:
            self._scan()

    def _scan(self) -> None:
        if self.fs is None:  # could not even be opened: self.error says why
            self._scanned.set()
            return
        skipped: list[str] = []
        try:
            found = list_files(self.fs, self.root, self._sniff, skipped_links=skipped)
        except Exception as exc:  # a flaky bucket must not kill the scanner; loaded runs stay
            self.error = redact(str(exc) if isinstance(exc, StorageError) else describe_error(exc, self.logdir))
            logger.warning("listing %s failed: %s", self.logdir, self.error)
            self._scanned.set()
            return
        self.error = None
        self.skipped_links = sorted(f"{self.prefix}/{rel}" if self.prefix else rel for rel in skipped)
        if self.prefix:
            found = [dataclasses.replace(e, rel=f"{self.prefix}/{e.rel}") for e in found]
        entries = [e for e in found if e.kind == "trace"]
        self._artifacts.reconcile([e for e in found if e.kind != "trace"])
        by_run: dict[str, list[FileEntry]] = collections.defaultdict(list)
        for e in entries:
            by_run[e.run].append(e)
        with self._lock:
            seen = set()
            for run_entries in by_run.values():
                spans = assign_spans([e.name for e in run_entries])
                for e in run_entries:
                    worker, span = spans[e.name]
                    seen.add(e.rel)
                    old = self._files.get(e.rel)
                    if old is None or old.entry.version != e.version:
                        self._files[e.rel] = FileState(entry=e, worker=worker, span=span)
                        self._loader.forget(e.rel)
                    else:
                        old.worker, old.span = worker, span
            for rel in list(self._files):
                if rel not in seen:
                    del self._files[rel]
                    self._loader.forget(rel, reload_lock=True)
            self._reindex()
            self._wake.notify_all()
        self._scanned.set()

    def _reindex(self) -> None:
        """Rebuild the lookup index and the sorted order (under the lock, after the files changed)."""
        by_key = {(st.run, st.worker, st.span): st for st in self._files.values()}
        order = sorted(self._files.values(), key=lambda s: (s.run, s.worker, int(s.span)))
        self._by_key, self._order = by_key, order
        workers: dict[str, set[str]] = collections.defaultdict(set)
        for st in order:
            workers[st.run].add(st.worker)
        self._workers_of_run = {run: len(w) for run, w in workers.items()}
        self._loader.requeue(sorted(self._files.values(), key=lambda s: s.entry.rel))

    # -- queries ------------------------------------------------------------------------------
    def files(self) -> list[FileState]:
        """Every trace file, by (run, worker, span); kept sorted by each scan, so this is a copy."""
        with self._lock:
            return list(self._order or ())

    def find(self, run: str, worker: str, span: str) -> FileState | None:
        with self._lock:
            return self._by_key.get((run, worker, span))

    def workers_in_run(self, run: str) -> int:
        with self._lock:
            return self._workers_of_run.get(run, 0)

    def runs_document(self) -> RunsDocument:
        """The ``runs`` document of docs/http_api.md. Rebuilt only when what it shows of the files and
        artifacts changed (their ``shown()``), or, while a file is loading, every
        :data:`RUNS_PROGRESS_S` for its progress: the UI polls it."""
        # the key is read before building: a change during the build invalidates the result
        queue = self.queue_positions()
        changes = (
            tuple(st.shown() for st in self.files()),
            tuple(a.shown() for a in self.artifacts()),
            tuple(queue.items()),
            self.error,
            tuple(self.skipped_links),
        )
        cached = self._runs_doc
        if (
            cached is not None
            and cached[0] == changes
            and (not cached[3] or time.monotonic() - cached[1] < RUNS_PROGRESS_S)
        ):
            return cached[2]
        doc, loading = self._build_runs_document(queue)
        self._runs_doc = (changes, time.monotonic(), doc, loading)
        return doc

    def _build_runs_document(self, queue: dict[str, int]) -> tuple[RunsDocument, bool]:
        """The document, with ``queue`` (:meth:`queue_positions`) for each file's ``queued_before``."""
        files = self.files()
        artifacts = self.artifacts()
        runs: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for st in files:
            runs.setdefault(st.run, {}).setdefault(st.worker, []).append(
                dict(st.as_json(), queued_before=queue.get(st.entry.rel))
            )
        by_run: dict[str, list[dict[str, Any]]] = {}
        traces = {st.entry.rel: (st.worker, st.span) for st in files}
        for a in artifacts:
            runs.setdefault(a.run, {})
            by_run.setdefault(a.run, []).append(a.as_json() | artifact_links(a, traces))
        done = sum(1 for st in files if st.state in (READY, ERROR))
        loading = any(st.state == LOADING for st in files)
        if self.error is not None:
            runs.setdefault(self.prefix or ".", {})
        errors: list[LogdirError] = (
            [] if self.error is None else [{"logdir": self.logdir, "run": self.prefix or ".", "error": self.error}]
        )
        rows: list[RunRow] = [
            {
                "name": run,
                "workers": [{"worker": w, "spans": spans} for w, spans in workers.items()],
                "artifacts": by_run.get(run, []),
                "error": self.error if self.error is not None and run == (self.prefix or ".") else None,
            }
            for run, workers in sorted(runs.items(), key=lambda kv: _run_sort_key(kv[0]))
        ]
        return {
            "logdir": self.logdir,
            "loading": {"files_total": len(files), "files_done": done, "files_queued": len(queue)},
            "errors": errors,
            "notices": skipped_links_notice(self.skipped_links),
            "runs": rows,
        }, loading

    # -- loading (the loader) -----------------------------------------------------------------
    @property
    def opened_fs(self) -> AbstractFileSystem:
        """The logdir's filesystem; raises :class:`StorageError` (with :attr:`error`) when it could not be opened."""
        return self._loader.opened_fs

    def want(self, state: FileState) -> None:
        self._loader.want(state)

    def load(self, state: FileState, progress: Progress | None = None) -> FileState:
        return self._loader.load(state, progress)

    def ensure_loaded(self, state: FileState) -> FileState:
        return self._loader.ensure_loaded(state)

    def load_held(self, state: FileState) -> FileState:
        return self._loader.load_held(state)

    def parse_in_parallel(self, states: list[FileState]) -> int:
        return self._loader.parse_in_parallel(states)

    def views(self, state: FileState) -> FileViews:
        return self._loader.views(state)

    def queue_positions(self) -> dict[str, int]:
        """rel → how many files will be loaded before it (0: next), for every queued file."""
        return self._loader.queue_positions()

    def memory_in_use(self) -> dict[str, int]:
        """Bytes of each file kept in memory, as the budget counts them (most recently used last)."""
        return self._loader.memory_in_use()

    # -- the collaborators ---------------------------------------------------------------------
    def artifacts(self, run: str | None = None) -> list[ArtifactState]:
        return self._artifacts.artifacts(run)

    def find_artifact(self, run: str, path: str) -> ArtifactState | None:
        return self._artifacts.find_artifact(run, path)

    def load_artifact(self, art: ArtifactState, wait: bool = True) -> ArtifactState:
        return self._artifacts.load_artifact(art, wait)

    def rank_group(self, art: ArtifactState) -> list[tuple[int, ArtifactState]]:
        return self._artifacts.rank_group(art)

    def snapshot_ranks(self, art: ArtifactState) -> SnapshotRanksDocument:
        return self._artifacts.snapshot_ranks(art)

    def snapshot_trace(self, art: ArtifactState, device: int) -> tuple[dict[str, Any] | None, Trace | None, int]:
        return self._artifacts.snapshot_trace(art, device)

    def snapshot_counters(
        self, state: FileState, trace: Trace, t0: float, t1: float, bins: int
    ) -> list[dict[str, Any]]:
        return self._artifacts.snapshot_counters(state, trace, t0, t1, bins)

    def hang_records(self, run: str) -> DumpRecords | None:
        return self._dumps.records(run)

    def hang(self, run: str) -> HangDocument | None:
        return self._dumps.document(run)

    def distributed(self, run: str, span: str = "1") -> DistributedResult:
        return self._distributed.distributed(run, span)

    def critical_path_overlay(self, state: FileState) -> dict[str, Any]:
        return self._distributed.critical_path_overlay(state)

    def span_advice(self, run: str, span: str) -> list[RunAdvice] | None:
        return self._distributed.span_advice(run, span)

    def rank_job(self, state: FileState, tables: bool = True) -> RankJob:
        return self._distributed.rank_job(state, tables)

    def analyse(self, states: list[FileState], executor: Any, how: RankRun = RankRun()) -> None:
        self._distributed.analyse(states, executor, how)

    def fs_of(self, state: FileState) -> AbstractFileSystem:
        """The filesystem holding this file (:attr:`opened_fs`)."""
        return self.opened_fs

    def client_message_of(self, state: FileState, message: str) -> str:
        """:meth:`client_message` of the registry holding ``state`` (this one)."""
        return self.client_message(message)

    def client_message(self, message: str) -> str:
        """A per-file error message as clients see it. Cloud objects are named the way the user wrote
        the logdir (adlfs rewrites az:// as abfs://); local paths are made logdir-relative (with the
        ``--logdir_spec`` name in front), so no absolute path of the server reaches a client."""
        if self.fs is None:
            return message
        if "://" in self.logdir:
            sdk_root = self.fs.unstrip_protocol(self.root).rstrip("/")
            user_root = self.logdir.rstrip("/")
            return message.replace(sdk_root, user_root) if sdk_root != user_root else message
        return relative_paths(
            message, (self.root, os.path.abspath(self._logdir_url), os.path.realpath(self.root)), self.prefix
        )


MAX_NAMED_LINKS = 5


def relative_paths(message: str, roots: Iterable[str], prefix: str = "") -> str:
    """``message`` with every ``<root>/`` of ``roots`` (absolute spellings of one local logdir:
    as given, as listed, resolved) replaced by ``prefix/`` (or nothing), longest first (one spelling
    may contain another). A logdir of ``/`` is left alone: its paths are already the whole story."""
    for root in sorted({r.rstrip(os.sep) for r in roots if r and r.rstrip(os.sep)}, key=len, reverse=True):
        message = message.replace(root + os.sep, f"{prefix}/" if prefix else "")
    return message


def skipped_links_notice(links: list[str]) -> list[str]:
    """The ``runs`` notice for symlinks the listing did not follow (empty when there are none)."""
    if not links:
        return []
    named = ", ".join(links[:MAX_NAMED_LINKS]) + (
        f" and {len(links) - MAX_NAMED_LINKS} more" if len(links) > MAX_NAMED_LINKS else ""
    )
    return [
        f"Skipped {len(links)} symbolic link{'s' if len(links) != 1 else ''} ({named}): links to directories, "
        "and links that resolve outside the logdir, are not followed. Copy the files in, or point "
        "--logdir at the real folder."
    ]


def _run_sort_key(name: str) -> tuple[bool, str]:
    return (name != ".", posixpath.normpath(name))
