"""Writing a large file past the page cache (``O_DIRECT``): the parse cache's large entries.

A buffered write copies every byte into a fresh page of the page cache. On a virtual machine whose
host takes freed memory back (free page reporting), each such page costs a fault in the host: a
918 MB entry (the 4.5 GB trace's) took 2.5 s of kernel time written buffered and fsynced, against
0.1 s of CPU and 0.5 s of wall written here, where the disk reads the bytes from one reused buffer.
On any machine it leaves the page cache to the traces being read instead of filling it with a
file nobody reads until the next start.

``O_DIRECT`` wants the memory, the file offset and the length of every write aligned to the file
system's block: the bytes go through a page-aligned buffer of :data:`BUFFER_BYTES`; the last block
is padded with zeros and the file cut back to its length. Where the system has no ``O_DIRECT`` or the
file system refuses it at the open (``EINVAL``, ``EOPNOTSUPP``), :func:`open_direct` says so and the
caller writes buffered; refused at a write, the writer clears the flag and writes that buffer and the
rest buffered: the file's contents never depend on the path taken.
"""

from __future__ import annotations

import errno
import mmap
import os
from typing import Any

BUFFER_BYTES = 16 << 20  # the bounce buffer: one write to the disk per this many bytes
BLOCK = 4096  # every direct write's offset and length are multiples of this (bytes; the page size)
_O_DIRECT = getattr(os, "O_DIRECT", 0)  # (none on macOS and Windows: always buffered there)
# what a file system that takes no direct writes answers (EINVAL; some FUSE and network ones EOPNOTSUPP)
_REFUSED = frozenset({errno.EINVAL, errno.EOPNOTSUPP})


def open_direct(path: str, flags: int, mode: int) -> tuple[int, bool]:
    """``(fd, direct)``: ``path`` opened with ``flags`` and ``O_DIRECT`` where the system and the file
    system take it (``direct`` True), else with ``flags`` alone (:data:`_REFUSED`). Raises ``OSError``."""
    if _O_DIRECT:
        try:
            return os.open(path, flags | _O_DIRECT, mode), True
        except OSError as exc:
            if exc.errno not in _REFUSED:
                raise
    return os.open(path, flags, mode), False


class DirectWriter:
    """A binary file-like writer over the descriptor ``fd``, opened with ``O_DIRECT`` at offset 0
    (:func:`open_direct`): :meth:`write` takes any bytes-like object, :meth:`close` writes what is left
    and cuts the file to the bytes written. The descriptor stays open (its owner fsyncs and closes it)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._direct = True  # until a write is refused (then the flag is cleared on the descriptor)
        self._buffer: mmap.mmap | None = mmap.mmap(-1, BUFFER_BYTES)
        self._filled = 0  # bytes waiting in the buffer
        self.written = 0  # bytes taken by :meth:`write` so far (the file's length once closed)

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        self.written += len(view)
        assert self._buffer is not None, "written after close"
        at = 0
        while at < len(view):  # one pass per BUFFER_BYTES: the count is bytes / 16 MiB
            n = min(len(view) - at, BUFFER_BYTES - self._filled)
            self._buffer[self._filled : self._filled + n] = view[at : at + n]
            self._filled += n
            at += n
            if self._filled == BUFFER_BYTES:
                self._drain(BUFFER_BYTES)
        return len(view)

    def _drain(self, length: int) -> None:
        """Write the buffer's first ``length`` bytes (a multiple of :data:`BLOCK`); a file system that
        refuses the direct write gets it, and every later one, buffered."""
        assert self._buffer is not None
        view = memoryview(self._buffer)[:length]
        try:
            at = 0
            while at < length:
                try:
                    at += os.write(self._fd, view[at:])
                except OSError as exc:  # a refused write wrote nothing: the rest again, buffered
                    if exc.errno not in _REFUSED or not self._direct:
                        raise
                    self._direct = False
                    _clear_direct(self._fd)
        finally:
            view.release()
        self._filled = 0

    def close(self) -> None:
        """Write the bytes still buffered (padded to a block) and cut the file to :attr:`written`."""
        if self._buffer is None:
            return
        try:
            if self._filled:
                padded = self._filled + (-self._filled % BLOCK)
                self._buffer[self._filled : padded] = bytes(padded - self._filled)
                self._drain(padded)
                os.ftruncate(self._fd, self.written)
        finally:
            self._free()

    def __enter__(self) -> DirectWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.close()
        else:  # already failing: the file is discarded by its owner
            self._free()

    def _free(self) -> None:
        buffer, self._buffer = self._buffer, None
        if buffer is not None:
            try:
                buffer.close()
            except BufferError:  # a failed write's traceback still holds a view of it: freed with it
                pass


def _clear_direct(fd: int) -> None:
    import fcntl

    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~_O_DIRECT)
