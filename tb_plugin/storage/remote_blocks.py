"""A large remote object (S3, GCS, Azure) read as a stream of blocks for the streamed decoder.

:class:`RemoteBlocks` is :class:`~.read.Blocks` (same checks, messages and limits: empty, not gzip,
corrupt or truncated gzip, not JSON, too big) over ranged reads of :data:`RANGE_BYTES` through
fsspec's file object, each retried on transient network errors (:func:`~.remote.with_retries`).
:data:`CONCURRENCY` threads each fetch one range at a time, so that many ranged GETs are in flight at
once (a WAN is latency-bound: one connection rarely fills it), and the decoder gets the ranges in
order whatever order they complete in; downloading overlaps decoding.

Memory bound: a range takes a slot from the moment its GET starts until the decoder has read its
last byte, and there are ``CONCURRENCY + AHEAD`` slots, so at most ``(CONCURRENCY + AHEAD) ×
RANGE_BYTES`` bytes of the object are held (6 × 32 MiB = 192 MiB), whatever its size: it is never
spooled to disk nor held whole in memory. (The HTTP client also buffers each range in flight while
it arrives: the parsing process peaked 80–130 MB above one range at a time, 242 MB trace,
``benchmarks/bench_remote.py``.)

A range shorter than asked, or an object whose ETag changed (replaced after it was listed), fails
like a deleted object. A failed range (after its retries) stops new ranges from being started; the
ones before it are still delivered, then its error is raised once, in the decoder's thread. When the
decoder stops early (an error, the memory budget), :meth:`RemoteBlocks.close` (or the end of the
iteration) stops the threads: none starts another range, and each has ended when it returns.
"""

from __future__ import annotations

import threading
from typing import Any

from .read import Blocks, ReadError
from .remote import attempts_for, attempts_per_request, remote_message, with_retries

RANGE_BYTES = 32 << 20  # one ranged request (moto reads the whole object for each: not too small)
CONCURRENCY = 4  # ranged requests in flight at once (threads)
AHEAD = 2  # ranges fetched and waiting for the decoder beyond those in flight (see the bound above)


class _RangeError(Exception):
    def __init__(self, start: int, exc: BaseException) -> None:
        super().__init__(str(exc))
        self.start, self.exc = start, exc


class _Ranges:
    """A file-like ``read(n)`` over the object's ranges, fetched by ``concurrency`` threads and
    handed over in order; ``held`` ranges take a slot (at most ``concurrency + ahead``)."""

    def __init__(
        self, fs, path: str, size: int, range_bytes: int, concurrency: int | None = None, ahead: int | None = None
    ) -> None:
        self.fs, self.path, self.size, self.range_bytes = fs, path, size, range_bytes
        self.starts = list(range(0, size, range_bytes))
        concurrency = max(1, CONCURRENCY if concurrency is None else concurrency)
        self.bound = concurrency + max(0, AHEAD if ahead is None else ahead)
        self._cond = threading.Condition()
        self._done: dict[int, bytes | _RangeError] = {}  # fetched ranges (or their error) by index
        self._claimed = 0  # ranges started so far (in index order)
        self._next = 0  # the next range the decoder reads
        self.held = self.peak_held = 0  # ranges holding a slot: now, and at most so far
        self._stop = False  # set by close() or by a failed range: no range is started after it
        self._buf, self._pos, self._eof, self._holding = b"", 0, False, False
        self._attempts = attempts_for(fs)
        self._file: Any = None  # the fsspec file once opened
        try:
            self._file = with_retries(
                lambda: fs.open(path, "rb", block_size=range_bytes, cache_type="none"), path, self._attempts
            )
        except BaseException as exc:  # raised by the decoder's first read, as a failed first range
            self._done[0] = _RangeError(0, exc)
            self.starts, self._stop = [0], True
        count = 0 if self._stop else min(concurrency, len(self.starts))
        self._threads = [
            threading.Thread(target=self._run, name=f"kinetoscope-remote-read-{i}", daemon=True) for i in range(count)
        ]
        for t in self._threads:
            t.start()

    def _fetch(self, start: int, end: int) -> bytes:
        try:  # the file's ranged GET (what read() does with no cache), safe to call from several threads
            return self._file._fetch_range(start, end)
        except OSError as exc:  # s3fs's FileExpired: the ETag changed since the open
            if type(exc).__name__ == "FileExpired":
                raise FileNotFoundError(self.path) from None
            raise

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stop and self._claimed < len(self.starts) and self.held >= self.bound:
                    self._cond.wait()
                if self._stop or self._claimed >= len(self.starts):
                    return
                index = self._claimed
                self._claimed += 1
                self.held += 1
                self.peak_held = max(self.peak_held, self.held)
            start = self.starts[index]
            end = min(self.size, start + self.range_bytes)
            try:
                item = with_retries(lambda: self._fetch(start, end), self.path, self._attempts)
                if len(item) != end - start:  # replaced by a shorter object since it was listed
                    raise FileNotFoundError(self.path)
            except BaseException as exc:  # handed to the decoder's thread, which raises it
                item = _RangeError(start, exc)
            with self._cond:
                self._done[index] = item
                if isinstance(item, _RangeError):
                    self._stop = True
                self._cond.notify_all()

    def _release(self) -> None:
        """The decoder has read all of its current range: its slot goes to the next range."""
        if self._holding:
            self._holding = False
            with self._cond:
                self.held -= 1
                self._cond.notify_all()

    def read(self, n: int) -> bytes:
        while self._pos >= len(self._buf) and not self._eof:
            self._release()
            if self._next >= len(self.starts):
                self._eof = True
                break
            with self._cond:
                while self._next not in self._done:
                    self._cond.wait()
                item = self._done.pop(self._next)
            self._next += 1
            if isinstance(item, _RangeError):
                self._eof = True
                raise item
            self._buf, self._pos, self._holding = item, 0, True
        out = self._buf[self._pos : self._pos + n]
        self._pos += len(out)
        if self._pos >= len(self._buf):
            self._buf, self._pos = b"", 0
        return out

    def close(self) -> None:
        """Stop the threads (a range in flight finishes its GET first) and wait for them."""
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        for t in self._threads:
            t.join()
        self._done.clear()
        self._buf = b""
        if self._file is not None:
            try:
                self._file.close()
            except Exception:  # a read-only file: nothing to flush
                pass


class RemoteBlocks(Blocks):
    """:class:`~.read.Blocks` of a remote object of ``size`` bytes (see the module docstring);
    ``fraction()`` follows the bytes handed to the decoder. ``close()`` stops its reader threads
    (the end of the iteration does too)."""

    def __init__(self, fs, path: str, size: int, range_bytes: int | None = None) -> None:
        super().__init__(fs, path, size)
        self.range_bytes = range_bytes or RANGE_BYTES
        self._ranges: _Ranges | None = None

    def __iter__(self):
        url = self.fs.unstrip_protocol(self.path)
        self._ranges = ranges = _Ranges(self.fs, self.path, self.size or 0, self.range_bytes)  # (size: given)
        try:
            yield from self._blocks(ranges)
        except ReadError:
            raise
        except _RangeError as err:
            raise ReadError(remote_message(err.exc, url, err.start, attempts_per_request(self.fs))) from None
        except Exception as exc:
            raise ReadError(remote_message(exc, url, None, attempts_per_request(self.fs))) from None
        finally:
            ranges.close()

    def close(self) -> None:
        if self._ranges is not None:
            self._ranges.close()
