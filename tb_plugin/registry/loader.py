"""Loading trace files: the background load loop, parallel batches on a process pool, and the
loads that requests ask for (:class:`TraceLoader`, a collaborator of :class:`~tb_plugin.registry.runs.RunRegistry`).

A loader thread parses queued files one at a time (the one a user asked for first), stores the
parsed columns in the parse cache and keeps the Overview; big batches of uncached files are first
parsed in parallel straight into the cache, so the loads that follow are cache hits. A file a user
asks for (:meth:`TraceLoader.want`) never waits for a batch: it is loaded at once, in this process (so its
progress moves: bytes read, then events decoded), by a second thread when the loader is busy.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import os
import threading
import time
from typing import TYPE_CHECKING, Callable

from ..analysis.contents import file_contents
from ..logs import module_logger
from ..storage.remote import StorageError
from ..trace.errors import TraceReadError
from ..trace.model import Trace
from .budget import ViewCache
from .executors.local import PARALLEL_MIN_BYTES, LocalExecutor, decompressed_guess, parallel_workers
from .executors.task import RankJob, error_message
from .parse import open_views, parse_entry
from .states import ERROR, LOADING, QUEUED, READY, FileState
from .views import FileViews

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

    from ..settings import Settings
    from .cache import ParseCache

logger = module_logger(__name__)

PARALLEL_BATCH_BYTES = 512 << 20  # a parallel batch holds about this much per core, so a wanted file waits little
PARSE_SHARE = 0.9  # share of a load's progress given to parsing; the rest is the Overview and indexes


@dataclasses.dataclass(frozen=True)
class Listing:
    """What the loader uses of the registry's listing, handed to it once when the registry composes it.
    The registry owns all of it: it changes ``files`` (under ``lock``), tells the loader through
    :meth:`TraceLoader.requeue` and :meth:`TraceLoader.forget`, and notifies ``wake``."""

    files: dict[str, FileState]  # rel → file, as the last scan listed them (read under ``lock``)
    lock: threading.RLock
    wake: threading.Condition  # on ``lock``: notified when files are listed, wanted or at stop
    stop: threading.Event  # set when the registry stops
    fs: AbstractFileSystem | None  # the logdir's filesystem; None: the logdir could not be opened
    fs_error: str | None  # why it could not be opened (with ``fs`` None)
    cache: ParseCache | None  # the parse cache loads read from and write to
    settings: Settings | None  # the entry point's settings (the memory budget), or None
    reload_interval: float  # s the load loop sleeps when nothing is queued (it wakes on ``wake``)
    client_message: Callable[[str], str]  # a per-file error message as clients see it


class TraceLoader:
    """The trace loads of one logdir, a collaborator of :class:`~.runs.RunRegistry`: it reads the
    registry's listing only through :class:`Listing`; its own state (the wanted files, the queue,
    the parsed views kept within the budget, the running batch) is changed only here."""

    def __init__(self, listing: Listing) -> None:
        self._listing = listing
        self._files = listing.files  # the registry's dict: read under the lock, never written here
        self._lock = listing.lock
        self._wake = listing.wake
        self._stop = listing.stop
        self.cache = listing.cache
        self._wanted: collections.deque[str] = collections.deque()  # rels a user asked for, most recent first
        budget = None if listing.settings is None else listing.settings.memory_budget_bytes
        self.view_cache = ViewCache(self._lock, budget)  # the parsed files kept in memory, within the budget
        self._queue_order: list[FileState] = []  # files by path: the loader's default order
        self._queue_pos = 0  # every file before it has left QUEUED (a scan starts it over)
        self._background = False  # the load loop runs (start_thread): wanted files get a thread of their own
        self._priority_busy = False  # a thread loads wanted files (see want)
        self._batch: dict[str, FileState] = {}  # rel → file of the running parallel batch (under the lock)
        self._batch_pool: LocalExecutor | None = None  # its pool, once its jobs are submitted

    @property
    def opened_fs(self) -> AbstractFileSystem:
        """The logdir's filesystem. Every listed file comes from an opened logdir, so a file's load
        has one; raises :class:`StorageError` (with the registry's reason) when it could not be opened."""
        fs = self._listing.fs
        if fs is None:
            raise StorageError(self._listing.fs_error or "the logdir could not be opened")
        return fs

    def start_thread(self) -> threading.Thread:
        """Start the load loop in a daemon thread (the registry's :meth:`~.runs.RunRegistry.start`)."""
        self._background = True
        thread = threading.Thread(target=self._load_loop, name="kinetoscope-load", daemon=True)
        thread.start()
        return thread

    def requeue(self, by_path: list[FileState]) -> None:
        """Under the lock, after a scan: the files in the loader's default order, from the first."""
        self._queue_order, self._queue_pos = by_path, 0

    def forget(self, rel: str, reload_lock: bool = False) -> None:
        """Under the lock: drop the parsed views of a file that changed or is gone (see ViewCache.forget)."""
        self.view_cache.forget(rel, reload_lock=reload_lock)

    def _load_loop(self) -> None:
        while not self._stop.is_set():
            with self._wake:
                state, wanted = self._next_queued()
                if state is None:
                    self._wake.wait(timeout=self._listing.reload_interval)
                    continue
                # a wanted file is loaded here, with its progress, never in a batch
                batch = self._parallel_batch(state) if self.cache is not None and not wanted else []
            if len(batch) >= 2:  # this file and the next ones: the loads that follow become cache hits
                self.parse_in_parallel(batch)
            if state.state != QUEUED:  # loading or loaded meanwhile by a request (distributed view)
                continue
            self._load_and_warm(state)

    def _load_and_warm(self, state: FileState) -> None:
        self.ensure_loaded(state)  # under the file's lock: a request that started meanwhile loads it once
        if state.state == READY:  # warm the detail views so table requests only page and sort
            try:
                self.views(state).compute_all()
                self.view_cache.account(state.entry.rel)
            except Exception:
                logger.exception("computing the views of %s failed", state.entry.rel)

    def _priority_loop(self) -> None:
        """Load wanted files one after the other, then end (started by :meth:`want`)."""
        try:
            while not self._stop.is_set():
                with self._wake:
                    state = self._next_wanted()
                    if state is None:
                        self._priority_busy = False
                        return
                self._load_and_warm(state)
        finally:
            with self._wake:
                self._priority_busy = False

    def _next_wanted(self) -> FileState | None:
        """The most recently wanted file still queued (under the lock), or None."""
        while self._wanted:
            rel = self._wanted.popleft()
            st = self._files.get(rel)
            if st is not None and st.state == QUEUED:
                return st
        return None

    def _next_queued(self) -> tuple[FileState | None, bool]:
        """The next file to load (under the lock) and whether a user wanted it: a wanted one, else the
        first queued by path. Amortized O(1): files before ``_queue_pos`` have all left QUEUED."""
        st = self._next_wanted()
        if st is not None:
            return st, True
        order = self._queue_order
        while self._queue_pos < len(order):
            st = order[self._queue_pos]
            if st.state == QUEUED and self._files.get(st.entry.rel) is st:
                return st, False
            self._queue_pos += 1
        return None, False

    def queue_positions(self) -> dict[str, int]:
        """rel → how many files will be loaded before it (0: next), for every queued file: the wanted
        ones first (most recent first), then by path."""
        with self._lock:
            seen: dict[str, int] = {}
            for rel in self._wanted:
                st = self._files.get(rel)
                if st is not None and st.state == QUEUED and rel not in seen:
                    seen[rel] = len(seen)
            for st in itertools.islice(self._queue_order, self._queue_pos, None):
                rel = st.entry.rel
                if st.state == QUEUED and rel not in seen and self._files.get(rel) is st:
                    seen[rel] = len(seen)
            return seen

    def _parallel_batch(self, first: FileState) -> list[FileState]:
        """``first`` and the queued files after it, enough to be worth a process pool (under the lock):
        parallel parsing only pays for big files, so small batches are loaded one by one."""
        cache, fs = self.cache, self.opened_fs
        if cache is None:  # no parse cache to parse into: every file is loaded one by one
            return []

        def uncached(st: FileState) -> int:
            return (
                0
                if cache.has(fs.unstrip_protocol(st.entry.path), st.entry.version)
                else (decompressed_guess(st.entry.size, st.entry.name))
            )

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
        """Load this file next (a user is looking at it): ahead of the queue and of any parallel batch
        (a batch's job not started yet is taken out of it); when the load loop runs (:meth:`start_thread`),
        a second thread loads it at once if the loader is busy with another file."""
        with self._wake:
            if state.state == LOADING and not self._take_from_batch(state):
                return  # being parsed (in the pool: its progress shows)
            if state.state != QUEUED:
                return
            rel = state.entry.rel
            if not self._wanted or self._wanted[0] != rel:
                if rel in self._wanted:
                    self._wanted.remove(rel)
                self._wanted.appendleft(rel)
            self._wake.notify_all()
            if self._background and not self._stop.is_set() and not self._priority_busy:
                self._priority_busy = True
                threading.Thread(target=self._priority_loop, name="kinetoscope-wanted", daemon=True).start()

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

    def load_held(self, state: FileState) -> FileState:
        """Load this file now, in this thread; the caller holds ``state.lock`` (see :class:`~.trace_files.TraceFiles`)."""
        return self._load_locked(state)

    def load(self, state: FileState, progress: Callable[[float], None] | None = None) -> FileState:
        """Parse (or fetch from the cache) and analyse one file now, in this thread (again, if it was
        loaded: see :meth:`ensure_loaded`). Waits for a load of it in progress elsewhere."""
        with state.lock:
            return self._load_locked(state, progress)

    def _load_locked(self, state: FileState, progress: Callable[[float], None] | None = None) -> FileState:
        """Parse, compute the Overview, show the file as ready; only then store the parsed columns in
        the parse cache and build the timeline index (kept there too), which the Overview does not
        need: the user sees the Overview that much sooner, and the Trace view's index is built by
        the time :meth:`load` returns (the loader thread warms the other views after it)."""
        started = time.perf_counter()
        state.progress = 0.0 if state.progress >= 1.0 else state.progress  # a pool's parse keeps its 0.9
        state.state = LOADING
        deferred: list[Callable[[], None]] = []  # work after READY (parse-cache write)

        def report(fraction: float) -> None:  # parsing is the first PARSE_SHARE of the load
            state.progress = PARSE_SHARE * fraction
            if progress:
                progress(state.progress)

        try:
            trace = self._parse(state, report, deferred)
            views = self._views_of(state, trace)
            overview = views.overview()  # from the analysis cache when this code analysed the file before
            contents = file_contents(trace)  # cheap flags; no curve or module tree is built here
        except Exception as exc:  # a bad file, or an analysis bug, must stay one file's problem
            if not isinstance(exc, (TraceReadError, MemoryError)):
                logger.exception("analysing %s failed", state.entry.rel)
            state.error, state.state = self._listing.client_message(error_message(exc)), ERROR
            state.load_seconds = state.ready_seconds = time.perf_counter() - started
            return state
        state.warnings, state.notes = list(trace.warnings), list(trace.notes)
        state.overview, state.contents = overview, contents
        self.view_cache.remember(state.entry.rel, views)
        state.progress, state.state = 1.0, READY
        state.ready_seconds = time.perf_counter() - started
        try:
            for call in deferred:
                call()
            if self._index_missing(state):  # the timeline index is part of parsing: built once and kept in
                views.timeline_meta()  # the parse cache, so the Trace view rarely waits for it
                self.view_cache.account(state.entry.rel)  # its arrays count against the memory budget
        except Exception:  # the file is shown; a failed cache write or index only costs a rebuild later
            logger.exception("storing the parse or the timeline index of %s failed", state.entry.rel)
        state.load_seconds = time.perf_counter() - started
        return state

    def _index_missing(self, state: FileState) -> bool:
        """Whether this file's timeline index is neither in memory nor in the parse cache."""
        if self.cache is None:
            return True
        url = self.opened_fs.unstrip_protocol(state.entry.path)
        return not self.cache.has_blob(url, state.entry.version, "timeline")

    def parse_in_parallel(self, states: list[FileState]) -> int:
        """Parse not-yet-cached files in a process pool straight into the parse cache, so the loads
        that follow are cache hits. Returns the number of worker processes used (0: nothing to do).
        The pool is sized to the cores and to the memory available: a worker needs about
        ``PARSE_MEMORY_FACTOR`` × the file's decompressed size (executors/local.py)."""
        cache = self.cache
        if cache is None:
            return 0
        busy = [st for st in states if st.state == QUEUED and st.lock.acquire(blocking=False)]
        with self._lock:
            self._batch = {st.entry.rel: st for st in busy}  # a wanted file leaves it (see _take_from_batch)
        try:  # the files' locks are held while the pool parses them: a request for one waits, then reads the cache
            return self._parse_locked_in_parallel(busy, cache)
        finally:
            with self._lock:
                held, self._batch, self._batch_pool = list(self._batch.values()), {}, None
            for st in held:
                st.lock.release()

    def _take_from_batch(self, state: FileState) -> bool:
        """Under the lock: take a wanted file out of the running batch when its job has not started in
        the pool (cancelled there): it is queued again, its lock released, to be loaded at once."""
        pool = self._batch_pool
        if self._batch.get(state.entry.rel) is not state or pool is None or not pool.cancel(state.entry.path):
            return False
        del self._batch[state.entry.rel]
        state.progress_source = None
        state.state = QUEUED
        state.lock.release()
        return True

    def _parse_locked_in_parallel(self, busy: list[FileState], cache: ParseCache) -> int:
        todo = []
        seen = set()  # hard links to one file share a cache entry: parse it once
        for st in busy:
            url = self.opened_fs.unstrip_protocol(st.entry.path)
            identity = cache.identity(url, st.entry.version)
            if st.state == QUEUED and identity not in seen and not cache.has(url, st.entry.version):
                seen.add(identity)
                todo.append((st.entry.path, url, st.entry.version, st.entry.size))
        if len(todo) < 2:
            return 0
        workers = parallel_workers([decompressed_guess(size, path) for path, _, _, size in todo])
        if workers < 2:
            return 0
        busy = [st for st in busy if st.state == QUEUED]
        import multiprocessing  # only for a pool (~3 ms the report of one file does not need)

        slots = multiprocessing.get_context("spawn").RawArray("d", len(todo))  # each job's parse progress
        slot_of = {path: i for i, (path, _, _, _) in enumerate(todo)}
        for st in busy:  # shown as loading, with the pool's progress; queued again for the (cached) load
            i = slot_of.get(st.entry.path)
            st.progress_source = None if i is None else (lambda i=i: PARSE_SHARE * slots[i])
            st.state = LOADING
        jobs = [
            RankJob(
                key=path,
                url=url,
                version=version,
                size=size,
                cache_dir=os.path.dirname(cache.root),
                aggregate=False,
                progress_slot=slot_of[path],
            )
            for path, url, version, size in todo
        ]
        pool = LocalExecutor(workers=workers, progress=slots)

        def submitted() -> None:  # from now on a wanted file's job may be cancelled (see _take_from_batch)
            self._batch_pool = pool

        try:
            for result in pool.map(jobs, submitted=submitted):
                if result.error or result.lost:  # the serial load that follows reports the error properly
                    logger.debug("parallel parse of %s failed: %s", result.key, result.error)
        finally:
            with self._lock:
                self._batch_pool = None
                busy = [st for st in busy if self._batch.get(st.entry.rel) is st]  # not those taken out
            for st in busy:
                st.progress = st.current_progress()
                st.progress_source = None
                if st.state == LOADING:
                    st.state = QUEUED
        return workers

    def _parse(
        self, state: FileState, report: Callable[[float], None], deferred: list[Callable[[], None]] | None = None
    ) -> Trace:
        entry, fs = state.entry, self.opened_fs
        url = fs.unstrip_protocol(entry.path)
        trace, from_cache = parse_entry(fs, entry.path, url, entry.version, entry.size, self.cache, report, deferred)
        if from_cache:
            state.from_cache = True
        return trace

    def views(self, state: FileState) -> FileViews:
        """The detail views of a loaded file (re-read from the parse cache if it was evicted).
        Concurrent requests for an evicted file wait for one reload instead of each parsing it."""
        return self.view_cache.get(state.entry.rel, lambda: self._views_of(state, self._parse(state, lambda _: None)))

    def _views_of(self, state: FileState, trace: Trace) -> FileViews:
        return open_views(trace, self.cache, self.opened_fs.unstrip_protocol(state.entry.path), state.entry.version)

    def memory_in_use(self) -> dict[str, int]:
        """Bytes of each file kept in memory, as the budget counts them (most recently used last)."""
        return self.view_cache.memory_in_use()
