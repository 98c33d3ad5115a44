"""Reader children as processes (:mod:`.isolated`, :mod:`.spare`): how one is started, awaited and
ended, and the largest address space any of them gets."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import IO, Any, Protocol

from ..settings import current

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
    module: str, argv: list[str], stderr: int = subprocess.PIPE, stdin: int | IO[bytes] = subprocess.PIPE
) -> subprocess.Popen:
    """``python -m module *argv`` with pipes on stdin (or ``stdin``: a file) and stdout (and ``stderr``), run in this package's
    folder with it first on the path (``-m`` puts the working folder first: the child must import this
    package, never one there) and one thread per numeric library. :class:`OSError` when it cannot start."""
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [_PACKAGE_PARENT, os.environ.get("PYTHONPATH")])),
        **ONE_THREAD,
    )
    argv = [sys.executable, "-m", module, *argv]
    return subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE, stderr=stderr, cwd=_PACKAGE_PARENT, env=env)


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
    """End ``child`` if it runs, reap it, and close its stdin and stdout."""
    if child.poll() is None:
        child.kill()
    child.wait()
    for f in (child.stdin, child.stdout):
        try:
            f.close()
        except OSError:
            pass
