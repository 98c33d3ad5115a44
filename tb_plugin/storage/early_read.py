"""A logdir's one gzip trace read and inflated by a forked child while ``kinetoscope report`` imports.

The report's process imports the registry, numpy and the analyses (~0.2 s of CPU) before it reads a
byte of a trace; reading and inflating the trace (~0.07 s for the 35 MB V100 sample, 1.2 MB gzipped)
needs none of that, so on a second core it can be done meanwhile. :func:`start` (the command line's
report, once the logdir is found to exist) walks the first :data:`MAX_WALKED` entries of a local logdir;
when they hold exactly one file named as a trace, gzipped, of at most :data:`MAX_GZIP_BYTES` (above it
the registry streams the file, chunk by chunk), not held by the parse cache, with a second core, it
forks a child that reads the file as the registry would (:func:`~.read.read_open_file_to`: the same bounds,
checks and bytes) into an anonymous memory file, a step at a time as it inflates, and exits; any failure is its exit status, and the
registry then reads the file itself (and meets the error there). The command line hands the child a
``then`` (:data:`Then`): the document split into the decode's joined batches in a second memory file
(``trace/early_split.py``), while this process still imports. The registry's read of that file
:func:`claim` s the bytes (a read-only map of the memory file, no copy) when the file's identity is
unchanged since the start (device, inode, size, modification time). A child never claimed is reaped
at exit.
"""

from __future__ import annotations

import atexit
import mmap
import os
import signal
import stat
import threading
from typing import Callable, NamedTuple

from ..settings import current, usable_cores
from .cache_keys import cached_entry_exists
from .fork_alone import may_fork_alone
from .local_walk import FileIdentity, TooManyEntries, file_identity, walk_files
from .naming import is_candidate, is_certain_trace
from .private_files import open_regular, unnamed_file
from .read import read_open_file_to

MAX_WALKED = 2000  # directory entries looked at (a larger logdir is read the usual way)
# A larger gzip file (8× its size inflated: registry/parse.GZIP_RATIO) is decoded as a stream above 32 MB
# (registry/parse.FORKED_STREAM_ABOVE_BYTES): its whole bytes are never wanted
MAX_GZIP_BYTES = 4 << 20
_lock = threading.Lock()
_pending: _Started | None = None  # the one child started (a command reads one logdir), until claimed


# What the child does next with the bytes it read (mapped) and an empty memory file of its own to write
# into (trace/early_split.write_split, handed down by the command line); anything it raises leaves that file empty
Then = Callable[[mmap.mmap, int], object]


class _Reading:
    """The forked child reading one file into the memory file ``fd``, and then (``then``) writing what
    ``then`` makes of it into the memory file ``then_fd``."""

    def __init__(self, path: str, size: int, then: Then | None = None, then_dir: str | None = None) -> None:
        self.fd = os.memfd_create("kinetoscope-early-read", os.MFD_CLOEXEC)
        self.then_on_disk = False  # what ``then`` writes goes to an unnamed file in ``then_dir`` (else memory)
        try:
            self.then_fd = self._then_file(then_dir) if then is not None else None
            pid = os.fork()
        except OSError:
            self._close()
            raise
        if pid == 0:  # the child: read, write, leave without the parent's exit handlers or buffers
            code = 1
            try:
                with open_regular(path) as f:
                    read_open_file_to(f, size, path, self._write, fast=True)
                code = 0
                if then is not None and self.then_fd is not None:
                    self._then(then, self.then_fd)
            finally:
                os._exit(code)
        self.pid: int | None = pid

    def _then_file(self, then_dir: str | None) -> int:
        """The file ``then`` writes into: an unnamed file in ``then_dir`` where the system makes one there
        (the registry may then link it as the parse cache's events file), else a memory file."""
        fd, self.then_on_disk = unnamed_file(then_dir, "kinetoscope-early-then")
        return fd

    def _write(self, data: bytes | bytearray) -> None:
        """All of ``data`` to the memory file (in the child)."""
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]

    def _then(self, then: Then, fd: int) -> None:
        """``then`` on the bytes read (in the child); its file left empty when it fails."""
        try:
            size = os.fstat(self.fd).st_size
            if size:
                then(mmap.mmap(self.fd, size, prot=mmap.PROT_READ), fd)
        except BaseException:
            os.ftruncate(fd, 0)

    def result(self) -> Claimed:
        """The file's bytes as the child read them and what ``then`` wrote (None when the child failed or
        wrote nothing), and the file ``then`` wrote when it is on disk (left open for the caller); the
        child is reaped."""
        kept = None
        try:
            ok = self._reap() == 0
            then = self._mapped(self.then_fd, ok)
            if then is not None and self.then_on_disk:
                kept, self.then_fd = self.then_fd, None
            return Claimed(self._mapped(self.fd, ok), then, kept)
        finally:
            self._close()

    @staticmethod
    def _mapped(fd: int | None, ok: bool) -> mmap.mmap | None:
        try:
            size = os.fstat(fd).st_size if ok and fd is not None else 0
            return mmap.mmap(fd, size, prot=mmap.PROT_READ) if size and fd is not None else None
        except OSError:
            return None

    def _close(self) -> None:
        for fd in (self.fd, getattr(self, "then_fd", None)):
            if fd is not None:
                os.close(fd)

    def end(self) -> None:
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._reap()
            self._close()

    def _reap(self) -> int:
        pid, self.pid = self.pid, None
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) if pid is not None else 1


def _only_trace(root: str) -> str | None:
    """The one file under ``root`` (symbolic links not followed) named as a trace, among the first
    :data:`MAX_WALKED` entries; None when there are none, several, or more entries."""
    try:
        found = [e.path for e in walk_files(root, MAX_WALKED) if _named_as_trace(e.name)]
    except TooManyEntries:
        return None
    return found[0] if len(found) == 1 else None


def _named_as_trace(name: str) -> bool:
    return is_certain_trace(name) or is_candidate(name)


def _second_core() -> bool:
    """Whether a second core may take the read (one allowed decode worker: nothing runs beside)."""
    return usable_cores() > 1 and current().decode_workers != 1


class Claimed(NamedTuple):
    """What a claim gives: the file's bytes, what the child's ``then`` wrote (each None when nothing),
    and the descriptor of the unnamed file on disk ``then`` wrote into (None when it wrote into memory;
    the caller closes it)."""

    data: mmap.mmap | None
    then: mmap.mmap | None
    then_file: int | None


class _Started(NamedTuple):
    real: str  # the file's real path
    identity: FileIdentity  # its device, inode, size and modification time at the start
    reading: _Reading


def start(root: str, cached: bool = True, then: Callable[[], Then] | None = None, then_dir: str | None = None) -> None:
    """Start the child reading the one gzip trace under the local folder ``root``, or the file ``root``
    (see the module docstring); nothing when there is no such file, no second core, no safe fork (another thread
    runs), or (``cached``: the command reads the parse cache) when the cache holds its parse. ``then``: gives
    what the child does next with the bytes (see :data:`Then`; :func:`claim_both` gives what it wrote), called
    only when a child is started, before the fork. ``then_dir``: a folder where what ``then`` writes goes
    as an unnamed file (the parse cache's folder: its events file can be that file, linked), where
    the file system allows."""
    global _pending
    if _pending is not None or not may_fork_alone() or not _second_core():
        return
    root = os.path.abspath(root)
    path = (root if _named_as_trace(os.path.basename(root)) else None) if os.path.isfile(root) else _only_trace(root)
    if path is None or not path.lower().endswith(".gz"):
        return
    try:
        st = os.stat(path, follow_symlinks=False)
        limit = min(MAX_GZIP_BYTES, (current().stream_above_bytes or MAX_GZIP_BYTES << 3) >> 3)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit or (cached and cached_entry_exists(path, st)):
            return
        _pending = _Started(
            os.path.realpath(path),
            file_identity(st),
            _Reading(path, st.st_size, then() if then is not None else None, then_dir),
        )
    except OSError:
        return
    atexit.register(_end)


def claim(path: str) -> mmap.mmap | None:
    """The bytes of the local file ``path`` read by the child started on it, when it is still the file it
    read, or None (that child reaped); claimed once."""
    got = claim_both(path)
    if got.then_file is not None:
        os.close(got.then_file)
    return got.data


_NOTHING = Claimed(None, None, None)


def claim_both(path: str) -> Claimed:
    """:func:`claim`'s bytes, what the child's ``then`` wrote (None when nothing: no ``then``, it failed,
    or no bytes) and, when that is on disk, its file (see :class:`Claimed`: the caller closes it)."""
    global _pending
    if _pending is None:
        return _NOTHING
    with _lock:
        got = _pending if _pending is not None and _pending.real == os.path.realpath(path) else None
        if got is not None:
            _pending = None
    if got is None:
        return _NOTHING
    claimed = got.reading.result()
    try:
        same = file_identity(os.stat(got.real)) == got.identity
    except OSError:
        same = False
    if same and claimed.data is not None:
        return claimed
    if claimed.then_file is not None:
        os.close(claimed.then_file)
    return Claimed(claimed.data, None, None) if same else _NOTHING


def _end() -> None:
    """At exit: the child never claimed is ended and reaped."""
    global _pending
    with _lock:
        got, _pending = _pending, None
    if got is not None:
        got.reading.end()
