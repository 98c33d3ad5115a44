"""The report's sections of one large trace on two cores: a forked child computes some of them while
this process computes the rest.

After a large trace is parsed, its sections (:func:`~tb_plugin.registry.report.rank_aggregate`) take a
quarter of a cold report on one core; the distributed section (the critical path) alone about half of
them. :class:`SectionFork` forks this process right after the parse (before any other thread starts:
the parse-cache writer starts after it), the child computes :data:`CHILD_SECTIONS` from its
copy-on-write view of the columns and sends them back pickled (plain dicts, a few tens of KB), and this
process computes the others meanwhile. The child also makes the parse cache's deferred writes (``writes``:
its copy of the columns is the parsed trace's), which would otherwise run on a thread beside this
process's larger share of the sections (0.3 GB trace: the write ~0.25 s of CPU, the child's section ~0.9 s
against ~1.2 s here); :attr:`SectionFork.wrote` says whether they were made. Each section is computed by the same function either way, so
the aggregate is the same. When the child fails (killed, out of memory), this process computes its
sections too. Used only where it pays: a trace of at least :data:`FORK_ABOVE_ITEMS` events, two usable
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

# The distributed section (the critical path): about half of the sections' time (0.3 GB trace: ~1.0 s of
# ~2.1 s of CPU). The insights stay here with the tables: the overview is built from the same memos
# (``insights``, GPU idle, memory curves), which a child computing the insights built a second time
# (with them in the child: 1.65 s here against 1.61 s there, 3.3 s of CPU in all; without: 1.4 against 1.1 s)
CHILD_SECTIONS = frozenset({"distributed"})
# Below this many events and memory events the child's copy-on-write page faults cost about what it
# saves (a side process for a 35 MB trace's distributed section saved 7 ms of 70)
FORK_ABOVE_ITEMS = 300_000


def worth_forking(items: int) -> bool:
    """Whether the sections of a trace of ``items`` events and memory events are computed on two cores."""
    return items >= FORK_ABOVE_ITEMS and default_workers() >= 2 and can_fork() and _memory_for_a_child()


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
    """A child forked now that computes :data:`CHILD_SECTIONS` of ``rank_aggregate(views, tables)``;
    :meth:`run` (``rank_aggregate``'s ``run``) computes the rest here and adds the child's."""

    def __init__(self, views: Any, tables: bool, writes: Sequence[Callable[[], None]] = ()) -> None:
        self.writes = writes
        self.wrote = False  # the child answered: its sections are computed and ``writes`` made
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: compute, send, leave without the parent's exit handlers
            code = 1
            try:
                os.close(read)
                rank_aggregate(views, tables, run=lambda sections, items: self._send(sections, items, write))
            except _Sent:
                code = 0
            finally:
                os._exit(code)
        os.close(write)
        self.pid: int | None = pid
        self.read = read

    def _send(self, sections: Sections, items: int, fd: int) -> dict[str, Any]:
        got = run_sections([s for s in sections if s[0] in CHILD_SECTIONS], items)
        for call in self.writes:  # (each logs its own failure: a cache entry less, never the sections)
            try:
                call()
            except Exception:
                pass
        with open(fd, "wb") as f:
            f.write(pickle.dumps(got, protocol=pickle.HIGHEST_PROTOCOL))
        raise _Sent

    def run(self, sections: Sections, items: int) -> dict[str, Any]:
        """Every section of ``sections``: the child's, and the others computed here meanwhile."""
        got = run_sections([s for s in sections if s[0] not in CHILD_SECTIONS], items)
        theirs = self._collect()
        if theirs is None or set(theirs) != CHILD_SECTIONS & {key for key, _ in sections}:
            theirs = run_sections([s for s in sections if s[0] in CHILD_SECTIONS], items)
        got.update(theirs)
        return {key: got[key] for key, _ in sections}

    def _collect(self) -> dict[str, Any] | None:
        """The child's sections (None when it failed); the child is reaped."""
        with open(self.read, "rb") as f:
            data = f.read()
        status = os.waitpid(self.pid, 0)[1] if self.pid is not None else 1
        self.pid = None
        if os.waitstatus_to_exitcode(status) != 0 or not data:
            return None
        try:  # (pickled by our own child, like the decode workers' answers)
            got = pickle.loads(data)
        except Exception:  # a truncated answer: computed here instead
            return None
        self.wrote = isinstance(got, dict)
        return got if self.wrote else None

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
