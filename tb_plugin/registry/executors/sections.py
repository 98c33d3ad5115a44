"""The report's sections of one large trace on two cores: a forked child computes some of them while
this process computes the rest.

After a large trace is parsed, its sections (:func:`~tb_plugin.registry.report.rank_aggregate`) take a
quarter of a cold report on one core; the distributed section (the critical path) alone about half of
them. :class:`SectionFork` forks this process right after the parse (before any other thread starts:
no thread runs beside the sections), the child computes :data:`CHILD_SECTIONS` from its
copy-on-write view of the columns and sends them back pickled (plain dicts: tens of KB, ~1 MB for the
4.5 GB trace's tables; a thread of this process reads them as they come, so the child exits as soon as
it is done), and this process computes the others meanwhile. This process makes the parse cache's deferred writes
(``writes``) on a thread beside its own sections (:meth:`SectionFork.start_writes`): a large entry goes
past the page cache (``storage/direct_file.py``) and mostly waits on the disk (the 4.5 GB trace's 918 MB:
0.2 s of CPU in 2 s, the rest asleep), which the sections fill; made in the child, it would lengthen the
larger share, and made after this process's sections (until 2026-12-02), it ended the report 0.1-2 s after
the child. The write copies nothing but a 16 MiB buffer, so it adds nothing to a section's peak.
:attr:`SectionFork.wrote` says whether they were begun. Each section is
computed by the same function either way, so the aggregate is the same. When the child fails (killed,
out of memory), this process computes its sections too. With ``hand``, this process first computes the
operator tree and the GPU summary, which the child reads only after its critical path, then the
Insights figures and GPU idle gaps, which it reads after its distributed section, and hands each stage
over (:mod:`.handed_memos`); a very large trace's memos that both sides read first are made once before
the fork (:func:`shared_before_fork`). Used only where it pays: a trace of at least
:data:`FORK_ABOVE_ITEMS` events, two usable cores, a fork that is safe
(:func:`~tb_plugin.trace.decode_workers.can_fork`), and free memory for the child's temporaries.
"""

from __future__ import annotations

import gc
import os
import pickle
import threading
from typing import Any, Callable, Sequence

from ...trace.decode_stream import default_workers
from ...trace.decode_workers import can_fork
from ...trace.forked_worker import leave_to_exit
from ...trace.heap import STEP_TRIM_ABOVE_ITEMS
from ..report import SECTION_MEMOS, Sections, rank_aggregate, run_sections, section_keys
from .handed_memos import Handing, hand_over
from .memo_swap import MemoSwap

# about half of the sections' time (0.3 GB trace). The insights section computes the file's Overview
# (its recommendations): the overview section, after it in the child, only reads it back, where this
# process would compute it again (a 0.9 GB trace: 3.1 s of CPU and the idle-time memos, 0.1 GB at 4.5 GB).
# The memory section reads the operator tree (handed over), the memory curves (the insights section's) and
# the operator rows (made apart from the operator times): in the child it evens the two sides out (4.5 GB
# trace, after the blocking calls' change: this process ended 2.4 s after the child, the section 1.8 s)
CHILD_SECTIONS = frozenset({"distributed", "insights", "overview", "memory"})
# A very large trace's child gives its freed pages back in its distributed section, beside this process's
# operator tree and operators section (where the process tree peaks), but not in these: by then this
# process is past its peak, and each page given back cost a page fault when taken again (4.5 GB trace:
# the insights' 0.5 M faults, ~1.5 s of the report's wall; the tree's peak unchanged, 1881-1943 MB)
UNTRIMMED_CHILD_SECTIONS = frozenset({"insights", "overview"})
# ... and its distributed section's steps (the critical path's groups) give theirs back only past
# STEP_TRIM_GROWTH_BYTES of growth: it ends before the tree's peak (this process's operators section beside
# the child's insights), and its end gives back everything (trace/heap.STEP_TRIM_GROWTH_BYTES' figures)
LAZILY_TRIMMED_CHILD_SECTIONS = frozenset({"distributed"})
# Below this many events and memory events the child's copy-on-write page faults cost about what it
# saves (a side process for a 35 MB trace's distributed section saved 7 ms of 70)
FORK_ABOVE_ITEMS = 300_000


def shared_before_fork(trace: Any, items: int) -> bool:
    """For a very large trace (:data:`~tb_plugin.trace.heap.STEP_TRIM_ABOVE_ITEMS` events and memory
    events or more), make the memos both processes' sections read first before the fork: the launches and
    the steps (the child's critical path and this process's GPU summary start with them). Made after the
    fork, each process built its own copy; made here, once and shared (the caller then collects the parse
    there too). The launch links are made on a thread beside the steps' first stage, which reads none
    (numpy gives up the GIL for their sorts, searches and gathers; the other core is idle here: 4.5 GB
    trace from the parse cache, 0.49 -> 0.37 s). The operator tree and the GPU summary are not: the child
    reads them after its critical path, and this process makes them after the fork and hands them over
    (:mod:`.handed_memos`; 4.5 GB trace: ~2.8 s made here with the other core idle). True when made; else
    nothing (False)."""
    if items < STEP_TRIM_ABOVE_ITEMS:
        return False
    from ...analysis.steps import compute_steps, host_step_launches  # (the analyses are imported by then)
    from ...trace.links import device_mask, launch_mask, launch_of

    device_mask(trace)  # (both read by the two sides: made once, before the thread)
    launch_mask(trace)
    links: threading.Thread | None = None
    try:
        links = threading.Thread(target=_made_quietly, args=(launch_of, trace), name="kinetoscope-launch-links")
        links.start()
    except RuntimeError:  # (no thread now: the steps make the links themselves)
        links = None
    try:
        staged = host_step_launches(trace)
    finally:
        if links is not None:
            links.join()  # (before the fork, always: no thread may run while this process forks)
    compute_steps(trace, staged)  # (the links made by the thread, or here where it failed)
    return True


def _made_quietly(make: Callable[[Any], Any], trace: Any) -> None:
    """``make(trace)`` on a thread; an error is left to the caller's own call of it, which raises it."""
    try:
        make(trace)
    except Exception:
        pass


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


class _Answer:
    """The child's answer read from the pipe's end ``fd`` by a thread of this process as the child writes
    it: the child's write completes, and the child exits and its memory is freed, as soon as its sections
    are done, not when this process has finished its own (an answer larger than the pipe's 64 KiB waited
    there: the 4.5 GB trace's 1 MB kept the child's ~1 GB alive for the last 1.1 s of this process's
    memory section, where the process tree peaked). Where no thread can be started, the end is read in
    :meth:`bytes`, as before."""

    def __init__(self, fd: int) -> None:
        self._source = open(fd, "rb")
        self._data: bytes | None = None
        self._thread: threading.Thread | None = threading.Thread(
            target=self._read, name="kinetoscope-section-answer", daemon=True
        )
        try:
            self._thread.start()
        except RuntimeError:  # (no thread now: read when asked)
            self._thread = None

    def _read(self) -> None:
        try:
            with self._source:
                self._data = self._source.read()
        except (OSError, ValueError):  # (an unreadable end: no answer; the sections are computed here)
            self._data = b""

    def bytes(self) -> bytes:
        """Everything the child wrote, once it has closed its end (exited or killed)."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        elif self._data is None:
            self._read()
        return self._data or b""


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
        swap: bool = False,
        leave: bool = False,
        hand_dir: str | None = None,
    ) -> None:
        self.writes = writes
        self.child = child  # the sections the child computes
        self.wrote = False  # ``writes`` begun (:meth:`start_writes`, or :meth:`write_pending` after an error)
        self._writer: threading.Thread | None = None  # the thread making them, until joined
        # (memo_swap: the memos both sides read, made half by each side; a small trace's split)
        self.swap = MemoSwap() if swap else None
        # its answer read, the child is left to exit (a small trace's); a large trace's is waited for: the
        # kernel freeing its memory beside what this process does next would raise the tree's peak
        self.leave = leave
        self.trace = views.trace
        # (handed_memos: computed here, read by the child; their file in ``hand_dir``, the parse cache's folder)
        try:
            handed = Handing(hand_dir) if hand else None
        except OSError:  # (no file for them: the child computes them itself)
            handed = None
        try:
            read, write = os.pipe()
        except OSError:
            if handed is not None:
                handed.close()
            raise
        try:
            pid = os.fork()
        except OSError:
            for fd in (read, write):
                os.close(fd)
            if handed is not None:
                handed.close()
            if self.swap is not None:
                self.swap.close()
            raise
        if pid == 0:  # the child: compute, send, leave without the parent's exit handlers
            code = 1
            try:
                # the objects this process held at the fork are never collected here: a collection would
                # write to each one's header (copy-on-write faults) and walk the parse's cycles, which
                # this process collects meanwhile (registry/executors/task.py)
                gc.freeze()
                os.close(read)
                if self.swap is not None:
                    self.swap.side(child=True)
                if handed is not None:
                    views.trace.derived = handed.child(views.trace.derived)
                memos = views.trace.derived
                rank_aggregate(views, tables, run=lambda sections, items: self._send(sections, items, memos, write))
            except _Sent:
                code = 0
            finally:
                os._exit(code)
        os.close(write)
        self.answer = _Answer(read)  # (the pipe's end is the reader's from here)
        if self.swap is not None:
            self.swap.side(child=False)
        self.memos = views.trace.derived  # dropped as the sections no longer need them (run_sections)
        self.pid: int | None = pid
        # the memos' file and the pipe's end to the child, until :meth:`hand_over`
        self.handing: list[tuple[int, int]] | None = handed.parent() if handed is not None else None
        # what this process keeps of the memos it computes for the child: those its own sections read
        mine = [key for key in section_keys(tables) if key not in child]
        self.keep = frozenset().union(*(SECTION_MEMOS[key] for key in mine))

    def hand_over(self) -> None:
        """With ``hand``: compute the memos the child reads after its critical path and after its
        distributed section, and hand them to it (:mod:`.handed_memos`); the child computes those that
        come too late itself."""
        if self.handing is not None:
            stages, self.handing = self.handing, None
            hand_over(self.trace, stages, self.keep)

    def _send(self, sections: Sections, items: int, memos: dict[str, Any], fd: int) -> dict[str, Any]:
        # (no trims for most traces: the child exits after its sections; given back, its freed pages cost a
        # page fault each when the next section or step takes them again: 0.3 GB trace, 41 000 → 27 000
        # faults; but a very large trace's are given back as in this process, after each step and section:
        # the 4.5 GB trace's child held ~0.2 GB of freed temporaries of its memos before its critical path,
        # and its graph after it, beside this process's heaviest sections; not in UNTRIMMED_CHILD_SECTIONS,
        # after that peak; docs/PERFORMANCE.md)
        big = items >= STEP_TRIM_ABOVE_ITEMS
        if self.swap is not None:
            self.swap.swap(self.trace)
        mine = [s for s in sections if s[0] in self.child]
        got = run_sections(
            mine,
            items,
            memos,
            trim=big,
            untrimmed=UNTRIMMED_CHILD_SECTIONS,
            lazily_trimmed=LAZILY_TRIMMED_CHILD_SECTIONS,
        )
        with open(fd, "wb") as f:
            f.write(pickle.dumps(got, protocol=pickle.HIGHEST_PROTOCOL))
        raise _Sent

    def run(self, sections: Sections, items: int) -> dict[str, Any]:
        """Every section of ``sections``: the child's, and the others computed here meanwhile."""
        self.start_writes()  # (unless begun already)
        self.hand_over()  # (unless made already)
        if self.swap is not None:
            self.swap.swap(self.trace)
        got = run_sections([s for s in sections if s[0] not in self.child], items, self.memos)
        self.write_pending()  # (joined while the child computes the larger share)
        theirs = self._collect()
        if theirs is None or set(theirs) != self.child & {key for key, _ in sections}:
            theirs = run_sections([s for s in sections if s[0] in self.child], items, self.memos)
        got.update(theirs)
        return {key: got[key] for key, _ in sections}

    def start_writes(self) -> None:
        """Begin ``writes`` on a thread of this process (once; none when there are none). Called after
        the fork: no thread may run while this process forks."""
        if self.wrote or not self.writes:
            return
        self.wrote = True
        self._writer = threading.Thread(target=self._make_writes, name="kinetoscope-cache-write")
        self._writer.start()

    def write_pending(self) -> None:
        """Wait for ``writes`` begun by :meth:`start_writes`, or make them here unless made already (an
        error before :meth:`run`); a failed one costs a cache entry, never the sections."""
        if self._writer is not None:
            self._writer.join()
            self._writer = None
        if not self.wrote:
            self.wrote = True
            self._make_writes()

    def _make_writes(self) -> None:
        for call in self.writes:
            try:
                call()
            except Exception:
                pass

    def _collect(self) -> dict[str, Any] | None:
        """The child's sections (None when it failed: then reaped here). A whole answer is the child's
        last act: with ``leave`` it is left to exit while this process goes on (:func:`~tb_plugin.trace.
        forked_worker.leave_to_exit`: the kernel frees its memory meanwhile), else reaped here."""
        data = self.answer.bytes()
        pid, self.pid = self.pid, None
        try:  # (pickled by our own child, like the decode workers' answers; cut, it fails to load)
            got = pickle.loads(data)
        except Exception:  # a truncated or missing answer: computed here instead
            got = None
        if pid is not None:
            if got is not None and self.leave:
                leave_to_exit(pid)
            else:
                os.waitpid(pid, 0)
        return got if isinstance(got, dict) else None

    def close(self) -> None:
        """End the child if :meth:`run` was not reached (an error before it)."""
        if self.handing is not None:
            for fds in self.handing:
                for fd in fds:
                    os.close(fd)
            self.handing = None
        if self.swap is not None:
            self.swap.close()
        if self.pid is not None:
            try:
                os.kill(self.pid, 9)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            self.pid = None
            self.answer.bytes()  # (the child's end closed: the reader ends, and closes its own)
