"""A local filesystem that reads only files inside the logdir, checked again when each file is opened.

The listing (:mod:`.fs`) already hides symlinks that resolve outside the logdir, but a file can be
swapped for such a symlink after it was listed and before it is read (a TOCTOU race). Every read of
a local logdir goes through :meth:`ConfinedLocalFileSystem._open`, which

1. resolves the path (``realpath``) and refuses it unless it lies inside the logdir's real path;
2. opens the resolved path with ``O_NOFOLLOW`` (its last component cannot have become a symlink
   since step 1) and ``O_NONBLOCK`` (a FIFO swapped in cannot block the open), and refuses anything
   but a regular file (``fstat``);
3. on Linux, reads back the path the kernel actually opened (``/proc/self/fd/N``) and refuses it
   unless it lies inside the logdir: this closes the remaining window, a *directory* component
   swapped for a symlink between steps 1 and 2.

Listed symlinks that resolve inside the logdir keep working. Hard links cannot be told apart from
ordinary files (see ``docs/SECURITY.md``). Writing is never confined: the plugin writes nothing
through the logdir's filesystem.
"""

from __future__ import annotations

import errno
import os
import stat

from ..logs import module_logger
from .local import LocalFS

_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_PROC_FD = "/proc/self/fd"
logger = module_logger(__name__)


class OutsideLogdirError(PermissionError):
    """A path that now resolves outside the logdir (or to something other than a regular file)."""


def inside(root: str, real: str) -> bool:
    """Whether the real path ``real`` is ``root`` itself or below it (``root`` is a real path)."""
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def open_inside(root: str, path: str, buffering: int = -1):
    """Open ``path`` for binary reading only if it is a regular file inside ``root`` (a real path)
    at the moment it is opened. Raises :class:`OutsideLogdirError` (a ``PermissionError``) or the
    usual ``OSError``. Messages name ``path`` only, never where it leads: they reach clients (the
    target outside the logdir is logged for the operator)."""
    real = os.path.realpath(path)
    if not inside(root, real):
        logger.warning("refused %s: it resolves to %s, outside the logdir", path, real)
        raise OutsideLogdirError(
            errno.EACCES,
            f"{path} resolves to a path outside the logdir "
            "(replaced by a symbolic link after it was listed?): not read",
        )
    try:
        fd = os.open(real, _FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OutsideLogdirError(
                errno.EACCES, f"{path} became a symbolic link while it was being opened: not read"
            ) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise OutsideLogdirError(errno.EACCES, f"{path} is not a regular file any more: not read")
        opened = _opened_path(fd)
        if opened is not None and not inside(root, opened):
            logger.warning("refused %s: it was opened as %s, outside the logdir", path, opened)
            raise OutsideLogdirError(
                errno.EACCES,
                f"{path} was opened as a file outside the logdir "
                "(a directory was replaced by a symbolic link?): not read",
            )
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb", buffering)
    except BaseException:
        os.close(fd)
        raise


def _opened_path(fd: int) -> str | None:
    """The path the kernel opened for ``fd`` (Linux ``/proc``), or None where that is unknown."""
    try:
        target = os.readlink(f"{_PROC_FD}/{fd}")
    except OSError:
        return None
    return target if target.startswith(os.sep) else None


class ConfinedLocalFileSystem(LocalFS):
    """The local file system (:class:`~.local.LocalFS`, read-only) whose reads are confined to ``root``
    (see the module docstring)."""

    def __init__(self, root: str) -> None:
        self.confine_root = os.path.realpath(root)

    def _open(self, path, mode="rb", block_size=None, **kwargs):
        return open_inside(self.confine_root, self._strip_protocol(path))
