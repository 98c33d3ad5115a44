"""A reader child forked from this process instead of started as a fresh interpreter (:mod:`.early`).

``kinetoscope report`` starts the reader child of a large snapshot right after its arguments are read,
while the process is still nearly empty (~15 MB: the interpreter, ``site``, argparse and the settings).
A fresh interpreter (``python -m tb_plugin.artifacts.snapshot_child``) pays its start, ``site`` and its
imports first (~0.07-0.15 s on a quiet box) before it reads a byte; a fork is ready at once. The forked
child (:func:`~.snapshot_child.forked_main`) takes the same limits as the started one, first thing
(address space, CPU and wall time: :mod:`.child_terms`), reads the file as its stdin and writes its
answer and messages into two anonymous memory files, which this process maps once the child has
exited: no pipe, so no thread reads them (a fork made later, :mod:`~tb_plugin.storage.early_read`, still
finds this process alone).

A fork copies only the calling thread, so :func:`can_fork` is false unless this is the only thread
(another thread could hold a lock the child would then wait on for ever); the caller then starts a fresh
interpreter as before.
"""

from __future__ import annotations

import atexit
import os
from typing import TYPE_CHECKING, Callable, NoReturn, TypeVar

from ..storage.fork_alone import may_fork_alone

if TYPE_CHECKING:
    import mmap

# the child's body: (terms, its stdin's descriptor, its answer's and its messages' memory files, its status
# pipe); never returns
ForkedMain = Callable[[list[str], int, int, int, int], NoReturn]
_unreaped: set[int] = set()  # children whose status came on their pipe, still exiting: reaped later

ANSWER_MEMFD = "kinetoscope-snapshot-answer"  # the memory files' names (seen in /proc/PID/fd)
MESSAGE_MEMFD = "kinetoscope-snapshot-message"


def can_fork() -> bool:
    """Whether a reader child may be forked here: POSIX with memory files, and no other thread."""
    return may_fork_alone()


class ForkedReader:
    """A reader child forked on one open file (its descriptor ``file_fd``, read from its current
    offset), running ``forked_main`` (:func:`~.snapshot_child.forked_main`: given by the caller, which
    may import it) with the child's arguments ``terms`` (:func:`~.snapshot_child.child_main`'s). Used as a
    :class:`subprocess.Popen` is (``pid``, ``args``, ``returncode``, :meth:`poll`, :meth:`wait`,
    :meth:`kill`); its output is :meth:`answer` once it has exited."""

    def __init__(self, file_fd: int, terms: list[str], forked_main: ForkedMain) -> None:
        _reap_exited()
        self.args = ["fork", *terms]
        self.returncode: int | None = None
        self._out = os.memfd_create(ANSWER_MEMFD, os.MFD_CLOEXEC)
        self._err = os.memfd_create(MESSAGE_MEMFD, os.MFD_CLOEXEC)
        # the child's status pipe: one byte, its exit status, written once its output is whole and before
        # the kernel frees its memory; nothing (the end of the pipe) when a signal ends it
        self._status, status_w = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(status_w)
            self.close()
            raise
        if pid == 0:  # the child: never returns
            forked_main(terms, file_fd, self._out, self._err, status_w)
        os.close(status_w)
        self.pid = pid

    def poll(self) -> int | None:
        """The exit status (a negative signal number for a signal), or None while it runs."""
        if self.returncode is None and self._said_within(0.0):
            self.wait()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the child's exit status (at most ``timeout`` seconds: :class:`subprocess.TimeoutExpired`
        past it, the child left running). Said on its status pipe, the child may still be exiting (it is
        reaped later); a child ended by a signal is reaped here."""
        if self.returncode is not None:
            return self.returncode
        if timeout is not None and not self._said_within(timeout):
            import subprocess

            raise subprocess.TimeoutExpired(self.args, timeout)
        said = os.read(self._status, 1)
        os.close(self._status)
        self._status = -1
        if said:
            self.returncode = said[0]
            _unreaped.add(self.pid)
        else:
            self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        return self.returncode

    def kill(self) -> None:
        """SIGKILL to the child, unless it said its status (it is exiting, or reaped: its pid could be
        another's then) or was reaped."""
        if self.returncode is None:
            try:
                os.kill(self.pid, 9)  # (signal.SIGKILL: the signal module is not imported for it)
            except ProcessLookupError:
                pass

    def answer(self) -> tuple[bytes | mmap.mmap, bytes]:
        """What the exited child wrote: its answer (a private, writable map of the memory file: no copy)
        and its messages. Called once; the memory files are closed."""
        try:
            out = mapped_answer(self._out, b"")
            err = os.pread(self._err, os.fstat(self._err).st_size, 0)
        finally:
            self.close()
        return out, err

    def _said_within(self, timeout: float) -> bool:
        """Whether the status pipe has the status, or its end, within ``timeout`` seconds."""
        import select

        return bool(select.select([self._status], [], [], max(0.0, timeout))[0])

    def close(self) -> None:
        """Close the memory files and the status pipe (the answer unwanted, or read)."""
        for fd in (self._out, self._err, self._status):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._out = self._err = self._status = -1


def _reap(pid: int, block: bool = False) -> int | None:
    """Reap ``pid`` (a child that said its status): its pid once reaped, None while it still exits."""
    try:
        got, _ = os.waitpid(pid, 0 if block else os.WNOHANG)
    except ChildProcessError:  # (reaped already)
        got = pid
    if got:
        _unreaped.discard(pid)
        return pid
    return None


def _reap_exited(block: bool = False) -> None:
    """Reap the children that said their status and have exited since (``block``: wait for them)."""
    for pid in list(_unreaped):
        _reap(pid, block)


# a child still exiting when this process ends is waited for: its CPU time counts in this process's children's
atexit.register(_reap_exited, True)


Empty = TypeVar("Empty", bound="bytes | bytearray")


def mapped_answer(fd: int, empty: Empty) -> Empty | mmap.mmap:
    """A child's answer memory file ``fd`` as a private, writable map (no copy), or ``empty`` when the
    child wrote nothing into it."""
    import mmap

    size = os.fstat(fd).st_size
    return mmap.mmap(fd, size, access=mmap.ACCESS_COPY) if size else empty
