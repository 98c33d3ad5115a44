"""The per-rank task every executor runs: read one trace file from its URL, parse it, reduce it.

:func:`reduce_rank` is a pure function of its :class:`RankJob` (a URL and what to compute) and
returns a :class:`RankResult` holding only aggregates — never event columns — so it can run in a
local worker process or on a Dask worker on another machine and send back a few KB. It never raises:
a bad file becomes that rank's ``error``. With a cache directory, the aggregate (with the file's
warnings and notes) is kept in the analysis cache (:mod:`~tb_plugin.registry.results`): a file this
code analysed before is neither parsed nor analysed again.

The aggregate (``RankResult.aggregate``) is a dict:

- ``distributed``: :func:`~tb_plugin.analysis.distributed.rank_reduce` (rank, world size,
  communication kernels, per-step overlap; µs, bytes), combined across ranks by
  :func:`~tb_plugin.analysis.distributed.combine_ranks`;
- ``insights`` (see :func:`~tb_plugin.registry.report.rank_aggregate`): the report's insight figures of this rank (per-GPU idle split, launch delay p50/p95 and overhead/queueing p50,
  exposed time; µs);
- ``tables`` (only when ``RankJob.tables``): the report's per-worker sections: ``overview``,
  ``operators``, ``kernels``, ``modules``, ``memory``. Their size grows with the number of distinct
  operator and kernel names, not with the trace length; they travel compressed (:func:`pack`,
  about 8 KB for a DLRM rank instead of 52 KB) and :func:`unpack` restores them exactly.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import posixpath
import threading
import time
import zlib
from typing import TYPE_CHECKING, Any, Callable, Protocol

from ...storage.fs import open_logdir
from ...storage.read import max_trace_bytes
from ...storage.remote import StorageError
from ...trace.errors import TraceReadError
from ...trace.forked_worker import reap_exited
from ...trace.heap import collect_and_release_after
from ..cache import ParseCache
from ..parse import open_views, parse_entry
from ..report import rank_aggregate
from ..results import ResultCache
from . import small_sections
from .sections import SectionFork, shared_before_fork, worth_forking

if TYPE_CHECKING:  # (a type only: a report without a process group never imports the records, ~3 ms)
    from ..records import RankAggregate


@dataclasses.dataclass(frozen=True)
class RankJob:
    """One trace file to reduce. ``url`` is an fsspec URL (or local path) the worker can open itself."""

    key: str  # the file's logdir-relative path: how the caller matches results to files
    url: str
    version: str  # size + mtime/ETag: the parse-cache key with the URL
    size: int  # bytes on storage
    cache_dir: str | None = None  # a parse cache directory on the worker's machine (None: no cache)
    aggregate: bool = True  # False: only parse into the cache (the background loader's warm-up)
    tables: bool = False  # also the report's per-worker tables
    progress_slot: int = -1  # where this job's parse progress (0..1) goes in the pool's shared array
    kind: str = "trace"  # "flight_recorder": read the dumps of ``batch`` instead (.dump_task)
    batch: tuple[tuple[str, str, int], ...] = ()  # (key, url, size) of each dump file of a "flight_recorder" job


class ProgressSlots(Protocol):
    """The process pool's shared progress array (a ``RawArray("d")``): one fraction 0..1 per slot."""

    def __setitem__(self, slot: int, fraction: float, /) -> None: ...


#: the process pool's shared progress array (:func:`init_progress`), or None
_PROGRESS: ProgressSlots | None = None


def init_progress(slots: ProgressSlots | None) -> None:
    """Pool initializer: the shared array each job writes its parse progress to (``progress_slot``)."""
    global _PROGRESS
    _PROGRESS = slots


def _reporter(slot: int) -> Callable[[float], None] | None:
    if _PROGRESS is None or slot < 0:
        return None
    slots = _PROGRESS

    def report(fraction: float) -> None:
        slots[slot] = fraction

    return report


@dataclasses.dataclass
class RankResult:
    key: str
    aggregate: dict[str, Any] | None = None
    error: str | None = None  # why this rank could not be analysed
    warnings: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)  # Trace.notes: about the file, not warnings
    seconds: float = 0.0  # wall time of the task on its worker
    where: str = ""  # host:pid that ran it
    from_cache: bool = False
    lost: bool = False  # the executor lost the task (worker died, cluster gone): retry it elsewhere


def host_name() -> str:
    """This machine's name, as ``socket.gethostname()`` gives it (on POSIX both read ``uname``'s node
    name): ``socket`` is imported only where ``os.uname`` is missing (~2 ms of a small file's start)."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket

    return socket.gethostname()


def reduce_rank(job: RankJob) -> RankResult:
    """Read, parse and reduce one file (see the module docstring). Never raises."""
    started = time.perf_counter()
    result = RankResult(key=job.key, where=f"{host_name()}:{os.getpid()}")
    if job.kind == "flight_recorder":
        from .dump_task import read_dump_batch

        try:
            result.aggregate = {"records": read_dump_batch(job.batch)}
        except Exception as exc:
            result.error = error_message(exc)
        result.seconds = time.perf_counter() - started
        return result
    try:
        # the file's own folder is the confinement root: files read beside the trace (Inductor's
        # kernel_information.json) are inside it, as they are inside the logdir
        folder, name = posixpath.split(job.url)
        fs, root = open_logdir(folder)
        path = posixpath.join(root, name)
        cache = ParseCache(job.cache_dir) if job.cache_dir else None
        results = ResultCache(cache, job.url, job.version) if cache is not None and job.aggregate else None
        name = "rank_aggregate:tables" if job.tables else "rank_aggregate"
        cached: tuple[bool, Any] = results.get(name) if results is not None else (False, None)
        hit, stored = cached
        if hit:  # analysed before by this code: nothing to parse or compute
            result.from_cache = True
            result.aggregate, result.warnings, result.notes = stored["aggregate"], stored["warnings"], stored["notes"]
        else:
            deferred: list[
                Callable[[], None]
            ] = []  # the parse cache's column write, made on a thread while the analyses run
            writer = None
            fork: SectionFork | None = None
            try:
                trace, result.from_cache = parse_entry(
                    fs,
                    path,
                    job.url,
                    job.version,
                    job.size,
                    cache,
                    _reporter(job.progress_slot),
                    deferred,
                    collect=False,
                )
                views = open_views(trace, cache, job.url, job.version) if job.aggregate else None
                items = len(trace.events) + len(trace.memory)
                if views is not None and worth_forking(items):
                    # a very large trace: the memos both processes read made once, and the parse's cycles
                    # collected, before the fork (pages freed after it are left to the child alone)
                    shared = shared_before_fork(trace, items)
                    if shared:
                        collect_and_release_after(items)
                    fork = SectionFork(views, job.tables, deferred, hand=True, hand_dir=cache.root if cache else None)
                    # else the parse's cycles collected while the child computes (the 0.3 GB trace: ~20 ms,
                    # one core idle when collected before the fork; the child never collects them), then
                    # the memos the child reads later computed for it (handed_memos)
                    fork.start_writes()  # (on a thread, beside what this process computes from here)
                    if not shared:
                        collect_and_release_after(items)
                    fork.hand_over()
                else:
                    collect_and_release_after(items)
                    if views is not None and small_sections.worth_splitting(items):  # (before the writes' thread)
                        fork = small_sections.split(views, job.tables)
                    writer = threading.Thread(
                        target=lambda: [call() for call in deferred], name="kinetoscope-cache-write"
                    )
                    writer.start()
                if views is not None:
                    result.aggregate = rank_aggregate(views, job.tables, run=fork.run if fork is not None else None)
            finally:
                if fork is not None:
                    fork.close()
                    fork.write_pending()  # (an error before the sections were computed: written here)
                reap_exited()  # the decode workers left to exit during the parse's finish (forked_worker)
                if writer is not None:
                    writer.join()
            result.warnings, result.notes = list(trace.warnings), list(trace.notes)
            if results is not None:
                results.put(name, {"aggregate": result.aggregate, "warnings": result.warnings, "notes": result.notes})
        if job.aggregate and job.tables and result.aggregate is not None:  # (set above with job.aggregate)
            result.aggregate = dict(result.aggregate, tables=pack(result.aggregate["tables"]))
    except Exception as exc:
        result.error = error_message(exc)
    result.seconds = time.perf_counter() - started
    return result


def error_message(exc: BaseException) -> str:
    """The per-file message of a failed load (the same words as the registry's own loads)."""
    if isinstance(exc, TraceReadError):
        return str(exc)
    if isinstance(exc, MemoryError):
        budget = max_trace_bytes()
        return (
            f"not enough memory to load and analyse this trace within the memory budget for one trace "
            f"({budget} bytes, {budget / (1 << 30):.3g} GiB; KINETOSCOPE_MAX_TRACE_BYTES)"
        )
    if isinstance(exc, StorageError):
        return str(exc)
    return f"internal error while analysing this file: {type(exc).__name__}: {exc}"


def pack(obj: Any) -> bytes:
    """Compressed bytes of a result section (zlib over pickle: floats and types come back exact)."""
    return zlib.compress(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), 6)


def unpack(data: bytes) -> Any:
    """The section :func:`pack` compressed (the result came from our own task, like every Dask result)."""
    return pickle.loads(zlib.decompress(data))


def received_aggregate(aggregate: dict[str, Any]) -> RankAggregate:
    """The typed record of a trace task's aggregate as it came back (its ``tables`` unpacked)."""
    out: RankAggregate = {"distributed": aggregate["distributed"]}
    if "insights" in aggregate:
        out["insights"] = aggregate["insights"]
    if "tables" in aggregate:
        out["tables"] = unpack(aggregate["tables"])
    return out
