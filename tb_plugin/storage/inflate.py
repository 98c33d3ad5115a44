"""Bounds on inflating compressed input: the inflation ratio, and whitespace padding.

A gzip bomb is small on disk and huge inflated (``{"traceEvents":[`` and 2 GiB of spaces: 2 MB).
Real traces compress 5-30×; :func:`inflation_message` refuses a stream past :data:`MAX_INFLATION`
once it is larger than :data:`INFLATION_FLOOR_BYTES`. :func:`squeeze_blanks` keeps each long run of
JSON whitespace as one space, so padding that stays under the ratio still costs no memory.
"""

from __future__ import annotations

import queue
import re
import threading
import zlib
from typing import Any, Iterator, cast

MAX_INFLATION = 200  # decompressed bytes per compressed byte read, at most (past the floor below)
INFLATION_FLOOR_BYTES = 16 << 20  # streams inflating to less are never refused by the ratio
# In inflated JSON, a run of this much whitespace or more is kept as one space: no JSON token holds one
# (newlines and tabs are escaped inside strings; only a string of 64 Ki spaces would change).
BLANK_RUN_BYTES = 1 << 16
_BLANK_RUN = re.compile(rb"(?<![ \t\r\n])[ \t\r\n]{%d,}" % BLANK_RUN_BYTES)  # tried at a run's start only: linear


GZIP_WBITS = 16 + zlib.MAX_WBITS  # a gzip header and trailer around the deflate stream


def gzip_inflater(fast: bool = False) -> tuple[Any, type[Exception]]:
    """A new gzip decompressor (zlib's ``decompressobj`` interface) and the error it raises.

    ``fast``: ISA-L's (``isal``, ~2.4x zlib's speed on a trace) when installed. Its errors say less than
    zlib's, so only a reader whose every failure falls back to zlib's read asks for it (the early
    reader's child, storage/early_read.py): what a user is told about a bad file always comes from zlib."""
    if fast:
        try:
            from isal import isal_zlib
        except ImportError:
            pass
        else:
            error = cast("type[Exception]", isal_zlib.error)  # (typed as an instance by isal's stubs)
            return isal_zlib.decompressobj(wbits=GZIP_WBITS), error
    return zlib.decompressobj(wbits=GZIP_WBITS), zlib.error


def inflation_message(total: int, used: int) -> str | None:
    """Why a stream that inflated to ``total`` bytes from ``used`` compressed bytes is refused, or None."""
    if total > INFLATION_FLOOR_BYTES and total > MAX_INFLATION * max(used, 1):
        return (
            f"gzip data inflates more than {MAX_INFLATION}x ({total} bytes from {used} compressed bytes so far; "
            "real traces compress 5-30x): a gzip bomb? not read further"
        )
    return None


_BLANKS = b" \t\r\n"
_PROBE_BYTES = BLANK_RUN_BYTES // 2  # a run of BLANK_RUN_BYTES holds a whole probe-aligned window of this size
_SAMPLES = 16  # bytes of a window looked at before the whole window (all whitespace: a necessary condition)


def squeeze_blanks(out: bytes | bytearray) -> bytes | bytearray:
    """``out`` with each run of :data:`BLANK_RUN_BYTES` or more JSON whitespace bytes as one space.

    The regular expression costs ~25 ns a byte, so it runs only when some aligned window of
    :data:`_PROBE_BYTES` is all whitespace (one window per 32 KiB): without one, no run is long enough
    and ``out`` is returned as it is. A window is read whole (a C ``translate``) only when
    :data:`_SAMPLES` bytes spread over it are all whitespace, which few windows of a trace's JSON are."""
    if len(out) < BLANK_RUN_BYTES:
        return out
    stride = _PROBE_BYTES // _SAMPLES
    for start in range(0, len(out) - _PROBE_BYTES + 1, _PROBE_BYTES):
        end = start + _PROBE_BYTES
        if not out[start:end:stride].translate(None, _BLANKS) and not out[start:end].translate(None, _BLANKS):
            return _BLANK_RUN.sub(b" ", out)
    return out


AHEAD_BLOCKS = 2  # inflated blocks a reader thread may hold ahead of the decoder (each ≤ the read's block size)
_DONE = object()  # the producer's end mark in the queue


def inflated_ahead(blocks: Iterator[bytes | bytearray], depth: int = AHEAD_BLOCKS) -> Iterator[bytes | bytearray]:
    """The blocks of ``blocks`` (a generator that inflates), produced by a thread up to ``depth`` blocks
    ahead: zlib releases the GIL while it inflates, so the next blocks inflate on another core while
    the caller scans and decodes the last. An exception of ``blocks`` is raised here, where its block
    would have come; closing this generator early (the decoder stopped) stops the thread and ``blocks``."""
    out: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: object) -> bool:
        """Queue ``item`` once there is room; False when the consumer stopped first."""
        while not stop.is_set():
            try:
                out.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for block in blocks:
                if not put(block):
                    return
            item: object = _DONE
        except BaseException as exc:  # (raised in the consumer, where the block would have come)
            item = exc
        finally:
            close = getattr(blocks, "close", None)
            if close is not None:
                close()
        put(item)

    thread = threading.Thread(target=produce, name="kinetoscope-inflate", daemon=True)
    thread.start()
    try:
        while True:
            got = out.get()
            if got is _DONE:
                return
            if isinstance(got, BaseException):
                raise got
            yield got
    finally:
        stop.set()
        thread.join()
