"""The spare reader child: one :mod:`.isolated` reader child started ahead, so that a snapshot's first
read pays no process start.

In a live server, MCP server or notebook a snapshot's first read has no imports to overlap the child's
start with (its interpreter and numpy: ~0.1-0.2 s of CPU, seconds on a busy machine), so the registry
keeps one child started ahead while a large snapshot awaits its first read
(:meth:`~tb_plugin.registry.artifacts.ArtifactStore.tend_spare`). The spare starts under the largest
address-space limit any reader child gets (:func:`~.isolated.memory_cap_bytes`) and
:data:`~.child_terms.SPARE_START_CPU_S` of CPU time, imports what a read imports, and waits on stdin for
one file's terms (size, limits, mode: :func:`take_spare`); it lowers its limits to that file's before it
acknowledges them (:data:`~.child_terms.ACCEPTED` on stdout), and is then a reader child like any other
(:class:`~.isolated.Started`), used once. Waiting longer than :data:`~.child_terms.SPARE_IDLE_S` it ends
itself. A spare that died, or that does not acknowledge within :data:`SPARE_ACK_S`, is ended and a fresh
child reads the file.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from typing import cast

from .child_pipes import SHARED_CHILD, ChildProcess, end_child, memory_cap_bytes, read_exact, start_child
from .child_terms import ACCEPTED, SPARE, SPARE_IDLE_S

SPARE_ACK_S = 30.0  # s: a spare's start and acknowledgement, at most (a fresh child would start as slowly)
_spare_lock = threading.Lock()
_spare: list[ChildProcess] = []  # the spare child, if any
_spare_at_exit: list[bool] = []  # end_spare registered to run at exit
_wanted: set[int] = set()  # who wants a spare (the ids of the registries' artifact stores)
_again: set[int] = set()  # ... of them, who wants another one started as soon as this one is taken


def keep_spare(owner: object = None, again: bool = False) -> None:
    """Have one spare reader child started (see the module docstring), wanted by ``owner`` until its
    :func:`end_spare`: nothing when one is alive (a dead one is replaced), nor where children have no
    limits (not POSIX) or cannot start. ``again``: ``owner`` has more than one file to read, so the
    next spare starts when this one is taken (its start runs beside that file's read)."""
    if not SHARED_CHILD:
        return
    with _spare_lock:
        _wanted.add(id(owner))
        if again:
            _again.add(id(owner))
        else:
            _again.discard(id(owner))
        if _spare and _spare[0].poll() is None:
            return
        _start_spare()


def _start_spare() -> None:
    """Start the spare child, ending a dead one first (under the lock)."""
    if _spare:
        _end_spare(_spare.pop())
    argv = ["0", str(memory_cap_bytes()), str(SPARE_IDLE_S), SPARE]
    try:
        _spare.append(cast(ChildProcess, start_child("tb_plugin.artifacts.snapshot_child", argv, status=True)))
    except OSError:
        return
    if not _spare_at_exit:
        _spare_at_exit.append(True)
        import atexit

        atexit.register(end_spare)


def end_spare(owner: object = None) -> None:
    """``owner`` no longer wants a spare (nothing it lists awaits a read; its registry stops): the spare
    child is ended once nobody wants it. Without ``owner`` (at exit): ended whoever wants it."""
    with _spare_lock:
        if owner is None:
            _wanted.clear()
            _again.clear()
        else:
            _wanted.discard(id(owner))
            _again.discard(id(owner))
        while _spare and not _wanted:
            _end_spare(_spare.pop())


def spare_pid() -> int | None:
    """The spare child's process id while it is alive, else None."""
    with _spare_lock:
        return cast(subprocess.Popen, _spare[0]).pid if _spare and _spare[0].poll() is None else None


def take_spare(terms: list[str]) -> ChildProcess | None:
    """The spare child, given a file's ``terms`` (``child_main``'s arguments) and acknowledging them; None
    when there is none, or it died or did not acknowledge (it is ended: a fresh child reads the file)."""
    with _spare_lock:
        child = _spare.pop() if _spare else None
        if child is not None and _again:  # the next spare starts beside this file's read
            _start_spare()
    if child is None:
        return None
    line = " ".join(terms + ["-"] * (4 - len(terms))) + "\n"
    got = None
    if child.poll() is None:
        try:
            child.stdin.write(line.encode("ascii"))
            child.stdin.flush()
            got = read_exact(child.stdout.fileno(), len(ACCEPTED), time.monotonic() + SPARE_ACK_S)
        except OSError:  # (BrokenPipeError: it ended meanwhile)
            got = None
    if got == ACCEPTED:
        return child
    _end_spare(child)
    return None


def _end_spare(child: ChildProcess) -> None:
    end_child(child)
    try:
        child.stderr.close()
    except OSError:
        pass


def _release_in_fork() -> None:
    """In a process forked from this one (a decode worker, the sections' fork): the waiting spare's stdin
    pointed at the null device. A fork holding that pipe's write end would keep the spare from seeing
    its file's end (the reader reads to it) until the fork exits; the descriptor's number stays open
    (``Popen``'s file object still names it), so nothing can reuse it."""
    for child in list(_spare):  # (no lock: a thread of the parent may have held it at the fork)
        try:
            null = os.open(os.devnull, os.O_RDONLY)
            try:
                os.dup2(null, child.stdin.fileno())
            finally:
                os.close(null)
        except (OSError, ValueError):
            pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_release_in_fork)
