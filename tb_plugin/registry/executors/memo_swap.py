"""The memos both sides of a small trace's section fork read, made half by each side and swapped.

Split in two (:mod:`.small_sections`), a small trace's sections still read the same per-trace memos on
both sides: the operator tree and times, the GPU summary with its steps and launch memos, the blocking
calls and the category flags (~22 ms of CPU on the 35 MB V100 sample, made by each process: a third of
each side's sections). A :class:`MemoSwap`, made before the fork, lets each side make one share
(:data:`PARENT_SHARE`, :data:`CHILD_SHARE`) and take the other's: each writes the memos its share added
into a memory file of its own (pickle protocol 5, the arrays' bytes out of band, aligned), says so with a
byte on a pipe of its own, then waits for the other's byte and maps the other's file, the arrays read
where they lie (a private, writable mapping: nothing is copied until written). Every memo is a pure
function of the trace (trace/model.py's ``memo``), so the values are those either side would make. A
side that fails (its share raises, a memo that cannot be pickled, a dead child) publishes nothing and
the other side's sections make what they miss, as without the swap; a side never waits longer than the
other takes to make its share.
"""

from __future__ import annotations

import mmap
import os
import pickle
import struct
from typing import Any, Callable

_ALIGN = 64  # each out-of-band buffer starts at a multiple of this in the memory file
_HEAD = struct.Struct("<QQ")  # the pickle stream's length, the number of buffers
_LENGTH = struct.Struct("<Q")


def _parent_share(trace: Any) -> None:
    """The operator tree and the operator times (~11 ms on the 35 MB V100 sample)."""
    from ...analysis.op_tree import op_tree  # (the analyses are imported by then)
    from ...analysis.operators import op_times

    op_tree(trace)
    op_times(trace)


def _child_share(trace: Any) -> None:
    """The GPU summary (with the steps, launch and kernel memos it makes), the blocking calls and the
    category flags (~12 ms on the 35 MB V100 sample)."""
    from ...analysis.blocking import blocking_calls
    from ...analysis.breakdown import category_masks
    from ...analysis.overview import gpu_summary

    gpu_summary(trace)
    blocking_calls(trace)
    category_masks(trace)


#: what each side makes of the memos both read: the parent's share, then the child's
PARENT_SHARE: Callable[[Any], None] = _parent_share
CHILD_SHARE: Callable[[Any], None] = _child_share


def available() -> bool:
    """Whether memory files exist here (Linux): elsewhere both sides make every memo they read."""
    return hasattr(os, "memfd_create")


class MemoSwap:
    """Made before the fork: a memory file and a pipe for each side. After it, each side calls
    :meth:`side` once (which side it is), then :meth:`swap` with the trace before its sections."""

    def __init__(self) -> None:
        self._files = (os.memfd_create("kinetoscope-memos-parent"), os.memfd_create("kinetoscope-memos-child"))
        self._pipes = (os.pipe(), os.pipe())  # (read, write): the parent's "published", the child's
        self._mine = -1
        self._closed = False

    def side(self, child: bool) -> None:
        """This process is the child (else the parent): the other side's write end and this side's read
        end are closed, so the other side's death reads as the end of its pipe."""
        self._mine = int(child)
        os.close(self._pipes[self._mine][0])
        os.close(self._pipes[1 - self._mine][1])

    def swap(self, trace: Any) -> None:
        """Make this side's share of ``trace``'s memos, publish them, then take the other side's (those this
        side has not made); every file and pipe of this side is closed after."""
        mine, theirs = self._mine, 1 - self._mine
        try:
            self._publish(trace, PARENT_SHARE if mine == 0 else CHILD_SHARE)
            got = self._take(theirs)
            for key, value in got.items():
                trace.derived.setdefault(key, value)
        finally:
            self.close()

    def _publish(self, trace: Any, share: Callable[[Any], None]) -> None:
        before = set(trace.derived)
        try:
            share(trace)
            added = {key: value for key, value in trace.derived.items() if key not in before}
            write_memos(self._files[self._mine], added)
        except Exception:  # (a bad trace: the sections raise it on either side; nothing published)
            return
        try:
            os.write(self._pipes[self._mine][1], b"1")
        except OSError:  # (the other side is gone: nobody to read them)
            pass

    def _take(self, theirs: int) -> dict[str, Any]:
        """The other side's memos once it has published them; none when it failed or died."""
        try:
            said = os.read(self._pipes[theirs][0], 1)
        except OSError:
            return {}
        if said != b"1":
            return {}
        try:
            return read_memos(self._files[theirs])
        except Exception:  # (a cut or foreign file: never a crash, the sections make what they miss)
            return {}

    def close(self) -> None:
        """Close this side's files and pipe ends (both sides' before :meth:`side`); closed twice, nothing."""
        for fd in self._open_fds():
            try:
                os.close(fd)
            except OSError:
                pass
        self._closed = True

    def _open_fds(self) -> list[int]:
        if self._closed:
            return []
        fds = list(self._files)
        if self._mine < 0:
            return fds + [fd for pipe in self._pipes for fd in pipe]
        return fds + [self._pipes[self._mine][1], self._pipes[1 - self._mine][0]]


def write_memos(fd: int, memos: dict[str, Any]) -> None:
    """``memos`` pickled into the empty memory file ``fd``: the head, each buffer's length, the stream,
    then each buffer at an aligned offset."""
    buffers: list[pickle.PickleBuffer] = []
    stream = pickle.dumps(memos, protocol=5, buffer_callback=buffers.append)
    views = [buffer.raw() for buffer in buffers]
    parts: list[Any] = [_HEAD.pack(len(stream), len(views)), *(_LENGTH.pack(v.nbytes) for v in views), stream]
    at = sum(map(len, parts))
    for view in views:
        pad = -at % _ALIGN
        parts += [bytes(pad), view]
        at += pad + view.nbytes
    os.ftruncate(fd, at)
    written = os.pwritev(fd, parts, 0) if len(parts) <= 1024 else _write_in_turn(fd, parts)
    if written != at:
        raise OSError("the memos' file took fewer bytes")


def _write_in_turn(fd: int, parts: list[Any]) -> int:
    at = 0
    for part in parts:
        at += os.pwrite(fd, part, at)
    return at


def read_memos(fd: int) -> dict[str, Any]:
    """What :func:`write_memos` wrote into ``fd``, the buffers read in place (a private writable mapping)."""
    size = os.fstat(fd).st_size
    data = mmap.mmap(fd, size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    view = memoryview(data)
    stream_bytes, count = _HEAD.unpack_from(view, 0)
    at = _HEAD.size
    lengths = [_LENGTH.unpack_from(view, at + k * _LENGTH.size)[0] for k in range(count)]
    at += count * _LENGTH.size
    stream = view[at : at + stream_bytes]
    at += stream_bytes
    buffers = []
    for length in lengths:
        at += -at % _ALIGN
        buffers.append(view[at : at + length])
        at += length
    if at != size:
        raise ValueError("the memos' file is not what was written")
    memos = pickle.loads(stream, buffers=buffers)
    return memos if isinstance(memos, dict) else {}
