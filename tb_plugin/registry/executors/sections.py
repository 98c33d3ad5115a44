"""The report's sections of one large trace on two cores: a forked child computes some of them while
this process computes the rest.

After a large trace is parsed, its sections (:func:`~tb_plugin.registry.report.rank_aggregate`) take a
quarter of a cold report on one core; the distributed section (the critical path) alone about half of
them. :class:`SectionFork` forks this process right after the parse (before any other thread starts:
no thread runs beside the sections), the child computes :data:`CHILD_SECTIONS` from its
copy-on-write view of the columns and sends them back pickled (plain dicts, a few tens of KB), and this
process computes the others meanwhile. The parse cache's deferred writes (``writes``, ~0.1–0.2 s of CPU
on the 0.3 GB trace) are made by whichever side finishes its sections first (:class:`_Turn`): they fill
its wait for the other, whichever that is on a given trace; made after that side's sections, whose memos
are dropped by then, their copies do not stack on a section's peak. :attr:`SectionFork.wrote` says
whether they were made (by either side). Each section is
computed by the same function either way, so the aggregate is the same. When the child fails (killed,
out of memory), this process computes its sections too. Used only where it pays: a trace of at least :data:`FORK_ABOVE_ITEMS` events, two usable
cores, a fork that is safe (:func:`~tb_plugin.trace.decode_workers.can_fork`), and free memory for the
child's temporaries.
"""

from __future__ import annotations

import os
import pickle
from typing import Any, Callable, Sequence

from ...trace.decode_stream import default_workers
from ...trace.decode_workers import can_fork
from ..report import Sections, rank_aggregate, run_sections

# The distributed section (the critical path's chains, which do not split) is the longest one (0.3 GB
# trace: ~0.57 s of CPU, and the cache write after it, ~0.12 s); this process computes the insights
# section, then the overview (which reads back the Overview insights computed: both stay on one side,
# else it would be computed twice; a 0.9 GB trace: 3.1 s of CPU) and the tables, ~0.8 s. The child
# computing distributed and insights left this side ~0.35 s shorter than the child (0.88 against 0.45 s
# + the write): fork of one parsed trace, medians of 4 rounds in turns, the longer side 0.789 → 0.738 s
CHILD_SECTIONS = frozenset({"distributed"})
# Below this many events and memory events the child's copy-on-write page faults cost about what it
# saves (a side process for a 35 MB trace's distributed section saved 7 ms of 70)
FORK_ABOVE_ITEMS = 300_000


def worth_forking(items: int) -> bool:
    """Whether the sections of a trace of ``items`` events and memory events are computed on two cores."""
    return items >= FORK_ABOVE_ITEMS and can_fork_beside()


def can_fork_beside() -> bool:
    """Whether a child may compute sections beside this process now: two usable cores, a fork that is
    safe, free memory for the child's temporaries (whatever the trace's size)."""
    return default_workers() >= 2 and can_fork() and _memory_for_a_child()


def _memory_for_a_child() -> bool:
    """Whether the free memory holds this process's resident size again (the child's temporaries are of
    the order of the parent's working set)."""
    try:
        with open("/proc/self/statm") as f:
            resident = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        with open("/proc/meminfo") as f:
            available = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
    except (OSError, ValueError, StopIteration):
        return False
    return available > resident


class _Sent(Exception):
    """The child's sections are sent: leave rank_aggregate."""


class SectionFork:
    """A child forked now that computes ``child`` (by default :data:`CHILD_SECTIONS`) of
    ``rank_aggregate(views, tables)``; :meth:`run` (``rank_aggregate``'s ``run``) computes the rest here
    and adds the child's."""

    def __init__(
        self,
        views: Any,
        tables: bool,
        writes: Sequence[Callable[[], None]] = (),
        child: frozenset[str] = CHILD_SECTIONS,
    ) -> None:
        self.writes = writes
        self.child = child  # the sections the child computes
        self.wrote = False  # ``writes`` made (by the side that finished its sections first, or after an error)
        self.turn = _Turn() if writes else None  # who makes ``writes``: the first side to ask
        read, write = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(read)
            os.close(write)
            self.close_turn()
            raise
        if pid == 0:  # the child: compute, send, leave without the parent's exit handlers
            code = 1
            try:
                os.close(read)
                memos = views.trace.derived
                rank_aggregate(views, tables, run=lambda sections, items: self._send(sections, items, memos, write))
            except _Sent:
                code = 0
            finally:
                os._exit(code)
        os.close(write)
        self.memos = views.trace.derived  # dropped as the sections no longer need them (run_sections)
        self.pid: int | None = pid
        self.read = read

    def _send(self, sections: Sections, items: int, memos: dict[str, Any], fd: int) -> dict[str, Any]:
        got = run_sections([s for s in sections if s[0] in self.child], items, memos)
        self._write_if_first()
        with open(fd, "wb") as f:  # (sent once written: an answer says the writes were made or not)
            f.write(pickle.dumps((got, self.wrote), protocol=pickle.HIGHEST_PROTOCOL))
        raise _Sent

    def run(self, sections: Sections, items: int) -> dict[str, Any]:
        """Every section of ``sections``: the child's, and the others computed here meanwhile."""
        got = run_sections([s for s in sections if s[0] not in self.child], items, self.memos)
        self._write_if_first()  # (while the child still computes)
        answer = self._collect()
        theirs, wrote = answer if answer is not None else (None, False)
        if theirs is None or set(theirs) != self.child & {key for key, _ in sections}:
            theirs = run_sections([s for s in sections if s[0] in self.child], items, self.memos)
        elif wrote:
            self.wrote = True  # (by the child)
        self.write_pending()  # the child took the turn and failed: made here, after its sections
        got.update(theirs)
        return {key: got[key] for key, _ in sections}

    def _write_if_first(self) -> None:
        """Make ``writes`` here when this side is the first to finish its sections."""
        if self.turn is not None and self.turn.take():
            self.write_pending()

    def write_pending(self) -> None:
        """Make ``writes`` here unless made already (by either side; or after an error before :meth:`run`
        ended); a failed one costs a cache entry, never the sections."""
        if self.wrote:
            return
        self.wrote = True
        for call in self.writes:
            try:
                call()
            except Exception:
                pass

    def _collect(self) -> tuple[dict[str, Any], bool] | None:
        """The child's sections and whether it made ``writes`` (None when it failed); the child is reaped."""
        with open(self.read, "rb") as f:
            data = f.read()
        status = os.waitpid(self.pid, 0)[1] if self.pid is not None else 1
        self.pid = None
        self.close_turn()
        if os.waitstatus_to_exitcode(status) != 0 or not data:
            return None
        try:  # (pickled by our own child, like the decode workers' answers)
            got = pickle.loads(data)
        except Exception:  # a truncated answer: computed here instead
            return None
        if not (isinstance(got, tuple) and len(got) == 2 and isinstance(got[0], dict)):
            return None
        return got[0], bool(got[1])

    def close(self) -> None:
        """End the child if :meth:`run` was not reached (an error before it)."""
        if self.pid is not None:
            try:
                os.kill(self.pid, 9)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            self.pid = None
            try:
                os.close(self.read)
            except OSError:
                pass
        self.close_turn()

    def close_turn(self) -> None:
        """Close this process's end of :attr:`turn` (once the child is reaped or ended)."""
        if self.turn is not None:
            self.turn.close()
            self.turn = None


class _Turn:
    """A turn that exactly one of two processes takes: a pipe holding one byte, made before the fork
    (both hold its read end); :meth:`take` reads it without waiting, and only one read gets the byte
    (the kernel serialises reads of a pipe). Reads after it get the end of the pipe (its write end is
    closed at once)."""

    def __init__(self) -> None:
        self.fd, write = os.pipe()
        try:
            os.write(write, b"w")
        finally:
            os.close(write)
        os.set_blocking(self.fd, False)

    def take(self) -> bool:
        """Whether this call took the turn (False for every later call, in either process)."""
        try:
            return os.read(self.fd, 1) == b"w"
        except (BlockingIOError, OSError):
            return False

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass
