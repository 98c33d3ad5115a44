"""Memos this process computes for the section child (:class:`~.sections.SectionFork`) while the child
computes what comes before them.

The child's distributed section walks the critical path first (reading neither), then reads the operator
tree (the communication kernels' operators) and the Overview's GPU summary (with the ``steps`` it is
built from): on the 4.5 GB trace ~1.3 s and ~1.1 s of CPU that the child would make after a critical path
of ~5 s, or that were made before the fork with the other core idle. :func:`hand_over` computes them here
right after the fork, writes them into a file made before it (:class:`Handing`: pickle protocol 5, the
arrays' bytes out of band, :func:`~.memo_swap.write_memos`) and says so with a byte on a pipe; the
child's memos (:class:`Arriving`) take them when a section first asks for one, if they have arrived by
then, reading the arrays where they lie (a private mapping of the file: nothing is copied until
written), and otherwise compute them as before (no side ever waits for the other). The file is unnamed,
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

#: the memos handed to the section child (its distributed and insights sections read them)
HANDED = ("op_tree", "gpu_summary", "steps")


class Handing:
    """Made before the fork: the file the memos are written into and the pipe that says they are there.
    After it, the parent calls :meth:`parent` and hands them over (:func:`hand_over`), the child calls
    :meth:`child` (its :class:`Arriving` memos)."""

    def __init__(self, folder: str | None = None) -> None:
        self.file = unnamed_file(folder, "kinetoscope-handed-memos")[0]
        try:
            self.read, self.write = os.pipe()
        except OSError:
            os.close(self.file)
            raise

    def parent(self) -> tuple[int, int]:
        """``(file, pipe's write end)`` for :func:`hand_over`, which closes them; the read end closed here."""
        os.close(self.read)
        return self.file, self.write

    def child(self, memos: dict[str, Any]) -> Arriving:
        """The child's memos: ``memos`` and those handed over when they have arrived."""
        os.close(self.write)
        return Arriving(memos, self.read, self.file)

    def close(self) -> None:
        """Both ends and the file closed (a fork that failed)."""
        for fd in (self.file, self.read, self.write):
            try:
                os.close(fd)
            except OSError:
                pass


def hand_over(trace: Any, file: int, fd: int, keep: frozenset[str] = frozenset()) -> None:
    """Compute :data:`HANDED` for ``trace``, write them into ``file``, say so on the pipe ``fd`` and close
    both; of the memos added to ``trace.derived`` meanwhile, those not in ``keep`` are dropped again. A
    failure hands nothing (the child computes them)."""
    before = set(trace.derived)
    try:
        _compute(trace)
        write_memos(file, {key: trace.derived[key] for key in HANDED if key in trace.derived})
        os.write(fd, b"1")
    except Exception:  # (a bad trace: its sections raise it in either process, as before; a dead child)
        pass
    finally:
        os.close(file)
        os.close(fd)
        for key in [k for k in trace.derived if k not in before and k not in keep]:
            del trace.derived[key]
        # the dropped memos' and their temporaries' pages given back (a large trace), as after each section
        release_after(len(trace.events) + len(trace.memory))


def _compute(trace: Any) -> None:
    """:data:`HANDED`, memos of ``trace`` once this returns. Their steps give freed pages back as a
    section's do (a very large trace: :func:`~tb_plugin.trace.heap.trimmed_steps`), and so does the
    operator tree before the GPU summary: their peaks beside the child's critical path were the process
    tree's (4.5 GB trace)."""
    from ...analysis.op_tree import op_tree  # (the analyses are imported by then)
    from ...analysis.overview import gpu_summary

    items = len(trace.events) + len(trace.memory)
    with trimmed_steps(items):
        op_tree(trace)
        release_after(items)
        gpu_summary(trace)


class Arriving(dict[str, Any]):
    """The section child's memos (``trace.derived``): a memo missing here is looked for among those
    :func:`hand_over` wrote into ``file``, once the pipe ``fd`` says they are all there; never waited for."""

    def __init__(self, memos: dict[str, Any], fd: int, file: int) -> None:
        super().__init__(memos)
        self.fd: int | None = fd
        self.file = file

    def __missing__(self, key: str) -> Any:
        if key in HANDED and self.fd is not None and _readable(self.fd):
            self._take()
            if dict.__contains__(self, key):
                return dict.__getitem__(self, key)
        raise KeyError(key)

    def _take(self) -> None:
        """Read what was handed over (its byte written once the file was whole) and close both."""
        fd, self.fd = self.fd, None
        assert fd is not None
        try:
            got = read_memos(self.file) if os.read(fd, 1) == b"1" else {}
        except Exception:  # (a cut or foreign file: computed here)
            got = {}
        finally:
            os.close(fd)
            os.close(self.file)
        for key, value in got.items():
            if key in HANDED and not dict.__contains__(self, key):
                self[key] = value

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            os.close(self.file)
            self.fd = None


def _readable(fd: int) -> bool:
    """Whether the pipe ``fd``'s writer is done: its end closed (``POLLHUP``), all it wrote readable."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    return any(event & select.POLLHUP for _, event in poller.poll(0))
