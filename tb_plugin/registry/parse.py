"""From a file to a :class:`~tb_plugin.trace.model.Trace` and its views: bounded read (storage), decode
(trace), the parse cache (registry/cache.py). A leaf of the registry: the loader, the executors' per-rank
task and the tests all parse through :func:`parse_entry`."""

from __future__ import annotations

import mmap
import os
import stat
from typing import IO, TYPE_CHECKING, Callable, TypeVar, cast

from ..settings import current
from ..storage.early_read import claim_both as claim_early_read
from ..storage.private_files import fsync_path, put_in_place, write_atomic
from ..storage.read import Blocks, ReadError, max_trace_bytes, read_trace_bytes
from ..storage.remote import is_local_fs, url_to_fs
from ..storage.remote_blocks import RemoteBlocks
from ..storage.writer import BackgroundWriter
from ..trace.columns import EventsSink
from ..trace.decode import decode_trace
from ..trace.decode_stream import Unstreamable, decode_stream, default_workers
from ..trace.decode_workers import _NullSink, can_fork
from ..trace.early_split import read_split
from ..trace.errors import TraceReadError
from ..trace.heap import collect_and_release_after, release_after, release_freed_memory
from ..trace.model import Trace
from .cache import ParseCache, discard
from .provenance import read_provenance
from .raw_events import ends_fingerprint
from .results import ResultCache
from .views import FileViews

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

_Read = TypeVar("_Read")
READ_SHARE = 0.2  # share of the progress bar given to reading (gunzip is fast); the rest is decoding
# A file larger than this (bytes on storage; gzip counts 8×) is decoded as a stream of chunks, on all
# cores (trace/decode_stream.py); a smaller one as a whole document. A remote object is then read in
# ranged blocks (storage/remote_blocks.py) instead of being downloaded first.
# KINETOSCOPE_STREAM_ABOVE_BYTES changes it (0: stream every file).
STREAM_ABOVE_BYTES = 64 << 20
# The same where the decode workers are forks of this process (trace/decode_workers.py: ~5 ms to start,
# not ~0.15 s) and there is more than one core. Streamed on 2 cores against decoded whole (best of 6):
# 35 MB V100 sample 307 against 303 ms, the same ×2 (61 MB) 478 against 528 ms, 150 MB H100 trace 1.46
# against 1.79 s: the main process's read, gunzip and scan are the streamed parse's floor, so it gains
# from about 32 MB.
FORKED_STREAM_ABOVE_BYTES = 32 << 20
GZIP_RATIO = 8


def stream_above_bytes() -> int:
    """The size above which a file is streamed (see :data:`STREAM_ABOVE_BYTES`)."""
    chosen = current().stream_above_bytes
    if chosen is not None:
        return chosen
    if default_workers() > 1 and can_fork():
        return FORKED_STREAM_ABOVE_BYTES
    return STREAM_ABOVE_BYTES


def load_trace_file(
    path: str,
    fs: AbstractFileSystem | None = None,
    size: int | None = None,
    progress: Callable[[float], None] | None = None,
    events_sink: EventsSink | None = None,
    spool_dir: str | None = None,
) -> Trace:
    """Read and decode one trace file (local path or fsspec URL). Raises ``TraceReadError``.

    ``events_sink``: see :func:`~tb_plugin.trace.decode.decode_trace`. ``spool_dir``: where a large
    remote object is downloaded before parsing (default: the directory of ``events_sink``, which is
    the parse cache's, else the system temp dir). Inductor's ``kernel_information.json`` beside the
    file, when there is one, goes into ``meta["inductor_kernels"]`` (registry/provenance.py)."""
    if fs is None:
        fs, path = url_to_fs(str(path))
    trace = _load_trace_file(path, fs, size, progress, events_sink, spool_dir)
    provenance = read_provenance(fs, path)
    if provenance is not None:
        trace.meta["inductor_kernels"] = provenance
    return trace


def _load_trace_file(
    path: str,
    fs: AbstractFileSystem,
    size: int | None,
    progress: Callable[[float], None] | None,
    events_sink: EventsSink | None,
    spool_dir: str | None,
) -> Trace:
    if size is None:
        try:
            size = fs.size(path)
        except (OSError, ValueError):
            size = None
    if size is not None:
        expanded = size * (GZIP_RATIO if str(path).lower().endswith(".gz") else 1)
        if expanded > stream_above_bytes():
            blocks = Blocks(fs, path, size) if is_local_fs(fs) else RemoteBlocks(fs, path, size)
            trace = _load_streamed(blocks, progress, events_sink)
            if trace is not None:
                # the chunks' heap pages (trace/heap.py); a file streamed only for the cores (below
                # STREAM_ABOVE_BYTES) frees a few MB: given back by the trace-size rule, like a whole parse
                release_freed_memory() if expanded > STREAM_ABOVE_BYTES else release_after(_items(trace))
                return trace
    read_progress = (lambda x: progress(READ_SHARE * x)) if progress else None
    sink_name = getattr(events_sink, "name", None)
    if spool_dir is None and isinstance(sink_name, str):
        spool_dir = os.path.dirname(os.path.abspath(sink_name))
    # read by a child while the command line imported (storage/early_read.py), else here
    # (and split into joined batches there too: trace/early_split.py)
    early = claim_early_read(path) if is_local_fs(fs) else None
    data = (
        early.data
        if early is not None and early.data is not None
        else _read_error_as_trace_error(lambda: read_trace_bytes(fs, path, size, read_progress, spool_dir))
    )
    split = read_split(early.then) if early is not None and early.then is not None else None
    then_file = early.then_file if early is not None else None
    del early
    # the split's joined batches are the events file's bytes: where they lie in a file on disk, that file
    # becomes the events file (the writer takes it) and the decode writes nothing, only counts
    # their offsets (35 MB V100 sample: ~14 ms of this process's writer thread and ~7 ms of the decode
    # child's writes)
    taking = split is not None and then_file is not None and _can_take(events_sink)
    sink: EventsSink | None = _NullSink() if taking else events_sink
    decode_progress = (lambda x: progress(READ_SHARE + (1 - READ_SHARE) * x)) if progress else None
    try:
        trace = decode_trace(data, decode_progress, sink, halves=True, split=split)  # on two cores where that pays
    except BaseException:
        if then_file is not None:
            os.close(then_file)
        raise
    joined = split.joined if split is not None else 0
    del data, split
    if then_file is not None:
        if taking:
            cast(BackgroundWriter, events_sink).take(then_file, joined)
        else:
            os.close(then_file)
    release_after(_items(trace))
    return trace


def _can_take(sink: EventsSink | None) -> bool:
    """Whether ``sink`` can take a file that holds its bytes instead of being written (a fresh writer)."""
    return isinstance(sink, BackgroundWriter) and sink.can_take()


def _close_taken(sinks: list[BackgroundWriter]) -> None:
    """Close the file a writer took (the events file's write failed: it is never put in place)."""
    for sink in sinks:
        if sink.taken is not None:
            os.close(sink.taken[0])
            sink.taken = None


def _items(trace: Trace) -> int:
    return len(trace.events) + len(trace.memory)


def _load_streamed(
    blocks: Blocks, progress: Callable[[float], None] | None, events_sink: EventsSink | None
) -> Trace | None:
    """The trace decoded as a stream (bounded memory, all cores), or None when the document cannot
    be split (then it is decoded as a whole: its errors and recoveries are the reference)."""
    try:
        return decode_stream(blocks, progress, events_sink, workers=default_workers(), budget=max_trace_bytes())
    except ReadError as exc:
        raise TraceReadError(str(exc)) from None
    except Unstreamable:
        if events_sink is not None:  # what was written of the raw events is written again
            rewind = getattr(events_sink, "rewind", None)
            if rewind is not None:
                rewind()
            else:  # a plain file
                file = cast(IO[bytes], events_sink)
                file.seek(0)
                file.truncate()
        return None
    finally:  # a remote object's reader threads stop as soon as the decoder does (not when collected)
        close = getattr(blocks, "close", None)
        if close is not None:
            close()


def _local_file(fs: AbstractFileSystem, path: str) -> tuple[str, os.stat_result] | None:
    """``(real path, stat)`` of a regular local file, else None."""
    if not is_local_fs(fs):
        return None
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
    except (OSError, ValueError):
        return None
    return (real, st) if stat.S_ISREG(st.st_mode) else None


def _point_at_trace(trace: Trace, real: str, before: os.stat_result) -> None:
    """Record the trace file itself as the raw events file of ``trace`` (the decoder left its events in
    place): its size, mtime and inode as they were before the parse, which the cache checks on every
    hit. A file that changed during the parse gets no raw events file (details from the columns)."""
    try:
        after = os.stat(real)
    except OSError:
        return
    if (after.st_size, after.st_mtime_ns, after.st_ino) != (before.st_size, before.st_mtime_ns, before.st_ino):
        return
    try:
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        try:
            fingerprint = ends_fingerprint(fd, after.st_size)
        finally:
            os.close(fd)
    except OSError:
        return
    trace.meta.update(
        events_file=real,
        events_bytes=after.st_size,
        events_mtime_ns=after.st_mtime_ns,
        events_inode=after.st_ino,
        events_fingerprint=fingerprint,
    )


def read_bytes(
    fs: AbstractFileSystem, path: str, size: int | None = None, json_document: bool = True
) -> bytearray | mmap.mmap:
    """:func:`~tb_plugin.storage.read.read_trace_bytes` (no progress, the default spool), its read error
    raised as :class:`TraceReadError`: every file kind the registry reads goes through here or
    :func:`_read_error_as_trace_error`."""
    return _read_error_as_trace_error(lambda: read_trace_bytes(fs, path, size, json_document=json_document))


def _read_error_as_trace_error(read: Callable[[], _Read]) -> _Read:
    """``read()``, a :class:`~tb_plugin.storage.read.ReadError` raised as :class:`TraceReadError` (same message)."""
    try:
        return read()
    except ReadError as exc:
        raise TraceReadError(str(exc)) from None


def parse_entry(
    fs: AbstractFileSystem,
    path: str,
    url: str,
    version: str,
    size: int,
    cache: ParseCache | None,
    report: Callable[[float], None] | None = None,
    deferred: list[Callable[[], None]] | None = None,
    collect: bool = True,
) -> tuple[Trace, bool]:
    """``(trace, came from the cache)`` for one file of ``fs``: read back from the parse cache, else
    parsed (progress through ``report``, fraction 0–1) and stored there with its raw events file.
    With ``deferred``, the parsed columns are taken now and their write (a second or two on a 0.9 GB
    trace) is appended to it as a call, for the caller to make when it suits: once the file is shown,
    or on a thread while the analyses run (its raw events file is written during the parse, as always).
    Without ``collect``, the parse's reference cycles are left for the caller to collect
    (:func:`~tb_plugin.trace.heap.collect_and_release_after`: after forking a section child, this
    process collects them while the child computes)."""
    report = report or (lambda _: None)
    if cache is not None:
        cached = cache.get(url, version)
        if cached is not None:
            release_after(_items(cached))  # the entry's read buffers
            return check_analysis_budget(cached), True
    if cache is None:
        return check_analysis_budget(load_trace_file(path, fs=fs, size=size, progress=report)), False
    events_path = cache.events_path(url, version)
    parsed: list[Trace] = []
    # (real path, stat) of a local file whose raw events may stay in it (not one named .gz: its blocks are
    # inflated bytes; a gzip file of another name is found out by its first block and copied)
    local = None if str(path).lower().endswith(".gz") else _local_file(fs, path)

    sinks: list[BackgroundWriter] = []

    def parse_into(file: IO[bytes]) -> None:
        with BackgroundWriter(file) as sink:
            sinks.append(sink)
            if local is not None:
                sink.in_place_path = local[0]
            parsed.append(load_trace_file(path, fs=fs, size=size, progress=report, events_sink=sink))

    in_place = False
    try:  # private, renamed, no temp file survives; fsynced now, or by the deferred write before the columns
        try:
            write_atomic(events_path, parse_into, durable=deferred is None)
        except BaseException:
            _close_taken(sinks)
            raise
        if sinks and sinks[0].taken is not None:  # (the early split's file on disk holds the events)
            put_in_place(*sinks[0].taken, events_path, durable=deferred is None)
        trace = parsed[0]
        in_place = bool(trace.meta.pop("events_in_place", False))
        if in_place and local is not None:  # (events stay in place only in a local file: ``local``)
            discard(events_path)  # empty: the events were left in the trace file
            _point_at_trace(trace, *local)
        else:
            trace.meta["events_file"] = events_path
            trace.meta["events_bytes"] = os.path.getsize(events_path)  # the cache checks it on every hit
    except OSError:  # an unwritable cache only costs the full event args
        trace = parsed[0] if parsed else load_trace_file(path, fs=fs, size=size, progress=report)
        if trace.meta.pop("events_in_place", False) and local is not None:
            _point_at_trace(trace, *local)
    if deferred is not None:
        prepared = cache.prepare(url, version, trace)  # the trace as parsed, whatever the analyses add later
        items = _items(trace)

        def write_prepared() -> None:
            if not in_place:
                fsync_path(events_path)  # the raw events reach the disk before the entry that points at them
            cache.write_prepared(*prepared)
            release_after(items)  # the cache writer's copies

        deferred.append(write_prepared)
    else:
        cache.put(url, version, trace)
    # the parse's chunks and the cache writer's copies are freed but their heap pages stay in the
    # process, some of them held by reference cycles the paused collector left: give them back before
    # the analyses run
    if collect:
        collect_and_release_after(_items(trace))
    return check_analysis_budget(trace), False


# Peak memory the analyses of a full report add to the parsed columns, per event or memory event
# (bytes): VmHWM of a cold `report --json` above the RSS right after the parse, measured by
# benchmarks/bench_analysis_memory.py on real samples scaled to 0.1-0.2 GB: 194 (V100 ResNet-50; 202 at
# 0.9 GB), 194 (H100 Qwen), 223 (CPU-only torch 2.13), 217 (MI300 BERT), 232 (DLRM). Planned ~10 % above
# the largest: a lower figure would admit traces that then exhaust the budget half way.
ANALYSIS_BYTES_PER_EVENT = 256


def analysis_bytes(trace: Trace) -> int:
    """What the analyses of ``trace`` are planned to add at their peak to its parsed columns (bytes)."""
    return ANALYSIS_BYTES_PER_EVENT * _items(trace)


def check_analysis_budget(trace: Trace) -> Trace:
    """``trace``, or a :class:`TraceReadError` naming the budget when its analyses would need more than
    the memory budget for one trace (``KINETOSCOPE_MAX_TRACE_BYTES``, which also bounds the parsed
    columns): a clear per-file message before they start, never a process killed for memory half way."""
    need, budget = analysis_bytes(trace), max_trace_bytes()
    if need > budget:
        raise TraceReadError(
            f"analysing this trace ({len(trace.events)} events, {len(trace.memory)} memory events) needs about "
            f"{need} bytes ({need / (1 << 30):.3g} GiB) of memory beyond its parsed columns, more than {budget} "
            f"bytes ({budget / (1 << 30):.3g} GiB), the memory budget for one trace (KINETOSCOPE_MAX_TRACE_BYTES); "
            "raise it to analyse this file"
        )
    return trace


def open_views(trace: Trace, cache: ParseCache | None, url: str, version: str) -> FileViews:
    """The views of a parsed trace, storing their derived indexes and results beside it in the parse cache."""
    if cache is None:
        return FileViews(trace)
    return FileViews(
        trace,
        store=(
            lambda kind: cache.get_blob(url, version, kind),
            lambda kind, header, arrays: cache.put_blob(url, version, kind, header, arrays),
        ),
        results=ResultCache(cache, url, version),
    )
