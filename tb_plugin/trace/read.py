"""Read a trace file's bytes (gzip or plain) through fsspec, with progress and clear failures.

Local files are read sequentially. Remote objects (S3, GCS, Azure) are read as ranged requests of
:data:`CHUNK_BYTES`, :data:`PREFETCH` of them in flight, each retried with backoff on transient
network errors; chunks are appended (or gunzipped) into one buffer as they arrive, so the object is
never held twice in memory.
"""

from __future__ import annotations

import collections
import concurrent.futures
import zlib
from typing import Callable

from ..storage.remote import describe_error, is_local_fs, is_transient, with_retries
from .errors import TraceReadError

CHUNK_BYTES = 8 << 20
PREFETCH = 4  # ranged requests in flight for a remote object
GZIP_MAGIC = b"\x1f\x8b"


def read_trace_bytes(
    fs, path: str, size: int | None = None, progress: Callable[[float], None] | None = None
) -> bytearray:
    """Return the decompressed bytes of ``path`` on filesystem ``fs`` (an fsspec filesystem).

    ``progress`` receives the fraction of the *compressed* file read so far. Gzip is detected by
    its magic bytes, not the file name. Raises :class:`TraceReadError` for a 0-byte file, a
    truncated or corrupt gzip stream, or an unreadable file.
    """
    if not is_local_fs(fs):
        return _read_remote(fs, path, size, progress)
    try:
        with fs.open(path, "rb") as f:
            return _read_stream(f, size, progress)
    except TraceReadError:
        raise
    except (OSError, ValueError) as exc:
        raise TraceReadError(f"cannot read file: {exc}") from None


class _RangedReader:
    """``read()`` returns the object's next chunk: ranged requests, prefetched, retried."""

    def __init__(self, fs, path: str, size: int, pool) -> None:
        self.fs, self.path, self.size, self.pool = fs, path, size, pool
        self.next_start = 0
        self.pending: collections.deque = collections.deque()
        self._fill()

    def _fetch(self, start: int, end: int) -> bytes:
        return with_retries(lambda: self.fs.cat_file(self.path, start=start, end=end), self.path)

    def _fill(self) -> None:
        while len(self.pending) < PREFETCH and self.next_start < self.size:
            end = min(self.size, self.next_start + CHUNK_BYTES)
            self.pending.append((self.next_start, self.pool.submit(self._fetch, self.next_start, end)))
            self.next_start = end

    def read(self, _n: int = -1) -> bytes:
        if not self.pending:
            return b""
        start, future = self.pending.popleft()
        try:
            data = future.result()
        except Exception as exc:
            for _, f in self.pending:
                f.cancel()
            self.pending.clear()
            raise _ChunkError(start, exc) from exc
        self._fill()
        return data


class _ChunkError(Exception):
    def __init__(self, start: int, exc: BaseException) -> None:
        super().__init__(str(exc))
        self.start, self.exc = start, exc


def _read_remote(fs, path: str, size: int | None, progress) -> bytearray:
    url = fs.unstrip_protocol(path)
    try:
        if size is None:
            size = int(with_retries(lambda: fs.info(path), path)["size"])
        with concurrent.futures.ThreadPoolExecutor(PREFETCH, thread_name_prefix="kinetoscope-fetch") as pool:
            return _read_stream(_RangedReader(fs, path, size, pool), size, progress)
    except TraceReadError:
        raise
    except _ChunkError as err:
        raise TraceReadError(_remote_message(err.exc, url, err.start)) from None
    except Exception as exc:
        raise TraceReadError(_remote_message(exc, url, None)) from None


def _remote_message(exc: BaseException, url: str, start: int | None) -> str:
    at = f" at byte {start}" if start else ""
    if isinstance(exc, FileNotFoundError):
        return f"the object was deleted or replaced after it was listed: {url} no longer exists"
    if is_transient(exc):
        from ..storage.remote import RETRIES

        return f"network error reading {url}{at}, still failing after {RETRIES} attempts: {describe_error(exc)}"
    return f"cannot read {url}{at}: {describe_error(exc)}"


def _read_stream(f, size: int | None, progress) -> bytearray:
    head = f.read(CHUNK_BYTES)
    if not head:
        raise TraceReadError("file is empty (0 bytes)")
    if head[:2] == GZIP_MAGIC:
        return _gunzip_stream(f, head, size, progress)
    out = bytearray(head)
    while True:
        chunk = f.read(CHUNK_BYTES)
        if not chunk:
            break
        out += chunk
        if progress and size:
            progress(min(1.0, len(out) / size))
    return out


def _gunzip_stream(f, head: bytes, size: int | None, progress) -> bytearray:
    out = bytearray()
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    consumed = 0
    chunk = head
    while chunk:
        consumed += len(chunk)
        data = chunk
        while data:
            try:
                out += inflater.decompress(data)
            except zlib.error as exc:
                raise TraceReadError(f"corrupt gzip data near compressed byte {consumed}: {exc}") from None
            if inflater.eof:  # a concatenated gzip member may follow
                data = inflater.unused_data
                if data:
                    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
            else:
                data = b""
        if progress and size:
            progress(min(1.0, consumed / size))
        chunk = f.read(CHUNK_BYTES)
    out += inflater.flush()
    if not inflater.eof:
        raise TraceReadError(
            f"gzip stream is truncated: it ends after {consumed} compressed bytes "
            f"({len(out)} bytes decompressed) without its end marker"
        )
    return out
