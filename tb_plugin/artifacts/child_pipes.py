"""Reader children as processes (:mod:`.isolated`, :mod:`.spare`): how one is started, awaited and
ended, and the largest address space any of them gets."""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import IO, TYPE_CHECKING, Any, Protocol, cast

from ..settings import current
from .child_terms import ANSWER_ARG, STATUS_ARG

if TYPE_CHECKING:
    import mmap
    import subprocess

PIPE = -1  # subprocess.PIPE: ``subprocess`` is imported where a child is started (the early fork needs none of it)

MEMORY_FLOOR_BYTES = 1 << 30  # a reader child's address space, at least (the interpreter with numpy maps ~150 MB)
# children kept for later files (the shared child, the spare): their answers are awaited with select(),
# which takes no pipe on Windows
SHARED_CHILD = os.name == "posix"
_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


ONE_THREAD = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}  # a child's numeric libraries


def one_thread_here() -> None:
    """In a child forked from this process (:mod:`.forked`): the environment a started child gets
    (:data:`ONE_THREAD`), before its numeric libraries are imported."""
    os.environ.update(ONE_THREAD)


def memory_cap_bytes() -> int:
    """The most address space any reader child gets: the memory-budget setting
    (``KINETOSCOPE_MEMORY_BUDGET_MB``, default 1536 MB), at least :data:`MEMORY_FLOOR_BYTES`."""
    return max(MEMORY_FLOOR_BYTES, current().memory_budget_bytes)


class ChildProcess(Protocol):
    """What a reader child is used through: a :class:`subprocess.Popen` started with all three pipes."""

    stdin: IO[bytes]
    stdout: IO[bytes]
    stderr: IO[bytes]
    args: list[str]
    returncode: Any  # (typeshed: int | Any) the exit status once waited for, None before

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def kill(self) -> None: ...


def start_child(
    module: str,
    argv: list[str],
    stderr: int = PIPE,
    stdin: int | IO[bytes] = PIPE,
    status: bool = False,
) -> subprocess.Popen:
    """``python -m module *argv`` with pipes on stdin (or ``stdin``: a file) and stdout (and ``stderr``), run in this package's
    folder with it first on the path (``-m`` puts the working folder first: the child must import this
    package, never one there) and one thread per numeric library. :class:`OSError` when it cannot start.
    ``status``: the child (a snapshot reader) says its exit status on a pipe of its own before it exits
    (:data:`STATUS_ARG`, its first argument; :func:`said_status`); the pipe's end is ``status_fd``. Its
    answer then goes into a memory file (:data:`ANSWER_ARG`, its second argument; ``answer_fd``, read by
    :func:`take_answer`) where the system has them: a 6 MB answer took 11-17 ms through the stdout pipe
    into a reader thread, 4-6 ms so (a forked child, load 4)."""
    import subprocess

    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [_PACKAGE_PARENT, os.environ.get("PYTHONPATH")])),
        **ONE_THREAD,
    )
    status_r, status_w = os.pipe() if status else (None, None)
    answer = _answer_file() if status else None
    if status_w is not None:
        argv = [f"{STATUS_ARG}{status_w}", *([] if answer is None else [f"{ANSWER_ARG}{answer}"]), *argv]
    passed = tuple(fd for fd in (status_w, answer) if fd is not None)
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", module, *argv],
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=_PACKAGE_PARENT,
            env=env,
            pass_fds=passed,
        )
    except BaseException:
        for fd in (status_r, answer):
            if fd is not None:
                os.close(fd)
        raise
    finally:
        if status_w is not None:
            os.close(status_w)
    child.status_fd = status_r  # type: ignore[attr-defined]  # (read by said_status)
    child.answer_fd = answer  # type: ignore[attr-defined]  # (mapped by take_answer)
    return child


def _answer_file() -> int | None:
    """A new anonymous memory file for a child's answer (close-on-exec here), or None where the system has
    none or cannot make one now (the answer then comes through the stdout pipe)."""
    from .forked import ANSWER_MEMFD  # (the forked child's answer file's name: seen in /proc/PID/fd)

    try:
        return os.memfd_create(ANSWER_MEMFD, os.MFD_CLOEXEC)
    except (AttributeError, OSError):
        return None


def take_answer(child: ChildProcess, piped: bytes | bytearray) -> bytes | bytearray | mmap.mmap:
    """The answer of ``child`` once it said its status: its memory file (a private, writable map: no
    copy) when it has one and wrote into it, else ``piped`` (what its stdout pipe carried). The file is
    closed."""
    fd = getattr(child, "answer_fd", None)
    if fd is None:
        return piped
    from .forked import mapped_answer

    try:
        return mapped_answer(fd, piped)
    finally:
        close_answer(child)


def close_answer(child: ChildProcess) -> None:
    """Close ``child``'s answer file, if it has one (its answer read, or unwanted)."""
    fd = getattr(child, "answer_fd", None)
    if fd is not None:
        child.answer_fd = None  # type: ignore[attr-defined]
        os.close(fd)


REAPER = "kinetoscope-reap-reader"  # the name of the thread that reaps a child that said its status
_join_at_exit: list[bool] = []  # _join_reapers registered


def said_status(child: ChildProcess, deadline: float) -> int | None:
    """The exit status ``child`` said on its status pipe (:func:`start_child`'s ``status``), read once; it
    may still be exiting (the kernel freeing its memory). None when it has no such pipe or ended without
    saying (a signal: :meth:`~subprocess.Popen.wait` tells). :class:`subprocess.TimeoutExpired` when
    ``deadline`` (``time.monotonic``) passes first."""
    fd = getattr(child, "status_fd", None)
    if fd is None:
        return None
    import select
    import subprocess

    if not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
        raise subprocess.TimeoutExpired(child.args, 0)
    said = os.read(fd, 1)
    close_status(child)
    if not said:
        return None
    child.returncode = said[0]  # (its Popen never waits for it now: reaped beside, its CPU time then counted)
    threading.Thread(target=_reap, args=(cast("subprocess.Popen", child).pid,), name=REAPER, daemon=True).start()
    if not _join_at_exit:
        import atexit

        _join_at_exit.append(True)
        atexit.register(_join_reapers)
    return said[0]


def _join_reapers() -> None:
    """At exit: the children still exiting are reaped first (their CPU time counts in this process's
    children's; the kernel frees a child's memory in milliseconds)."""
    for t in threading.enumerate():
        if t.name == REAPER:
            t.join(10)


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def close_status(child: ChildProcess) -> None:
    """Close ``child``'s status pipe, if it has one."""
    fd = getattr(child, "status_fd", None)
    if fd is not None:
        child.status_fd = None  # type: ignore[attr-defined]
        os.close(fd)


def read_exact(fd: int, n: int, deadline: float) -> bytearray | None:
    import select

    got = bytearray()
    while len(got) < n:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, min(n - len(got), 1 << 20))
        if not chunk:
            return None
        got += chunk
    return got


def end_child(child: ChildProcess) -> None:
    """End ``child`` if it runs, reap it, and close its stdin, stdout and status pipe."""
    if child.poll() is None:
        child.kill()
    child.wait()
    close_status(child)
    close_answer(child)
    for f in (child.stdin, child.stdout):
        try:
            f.close()
        except OSError:
            pass
