"""A local snapshot file handed to its reader child by the kernel, never through this process's memory.

A registry (a live server, MCP server, notebook, the report command) read a local snapshot in 8 MiB
blocks and wrote each into the reader child's stdin pipe (:func:`~.isolated.parse_blocks_in_child`):
this process held a block beside the child (8 MiB of both processes' peak together) and copied every
byte twice (the file into the block, the block into the pipe). A plain pickle file (not gzip) over :data:`~.isolated.SHARED_MAX_BYTES` is instead opened here (:func:`open_pickle`)
and either given as stdin to a fresh reader child, which reads it as the report's early child does, or
copied into the spare reader child's pipe by ``sendfile`` (:func:`send_file`: the kernel moves the
page cache's pages, no buffer in this process). The child reads the same bytes either way, so its
answer is the same.
"""

from __future__ import annotations

import errno
import os
import sys
import time
from typing import IO

from ..storage.file_heads import is_pickle_head
from ..storage.private_files import open_regular

SEND_BYTES = 8 << 20  # bytes given to one sendfile call: the deadline is checked between calls


def open_pickle(path: str, larger_than: int) -> tuple[IO[bytes], int] | None:
    """``path`` opened for reading (a regular file, its last component no symlink; never a FIFO) and its
    size in bytes, when it starts as a pickle (protocol 2-5) and has more than ``larger_than`` bytes; else
    None (read in blocks, as before: a gzip file, a small one, another format)."""
    if not sys.platform.startswith("linux"):  # (sendfile into a pipe: Linux's; elsewhere a socket only)
        return None
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
    """The deadline passed while the file was being sent (the child took too long to read it)."""


def send_file(file: IO[bytes], out_fd: int, size: int, deadline: float) -> int:
    """Copy the first ``size`` bytes of ``file`` into ``out_fd`` (a pipe to a reader child) with
    ``sendfile`` (where the kernel refuses it, through a buffer of :data:`COPY_BYTES`), from offset 0 (the
    file's own offset is left alone); the bytes sent (fewer when the file shrank). :class:`SendTimeout` once ``time.monotonic()`` passes ``deadline`` between calls;
    :class:`BrokenPipeError` when the child stopped reading (it refused the file, or crashed)."""
    sent = 0
    copy = False  # sendfile refused by this kernel (or a filter): the bytes copied through a small buffer
    while sent < size:
        if time.monotonic() > deadline:
            raise SendTimeout()
        count = min(SEND_BYTES, size - sent)
        if not copy:
            try:
                n = os.sendfile(out_fd, file.fileno(), sent, count)
            except OSError as exc:
                if exc.errno not in _NO_SENDFILE or sent:
                    raise
                copy = True
                continue
        else:
            n = _copy(file.fileno(), out_fd, sent, min(count, COPY_BYTES))
        if n == 0:  # (the file is shorter than it was)
            break
        sent += n
    return sent


COPY_BYTES = 1 << 20  # the buffer of the copy without sendfile (bytes)
_NO_SENDFILE = (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, getattr(errno, "ENOTSUP", errno.EOPNOTSUPP))


def _copy(in_fd: int, out_fd: int, offset: int, count: int) -> int:
    """Up to ``count`` bytes of ``in_fd`` from ``offset`` written whole into ``out_fd``; the bytes copied."""
    data = os.pread(in_fd, count, offset)
    view = memoryview(data)
    while view:
        view = view[os.write(out_fd, view) :]
    return len(data)
