"""What a reader child and its parent (:mod:`.isolated`) agree on: the exit statuses, the modes, and the
limits the child sets on itself first. Imports nothing heavy: the child reads before numpy is loaded."""

from __future__ import annotations

import os
import sys
from typing import NoReturn

EXIT_REFUSED = 3  # the child's exit status for a file it refused (the message is on stderr)
EXIT_AGAIN = 4  # the whole read from the pipe ran out of memory: send the file again, streamed
STREAMED = "streamed"  # the child's mode argument for that second reading
BATCH_MODES = ("snapshot", "plain")  # length-prefixed files, one answer each (see isolated.read_many_in_child)
WALL_GRACE_S = 30  # the child's own wall-clock bound is its parent's deadline plus this (the parent's message wins)
SPARE = "spare"  # the mode of a spare child: started ahead, its imports done, it waits for one file's terms
SPARE_IDLE_S = 600  # a spare child that got no file after this long ends itself (s, wall clock)
SPARE_START_CPU_S = 60  # the CPU time a spare child may take for its start, before any file (s)
ACCEPTED = b"\x01"  # what a spare child writes on stdout once it took a file's terms and limits
STATUS_ARG = "--status-fd="  # a started child's first argument when it says its exit status on that pipe
ANSWER_ARG = "--answer-fd="  # ... and its second: the memory file its answer is written into (not its stdout pipe)


def end_after(wall_s: float) -> None:
    """In the child: end it (SIGALRM) after ``wall_s`` seconds of wall-clock time plus
    :data:`WALL_GRACE_S`, whatever its parent does: a parent that stopped writing (a read that hangs, a
    request abandoned) never leaves it waiting on its pipe for ever. A no-op where ``signal.alarm`` is
    missing (Windows)."""
    import math
    import signal

    if hasattr(signal, "alarm"):
        signal.alarm(math.ceil(wall_s) + WALL_GRACE_S)


def limit_cpu_from_now(cpu_s: float) -> None:
    """In the child: it may use ``cpu_s`` more seconds of CPU time than it has used so far (SIGXCPU
    ends it past that); a no-op where ``resource`` is missing."""
    try:
        import resource
    except ImportError:
        return
    used = resource.getrusage(resource.RUSAGE_SELF)
    soft = int(used.ru_utime + used.ru_stime + cpu_s) + 1
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))
    except (ValueError, OSError):
        pass


def apply_limits(address_space_bytes: int, cpu_s: float | None) -> None:
    """In the child: limit its own address space and (unless None) CPU time; a no-op where
    ``resource`` is missing (Windows: the wall-clock limit still holds)."""
    try:
        import resource
    except ImportError:
        return
    limits = [(resource.RLIMIT_AS, address_space_bytes)] + ([(resource.RLIMIT_CPU, int(cpu_s) + 1)] if cpu_s else [])
    for which, soft in limits:
        _, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        try:
            resource.setrlimit(which, (soft, hard))
        except (ValueError, OSError):
            pass


_status_fd: list[int] = []  # a forked child's status pipe (:mod:`.forked`), set by :func:`tell_exit_status`


def tell_exit_status(fd: int) -> None:
    """In a forked child: :func:`child_exit` writes its exit status (one byte) on ``fd`` first."""
    _status_fd[:] = [fd]


_answer_fd: list[int] = []  # a started child's answer file (:data:`ANSWER_ARG`), until stdout points at it


def answer_into(fd: int) -> None:
    """In a started child: its answer goes into the memory file ``fd`` (:func:`answer_to_memory` points
    stdout at it), which its parent maps once the child said its status: no pipe to copy it through."""
    _answer_fd[:] = [fd]


def answer_to_memory() -> None:
    """In a started child with an answer file (:func:`answer_into`): point stdout at it, once what the
    parent reads on the stdout pipe is written (a spare's acknowledgement); the pipe's end then reaches
    the parent. A no-op otherwise."""
    if _answer_fd:
        sys.stdout.flush()
        os.dup2(_answer_fd[0], 1)
        os.close(_answer_fd.pop())


def child_exit(code: int) -> NoReturn:
    """End the reader child with exit status ``code`` at once (its objects are never freed one by one). A
    child with a status pipe (forked, or started with :data:`STATUS_ARG`) first flushes and closes its
    stdout and stderr (their readers see their end) and says ``code`` on that pipe: its parent takes the
    answer then, without waiting while the kernel frees the child's memory (~20 ms per 100 MB)."""
    if _status_fd:
        for stream, fd in ((sys.stdout, 1), (sys.stderr, 2)):
            try:
                stream.flush()
                os.close(fd)
            except (OSError, ValueError):
                pass
        try:
            os.write(_status_fd[0], bytes([code & 0xFF]))
        except OSError:
            pass
    os._exit(code)
