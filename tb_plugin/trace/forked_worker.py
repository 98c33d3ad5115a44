"""A decode worker forked from this process (:mod:`.decode_workers`' :class:`~.decode_workers.Workers`
uses it where a fork is safe), and the reaping of those whose input has ended (and of the other forked
children whose answer was read whole: :func:`leave_to_exit`).

A worker that has answered every unit exits once its input pipe is closed; the kernel then frees its
memory (a few hundred MB on a large trace: 10-20 ms of wall time). :func:`reap_later` lets this process go
on (the parse's finish, on one core) while the worker exits on the other, and :func:`reap_exited`
collects its status later: at the next workers' start, when the caller's work on the trace ends, and at
this process's exit.
"""

from __future__ import annotations

import atexit
import os
import select
import signal
import subprocess
import time
from typing import IO, Callable

# The most bytes a worker's pipe holds (Linux: 64 KiB by default, at most ``/proc/sys/fs/pipe-max-size``,
# 1 MiB unless raised): an answer of the ranged parse is ~1.5 MB pickled, and with the default a worker
# waits on the write of every answer until this process has read it, which it does in order
PIPE_BYTES = 1 << 20


class ForkedChild:
    """A child forked from this process, known by its ``pid``, with the part of :class:`subprocess.Popen`
    that :func:`reap_exited` calls (``kill``, ``wait``, ``poll``)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def kill(self) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def wait(self, timeout: float | None = None) -> int:
        """The exit status; :class:`subprocess.TimeoutExpired` after ``timeout`` seconds. Woken by
        the exit itself where a process file descriptor can be waited on (Linux), else polled."""
        if self.returncode is None and timeout is not None and not self._exited(timeout):
            raise subprocess.TimeoutExpired(f"forked child {self.pid}", timeout)
        if self.returncode is None:
            self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        return self.returncode

    def poll(self) -> int | None:
        """The exit status if the child has exited (it is then reaped), else None; never waits."""
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid == 0:
                return None
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def _exited(self, timeout: float) -> bool:
        """Whether the child exits within ``timeout`` seconds (it is not reaped here)."""
        try:
            fd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):  # no pidfd here: poll
            deadline = time.monotonic() + timeout
            while not os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT):
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.001)
            return True
        try:
            return bool(select.select([fd], [], [], timeout)[0])
        finally:
            os.close(fd)


class ForkedWorker(ForkedChild):
    """A worker forked from this process, with the part of :class:`subprocess.Popen` that
    :class:`~.decode_workers.Workers` uses (``stdin``, ``stdout``, ``kill``, ``wait``); the child runs
    ``serve(source, sink)`` on its ends of the two pipes. ``inherited``: the parent's ends of the workers
    forked before, which this child closes (else they would never see EOF)."""

    def __init__(self, inherited: list[int], serve: Callable[[IO[bytes], IO[bytes]], None]) -> None:
        to_child, from_parent = os.pipe()
        to_parent, from_child = os.pipe()
        widen(from_parent)
        widen(from_child)
        pid = os.fork()
        if pid == 0:  # the child: serve, then leave without running the parent's exit handlers or flushing its buffers
            code = 1
            try:
                os.close(from_parent)
                os.close(to_parent)
                for fd in inherited:
                    os.close(fd)
                with open(to_child, "rb") as source, open(from_child, "wb") as sink:
                    serve(source, sink)
                code = 0
            finally:
                os._exit(code)
        os.close(to_child)
        os.close(from_child)
        super().__init__(pid)
        self.stdin: IO[bytes] = open(from_parent, "wb")
        self.stdout: IO[bytes] = open(to_parent, "rb")

    def fds(self) -> list[int]:
        return [self.stdin.fileno(), self.stdout.fileno()]


def widen(fd: int) -> None:
    """Let the pipe of ``fd`` hold :data:`PIPE_BYTES` (where the system allows; else left as it is)."""
    try:
        import fcntl  # (forked workers run on Linux only)

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
    except (ImportError, OSError):  # over the system's limit, or not Linux
        pass


# workers whose input is closed, and children whose answer was read whole, not yet reaped (their exit
# status collected by reap_exited)
_exiting: list[ForkedChild] = []


def reap_later(worker: ForkedWorker) -> None:
    """Leave ``worker``, whose input is closed and whose answers were all read, to exit on its own: its
    status is collected by :func:`reap_exited`, its output pipe closed now."""
    worker.stdout.close()
    _exiting.append(worker)


def leave_to_exit(pid: int) -> None:
    """Leave the forked child ``pid``, whose whole answer this process has read, to exit on its own (the
    kernel frees its memory meanwhile: ~2 ms of waiting for a 35 MB trace's decode child); its status is
    collected by :func:`reap_exited`."""
    _exiting.append(ForkedChild(pid))


def reap_exited(block: bool = False, timeout: float = 5.0) -> None:
    """Collect the status of the workers :func:`reap_later` left that have exited; with ``block``, wait for
    each (killed after ``timeout`` seconds: a worker that does not exit at the end of its input)."""
    for worker in list(_exiting):
        try:
            if block:
                try:
                    worker.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    worker.kill()
                    worker.wait()
            elif worker.poll() is None:
                continue
        except ChildProcessError:  # (reaped by someone else: nothing left to collect)
            pass
        _exiting.remove(worker)


# a worker still exiting when this process ends is waited for: its CPU time counts in this process's
# children's (what a benchmark of the whole process reads)
atexit.register(reap_exited, True)


def unreaped() -> int:
    """How many workers :func:`reap_later` left are not reaped yet."""
    return len(_exiting)
