"""Read a file's bytes (gzip or plain) through fsspec, with progress and clear failures.

Local files are read sequentially. A remote object (S3, GCS, Azure) up to :data:`RANGE_BYTES` is
fetched with one request; a larger one is downloaded with few large ranged requests of
:data:`RANGE_BYTES`, :data:`PREFETCH` in flight, each retried with backoff on transient network errors
and written at its offset into a temporary file in the parse-cache directory (``spool_dir``), then
read like a local file and removed: never held twice in memory; progress follows the download.

Every file read here (traces, allocator snapshots, memory-timeline exports) is limited to
:func:`max_trace_bytes` once decompressed (``KINETOSCOPE_MAX_TRACE_BYTES``, default 1/8 of the
machine's memory): gzip is inflated in bounded steps, at most :data:`~.inflate.MAX_INFLATION` times
the compressed bytes, long whitespace runs squeezed (:mod:`.inflate`); a JSON file whose first 8 MiB
hold no ``{``/``[`` (a whitespace bomb) is refused without reading further.
"""

from __future__ import annotations

import io
import mmap
import os
import threading
from typing import Callable

from ..settings import current
from .inflate import BLANK_RUN_BYTES, gzip_inflater, inflated_ahead, inflation_message, squeeze_blanks
from .remote import attempts_for, attempts_per_request, is_local_fs, remote_message, with_retries
from .sniff import GZIP_MAGIC, LEADING_BYTES


class ReadError(Exception):
    """A file unreadable within the bounds; its message is shown as is (the loader raises ``TraceReadError``)."""


CHUNK_BYTES = 8 << 20  # local sequential reads
# gzip is inflated this much at a time: a step's buffer is freed before the next, so its pages serve every
# step (steps of CHUNK_BYTES each came from fresh pages: the 35 MB V100 sample's inflate into a memory
# file took 13 200 page faults and ~62 ms against ~4 600 and ~43 ms)
INFLATE_STEP = 1 << 20
# The first block of a file that is not gzip (Blocks): its top-level keys are found within it, and a
# ranged parse's workers wait on it (the 0.3 GB trace's first 8 MiB read and copied: ~17 ms, both
# workers idle); the other blocks are of CHUNK_BYTES
HEAD_BYTES = 64 << 10
RANGE_BYTES = 256 << 20  # the largest ranged request for a remote object
PREFETCH = 4  # ranged requests in flight for a remote object (and the fewest ranges it is split into)
SPOOL_ABOVE_BYTES = 128 << 20  # a larger remote object is downloaded into a file (at most this in memory twice)
# The most bytes one file (trace, snapshot, memory export) may read or decompress to: a gzip bomb or
# a sparse file fails cleanly instead of exhausting memory. Set KINETOSCOPE_MAX_TRACE_BYTES (bytes) to
# change it; it is read at every file. The default follows the machine: a parse peaks at 3-7× the
# decompressed size, so 1/8 of the physical memory (3 GiB on 24 GB), at least 256 MiB, at most 16 GiB.
MAX_DEFAULT_BYTES = 16 << 30
MIN_DEFAULT_BYTES = 256 << 20
MEMORY_SHARE = 8  # the default is the physical memory divided by this
STREAM_LIMIT_SHARE = 16  # a streamed document may be this many times max_trace_bytes() (its memory is bounded)
JSON_HEAD_BYTES = 8 << 20  # a JSON document must show its first '{' or '[' within this many (decompressed) bytes


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def default_max_bytes() -> int:
    """The default read limit on this machine (bytes): see :data:`MEMORY_SHARE`."""
    total = _physical_memory()
    if not total:
        return MAX_DEFAULT_BYTES
    return max(MIN_DEFAULT_BYTES, min(MAX_DEFAULT_BYTES, total // MEMORY_SHARE))


def max_trace_bytes() -> int:
    """The limit in force: ``$KINETOSCOPE_MAX_TRACE_BYTES``, else :func:`default_max_bytes`."""
    return current().max_trace_bytes or default_max_bytes()


def _inflation_check(total: int, consumed: int, inflater) -> None:
    """Refuse ``total`` inflated bytes past the ratio; ``consumed``: compressed bytes read, some still in ``inflater``."""
    if message := inflation_message(
        total, consumed - len(inflater.unused_data if inflater.eof else inflater.unconsumed_tail)
    ):
        raise ReadError(message)


def _too_big(limit: int, what: str) -> ReadError:
    return ReadError(
        f"{what} size exceeds {limit} bytes ({limit / (1 << 30):.3g} GiB), the limit on one trace; "
        "raise KINETOSCOPE_MAX_TRACE_BYTES to read it"
    )


def read_trace_bytes(
    fs,
    path: str,
    size: int | None = None,
    progress: Callable[[float], None] | None = None,
    spool_dir: str | None = None,
    json_document: bool = True,
) -> bytearray | mmap.mmap:
    """Return the decompressed bytes of ``path`` on filesystem ``fs`` (an fsspec filesystem): a
    ``bytearray``, or for a large plain-JSON remote object a read-only ``mmap`` of its download.

    ``progress`` receives the fraction of the *compressed* file's bytes read (or downloaded) so far;
    ``spool_dir`` is where a large remote object is downloaded (default: the system temp dir). Gzip is detected by
    its magic bytes, not the file name. Raises :class:`ReadError` for a 0-byte file, a
    truncated or corrupt gzip stream, or an unreadable file; with ``json_document`` (the default)
    also for a document whose first non-blank byte is not ``{``/``[`` or that shows none in its first
    :data:`JSON_HEAD_BYTES`, before reading further. ``json_document=False`` serves other kinds
    (allocator-snapshot pickles) with the same bounds.
    """
    if not is_local_fs(fs):
        return _read_remote(fs, path, size, progress, spool_dir, json_document)
    try:
        with fs.open(path, "rb") as f:
            return _read_stream(f, size, progress, _named_gz(path), json_document)
    except ReadError:
        raise
    except (OSError, ValueError) as exc:
        raise ReadError(f"cannot read file: {exc}") from None


def read_open_file(f, size: int | None, path: str) -> bytearray:
    """:func:`read_trace_bytes` of the local file ``path`` already open as ``f`` (no progress): the early
    reader's child (early_read.py) reads with it."""
    return _read_stream(f, size, None, _named_gz(path))


def read_open_file_to(
    f, size: int | None, path: str, write: Callable[[bytes | bytearray], object], fast: bool = False
) -> None:
    """:func:`read_open_file`'s bytes given to ``write``: a gzip file's a step at a time as it inflates
    (:func:`gunzip_to`: never held whole; ``fast``: see :func:`.inflate.gzip_inflater`), any other's at
    once. ``f`` must be seekable."""
    head = f.read(CHUNK_BYTES)
    if head[:2] == GZIP_MAGIC:
        gunzip_to(f, head, size, None, write, fast=fast)
        return
    f.seek(0)
    write(read_open_file(f, size, path))


class _ChunkError(Exception):
    def __init__(self, start: int, exc: BaseException) -> None:
        super().__init__(str(exc))
        self.start, self.exc = start, exc


def _fetch(fs, path: str, start: int, end: int) -> bytes:
    try:
        data = with_retries(lambda: fs.cat_file(path, start=start, end=end), path, attempts_for(fs))
    except Exception as exc:
        raise _ChunkError(start, exc) from exc
    if len(data) != end - start:  # replaced by a shorter object since it was listed
        raise _ChunkError(start, FileNotFoundError(path))
    return data


def split_ranges(size: int) -> list[tuple[int, int]]:
    """``[start, end)`` byte ranges covering ``size`` bytes: as few equal ranges as :data:`RANGE_BYTES`
    allows, at least :data:`PREFETCH` (0.9 GB from moto: 15 ranges of 64 MB 5.8 s, 4 of 256 MB 3.0 s)."""
    count = max(PREFETCH, -(-size // RANGE_BYTES))
    step = max(1, -(-size // count))
    return [(start, min(size, start + step)) for start in range(0, size, step)]


def _download(fs, path: str, size: int, fd: int, progress) -> None:
    """Equal ranged requests (see :func:`split_ranges`), :data:`PREFETCH` in flight, each written at
    its offset."""
    ranges = split_ranges(size)
    done = 0
    failed = threading.Event()  # one range failed for good: the queued ones are not started

    def fetch_and_write(start: int, end: int) -> int:
        if failed.is_set():
            return 0
        try:
            data = _fetch(fs, path, start, end)
        except BaseException:
            failed.set()
            raise
        view = memoryview(data)
        while view:
            view = view[os.pwrite(fd, view, start + len(data) - len(view)) :]
        return len(data)

    import concurrent.futures  # (a remote download only: with logging, ~4 ms of a local report's imports)

    with concurrent.futures.ThreadPoolExecutor(PREFETCH, thread_name_prefix="kinetoscope-fetch") as pool:
        futures = [pool.submit(fetch_and_write, start, end) for start, end in ranges]
        try:
            for future in concurrent.futures.as_completed(futures):
                done += future.result()
                if progress:
                    progress(min(1.0, done / size))
        except BaseException:
            for f in futures:
                f.cancel()
            raise


def _read_remote(
    fs, path: str, size: int | None, progress, spool_dir: str | None, json_document: bool = True
) -> bytearray | mmap.mmap:
    url = fs.unstrip_protocol(path)
    try:
        if size is None:
            size = int(with_retries(lambda: fs.info(path), path, attempts_for(fs))["size"])
        if size <= min(RANGE_BYTES, SPOOL_ABOVE_BYTES):  # one request, no temporary file
            data = _fetch(fs, path, 0, size) if size else b""
            if progress:
                progress(1.0)
            return _read_stream(io.BytesIO(data), size, None, _named_gz(path), json_document)
        if spool_dir:
            os.makedirs(spool_dir, exist_ok=True)
        import tempfile  # remote objects only (its import costs ~3 ms of every cold report)

        fd, tmp = tempfile.mkstemp(prefix=".download-", suffix=".part", dir=spool_dir)
        try:
            os.ftruncate(fd, size)
            _download(fs, path, size, fd, progress)
            if os.pread(fd, 2, 0) != GZIP_MAGIC:
                _check_not_gzip(os.pread(fd, 16, 0), _named_gz(path))
                if size > max_trace_bytes():
                    raise _too_big(max_trace_bytes(), "file")
                if json_document:
                    head = os.pread(fd, JSON_HEAD_BYTES, 0)
                    check_json_head(head, len(head) < JSON_HEAD_BYTES)
                # plain JSON: decoded straight from the (private, already unlinked) file's pages,
                # without copying them into a buffer first
                return mmap.mmap(fd, size, prot=mmap.PROT_READ)
            with os.fdopen(os.dup(fd), "rb") as f:
                return _read_stream(f, size, None, False, json_document)
        finally:
            os.close(fd)
            os.unlink(tmp)
    except ReadError:
        raise
    except _ChunkError as err:
        raise ReadError(remote_message(err.exc, url, err.start, attempts_per_request(fs))) from None
    except Exception as exc:
        raise ReadError(remote_message(exc, url, None, attempts_per_request(fs))) from None


def _named_gz(path: str) -> bool:
    return str(path).lower().endswith(".gz")


def _check_not_gzip(head: bytes, named_gz: bool) -> None:
    """A file named ``*.gz`` without the gzip magic: plain JSON (a misnamed file) is read as such;
    anything else fails as "not gzip", which says more than the decoder's "not a JSON trace"."""
    if named_gz and head.lstrip(LEADING_BYTES)[:1] not in (b"{", b"["):
        raise ReadError(
            f"not gzip: the file is named .gz but starts with bytes {head[:2].hex(' ')}, "
            f"not the gzip magic 1f 8b (nor plain JSON)"
        )


def check_json_head(head: bytes | bytearray, complete: bool) -> None:
    """Refuse a JSON document early: its first non-blank byte must be ``{`` or ``[``, and it must
    appear within :data:`JSON_HEAD_BYTES` (``head`` is the document's start, ``complete`` whether it
    is the whole document; an all-blank complete file is left to the decoder's message)."""
    stripped = bytes(head[:4096]).lstrip(LEADING_BYTES)  # the usual case: no copy of the whole head
    if not stripped and len(head) > 4096:
        stripped = bytes(head[:JSON_HEAD_BYTES]).lstrip(LEADING_BYTES)
    if stripped:
        if stripped[:1] not in (b"{", b"["):
            raise ReadError(f"not a JSON trace: the document starts with {chr(stripped[0])!r}, expected '{{' or '['")
    elif not complete and len(head) >= JSON_HEAD_BYTES:
        raise ReadError(
            f"not a JSON trace: its first {JSON_HEAD_BYTES >> 20} MiB hold only whitespace "
            "(a whitespace bomb?); not read further"
        )


def _read_stream(f, size: int | None, progress, named_gz: bool = False, json_document: bool = True) -> bytearray:
    head = f.read(CHUNK_BYTES)
    if not head:
        raise ReadError("file is empty (0 bytes)")
    if head[:2] == GZIP_MAGIC:
        return _gunzip_stream(f, head, size, progress, json_document)
    _check_not_gzip(head, named_gz)
    limit = max_trace_bytes()
    if (size or 0) > limit or len(head) > limit:
        raise _too_big(limit, "file")
    if json_document:
        check_json_head(head, len(head) < CHUNK_BYTES)
    out = bytearray(head)
    while True:
        chunk = f.read(CHUNK_BYTES)
        if not chunk:
            break
        out += chunk
        if len(out) > limit:
            raise _too_big(limit, "file")
        if progress and size:
            progress(min(1.0, len(out) / size))
    return out


class Blocks:
    """The decompressed bytes of a local file as blocks of at most :data:`CHUNK_BYTES` (gzip inflated
    in bounded steps; a file that is not gzip starts with a block of :data:`HEAD_BYTES`), for a decoder that never holds the whole document: iterate it once.
    ``fraction()``: the share of the file's (compressed) bytes read so far. :func:`read_trace_bytes`'s checks
    and messages; the document may exceed :func:`max_trace_bytes` up to :data:`STREAM_LIMIT_SHARE` times
    (``limit_share``). ``json_document=False``: any document (an allocator-snapshot pickle), no JSON check."""

    def __init__(
        self, fs, path: str, size: int | None = None, json_document: bool = True, limit_share: int = STREAM_LIMIT_SHARE
    ) -> None:
        self.fs, self.path, self.size = fs, path, size
        self.json_document, self.limit_share = json_document, limit_share
        self.read, self.raw = 0, False  # raw: the blocks are the file's own bytes (not gzip), known at the first

    def fraction(self) -> float:
        return min(1.0, self.read / self.size) if self.size else 0.0

    def check_raw_size(self) -> None:
        """The size bound a file that is not gzip meets before its first block (:class:`ReadError` past
        it), for a reader given the file itself instead of these blocks."""
        limit = self.limit_share * max_trace_bytes()
        if (self.size or 0) > limit:
            raise _too_big(limit, "file")

    def __iter__(self):
        try:
            with self.fs.open(self.path, "rb") as f:
                yield from self._blocks(f)
        except ReadError:
            raise
        except (OSError, ValueError) as exc:
            raise ReadError(f"cannot read file: {exc}") from None

    def _blocks(self, f):
        limit = self.limit_share * max_trace_bytes()
        head = f.read(HEAD_BYTES)
        if len(head) == HEAD_BYTES and (head[:2] == GZIP_MAGIC or not bytes(head[:4096]).lstrip(LEADING_BYTES)):
            # gzip, or a blank start (the checks look further): the first CHUNK_BYTES, as for any file
            head += f.read(CHUNK_BYTES - HEAD_BYTES)
        self.read = len(head)
        if not head:
            raise ReadError("file is empty (0 bytes)")
        if head[:2] != GZIP_MAGIC:
            _check_not_gzip(head, _named_gz(self.path))
            self.check_raw_size()  # refused from its size, as read_trace_bytes does
            if self.json_document:
                check_json_head(head, len(head) < CHUNK_BYTES)
            self.raw = True
            total, chunk = 0, head
            while chunk:
                total += len(chunk)
                if total > limit:
                    raise _too_big(limit, "file")
                yield chunk
                chunk = f.read(CHUNK_BYTES)
                self.read += len(chunk)
            return
        # a trace's next blocks inflate on another core while the decoder scans the last (an allocator
        # snapshot's reader child takes one block at a time: no more held here)
        inflated = self._inflate(f, head, limit)
        yield from inflated_ahead(inflated) if self.json_document else inflated

    def _inflate(self, f, head: bytes, limit: int):
        """The inflated blocks of a gzip file whose first :data:`CHUNK_BYTES` are ``head`` (run by
        :func:`~.inflate.inflated_ahead`'s thread)."""
        inflater, inflate_error = gzip_inflater()
        consumed = total = 0
        chunk, checked = head, False
        while chunk:
            consumed += len(chunk)
            data = chunk
            while data:
                try:
                    out: bytes | bytearray = inflater.decompress(data, CHUNK_BYTES)
                except inflate_error as exc:
                    raise ReadError(f"corrupt gzip data near compressed byte {consumed}: {exc}") from None
                total += len(out)
                if total > limit:
                    raise _too_big(limit, "decompressed")
                _inflation_check(total, consumed, inflater)
                if self.json_document:
                    out = squeeze_blanks(out)
                if not checked and self.json_document and (out.lstrip(LEADING_BYTES) or total >= JSON_HEAD_BYTES):
                    check_json_head(out if out.lstrip(LEADING_BYTES) else b" " * JSON_HEAD_BYTES, False)
                    checked = True
                if out:
                    yield out
                if inflater.eof:
                    data = inflater.unused_data
                    if data:
                        inflater = gzip_inflater()[0]
                else:
                    data = inflater.unconsumed_tail
            chunk = f.read(CHUNK_BYTES)
            self.read = consumed + len(chunk)
        out = inflater.flush()
        total += len(out)
        if out:
            yield out
        if not inflater.eof:
            raise ReadError(
                f"gzip stream is truncated: it ends after {consumed} compressed bytes "
                f"({total} bytes decompressed) without its end marker"
            )


def gunzip_bounded(data: bytes | bytearray, json_document: bool = True) -> bytearray:
    """Inflate gzip ``data`` held in memory under the same limit as files (a bomb is refused)."""
    return _gunzip_stream(io.BytesIO(data[CHUNK_BYTES:]), data[:CHUNK_BYTES], len(data), None, json_document)


def _gunzip_stream(f, head: bytes | bytearray, size: int | None, progress, json_document: bool = True) -> bytearray:
    out = bytearray()
    gunzip_to(f, head, size, progress, out.extend, json_document)
    return out


def gunzip_to(
    f,
    head: bytes | bytearray,
    size: int | None,
    progress,
    write: Callable[[bytes | bytearray], object],
    json_document: bool = True,
    fast: bool = False,
) -> int:
    """Inflate the gzip file ``f`` whose first bytes are ``head`` into ``write``, bounded, checked and
    squeezed as the module docstring says, in steps of at most :data:`INFLATE_STEP` bytes (each step's
    buffer freed before the next: the same pages serve them all); returns the document's length in bytes.
    On :class:`ReadError` part of the document may have been written already. ``fast``: the inflater
    of :func:`.inflate.gzip_inflater` (the same bytes; a corrupt stream's message may differ)."""
    limit = max_trace_bytes()
    inflater, inflate_error = gzip_inflater(fast)
    consumed = inflated = length = 0  # compressed bytes read, bytes inflated, the document's bytes (squeezed)
    held: list[bytes] | None = [] if json_document else None  # the steps inflated before the JSON head's check
    chunk = head
    while chunk:
        consumed += len(chunk)
        data = chunk
        while data:
            try:  # inflate in steps of INFLATE_STEP at most, never past the limit (a gzip bomb)
                step = inflater.decompress(data, min(INFLATE_STEP, limit - length + 1))
            except inflate_error as exc:
                raise ReadError(f"corrupt gzip data near compressed byte {consumed}: {exc}") from None
            inflated += len(step)
            length += len(step)
            if length > limit:
                raise _too_big(limit, "decompressed")
            _inflation_check(inflated, consumed, inflater)
            if inflater.eof:  # a concatenated gzip member may follow
                data = inflater.unused_data
                if data:
                    inflater = gzip_inflater(fast)[0]
            else:
                data = inflater.unconsumed_tail
            if held is not None and (length >= JSON_HEAD_BYTES or bytes(step[:JSON_HEAD_BYTES]).lstrip(LEADING_BYTES)):
                check_json_head(b"".join(held) + step, False)  # (held: blank steps only, together < JSON_HEAD_BYTES)
                for earlier in held:
                    write(earlier)
                held = None
            if held is not None:
                held.append(step)
                continue
            if json_document and len(step) >= BLANK_RUN_BYTES:  # after the head's check
                squeezed = squeeze_blanks(step)  # most steps come back as they are
                length -= len(step) - len(squeezed)
                write(squeezed)
            else:
                write(step)
        if progress and size:
            progress(min(1.0, consumed / size))
        chunk = f.read(CHUNK_BYTES)
    tail = inflater.flush()
    length += len(tail)
    if length > limit:
        raise _too_big(limit, "decompressed")
    if not inflater.eof:
        raise ReadError(
            f"gzip stream is truncated: it ends after {consumed} compressed bytes "
            f"({length} bytes decompressed) without its end marker"
        )
    if held is not None:
        check_json_head(b"".join(held) + tail, True)
        for earlier in held:
            write(earlier)
    write(tail)
    return length
