"""The run registry: logdir → runs → workers → spans, with background loading and progress.

A *run* is a directory (relative to the logdir, "/" separators, "." for the root) that directly holds
trace files. Each file is one (worker, span) of its run (see :mod:`.storage.naming`). A scanner
thread re-lists the logdir every ``reload_interval`` seconds, so new runs and files appear without a
restart and changed files are read again; a loader thread parses queued files one at a time (the
one a user asked for first), stores the parsed columns in the parse cache, and keeps the Overview.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import logging
import os
import posixpath
import sys
import threading
import time
from typing import Any, Callable

import numpy as np
from .analysis.contents import file_contents
from .analysis.overview import compute_overview
from .file_views import FileViews
from .storage.cache import ParseCache
from .artifact_views import MEMPROFILER_KINDS, SnapshotViews, TimelineExportViews, load_memprofiler_views
from .artifacts.memprofiler import MemProfilerError
from .artifacts.snapshot import SnapshotError, load_snapshot, pack_snapshot, unpack_snapshot
from .artifacts.timeline_export import TimelineExportError, load_timeline_export
from .release import release_freed_memory
from .storage.fs import FileEntry, list_files, open_logdir
from .storage.writer import BackgroundWriter
from .executors.task import error_message
from .storage.naming import assign_spans
from .storage.remote import StorageError, describe_error
from .storage.private_files import write_atomic
from .storage.sniff import SniffCache
from .trace.errors import TraceReadError
from .trace.load import load_trace_file
from .trace.read import read_trace_bytes
from .trace.model import Trace

logger = logging.getLogger(__name__)

QUEUED, LOADING, READY, ERROR = "queued", "loading", "ready", "error"
# Parsed traces kept in memory for the detail views (least recently used evicted; reloaded from the
# parse cache on demand). Set KINETOSCOPE_MEMORY_BUDGET_MB to change it.
TRACE_MEMORY_BUDGET_BYTES = int(os.environ.get("KINETOSCOPE_MEMORY_BUDGET_MB", "1536")) << 20


_CHANGES = [0]  # bumped whenever a file's state, error or warnings change (the runs snapshot cache key)
_SNAPSHOT_FIELDS = frozenset({"state", "error", "warnings", "notes", "worker", "span"})


@dataclasses.dataclass
class FileState:
    entry: FileEntry
    worker: str
    span: str
    state: str = QUEUED
    progress: float = 0.0
    error: str | None = None
    warnings: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)  # about the file; not warnings (Trace.notes)
    overview: dict[str, Any] | None = None
    load_seconds: float | None = None
    from_cache: bool = False
    aggregate: dict[str, Any] | None = None  # per-rank aggregates (executors/task.py), once computed
    contents: dict[str, bool] | None = None  # has_memory / has_modules (analysis/contents.py), once loaded
    # held while this file is parsed or its aggregate computed: concurrent requests wait for one load
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock, repr=False, compare=False)

    def __setattr__(self, key: str, value: Any) -> None:
        if key in _SNAPSHOT_FIELDS:
            _CHANGES[0] += 1
        object.__setattr__(self, key, value)

    @property
    def run(self) -> str:
        return self.entry.run

    def as_json(self) -> dict[str, Any]:
        return {
            "span": self.span,
            "path": self.entry.rel,
            "size_bytes": self.entry.size,
            "state": self.state,
            "progress": round(self.progress, 4),
            "error": self.error,
            "warnings": list(self.warnings),
            "notes": list(self.notes),
            **(self.contents or {"has_memory": None, "has_modules": None}),
        }


@dataclasses.dataclass
class ArtifactState:
    """A memory artifact of a run: an allocator snapshot, a memory-timeline export or a MemProfiler file."""

    entry: FileEntry
    state: str = QUEUED
    error: str | None = None
    views: Any = None  # set before ``state`` becomes READY: readers check ``state`` without a lock
    # held while this artifact loads: one load per artifact, other artifacts never wait for it
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock, repr=False, compare=False)

    def __setattr__(self, key: str, value: Any) -> None:
        if key in ("state", "error"):
            _CHANGES[0] += 1
        object.__setattr__(self, key, value)

    @property
    def run(self) -> str:
        return self.entry.run

    def as_json(self) -> dict[str, Any]:
        return {"path": self.entry.rel, "kind": self.entry.kind, "size_bytes": self.entry.size,
                "state": self.state, "error": self.error}


class RunRegistry:
    """Thread-safe registry of the trace files under one logdir."""

    def __init__(self, logdir: str, cache: ParseCache | None = None, reload_interval: float = 10.0,
                 prefix: str = "", executor: str | None = None) -> None:
        self.logdir = str(logdir)
        self.prefix = prefix.strip("/")  # run-name prefix (the name of a --logdir_spec entry)
        self.error: str | None = None  # why the logdir cannot be listed (missing extra, credentials, …)
        self.skipped_links: list[str] = []  # symlinks the last listing did not follow (logdir-relative)
        try:
            self.fs, self.root = open_logdir(self.logdir)
        except StorageError as exc:
            self.fs, self.root, self.error = None, "", str(exc)
        self.cache = cache
        self.reload_interval = max(1.0, float(reload_interval))
        self._sniff = SniffCache(os.path.join(cache.root, "sniff.json") if cache is not None else None)
        self._files: dict[str, FileState] = {}
        self._artifacts: dict[str, ArtifactState] = {}
        self._lock = threading.RLock()
        self._wake = threading.Condition(self._lock)
        self._wanted: collections.deque[str] = collections.deque()
        self._views: collections.OrderedDict[str, FileViews] = collections.OrderedDict()
        self._view_sizes: dict[str, tuple[float, int]] = {}  # rel -> (measured at, bytes)
        self._view_shapes: dict[str, tuple[int, int]] = {}  # rel -> _shape() when measured
        self._reload_locks: dict[str, threading.Lock] = {}  # one reload of an evicted file at a time
        self._by_key: dict[tuple[str, str, str], FileState] = {}  # (run, worker, span) -> file
        self._order: list[FileState] | None = None  # files() order, rebuilt after a scan changes it
        self._snapshot: tuple[int, float, dict] | None = None  # (changes, time, doc)
        self._workers_of_run: dict[str, int] = {}
        self._queue_order: list[FileState] = []  # files by path: the loader's default order
        self._queue_pos = 0  # every file before it has left QUEUED (a scan starts it over)
        self._views_total = 0  # bytes of self._views, per self._view_sizes
        self._scanned = threading.Event()
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        # where the distributed view's per-rank work runs when ranks are not loaded here: "local",
        # "dask://host:port", or None for $KINETOSCOPE_EXECUTOR (see tb_plugin/executors)
        self.executor = executor
        self._executor = None
        self._executor_failure: tuple[float, str] | None = None
        self._executor_lock = threading.Lock()

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self) -> "RunRegistry":
        """Start the scanner and loader threads (daemons)."""
        for target, name in ((self._scan_loop, "kinetoscope-scan"), (self._load_loop, "kinetoscope-load"),
                             (self._artifact_loop, "kinetoscope-artifacts")):
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def stop(self) -> None:
        self._stop.set()
        with self._executor_lock:
            if self._executor is not None:
                self._executor.close()
                self._executor = None
        with self._wake:
            self._wake.notify_all()

    def wait_scanned(self, timeout: float | None = None) -> bool:
        return self._scanned.wait(timeout)

    # -- scanning -----------------------------------------------------------------------------
    def scan(self) -> None:
        """List the logdir once and reconcile the registry with it."""
        if self.fs is None:  # could not even be opened: self.error says why
            self._scanned.set()
            return
        skipped: list[str] = []
        try:
            found = list_files(self.fs, self.root, self._sniff, skipped_links=skipped)
        except Exception as exc:  # a flaky bucket must not kill the scanner; loaded runs stay
            self.error = str(exc) if isinstance(exc, StorageError) else describe_error(exc, self.logdir)
            logger.warning("listing %s failed: %s", self.logdir, self.error)
            self._scanned.set()
            return
        self.error = None
        self.skipped_links = sorted(f"{self.prefix}/{rel}" if self.prefix else rel for rel in skipped)
        if self.prefix:
            found = [dataclasses.replace(e, rel=f"{self.prefix}/{e.rel}") for e in found]
        entries = [e for e in found if e.kind == "trace"]
        self._reconcile_artifacts([e for e in found if e.kind != "trace"])
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
                        self._forget(e.rel)
                    else:
                        old.worker, old.span = worker, span
            for rel in list(self._files):
                if rel not in seen:
                    del self._files[rel]
                    self._forget(rel)
                    self._reload_locks.pop(rel, None)
            self._reindex()
            self._wake.notify_all()
        self._scanned.set()

    def _reindex(self) -> None:
        """Rebuild the lookup index and the sorted order (under the lock, after the files changed)."""
        by_key = {(st.run, st.worker, st.span): st for st in self._files.values()}
        order = sorted(self._files.values(), key=lambda s: (s.run, s.worker, int(s.span)))
        if by_key.keys() != self._by_key.keys() or [s.entry.rel for s in order] != [
                s.entry.rel for s in (self._order or [])] or any(a is not b for a, b in zip(order, self._order or [])):
            _CHANGES[0] += 1
        self._by_key, self._order = by_key, order
        workers: dict[str, set] = collections.defaultdict(set)
        for st in order:
            workers[st.run].add(st.worker)
        self._workers_of_run = {run: len(w) for run, w in workers.items()}
        self._queue_order = sorted(self._files.values(), key=lambda s: s.entry.rel)
        self._queue_pos = 0

    def _reconcile_artifacts(self, entries: list[FileEntry]) -> None:
        with self._lock:
            seen = set()
            for e in entries:
                seen.add(e.rel)
                old = self._artifacts.get(e.rel)
                if old is None or old.entry.version != e.version:
                    self._artifacts[e.rel] = ArtifactState(entry=e)
                    _CHANGES[0] += 1
            for rel in list(self._artifacts):
                if rel not in seen:
                    del self._artifacts[rel]
                    _CHANGES[0] += 1

    def artifacts(self, run: str | None = None) -> list[ArtifactState]:
        with self._lock:
            return sorted((a for a in self._artifacts.values() if run is None or a.run == run),
                          key=lambda a: a.entry.rel)

    def find_artifact(self, run: str, path: str) -> ArtifactState | None:
        """The artifact with this logdir-relative path in this run (a lookup, never a file path)."""
        with self._lock:
            a = self._artifacts.get(path)
        return a if a is not None and a.run == run else None

    def load_artifact(self, art: ArtifactState, wait: bool = True) -> ArtifactState:
        """Read, parse (or fetch from the cache) and index one artifact, in this thread, unless it is
        loaded already (checked without a lock). One lock per artifact: a slow artifact never delays
        another. With ``wait=False``, an artifact another thread is loading is returned as it is
        (state ``loading``: the caller answers that and the client polls)."""
        if art.state in (READY, ERROR):
            return art
        if not art.lock.acquire(blocking=wait):
            return art
        try:
            if art.state not in (READY, ERROR):
                self._load_artifact(art)
        finally:
            art.lock.release()
        return art

    def _load_artifact(self, art: ArtifactState) -> None:
        art.state = LOADING
        entry = art.entry
        url = self.fs.unstrip_protocol(entry.path)
        try:
            if entry.kind == "snapshot":
                snap = None
                if self.cache is not None:
                    got = self.cache.get_blob(url, entry.version, "snapshot")
                    snap = unpack_snapshot(*got) if got else None
                if snap is None:  # bounded like a trace (a sparse 2 GiB file is refused, not read whole)
                    snap = load_snapshot(read_trace_bytes(self.fs, entry.path, entry.size, json_document=False))
                    if self.cache is not None:
                        self.cache.put_blob(url, entry.version, "snapshot", *pack_snapshot(snap))
                art.views = SnapshotViews(snap)
                art.views.summary()
            elif entry.kind in MEMPROFILER_KINDS:
                art.views = load_memprofiler_views(self.fs, entry)
            else:
                art.views = TimelineExportViews(load_timeline_export(read_trace_bytes(self.fs, entry.path, entry.size)))
        except (SnapshotError, TimelineExportError, MemProfilerError, TraceReadError) as exc:
            art.error, art.state = self.client_message(str(exc)), ERROR
        except OSError as exc:
            art.error, art.state = self.client_message(f"cannot read file: {exc}"), ERROR
        except Exception as exc:  # one bad file must stay one file's problem
            logger.exception("reading %s failed", entry.rel)
            art.error, art.state = self.client_message(
                f"internal error while reading this file: {type(exc).__name__}: {exc}"), ERROR
        else:
            art.state = READY

    def _scan_loop(self) -> None:
        while not self._stop.is_set():
            self.scan()
            self._stop.wait(self.reload_interval)

    # -- loading ------------------------------------------------------------------------------
    def _artifact_loop(self) -> None:
        """Load queued memory artifacts in the background, in their own thread: a slow snapshot or
        YAML file never holds up the traces (the loader thread) nor another artifact's requests."""
        while not self._stop.is_set():
            with self._wake:
                art = next((a for a in self._artifacts.values() if a.state == QUEUED), None)
                if art is None:
                    self._wake.wait(timeout=self.reload_interval)
                    continue
            self.load_artifact(art)

    def _load_loop(self) -> None:
        while not self._stop.is_set():
            with self._wake:
                state = self._next_queued()
                if state is None:
                    self._wake.wait(timeout=self.reload_interval)
                    continue
                batch = self._parallel_batch(state) if self.cache is not None else []
            if len(batch) >= 2:  # this file and the next ones: the loads that follow become cache hits
                self.parse_in_parallel(batch)
            if state.state != QUEUED:  # loading or loaded meanwhile by a request (distributed view)
                continue
            self.ensure_loaded(state)  # under the file's lock: a request that started meanwhile loads it once
            if state.state == READY:  # warm the detail views so table requests only page and sort
                try:
                    self.tables(state).compute_all()
                    self._account(state.entry.rel)
                except Exception:
                    logger.exception("computing the views of %s failed", state.entry.rel)

    def _next_queued(self) -> FileState | None:
        """The next file to load (under the lock): a wanted one, else the first queued by path.
        Amortized O(1): files before ``_queue_pos`` have all left QUEUED."""
        while self._wanted:
            rel = self._wanted.popleft()
            st = self._files.get(rel)
            if st is not None and st.state == QUEUED:
                return st
        order = self._queue_order
        while self._queue_pos < len(order):
            st = order[self._queue_pos]
            if st.state == QUEUED and self._files.get(st.entry.rel) is st:
                return st
            self._queue_pos += 1
        return None

    def _parallel_batch(self, first: FileState) -> list[FileState]:
        """``first`` and the queued files after it, enough to be worth a process pool (under the lock):
        parallel parsing only pays for big files, so small batches are loaded one by one."""
        def uncached(st: FileState) -> int:
            return 0 if self.cache.has(self.fs.unstrip_protocol(st.entry.path), st.entry.version) else (
                decompressed_guess(st.entry.size, st.entry.name))

        batch, total = [first], uncached(first)
        if not total:  # already parsed: load it now, parse the next ones after
            return []
        cores = os.cpu_count() or 1
        for st in itertools.islice(self._queue_order, self._queue_pos, None):
            if len(batch) >= 8 * cores or total >= cores * PARALLEL_BATCH_BYTES:
                break
            if st is not first and st.state == QUEUED:
                size = uncached(st)
                if size:
                    batch.append(st)
                    total += size
        return batch if total >= PARALLEL_MIN_BYTES else []

    def want(self, state: FileState) -> None:
        """Load this file next (a user is looking at it)."""
        with self._wake:
            if state.state == QUEUED:
                self._wanted.appendleft(state.entry.rel)
                self._wake.notify_all()

    def ensure_loaded(self, state: FileState) -> FileState:
        """Load this file unless it is loaded (or failed) already. Under the file's lock: concurrent
        callers (the loader thread, distributed-view requests) wait for one load instead of each
        parsing the file."""
        if state.state in (READY, ERROR):
            return state
        with state.lock:
            if state.state not in (READY, ERROR):
                self._load_locked(state)
        return state

    def load(self, state: FileState, progress: Callable[[float], None] | None = None) -> FileState:
        """Parse (or fetch from the cache) and analyse one file now, in this thread (again, if it was
        loaded: see :meth:`ensure_loaded`). Waits for a load of it in progress elsewhere."""
        with state.lock:
            return self._load_locked(state, progress)

    def _load_locked(self, state: FileState, progress: Callable[[float], None] | None = None) -> FileState:
        started = time.perf_counter()
        state.progress = 0.0
        state.state = LOADING

        def report(fraction: float) -> None:
            state.progress = fraction
            if progress:
                progress(fraction)

        try:
            trace = self._parse(state, report)
            overview = compute_overview(trace)
            views = self._views_of(state, trace)
            if self._index_missing(state):  # the timeline index is part of parsing: built once and kept in
                views.timeline_meta()  # the parse cache, so the Trace view never waits for it once the file is ready
            contents = file_contents(views.memory_curves(), views.modules())
        except Exception as exc:  # a bad file, or an analysis bug, must stay one file's problem
            if not isinstance(exc, (TraceReadError, MemoryError)):
                logger.exception("analysing %s failed", state.entry.rel)
            state.error, state.state = self.client_message(error_message(exc)), ERROR
        else:
            state.warnings, state.notes = list(trace.warnings), list(trace.notes)
            state.overview, state.contents = overview, contents
            self._remember(state.entry.rel, views)
            state.progress, state.state = 1.0, READY
        state.load_seconds = time.perf_counter() - started
        return state

    def _index_missing(self, state: FileState) -> bool:
        """Whether this file's timeline index is neither in memory nor in the parse cache."""
        if self.cache is None:
            return True
        url = self.fs.unstrip_protocol(state.entry.path)
        return not self.cache.has_blob(url, state.entry.version, "timeline")

    def parse_in_parallel(self, states: list[FileState]) -> int:
        """Parse not-yet-cached files in a process pool straight into the parse cache, so the loads
        that follow are cache hits. Returns the number of worker processes used (0: nothing to do).
        The pool is sized to the cores and to the memory available: a worker needs about
        :data:`PARSE_MEMORY_FACTOR` × the file's decompressed size."""
        if self.cache is None:
            return 0
        busy = [st for st in states if st.state == QUEUED and st.lock.acquire(blocking=False)]
        try:  # the files' locks are held while the pool parses them: a request for one waits, then reads the cache
            return self._parse_locked_in_parallel(busy)
        finally:
            for st in busy:
                st.lock.release()

    def _parse_locked_in_parallel(self, busy: list[FileState]) -> int:
        todo = []
        seen = set()  # hard links to one file share a cache entry: parse it once
        for st in busy:
            url = self.fs.unstrip_protocol(st.entry.path)
            identity = self.cache.identity(url, st.entry.version)
            if st.state == QUEUED and identity not in seen and not self.cache.has(url, st.entry.version):
                seen.add(identity)
                todo.append((st.entry.path, url, st.entry.version, st.entry.size))
        if len(todo) < 2:
            return 0
        workers = parallel_workers([decompressed_guess(size, path) for path, _, _, size in todo])
        if workers < 2:
            return 0
        busy = [st for st in busy if st.state == QUEUED]
        for st in busy:  # shown as loading while the pool works; queued again for the (cached) load
            st.state = LOADING
        from .executors import LocalExecutor, RankJob

        jobs = [RankJob(key=path, url=url, version=version, size=size, cache_dir=os.path.dirname(self.cache.root),
                        aggregate=False) for path, url, version, size in todo]
        try:
            for result in LocalExecutor(workers=workers).map(jobs):
                if result.error or result.lost:  # the serial load that follows reports the error properly
                    logger.debug("parallel parse of %s failed: %s", result.key, result.error)
        finally:
            for st in busy:
                if st.state == LOADING:
                    st.state = QUEUED
        return workers

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
        return relative_paths(message, (self.root, os.path.abspath(self.logdir), os.path.realpath(self.root)),
                              self.prefix)

    def _parse(self, state: FileState, report: Callable[[float], None]) -> Trace:
        entry = state.entry
        url = self.fs.unstrip_protocol(entry.path)
        trace, from_cache = parse_entry(self.fs, entry.path, url, entry.version, entry.size, self.cache, report)
        if from_cache:
            state.from_cache = True
        return trace

    def _remember(self, rel: str, views: FileViews) -> None:
        with self._lock:
            self._views[rel] = views
            self._views.move_to_end(rel)
        self._account(rel)

    def _account(self, rel: str) -> None:
        """Measure one kept file's memory (columns + derived indexes + memoized views), then evict
        least recently used files until the total fits :data:`TRACE_MEMORY_BUDGET_BYTES`."""
        with self._lock:
            views = self._views.get(rel)
        if views is None:
            return
        shape = _shape(views)  # before measuring: an entry added meanwhile is measured next time
        size = view_bytes(views)  # outside the lock: walks the derived arrays
        with self._lock:
            if self._views.get(rel) is not views:
                return
            old = self._view_sizes.get(rel, (0.0, 0))[1]
            self._view_sizes[rel] = (time.monotonic(), size)
            self._view_shapes[rel] = shape
            self._views_total += size - old
            evicted = []
            while len(self._views) > 1 and self._views_total > TRACE_MEMORY_BUDGET_BYTES:
                dropped, gone = self._views.popitem(last=False)
                evicted.append(gone)
                self._views_total -= self._view_sizes.pop(dropped, (0.0, 0))[1]
                self._view_shapes.pop(dropped, None)
                logger.info("evicted %s from memory (budget %d MB)", dropped, TRACE_MEMORY_BUDGET_BYTES >> 20)
        if evicted:
            del evicted, views  # the last references this thread holds
            release_freed_memory()  # malloc arenas keep what the evicted views freed (see .release)

    def _grown(self) -> list[str]:
        """Kept files whose derived indexes or memoized views gained entries since they were
        measured (a request computed a view after the file was accounted)."""
        with self._lock:
            kept = list(self._views.items())
            shapes = dict(self._view_shapes)
        return [rel for rel, views in kept if _shape(views) != shapes.get(rel)]

    def _forget(self, rel: str) -> None:
        """Drop a file's views (under the lock): it changed or disappeared."""
        if self._views.pop(rel, None) is not None:
            self._views_total -= self._view_sizes.pop(rel, (0.0, 0))[1]
            self._view_shapes.pop(rel, None)

    def memory_in_use(self) -> dict[str, int]:
        """Bytes of each file kept in memory, as the budget counts them (most recently used last)."""
        with self._lock:
            return {rel: self._view_sizes.get(rel, (0.0, 0))[1] for rel in self._views}

    def tables(self, state: FileState) -> FileViews:
        """The detail views of a loaded file (re-read from the parse cache if it was evicted).
        Concurrent requests for an evicted file wait for one reload instead of each parsing it."""
        rel = state.entry.rel
        for grown in self._grown():  # what earlier requests added to any kept file counts now
            self._account(grown)
        with self._lock:
            views = self._views.get(rel)
            if views is not None:
                self._views.move_to_end(rel)
                measured = self._view_sizes.get(rel, (0.0, 0))[0]
                if time.monotonic() - measured > REMEASURE_S:  # requests grow the derived indexes
                    self._view_sizes[rel] = (time.monotonic(), self._view_sizes.get(rel, (0.0, 0))[1])
                    views = None
                    remeasure = True
                else:
                    return views
            else:
                remeasure = False
            reload_lock = self._reload_locks.setdefault(rel, threading.Lock())
        if remeasure:
            self._account(rel)
            with self._lock:
                views = self._views.get(rel)
                if views is not None:
                    return views
        with reload_lock:
            with self._lock:
                views = self._views.get(rel)
                if views is not None:
                    self._views.move_to_end(rel)
                    return views
            views = self._views_of(state, self._parse(state, lambda _: None))
            self._remember(rel, views)
        return views

    def _views_of(self, state: FileState, trace: Trace) -> FileViews:
        return file_views(trace, self.cache, self.fs.unstrip_protocol(state.entry.path), state.entry.version)

    # -- queries ------------------------------------------------------------------------------
    def files(self) -> list[FileState]:
        """Every trace file, by (run, worker, span); kept sorted by each scan, so this is a copy."""
        with self._lock:
            return list(self._order or ())

    def find(self, run: str, worker: str, span: str) -> FileState | None:
        with self._lock:
            return self._by_key.get((run, worker, span))

    def distributed(self, run: str, span: str = "1") -> dict:
        """The distributed view of a run's ranks at one span (see analysis.distributed), combined from
        each rank's aggregate. Ranks not analysed yet go to the remote executor when one is chosen
        (``executor`` / ``$KINETOSCOPE_EXECUTOR``), else are loaded here."""
        from .analysis.distributed import combine_ranks, rank_of_info, rank_reduce
        from .executors import is_remote

        states = sorted((st for st in self.files() if st.run == run and st.span == span), key=lambda s: s.worker)
        messages = []
        failed: dict[str, str] = {}
        todo = [st for st in states if st.aggregate is None and st.state not in (READY, ERROR)]
        if todo and is_remote(self.executor):
            executor, problem = self._remote_executor()
            if problem:
                messages.append(problem)
            if executor is not None:  # the files another request is analysing are waited for below
                mine = [st for st in todo if st.lock.acquire(blocking=False)]
                try:
                    self.analyse([st for st in mine if st.aggregate is None], executor, tables=False,
                                 failed=failed, warn=messages.append)
                finally:
                    for st in mine:
                        st.lock.release()
        ranks = []
        for position, st in enumerate(states):
            rel = st.entry.rel
            if st.aggregate is None and rel not in failed:
                self._rank_aggregate(st, rank_reduce)
            if st.aggregate is None:
                messages.append(f"{rel}: not analysed ({failed.get(rel) or st.error})")
                continue
            agg = st.aggregate["distributed"]
            rank, source = rank_of_info(agg["distributed_info"], st.worker, position)
            if source != "distributedInfo":
                messages.append(f"{st.worker}: no distributedInfo; rank {rank} taken from the {source}")
            ranks.append((rank, st.worker, agg))
        if len({r for r, _, _ in ranks}) < len(ranks):
            messages.append("two files claim the same rank: ranks are compared in worker order instead")
            ranks = [(i, w, t) for i, (_, w, t) in enumerate(ranks)]
        spans = sorted({st.span for st in self.files() if st.run == run}, key=int)
        # files: the run's files at this span; ranks_loaded: those that loaded (the ranks compared);
        # reason: why there is no view (null with one); the files' own failures are in messages
        out = {"state": "ready", "run": run, "span": span, "spans": spans, "files": len(states),
               "ranks_loaded": len(ranks), "reason": None}
        if len(ranks) < 2:
            return dict(out, reason=_no_view_reason(span, len(states), len(ranks)), view=None, messages=messages)
        view = combine_ranks(ranks)
        messages += view["matching"]["messages"]  # windows that do not line up, dtype/size mismatches
        if view["instances"]["total"] == 0:
            messages.append("no communication kernels found (CPU-only or Gloo ranks): transfer and sync times "
                            "need GPU collectives")
        return dict(out, view=view, messages=messages)

    def _rank_aggregate(self, st: FileState, reduce) -> None:
        """Load this file (if not loaded) and set its distributed aggregate ``reduce(trace)``, once:
        under the file's lock, so concurrent requests wait for one parse and one reduction."""
        with st.lock:
            if st.aggregate is not None:
                return
            if st.state in (QUEUED, LOADING):
                self._load_locked(st)
            if st.state == READY:
                st.aggregate = {"distributed": reduce(self.tables(st).trace)}

    # -- per-rank work on an executor -----------------------------------------------------------
    def rank_job(self, state: FileState, tables: bool = True):
        """The executor job of one file (see executors/task.py)."""
        from .executors import RankJob

        entry = state.entry
        return RankJob(key=entry.rel, url=self.fs.unstrip_protocol(entry.path), version=entry.version,
                       size=entry.size, cache_dir=os.path.dirname(self.cache.root) if self.cache is not None else None,
                       tables=tables)

    def analyse(self, states: list[FileState], executor, tables: bool = True, progress=None, warn=None,
                failed: dict[str, str] | None = None) -> None:
        """Run the per-rank task of each file on ``executor`` (results in completion order, ``progress``
        per rank). With ``tables`` (the report) each file ends READY with its overview and aggregate, or
        ERROR with its message; without, only ``aggregate`` is set and errors go to ``failed``."""
        from .executors import run_ranks
        from .executors.task import unpack

        by_key = {st.entry.rel: st for st in states}
        jobs = [self.rank_job(st, tables) for st in states]
        if tables:
            for st in states:
                st.state, st.progress = LOADING, 0.0
        for result in run_ranks(executor, jobs, progress, warn):
            st = by_key[result.key]
            error = self.client_message(result.error) if result.error else None
            if not tables:
                if error:
                    (failed if failed is not None else {})[result.key] = error
                else:
                    st.aggregate = result.aggregate
                continue
            st.load_seconds, st.from_cache = result.seconds, result.from_cache
            if error:
                st.error, st.state = error, ERROR
            else:
                st.warnings, st.notes = list(result.warnings), list(result.notes)
                st.aggregate = dict(result.aggregate, tables=unpack(result.aggregate["tables"]))
                st.overview = st.aggregate["tables"]["overview"]
                st.progress, st.state = 1.0, READY

    def _remote_executor(self):
        """``(executor, problem)``: the remote executor, opened once and kept; after a failure
        ``(None, message)`` and a new try only after :data:`EXECUTOR_RETRY_S`."""
        from .executors import open_executor

        with self._executor_lock:
            if self._executor is not None:
                return self._executor, None
            failed_at, message = self._executor_failure or (None, None)
            if failed_at is not None and time.monotonic() - failed_at < EXECUTOR_RETRY_S:
                return None, message
            problems: list[str] = []
            executor = open_executor(self.executor, problems.append)
            if problems:
                logger.warning("%s", problems[0])
                self._executor_failure = (time.monotonic(), problems[0])
                return None, problems[0]
            self._executor, self._executor_failure = executor, None
            return executor, None

    def workers_in_run(self, run: str) -> int:
        with self._lock:
            return self._workers_of_run.get(run, 0)

    def snapshot(self) -> dict[str, Any]:
        """The ``runs`` document of docs/http_api.md. Rebuilt only after a file's state changed (or,
        while a file is loading, every :data:`SNAPSHOT_PROGRESS_S` for its progress): the UI polls it."""
        changes = (_CHANGES[0], self.error, tuple(self.skipped_links))  # read before building: a change during the build invalidates it
        cached = self._snapshot
        if cached is not None and cached[0] == changes and (
                not cached[3] or time.monotonic() - cached[1] < SNAPSHOT_PROGRESS_S):
            return cached[2]
        doc, loading = self._build_snapshot()
        self._snapshot = (changes, time.monotonic(), doc, loading)
        return doc

    def _build_snapshot(self) -> tuple[dict[str, Any], bool]:
        files = self.files()
        artifacts = self.artifacts()
        runs: dict[str, dict[str, list]] = {}
        for st in files:
            runs.setdefault(st.run, {}).setdefault(st.worker, []).append(st.as_json())
        by_run: dict[str, list] = {}
        for a in artifacts:
            runs.setdefault(a.run, {})
            by_run.setdefault(a.run, []).append(a.as_json())
        done = sum(1 for st in files if st.state in (READY, ERROR))
        loading = any(st.state == LOADING for st in files)
        if self.error is not None:
            runs.setdefault(self.prefix or ".", {})
        return {
            "logdir": self.logdir,
            "loading": {"files_total": len(files), "files_done": done},
            "errors": [] if self.error is None else [
                {"logdir": self.logdir, "run": self.prefix or ".", "error": self.error}],
            "notices": skipped_links_notice(self.skipped_links),
            "runs": [
                {"name": run, "workers": [{"worker": w, "spans": spans} for w, spans in workers.items()],
                 "artifacts": by_run.get(run, []),
                 "error": self.error if self.error is not None and run == (self.prefix or ".") else None}
                for run, workers in sorted(runs.items(), key=lambda kv: _run_sort_key(kv[0]))
            ],
        }, loading

    def fs_of(self, state: FileState):
        """The filesystem holding this file."""
        return self.fs

    def client_message_of(self, state: FileState, message: str) -> str:
        """:meth:`client_message` of the registry holding ``state`` (this one)."""
        return self.client_message(message)


MAX_NAMED_LINKS = 5


def relative_paths(message: str, roots, prefix: str = "") -> str:
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
    named = ", ".join(links[:MAX_NAMED_LINKS]) + (f" and {len(links) - MAX_NAMED_LINKS} more"
                                                  if len(links) > MAX_NAMED_LINKS else "")
    return [f"Skipped {len(links)} symbolic link{'s' if len(links) != 1 else ''} ({named}): links to directories, "
            "and links that resolve outside the logdir, are not followed. Copy the files in, or point "
            "--logdir at the real folder."]


EXECUTOR_RETRY_S = 60.0  # after a remote executor failed, the local loads are used this long before a new try
REMEASURE_S = 1.0  # a kept file's memory is measured again at most this often (requests grow its indexes)
SNAPSHOT_PROGRESS_S = 0.5  # while a file loads, the runs snapshot shows its progress at most this stale
PARALLEL_MIN_BYTES = 64 << 20  # a process pool only pays for batches at least this big (decompressed)
PARALLEL_BATCH_BYTES = 512 << 20  # a parallel batch holds about this much per core, so a wanted file waits little
# Peak RSS of one parse ≤ this × the decompressed trace size. Measured (peak minus the interpreter's 41 MB):
# a real trace scaled to 121 MB (V100 ResNet-50, ~530 bytes an event) 2.7×; 117 MB of the smallest
# possible events (58 bytes each: 2 M events) 8.2×. The per-event columns dominate small events, so the
# worst case is planned for (it was 3, and a trace of tiny events peaked at ~7× in the review).
PARSE_MEMORY_FACTOR = 8
GZIP_RATIO_GUESS = 12  # decompressed ÷ compressed size assumed for .gz traces


def parallel_workers(decompressed_sizes: list[int]) -> int:
    """Worker processes for parallel parsing: at most the cores, and as many as fit in the available
    memory at :data:`PARSE_MEMORY_FACTOR` × the largest file's decompressed size each."""
    cores = os.cpu_count() or 1
    biggest = max(decompressed_sizes) if decompressed_sizes else 0
    need = PARSE_MEMORY_FACTOR * biggest
    available = _available_memory()
    by_memory = int(available // max(need, 1)) if available else cores
    return max(1, min(cores, len(decompressed_sizes), by_memory))


def _available_memory() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def parse_entry(fs, path: str, url: str, version: str, size: int, cache: ParseCache | None,
                report: Callable[[float], None] | None = None) -> tuple[Trace, bool]:
    """``(trace, came from the cache)`` for one file of ``fs``: read back from the parse cache, else
    parsed (progress through ``report``, fraction 0–1) and stored there with its raw events file."""
    report = report or (lambda _: None)
    if cache is not None:
        cached = cache.get(url, version)
        if cached is not None:
            return cached, True
    if cache is None:
        return load_trace_file(path, fs=fs, size=size, progress=report), False
    events_path = cache.events_path(url, version)
    parsed: list[Trace] = []

    def parse_into(file) -> None:
        with BackgroundWriter(file) as sink:
            parsed.append(load_trace_file(path, fs=fs, size=size, progress=report, events_sink=sink))

    try:
        write_atomic(events_path, parse_into)  # private, fsynced, renamed; no temp file survives
        trace = parsed[0]
        trace.meta["events_file"] = events_path
        trace.meta["events_bytes"] = os.path.getsize(events_path)  # the cache checks it on every hit
    except OSError:  # an unwritable cache only costs the full event args
        trace = parsed[0] if parsed else load_trace_file(path, fs=fs, size=size, progress=report)
    cache.put(url, version, trace)
    return trace, False


def file_views(trace: Trace, cache: ParseCache | None, url: str, version: str) -> FileViews:
    """The views of a parsed trace, storing their derived indexes beside it in the parse cache."""
    if cache is None:
        return FileViews(trace)
    return FileViews(trace, store=(lambda kind: cache.get_blob(url, version, kind),
                                   lambda kind, header, arrays: cache.put_blob(url, version, kind, header, arrays)))


def _run_sort_key(name: str) -> tuple:
    return (name != ".", posixpath.normpath(name))


def decompressed_guess(size: int, name: str) -> int:
    """The decompressed bytes of a file of ``size`` bytes named ``name`` (a path or URL will do)."""
    return size * (GZIP_RATIO_GUESS if name.endswith(".gz") else 1)


def _no_view_reason(span: str, files: int, loaded: int) -> str:
    """Why a run has no distributed view at ``span``, from its file count there and how many loaded."""
    if files == 0:
        return f"no file of this run has span {span}: there is nothing to compare across ranks"
    if files == 1:
        return "only one rank (file) in this run has this span: there is nothing to compare across ranks"
    return (f"{files - loaded} of the {files} files of span {span} failed to load, leaving {loaded} "
            f"rank{'' if loaded == 1 else 's'}: there is nothing to compare across ranks")


def _trace_bytes(trace: Trace) -> int:
    """The parsed columns of a trace (events, memory, flows, counters)."""
    return sum(a.nbytes for table in (trace.events, trace.memory, trace.flows, trace.counters)
               for a in table.columns.values())


def _shape(views: FileViews) -> tuple[int, int]:
    """Cheap change detector for :func:`view_bytes`: the number of derived indexes and memoized views."""
    return len(views.trace.derived), len(getattr(views, "_memo", {}))


def view_bytes(views: FileViews) -> int:
    """What one kept file holds: the columns, the string table, the derived indexes of
    ``trace.derived`` (timeline index, op tree, counters, …) and the memoized view rows."""
    trace = views.trace
    strings = views.__dict__.get("_strings_nbytes")
    if strings is None:
        strings = views.__dict__["_strings_nbytes"] = 8 * len(trace.strings) + sum(
            sys.getsizeof(s) for s in trace.strings)
    total = _trace_bytes(trace) + strings
    seen: set[int] = set()
    for holder in (trace.derived, getattr(views, "_memo", {})):
        try:
            total += _deep_nbytes(holder, seen, 0)
        except RuntimeError:  # a request added an entry meanwhile: measured again next time
            pass
    return total


def _deep_nbytes(obj: Any, seen: set[int], depth: int) -> int:
    """Bytes of the numpy arrays (and, roughly, the Python containers) reachable from ``obj``."""
    if id(obj) in seen or depth > 8:
        return 0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        return obj.nbytes if obj.base is None or id(obj.base) not in seen else 0
    if isinstance(obj, dict):
        return sys.getsizeof(obj) + sum(_deep_nbytes(v, seen, depth + 1) for v in list(obj.values()))
    if isinstance(obj, (list, tuple)):
        items = list(obj)
        if len(items) > 256 and not any(isinstance(x, np.ndarray) for x in items[:16]):
            sample = items[:: len(items) // 64]  # long row lists: measure a sample, scale it up
            part = sum(_deep_nbytes(x, set(), depth + 1) for x in sample)
            return sys.getsizeof(obj) + part * len(items) // max(len(sample), 1)
        return sys.getsizeof(obj) + sum(_deep_nbytes(x, seen, depth + 1) for x in items)
    if isinstance(obj, (str, bytes, int, float, bool)) or obj is None:
        return sys.getsizeof(obj)
    fields = getattr(obj, "__dict__", None)
    if fields is None and hasattr(obj, "__slots__"):
        fields = {k: getattr(obj, k, None) for k in obj.__slots__}
    return sys.getsizeof(obj) + (_deep_nbytes(fields, seen, depth + 1) if fields else 0)
