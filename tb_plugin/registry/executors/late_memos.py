"""The operator memos this process makes for its operators section, shared with the section child, which
reads them later in its insights section.

Both processes' sections read :data:`LATE` (``op_times``, the operator groups): this process makes them
in its first section (operators), the child in its insights section, after its distributed section (4.5 GB
trace: ~1.5 s of the child's CPU, the longer side). :meth:`LateMemos.publish` moves this process's copies
into a memory file (``os.memfd_create``, made before the fork: both processes hold it) as pickle protocol
5 with the arrays' bytes out of band, maps the file and replaces its memos with arrays that view the
mapping: the pages are then held once for both processes, not once each (this process's heap copies are
freed). The child's :meth:`LateMemos.take_into` maps the same file when a section first asks for one of
them, if published by then (its pipe's end closed), and otherwise leaves the child to make them itself
(no side ever waits for the other). Every memo is a pure function of the trace (trace/model.py's
``memo``), so the values are those either process would make; the mapped arrays are read-only.
"""

from __future__ import annotations

import mmap
import os
import pickle
import select
import struct
from typing import Any

#: the memos shared (made by this process's operators section, read by the child's insights section)
LATE = ("op_times", "op_groups:operator")
_HEAD = struct.Struct("<QQ")  # the pickle's length, the number of out-of-band buffers
_SPAN = struct.Struct("<QQ")  # one buffer's offset and length (bytes)
_ALIGN = 64  # each buffer's offset (bytes): aligned for any dtype


class LateMemos:
    """A memory file and a pipe made before the fork; :meth:`publish` here, :meth:`take_into` in the
    child (after :meth:`in_child`)."""

    def __init__(self) -> None:
        self.file: int | None = os.memfd_create("kinetoscope-late-memos", os.MFD_CLOEXEC)
        read, write = os.pipe()
        self.reader: int | None = read  # the pipe's ends, until each process closes the one it does not use
        self.writer: int | None = write

    def in_child(self) -> None:
        """In the child: keep the pipe's reading end."""
        self._close("writer")

    def in_parent(self) -> None:
        """In this process: keep the pipe's writing end."""
        self._close("reader")

    def publish(self, memos: dict[str, Any]) -> bool:
        """Move :data:`LATE` of ``memos`` into the memory file, replace them in ``memos`` with the mapped
        copies, and tell the child (the pipe's end closed); True when published. Once only; a failure
        publishes nothing (the child makes them)."""
        if self.file is None or self.writer is None:
            return False
        fd, self.file = self.file, None
        try:
            got = {key: memos[key] for key in LATE if key in memos}
            if not got:
                return False
            _write(fd, got)
            shared = _load(fd)
            if shared is None:
                return False
            memos.update(shared)  # (this process's heap copies freed)
            return True
        except Exception:  # (nothing published: the file is left empty, the child makes them)
            os.ftruncate(fd, 0)
            return False
        finally:
            os.close(fd)
            self._close("writer")

    def take_into(self, memos: dict[str, Any]) -> None:
        """In the child: add :data:`LATE`, mapped, to ``memos`` if published by now (then or never)."""
        if self.reader is None or not _closed(self.reader):
            return
        self._close("reader")
        fd, self.file = self.file, None
        if fd is None:
            return
        try:
            shared = _load(fd)
        finally:
            os.close(fd)
        for key, value in (shared or {}).items():
            if key in LATE and not dict.__contains__(memos, key):
                dict.__setitem__(memos, key, value)

    def close(self) -> None:
        """Close whatever is still open (an error before the sections)."""
        for name in ("file", "reader", "writer"):
            self._close(name)

    def _close(self, name: str) -> None:
        fd = getattr(self, name)
        if fd is not None:
            setattr(self, name, None)
            os.close(fd)


def _write(fd: int, memos: dict[str, Any]) -> None:
    """``memos`` pickled into the file ``fd``: head, buffers' spans, pickle, buffers (each aligned)."""
    buffers: list[pickle.PickleBuffer] = []
    data = pickle.dumps(memos, protocol=5, buffer_callback=buffers.append)
    views = [buffer.raw() for buffer in buffers]
    at = _HEAD.size + _SPAN.size * len(views) + len(data)
    spans = []
    for view in views:
        at = -(-at // _ALIGN) * _ALIGN
        spans.append((at, view.nbytes))
        at += view.nbytes
    os.ftruncate(fd, at)
    with mmap.mmap(fd, at) as out:
        out[: _HEAD.size] = _HEAD.pack(len(data), len(views))
        place = _HEAD.size
        for span in spans:
            out[place : place + _SPAN.size] = _SPAN.pack(*span)
            place += _SPAN.size
        out[place : place + len(data)] = data
        for (start, size), view in zip(spans, views):
            out[start : start + size] = view


def _load(fd: int) -> dict[str, Any] | None:
    """The memos in the file ``fd``, their arrays read-only views of its mapping (None when empty or
    inconsistent)."""
    size = os.fstat(fd).st_size
    if size < _HEAD.size:
        return None
    whole = memoryview(mmap.mmap(fd, size, access=mmap.ACCESS_READ))
    length, count = _HEAD.unpack(whole[: _HEAD.size])
    place = _HEAD.size + _SPAN.size * count
    if place + length > size:
        return None
    spans = [_SPAN.unpack(whole[_HEAD.size + _SPAN.size * i : _HEAD.size + _SPAN.size * (i + 1)]) for i in range(count)]
    if any(start + n > size for start, n in spans):
        return None
    got = pickle.loads(whole[place : place + length], buffers=[whole[start : start + n] for start, n in spans])
    return got if isinstance(got, dict) else None


def _closed(fd: int) -> bool:
    """Whether the pipe ``fd``'s writer has closed its end (``POLLHUP``)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    return any(event & select.POLLHUP for _, event in poller.poll(0))
