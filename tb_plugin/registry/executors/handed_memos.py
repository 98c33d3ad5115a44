"""Memos this process computes for the section child (:class:`~.sections.SectionFork`) while the child
computes what comes before them.

The child's distributed section walks the critical path first (reading neither), then reads the operator
tree (the communication kernels' operators) and the Overview's GPU summary (with the ``steps`` it is
built from): on the 4.5 GB trace ~1.3 s and ~1.1 s of CPU that the child would make after a critical path
of ~5 s, or that were made before the fork with the other core idle. :func:`hand_over` computes them here
right after the fork, writes them into a file made before it (:class:`Handing`: pickle protocol 5, the
arrays' bytes out of band, :func:`~.memo_swap.write_memos`) and says so with a byte on a pipe; then, in a
second stage (its own file and pipe), the memos only the child's insights section reads, after its
distributed one: the Insights tab's figures, the GPU idle gaps, the runtime-call table and the calls the
advice names (4.5 GB trace: ~2.7 s of CPU, with the blocking calls and category flags they read, which
the child's critical path also makes; the post-fork CPU of the two sides 12.3 and 12.5 s against 10.9
and 14.9 s with them in the child). The child's memos (:class:`Arriving`) take a stage when a section
first asks for one of its memos, if it has arrived by then, reading the arrays where they lie (a private
mapping of the file: nothing is copied until written), and otherwise compute them as before (no side
ever waits for the other). The files are unnamed,
in the parse cache's folder where there is one (its pages then belong to the page cache, which the
system may take back, not to either process), else in memory. Every memo is a pure function of the trace
(trace/model.py's ``memo``): the values are the same whichever process computes them. This process keeps
what it computed that its own sections read (``keep``) and drops the rest, so that its sections start
from the memos they would have made first themselves.
"""

from __future__ import annotations

import os
import select
from typing import Any

from ...storage.private_files import unnamed_file
from ...trace.heap import release_after, trimmed_steps
from .memo_swap import read_memos, write_memos

#: the memos handed to the section child, in stages: its distributed section reads the first after its
#: critical path, its insights section the second after the distributed one (with the runtime-call table
#: and the calls the advice names, which read the blocking calls this stage makes: the two sides of the
#: 4.5 GB trace's sections then end within ~0.1 s, where the child ended ~0.5 s after this process), its
#: memory section the third (the memory events' operators and the operator rows: 4.5 GB trace ~0.7 s,
#: made here while the child walks its critical path)
STAGES: tuple[tuple[str, ...], ...] = (
    ("op_tree", "gpu_summary", "steps"),
    ("insights", "gpu_idle", "runtime_calls", "named_calls", "outside_trace_rows"),
    ("op_rows", "memory_data"),
)
HANDED = tuple(key for stage in STAGES for key in stage)
_STAGE_OF = {key: k for k, stage in enumerate(STAGES) for key in stage}
#: the memos an earlier stage makes that a later one reads (measured on the samples:
#: tests/unit/registry/test_section_fork.py); the others an earlier stage made and this process's sections
#: do not read (the GPU summary, the kernels' blocks) are dropped before the next stage is computed, beside
#: the child's critical path, where the process tree peaks
LATER_READS = frozenset({"op_tree", "steps", "device_mask", "event_name_ids", "launch_mask", "launch_of"})


class Handing:
    """Made before the fork: for each of :data:`STAGES`, the file its memos are written into and the pipe
    that says they are there. After it, the parent calls :meth:`parent` and hands them over
    (:func:`hand_over`), the child calls :meth:`child` (its :class:`Arriving` memos)."""

    def __init__(self, folder: str | None = None) -> None:
        self.stages: list[tuple[int, int, int]] = []  # (file, pipe's read end, write end) per stage
        try:
            for _ in STAGES:
                file = unnamed_file(folder, "kinetoscope-handed-memos")[0]
                try:
                    read, write = os.pipe()
                except OSError:
                    os.close(file)
                    raise
                self.stages.append((file, read, write))
        except OSError:
            self.close()
            raise

    def parent(self) -> list[tuple[int, int]]:
        """``(file, pipe's write end)`` per stage for :func:`hand_over`, which closes them; the read ends
        closed here."""
        for _, read, _ in self.stages:
            os.close(read)
        return [(file, write) for file, _, write in self.stages]

    def child(self, memos: dict[str, Any]) -> Arriving:
        """The child's memos: ``memos`` and those handed over when they have arrived."""
        for _, _, write in self.stages:
            os.close(write)
        return Arriving(memos, [(read, file) for file, read, _ in self.stages])

    def close(self) -> None:
        """Every end and file closed (a fork that failed)."""
        for fds in self.stages:
            for fd in fds:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.stages = []


def hand_over(trace: Any, stages: list[tuple[int, int]], keep: frozenset[str] = frozenset()) -> None:
    """Compute each stage of :data:`STAGES` for ``trace`` in turn, write it into its ``(file, fd)`` of
    ``stages``, say so on its pipe and close both; of the memos added to ``trace.derived`` meanwhile, those
    not in ``keep`` are dropped again. A stage that fails hands nothing, nor do those after it (the child
    computes them)."""
    before = set(trace.derived)
    failed = False
    for keys, (file, fd) in zip(STAGES, stages):
        try:
            if not failed:
                _compute(trace, keys)
                write_memos(file, {key: trace.derived[key] for key in keys if key in trace.derived})
                os.write(fd, b"1")
        except Exception:  # (a bad trace: its sections raise it in either process, as before; a dead child)
            failed = True
        finally:
            os.close(file)
            os.close(fd)
            _drop(trace, before, keep if keys is STAGES[-1] else keep | LATER_READS)


def _drop(trace: Any, before: set[str], keep: frozenset[str]) -> None:
    """Drop the memos added to ``trace.derived`` since ``before`` that are not in ``keep``, and give their
    and their temporaries' pages back (a large trace), as after each section."""
    for key in [k for k in trace.derived if k not in before and k not in keep]:
        del trace.derived[key]
    release_after(len(trace.events) + len(trace.memory))


def _compute(trace: Any, keys: tuple[str, ...]) -> None:
    """The memos ``keys`` (a stage of :data:`STAGES`) of ``trace`` once this returns. The operator tree
    gives its freed pages back before the GPU summary, and each stage's end (:func:`_drop`) those of the
    stage; the memos' own steps keep theirs for the next step, as the child's insights section does: the
    process tree peaks later, at this process's operators section beside the child's insights (4.5 GB
    trace: 755 000 → 499 000 page faults and 6.1 → 5.7 s of CPU here, the tree at once 1879 MB; until
    2026-12-03 they were given back after every step, when the stages' peaks beside the child's critical
    path were the tree's)."""
    from ...analysis.advice import named_calls  # (the analyses are imported by then)
    from ...analysis.gpu_idle import gpu_idle
    from ...analysis.insights import insights
    from ...analysis.memory import memory_data
    from ...analysis.op_tree import op_tree
    from ...analysis.operators import op_rows
    from ...analysis.overview import gpu_summary
    from ...analysis.runtime_calls import outside_rows, runtime_calls

    items = len(trace.events) + len(trace.memory)
    with trimmed_steps(0):  # (no step gives its pages back: the docstring)
        if "op_tree" in keys:
            op_tree(trace)
            release_after(items)
        if "gpu_summary" in keys:
            gpu_summary(trace)  # (and its steps)
        if "insights" in keys:
            insights(trace)
        if "gpu_idle" in keys:
            gpu_idle(trace)
        if "runtime_calls" in keys:
            runtime_calls(trace)
        if "named_calls" in keys:
            named_calls(trace)
        if "outside_trace_rows" in keys:
            outside_rows(trace)
        if "op_rows" in keys:
            op_rows(trace)
        if "memory_data" in keys:
            memory_data(trace)


class Arriving(dict[str, Any]):
    """The section child's memos (``trace.derived``): a memo missing here is looked for among those
    :func:`hand_over` wrote into its stage's file, once that stage's pipe says they are all there; never
    waited for. ``stages``: ``(pipe's read end, file)`` per stage of :data:`STAGES`."""

    def __init__(self, memos: dict[str, Any], stages: list[tuple[int, int]]) -> None:
        super().__init__(memos)
        self.stages: dict[int, tuple[int, int]] = dict(enumerate(stages))  # the stages not taken yet

    def __missing__(self, key: str) -> Any:
        stage = _STAGE_OF.get(key)
        if stage in self.stages and _readable(self.stages[stage][0]):
            self._take(stage)
            if dict.__contains__(self, key):
                return dict.__getitem__(self, key)
        raise KeyError(key)

    def _take(self, stage: int) -> None:
        """Read what was handed over in ``stage`` (its byte written once the file was whole) and close both."""
        fd, file = self.stages.pop(stage)
        try:
            got = read_memos(file) if os.read(fd, 1) == b"1" else {}
        except Exception:  # (a cut or foreign file: computed here)
            got = {}
        finally:
            os.close(fd)
            os.close(file)
        for key, value in got.items():
            if key in STAGES[stage] and not dict.__contains__(self, key):
                self[key] = value

    def close(self) -> None:
        for fd, file in self.stages.values():
            os.close(fd)
            os.close(file)
        self.stages = {}


def _readable(fd: int) -> bool:
    """Whether the pipe ``fd``'s writer is done: its end closed (``POLLHUP``), all it wrote readable."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    return any(event & select.POLLHUP for _, event in poller.poll(0))
