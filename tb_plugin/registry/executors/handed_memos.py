"""Memos this process computes for the section child (:class:`~.sections.SectionFork`) while the child
computes what comes before them.

The child's distributed section reads the Overview's GPU summary (``gpu_summary``, with the ``steps`` it
is built from: ~0.09 s of CPU on the 0.3 GB trace) some 0.15 s of CPU after it starts, and this process's
sections never read it. :func:`hand_over` computes them here right after the fork and writes them
pickled to a pipe (a few KB); the child's memos (:class:`Arriving`) take them from the pipe when a
section first asks for one, if they have arrived by then, and otherwise compute them as before (no side
ever waits for the other). Every memo is a pure function of the trace (trace/model.py's ``memo``): the
values are the same whichever process computes them. This process then drops every memo it added, so
its sections start from the memos they started from before (its peak memory does not move).
"""

from __future__ import annotations

import os
import pickle
from typing import Any

from ...trace.heap import release_after

#: the memos handed to the section child, and what computes them here (read by the child's distributed
#: and insights sections, by none of this process's large-trace sections)
HANDED = ("gpu_summary", "steps")


def hand_over(trace: Any, fd: int) -> None:
    """Compute :data:`HANDED` for ``trace``, write them pickled to ``fd`` and close it; the memos added to
    ``trace.derived`` meanwhile are dropped again. A failure hands nothing (the child computes them)."""
    before = set(trace.derived)
    try:
        _compute(trace)
        got = {key: trace.derived[key] for key in HANDED if key in trace.derived}
        data = pickle.dumps(got, protocol=pickle.HIGHEST_PROTOCOL)
        with open(fd, "wb", closefd=False) as f:
            f.write(data)
    except Exception:  # (a bad trace: its sections raise it in either process, as before)
        pass
    finally:
        os.close(fd)
        for key in [k for k in trace.derived if k not in before]:
            del trace.derived[key]
        # their temporaries' pages given back (a large trace), as after each section: this process's
        # sections start from the heap they started from before
        release_after(len(trace.events) + len(trace.memory))


def _compute(trace: Any) -> None:
    """:data:`HANDED`, memos of ``trace`` once this returns."""
    from ...analysis.overview import gpu_summary  # (the analyses are imported by then)

    gpu_summary(trace)


class Arriving(dict[str, Any]):
    """The section child's memos (``trace.derived``): a memo missing here is looked for among those
    :func:`hand_over` sent, once they have all arrived; never waited for."""

    def __init__(self, memos: dict[str, Any], fd: int) -> None:
        super().__init__(memos)
        self.fd: int | None = fd

    def __missing__(self, key: str) -> Any:
        if key in HANDED and self.fd is not None and _readable(self.fd):
            self._take()
            if dict.__contains__(self, key):
                return dict.__getitem__(self, key)
        raise KeyError(key)

    def _take(self) -> None:
        """Read what was handed over (written whole before the pipe's end was closed) and close the pipe."""
        fd, self.fd = self.fd, None
        assert fd is not None
        try:
            chunks = []
            while chunk := os.read(fd, 1 << 16):
                chunks.append(chunk)
            got = pickle.loads(b"".join(chunks)) if chunks else {}  # (pickled by our own parent)
        except Exception:  # (a truncated write: computed here)
            got = {}
        finally:
            os.close(fd)
        for key, value in got.items() if isinstance(got, dict) else ():
            if key in HANDED and not dict.__contains__(self, key):
                self[key] = value

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _readable(fd: int) -> bool:
    """Whether the pipe ``fd``'s writer is done: its end closed (``POLLHUP``), all it wrote readable."""
    import select

    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    return any(event & select.POLLHUP for _, event in poller.poll(0))
