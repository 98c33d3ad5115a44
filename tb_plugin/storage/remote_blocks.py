"""A large remote object (S3, GCS, Azure) read as a stream of blocks for the streamed decoder.

:class:`RemoteBlocks` is :class:`~.read.Blocks` (same checks, messages and limits: empty, not gzip,
corrupt or truncated gzip, not JSON, too big) over ranged reads of :data:`RANGE_BYTES` through
fsspec's file object, each retried on transient network errors (:func:`~.remote.with_retries`). A
thread reads :data:`AHEAD` ranges ahead of the decoder, so downloading overlaps decoding, and at most
``AHEAD + 1`` ranges are held: the object is never spooled to disk nor held whole in memory. A range
shorter than asked, or an object whose ETag changed (replaced after it was listed), fails like a
deleted object.
"""

from __future__ import annotations

import queue
import threading

from .read import Blocks, ReadError, _remote_message
from .remote import attempts_for, attempts_per_request, with_retries

RANGE_BYTES = 32 << 20  # one ranged request (moto reads the whole object for each: not too small)
AHEAD = 2  # ranges read ahead of the decoder
_POLL_S = 0.2  # how often a blocked reader thread checks that the decoder still wants its ranges


class _RangeError(Exception):
    def __init__(self, start: int, exc: BaseException) -> None:
        super().__init__(str(exc))
        self.start, self.exc = start, exc


class _Ranges:
    """A file-like ``read(n)`` over the object's ranges, read by a background thread."""

    def __init__(self, fs, path: str, size: int, range_bytes: int) -> None:
        self.fs, self.path, self.size, self.range_bytes = fs, path, size, range_bytes
        self._queue: queue.Queue = queue.Queue(maxsize=AHEAD)
        self._stop = threading.Event()
        self._buf, self._pos, self._eof = b"", 0, False
        self._thread = threading.Thread(target=self._run, name="kinetoscope-remote-read", daemon=True)
        self._thread.start()

    def _put(self, item) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def _run(self) -> None:
        fs, path, attempts = self.fs, self.path, attempts_for(self.fs)
        start = 0
        try:
            f = with_retries(lambda: fs.open(path, "rb", block_size=self.range_bytes, cache_type="none"), path,
                             attempts)
            with f:
                while start < self.size and not self._stop.is_set():
                    end = min(self.size, start + self.range_bytes)

                    def read_range(start=start, end=end) -> bytes:
                        f.seek(start)
                        try:
                            return f.read(end - start)
                        except OSError as exc:  # s3fs's FileExpired: the ETag changed since the open
                            if type(exc).__name__ == "FileExpired":
                                raise FileNotFoundError(path) from None
                            raise

                    data = with_retries(read_range, path, attempts)
                    if len(data) != end - start:  # replaced by a shorter object since it was listed
                        raise FileNotFoundError(path)
                    if not self._put(data):
                        return
                    start = end
            self._put(b"")
        except BaseException as exc:  # handed to the decoder's thread, which raises it
            self._put(_RangeError(start, exc))

    def read(self, n: int) -> bytes:
        while self._pos >= len(self._buf) and not self._eof:
            item = self._queue.get()
            if isinstance(item, _RangeError):
                self._eof = True
                raise item
            self._buf, self._pos = item, 0
            self._eof = not item
        out = self._buf[self._pos:self._pos + n]
        self._pos += len(out)
        if self._pos >= len(self._buf):
            self._buf, self._pos = b"", 0
        return out

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


class RemoteBlocks(Blocks):
    """:class:`~.read.Blocks` of a remote object of ``size`` bytes (see the module docstring);
    ``fraction()`` follows the bytes handed to the decoder."""

    def __init__(self, fs, path: str, size: int, range_bytes: int | None = None) -> None:
        super().__init__(fs, path, size)
        self.range_bytes = range_bytes or RANGE_BYTES

    def __iter__(self):
        url = self.fs.unstrip_protocol(self.path)
        ranges = _Ranges(self.fs, self.path, self.size, self.range_bytes)
        try:
            yield from self._blocks(ranges)
        except ReadError:
            raise
        except _RangeError as err:
            raise ReadError(_remote_message(err.exc, url, err.start, attempts_per_request(self.fs))) from None
        except Exception as exc:
            raise ReadError(_remote_message(exc, url, None, attempts_per_request(self.fs))) from None
        finally:
            ranges.close()
