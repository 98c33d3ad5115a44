"""Two sets of a trace's memos made at once on two cores: one by a short-lived forked helper, the other by
this process meanwhile.

Before the section fork of a very large trace (:func:`.sections.shared_before_fork`) this process makes
the memos both processes' sections read, on one core while the other idles (4.5 GB trace: the operator
tree ~1.45 s, the GPU summary with its step, launch and kernel memos ~1.9 s). :func:`made_beside` forks
a helper that makes the second set from its copy-on-write view of the trace and writes the memos it added
pickled to a memory file (``os.memfd_create``: a pipe's buffer would block the helper on the first 64 KB
until this process reads, after its own set), while this process makes the first; the helper's memos
then join this process's. Every memo is a pure function of the trace (trace/model.py's ``memo``): the
values are those this process would make. When the helper fails (killed, out of memory, a truncated
file), this process makes its set itself, as before.
"""

from __future__ import annotations

import gc
import os
import pickle
from typing import Any, Callable


def made_beside(trace: Any, helper: Callable[[Any], object], here: Callable[[Any], object]) -> bool:
    """``helper(trace)`` in a forked child and ``here(trace)`` in this process meanwhile; the memos the
    child added to ``trace.derived`` then join this process's (those both made are kept from here). True
    when the child's came back; else ``helper(trace)`` is made here after ``here(trace)`` (False)."""
    before = set(trace.derived)
    fd, pid = _fork_helper(trace, helper, before)
    got: dict[str, Any] | None = None
    try:
        here(trace)
        if pid is not None and fd is not None:
            status = os.waitpid(pid, 0)[1]
            pid = None  # (reaped)
            got = _read(fd) if os.waitstatus_to_exitcode(status) == 0 else None
    finally:
        if pid is not None:  # (an error here: the child ended and reaped)
            _end(pid)
        if fd is not None:
            os.close(fd)
    if got is None:
        helper(trace)
        return False
    for key, value in got.items():
        trace.derived.setdefault(key, value)
    return True


def _fork_helper(trace: Any, helper: Callable[[Any], object], before: set[str]) -> tuple[int | None, int | None]:
    """(the memory file, the child's pid), the child making ``helper(trace)``; (None, None) when a memory
    file or a fork could not be had."""
    try:
        fd = os.memfd_create("kinetoscope-memos", os.MFD_CLOEXEC)
    except (AttributeError, OSError):
        return None, None
    try:
        pid = os.fork()
    except OSError:
        os.close(fd)
        return None, None
    if pid == 0:  # the helper: make, write, leave without the parent's exit handlers
        code = 1
        try:
            # the objects held at the fork are never collected here: a collection would write to each
            # one's header (copy-on-write faults) for nothing
            gc.freeze()
            helper(trace)
            got = {key: value for key, value in trace.derived.items() if key not in before}
            with open(fd, "wb", closefd=False) as f:
                pickle.dump(got, f, protocol=pickle.HIGHEST_PROTOCOL)
            code = 0
        finally:
            os._exit(code)
    return fd, pid


def _read(fd: int) -> dict[str, Any] | None:
    """The memos the child wrote to the memory file ``fd`` (None when unreadable)."""
    try:  # (pickled by our own child, like the section child's answer)
        os.lseek(fd, 0, os.SEEK_SET)
        with open(fd, "rb", closefd=False) as f:
            got = pickle.load(f)
    except Exception:  # a truncated file: made here instead
        return None
    return got if isinstance(got, dict) else None


def _end(pid: int) -> None:
    """End and reap the child (not yet reaped: its pid is still ours)."""
    try:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
