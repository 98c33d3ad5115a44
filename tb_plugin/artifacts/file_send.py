"""A local snapshot file handed to its reader child without an 8 MiB block of it in this process.

A registry (a live server, MCP server, notebook, the report command) read a local snapshot in 8 MiB
blocks and wrote each into the reader child's stdin pipe (:func:`~.isolated.parse_blocks_in_child`):
this process held a block beside the child (8 MiB of both processes' peak together). A plain pickle
file (not gzip) over :data:`~.isolated.SHARED_MAX_BYTES` is instead opened here (:func:`open_pickle`)
and either given as stdin to a fresh reader child, which reads it as the report's early child does, or
copied into the spare reader child's pipe through one buffer of :data:`COPY_BYTES` (:func:`send_file`).
The child reads the same bytes either way, so its answer is the same.

Not ``sendfile``: into a pipe it returns as soon as the pipe takes a few pages (~40 KiB a call here), and
each next call takes the interpreter's lock again: beside another busy thread of this process (a
server's, the benchmark's poller) the waits for it stalled the child's read (the 20.8 MB snapshot's first
timeline 0.88-1.16 s against the blocks' 0.63-0.75 s, medians of 6). A ``write`` of a whole buffer into a
blocking pipe returns once all of it is in: one wait for the lock per buffer.
"""

from __future__ import annotations

import os
import time
from typing import IO

from ..storage.file_heads import is_pickle_head
from ..storage.private_files import open_regular

COPY_BYTES = 1 << 20  # the one buffer of the copy (bytes): what this process holds of the file


def open_pickle(path: str, larger_than: int) -> tuple[IO[bytes], int] | None:
    """``path`` opened for reading (a regular file, its last component no symlink; never a FIFO) and its
    size in bytes, when it starts as a pickle (protocol 2-5) and has more than ``larger_than`` bytes; else
    None (read in blocks, as before: a gzip file, a small one, another format)."""
    try:
        f = open_regular(path)
    except OSError:
        return None
    try:
        size = os.fstat(f.fileno()).st_size
        if size > larger_than and is_pickle_head(os.pread(f.fileno(), 2, 0)):
            return f, size
    except OSError:
        pass
    f.close()
    return None


class SendTimeout(Exception):
    """The deadline passed while a pickle was being written to its reader child (the child took too long
    to read it): the file's error (:func:`~.isolated.parse_file_in_child`, ``parse_blocks_in_child``)."""


def send_file(file: IO[bytes], out_fd: int, size: int, deadline: float) -> int:
    """Copy the first ``size`` bytes of ``file`` into ``out_fd`` (a pipe to a reader child) through one
    buffer of :data:`COPY_BYTES`, from offset 0 (the file's own offset is left alone); the bytes sent
    (fewer when the file shrank). :class:`SendTimeout` once ``time.monotonic()`` passes ``deadline``
    between buffers; :class:`BrokenPipeError` when the child stopped reading (it refused the file, or
    crashed)."""
    buffer = bytearray(min(COPY_BYTES, max(size, 1)))
    sent = 0
    while sent < size:
        if time.monotonic() > deadline:
            raise SendTimeout()
        n = os.preadv(file.fileno(), [memoryview(buffer)[: min(len(buffer), size - sent)]], sent)
        if n == 0:  # (the file is shorter than it was)
            break
        view = memoryview(buffer)[:n]
        while view:  # (a blocking pipe takes it whole; a signal may cut it short)
            view = view[os.write(out_fd, view) :]
        sent += n
    return sent
