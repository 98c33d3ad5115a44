"""The report's sections of one large trace on two cores: a forked child computes some of them while
this process computes the rest.

After a large trace is parsed, its sections (:func:`~tb_plugin.registry.report.rank_aggregate`) take a
quarter of a cold report on one core; the distributed section (the critical path) alone about half of
them. :class:`SectionFork` forks this process right after the parse (before any other thread starts:
no thread runs beside the sections), the child computes :data:`CHILD_SECTIONS` from its
copy-on-write view of the columns and sends them back pickled (plain dicts, a few tens of KB), and this
process computes the others meanwhile. This process then makes the parse cache's deferred writes
(``writes``) while the child still computes: the child's share is the larger (0.3 GB trace: ~1.5 s of
CPU against ~1.0 s here), and the write (~0.15–0.25 s of CPU) would lengthen it there, while here it fills
the wait; made after this process's sections, whose memos are dropped by then, its copies do not stack
on a section's peak (a very large trace's child, whose share is then the smaller, makes them after its
answer: ``child_writes``). :attr:`SectionFork.wrote` says whether they were made. Each section is
computed by the same function either way, so the aggregate is the same. When the child fails (killed,
out of memory), this process computes its sections too. A very large trace's memos that both sides
read are made once before the fork (:func:`shared_before_fork`). Used only where it pays: a trace of at least :data:`FORK_ABOVE_ITEMS` events, two usable
cores, a fork that is safe (:func:`~tb_plugin.trace.decode_workers.can_fork`), and free memory for the
child's temporaries.
"""

from __future__ import annotations

import gc
import os
import pickle
from typing import Any, Callable, Sequence

from ...trace.decode_stream import default_workers
from ...trace.decode_workers import can_fork
from ...trace.heap import STEP_TRIM_ABOVE_ITEMS
from ..report import SECTION_MEMOS, Sections, rank_aggregate, run_sections
from .handed_memos import Arriving, hand_over

# about half of the sections' time (0.3 GB trace). The insights section computes the file's Overview
# (its recommendations): the overview section, after it in the child, only reads it back, where this
# process would compute it again (a 0.9 GB trace: 3.1 s of CPU and the idle-time memos, 0.1 GB at 4.5 GB)
CHILD_SECTIONS = frozenset({"distributed", "insights", "overview"})
# A very large trace's child (:func:`shared_before_fork`) computes the distributed section only and then
# makes the writes, and this process its own sections, the insights memo, and the insights and overview
# sections once the child's answer is in (:data:`LATE_SECTIONS`): the child's three sections took 10-12 s
# of the 4.5 GB trace's wall against ~7 s here with the writes, one core then idle; made beside the child's
# critical path instead, this process's insights sections stacked on its peak (the process tree 2111-2159 MB
# against 1.95 GB; docs/PERFORMANCE.md)
LARGE_CHILD_SECTIONS = frozenset({"distributed"})
LATE_SECTIONS = frozenset({"insights", "overview"})
# Below this many events and memory events the child's copy-on-write page faults cost about what it
# saves (a side process for a 35 MB trace's distributed section saved 7 ms of 70)
FORK_ABOVE_ITEMS = 300_000


def shared_before_fork(trace: Any, items: int) -> bool:
    """For a very large trace (:data:`~tb_plugin.trace.heap.STEP_TRIM_ABOVE_ITEMS` events and memory
    events or more), make the memos both processes' sections read before the fork: the operator tree,
    and the GPU summary with the step, launch and kernel memos it makes (:data:`.handed_memos.HANDED`,
    then already made). Made after the fork, each process built its own copy at the same moment, and their
    temporaries' peaks stacked (4.5 GB trace: the child's operator tree ~0.4 GB at its peak beside this
    process's GPU summary ~0.3 GB: the process tree's peak); made here, they are made once, shared, and
    their temporaries freed before the fork (the caller then collects the parse there too). True when
    made; else nothing (False)."""
    if items < STEP_TRIM_ABOVE_ITEMS:
        return False
    from ...analysis.op_tree import op_tree  # (the analyses are imported by then)
    from ...analysis.overview import gpu_summary

    op_tree(trace)
    gpu_summary(trace)
    return True


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
        hand: bool = False,
        late: frozenset[str] = frozenset(),
        child_writes: bool = False,
    ) -> None:
        self.writes = writes
        self.child = child  # the sections the child computes
        self.late = late - child  # the sections made here after the child's answer
        self.child_writes = child_writes  # ``writes`` made by the child after its answer (else here)
        self.wrote = False  # ``writes`` made (by :meth:`run`, here or by the child)
        read, write = os.pipe()
        handed = os.pipe() if hand else None  # (handed_memos: computed here, read by the child)
        pid = os.fork()
        if pid == 0:  # the child: compute, send, leave without the parent's exit handlers
            code = 1
            try:
                # the objects this process held at the fork are never collected here: a collection would
                # write to each one's header (copy-on-write faults) and walk the parse's cycles, which
                # this process collects meanwhile (registry/executors/task.py)
                gc.freeze()
                os.close(read)
                if handed is not None:
                    os.close(handed[1])
                    views.trace.derived = Arriving(views.trace.derived, handed[0])
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
        self.handing: int | None = None  # the pipe's end to the child, until :meth:`hand_over`
        if handed is not None:
            os.close(handed[0])
            self.handing = handed[1]
        self.trace = views.trace

    def hand_over(self) -> None:
        """With ``hand``: compute the memos the child reads late and this process never does, and hand
        them to it (:mod:`.handed_memos`); the child computes them itself if they come too late."""
        if self.handing is not None:
            fd, self.handing = self.handing, None
            hand_over(self.trace, fd)

    def _send(self, sections: Sections, items: int, memos: dict[str, Any], fd: int) -> dict[str, Any]:
        # (no trims for most traces: the child exits after its sections; given back, its freed pages cost a
        # page fault each when the next section or step takes them again: 0.3 GB trace, 41 000 → 27 000
        # faults; but a very large trace's are given back as in this process, after each step and section:
        # the 4.5 GB trace's child held ~0.2 GB of freed temporaries of its memos before its critical path,
        # and its graph after it, beside this process's heaviest sections; docs/PERFORMANCE.md)
        big = items >= STEP_TRIM_ABOVE_ITEMS
        got = run_sections([s for s in sections if s[0] in self.child], items, memos, trim=big)
        with open(fd, "wb") as f:
            f.write(pickle.dumps(got, protocol=pickle.HIGHEST_PROTOCOL))
        if self.child_writes:  # (answered first: this process's late sections need only the answer)
            self.write_pending()
        raise _Sent

    def run(self, sections: Sections, items: int) -> dict[str, Any]:
        """Every section of ``sections``: the child's, and the others computed here meanwhile."""
        self.hand_over()  # (unless made already)
        late = [s for s in sections if s[0] in self.late]
        # the memos the late sections read that are made already (before the fork: shared with the child)
        # are kept through this process's sections; those its sections make are dropped as before
        keep = frozenset(self.memos) & frozenset().union(*(SECTION_MEMOS.get(key, frozenset()) for key, _ in late))
        mine = [s for s in sections if s[0] not in self.child and s[0] not in self.late]
        got = run_sections(mine, items, self.memos, keep=keep)
        if not self.child_writes:
            self.write_pending()  # (while the child computes the larger share)
        if any(key == "insights" for key, _ in late):
            from ...analysis.insights import insights  # (the analyses are imported by then)

            # its figures (a memo) made while the child still computes: the other core's time, not the tail's
            # (4.5 GB trace: ~1.5 s of the ~5 s the late sections took), their freed pages given back
            run_sections([("insights memo", lambda: insights(self.trace))], items)
        theirs = self._collect(reap=not self.child_writes)
        if theirs is None or set(theirs) != self.child & {key for key, _ in sections}:
            theirs = run_sections([s for s in sections if s[0] in self.child] + late, items, self.memos)
        elif late:  # the child's sections are over: these sections' peaks stack on its writes only
            theirs.update(run_sections(late, items, self.memos))
        if self.child_writes:
            self._reap_writer()
        got.update(theirs)
        return {key: got[key] for key, _ in sections}

    def _reap_writer(self) -> None:
        """Wait for a child that makes ``writes``: made when it exited cleanly, else made here (a write is
        atomic: one the child began is replaced)."""
        status = os.waitpid(self.pid, 0)[1] if self.pid is not None else 1
        self.pid = None
        if os.waitstatus_to_exitcode(status) == 0:
            self.wrote = True
        self.write_pending()

    def write_pending(self) -> None:
        """Make ``writes`` unless made already (by :meth:`run`, or after an error before it); a failed
        one costs a cache entry, never the sections."""
        if self.wrote:
            return
        self.wrote = True
        for call in self.writes:
            try:
                call()
            except Exception:
                pass

    def _collect(self, reap: bool = True) -> dict[str, Any] | None:
        """The child's sections (None when it failed); the child is reaped (``reap``) or left to its
        writes (its answer whole, or it fails to load)."""
        with open(self.read, "rb") as f:
            data = f.read()
        self.read = -1  # (closed)
        if reap:
            status = os.waitpid(self.pid, 0)[1] if self.pid is not None else 1
            self.pid = None
            if os.waitstatus_to_exitcode(status) != 0:
                return None
        if not data:
            return None
        try:  # (pickled by our own child, like the decode workers' answers)
            got = pickle.loads(data)
        except Exception:  # a truncated answer: computed here instead
            return None
        return got if isinstance(got, dict) else None

    def close(self) -> None:
        """End the child if :meth:`run` was not reached (an error before it)."""
        if self.handing is not None:
            os.close(self.handing)
            self.handing = None
        if self.pid is not None:
            try:
                os.kill(self.pid, 9)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            self.pid = None
            if self.read >= 0:
                try:
                    os.close(self.read)
                except OSError:
                    pass
                self.read = -1
