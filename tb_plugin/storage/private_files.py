"""Files Kinetoscope writes for itself (the parse cache, the sniff index, downloads): private, atomic,
read back only if they are still regular files, and never left behind half-written.

- Directories are created ``0700`` and files ``0600``: a cache entry holds a trace's raw events,
  which may come from a ``0600`` trace, and must not become readable to others through the cache.
- A write goes to ``.<name>.<pid>.<tid>.tmp`` beside its target, is fsynced, then renamed over it:
  a reader sees the old entry or the whole new one, also after a power loss. Small entries that are
  checked when read back and derived again when unusable (the analysis cache) may skip the fsync
  (``durable=False``): a reader still sees the old entry or the whole new one while the machine runs;
  after a power loss such an entry may be empty or lost, which is a miss (each fsync waits ~1-10 ms
  for the disk's journal: 8 of them were ~60 ms of a cold report). A parse's raw-events file is
  fsynced later (:func:`fsync_path`), by the write of the parse-cache entry that points at it.
- :func:`open_regular` opens with ``O_NONBLOCK | O_NOFOLLOW`` and refuses anything but a regular
  file, so an entry replaced by a FIFO (or a symlink) is a miss instead of a request blocked forever.
- :func:`sweep_temps` removes temp files whose writer is gone (``kill -9`` during a parse left
  67 MB and 110 MB files that nothing removed); it runs when a cache is opened.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import threading
from typing import IO, Callable

from .direct_file import DirectWriter, open_direct

DIR_MODE = 0o700
FILE_MODE = 0o600
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_TEMP = re.compile(r"\.(\d+)\.\d+\.tmp$")  # ….<pid>.<tid>.tmp


def make_private_dir(path: str) -> None:
    """Create ``path`` and every missing parent with mode 0700 (``os.makedirs`` gives the mode to
    the last one only)."""
    missing = []
    path = os.path.abspath(path)
    while not os.path.isdir(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, DIR_MODE)
        except FileExistsError:
            pass


def open_regular(path: str) -> IO[bytes]:
    """Open ``path`` for binary reading if it is a regular file; never blocks on a FIFO or follows a
    symlink in its last component. Raises ``OSError`` (``FileNotFoundError`` when missing)."""
    fd = os.open(path, _READ_FLAGS)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, f"not a regular file: {path}")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def unnamed_file(folder: str | None, name: str) -> tuple[int, bool]:
    """``(fd, on disk)``: an unnamed file (``O_TMPFILE``, mode 0600) in ``folder`` where the system makes
    one there (its pages the page cache's; it can be named later, :func:`put_in_place`), else a memory
    file called ``name`` (Linux)."""
    if folder is not None and hasattr(os, "O_TMPFILE"):
        try:
            return os.open(folder, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600), True
        except OSError:  # (no such folder, or a file system without unnamed files)
            pass
    return os.memfd_create(name, os.MFD_CLOEXEC), False


def temp_name(path: str) -> str:
    """The temp file a write of ``path`` goes through (its writer's pid is in the name)."""
    head, tail = os.path.split(path)
    return os.path.join(head, f".{tail}.{os.getpid()}.{threading.get_ident()}.tmp")


def write_atomic(path: str, write: Callable[[IO[bytes]], object], durable: bool = True, direct: bool = False) -> None:
    """Create ``path`` (mode 0600, in a 0700 directory) from what ``write(file)`` writes: temp file,
    fsync (unless not ``durable``: see the module docstring), rename. ``direct``: written past the page
    cache where the file system allows it (a large file: :mod:`.direct_file`; the same bytes either
    way). Raises ``OSError``; the temp file never survives a failure."""
    make_private_dir(os.path.dirname(path) or ".")
    tmp = temp_name(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)
    try:
        fd, through = open_direct(tmp, flags, FILE_MODE) if direct else (os.open(tmp, flags, FILE_MODE), False)
        if through:
            try:
                with DirectWriter(fd) as out:
                    write(out)  # type: ignore[arg-type]  # (a binary writer: write() is all it is asked for)
                if durable:
                    os.fsync(fd)
            finally:
                os.close(fd)
        else:
            with os.fdopen(fd, "wb") as f:
                write(f)
                f.flush()
                if durable:
                    os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise


def put_in_place(fd: int, length: int, path: str, durable: bool = True) -> None:
    """Make ``path`` the first ``length`` bytes of the open file ``fd`` (an unnamed file, ``O_TMPFILE``, in
    a folder of the same file system): cut to ``length``, fsynced (``durable``), named through
    ``/proc/self/fd`` and renamed over ``path``; where it cannot be named there, its bytes are copied into
    a new file that is renamed over ``path``. ``fd`` is closed. Raises ``OSError``."""
    try:
        os.ftruncate(fd, length)
        if durable:
            os.fsync(fd)
        tmp = temp_name(path)
        if not _name_unnamed(fd, tmp):  # (another file system, no /proc, not allowed): the bytes copied
            write_atomic(path, lambda f: _copy_from(fd, length, f), durable)
            return
        try:
            os.replace(tmp, path)
        except OSError:
            _unlink_quietly(tmp)
            raise
    finally:
        os.close(fd)


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _name_unnamed(fd: int, path: str) -> bool:
    """Give the unnamed file ``fd`` the name ``path``: ``linkat`` through ``/proc/self/fd`` (what any user
    may do), else ``linkat(fd, "", …, AT_EMPTY_PATH)`` (a privileged process, where procfs refuses the first
    one: some sandboxes); False when neither is allowed."""
    try:
        os.link(f"/proc/self/fd/{fd}", path, follow_symlinks=True)
        return True
    except OSError:
        pass
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        at_fdcwd, at_empty_path = -100, 0x1000  # (Linux's values)
        return libc.linkat(fd, b"", at_fdcwd, os.fsencode(path), at_empty_path) == 0
    except (OSError, AttributeError):  # (no libc or no linkat here)
        return False


def _copy_from(fd: int, length: int, out: IO[bytes]) -> None:
    out.flush()
    at = 0
    while at < length:
        sent = os.sendfile(out.fileno(), fd, at, length - at)
        if sent <= 0:
            raise OSError("the file to copy ended early")
        at += sent


def fsync_path(path: str) -> None:
    """fsync the file at ``path`` (a :func:`write_atomic` made with ``durable=False``); a file that is
    gone or cannot be opened is left as it is (its entry is then a miss)."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: someone else's live process
        return True
    return True


def sweep_temps(root: str) -> int:
    """Remove the temp files under ``root`` whose writing process no longer runs; returns how many.
    Another live process's temp files (a CLI beside the server) are left alone."""
    removed = 0
    for folder, _dirs, files in os.walk(root):
        for name in files:
            m = _TEMP.search(name)
            if m is None or int(m.group(1)) == os.getpid() or _alive(int(m.group(1))):
                continue  # not a temp file, or one that a running process may still be writing
            try:
                os.unlink(os.path.join(folder, name))
                removed += 1
            except OSError:
                pass
    return removed
