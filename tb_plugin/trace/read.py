"""Read a trace file's bytes (gzip or plain) through fsspec, with progress and clear failures."""

from __future__ import annotations

import zlib
from typing import Callable

from .errors import TraceReadError

CHUNK_BYTES = 8 << 20
GZIP_MAGIC = b"\x1f\x8b"


def read_trace_bytes(
    fs, path: str, size: int | None = None, progress: Callable[[float], None] | None = None
) -> bytearray:
    """Return the decompressed bytes of ``path`` on filesystem ``fs`` (an fsspec filesystem).

    ``progress`` receives the fraction of the *compressed* file read so far. Gzip is detected by
    its magic bytes, not the file name. Raises :class:`TraceReadError` for a 0-byte file, a
    truncated or corrupt gzip stream, or an unreadable file.
    """
    try:
        with fs.open(path, "rb") as f:
            return _read_stream(f, size, progress)
    except TraceReadError:
        raise
    except (OSError, ValueError) as exc:
        raise TraceReadError(f"cannot read file: {exc}") from None


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
