"""The decode workers' side of a ranged parse: they read a local uncompressed trace themselves.

:mod:`.decode_ranges` splits the ``traceEvents`` array of such a file into byte ranges and has the
workers (:mod:`.decode_workers`) run these two functions, so the main process neither reads, scans
nor copies the events:

- :func:`scan_range` (first pass): the events of one range, as their offsets and lengths in the
  document. A range starts after the first ``}`` + blanks + ``,`` at or past its nominal start (the
  array's first element for the first range) and ends where the next range starts, so neighbours
  agree on the cut without talking. The range is decoded strictly as ``[`` + range + ``]`` (as
  :mod:`.scan` checks its chunks): the first range starts at a true element, so by induction every
  cut whose range decodes is a true one (a cut inside a string leaves its range unbalanced). The last
  range is read to the array's ``]`` by the scanner's own chunking (:func:`.scan._events`).
- :func:`span_batches` (second pass): the batches of one unit, each cut out of the file in one piece
  (``[`` + its events with the separators the file has + ``]``: the same events the serial path joins
  by bare commas) and decoded by :func:`.decode_workers.decode_batch`.

Positions are document offsets (bytes after a byte order mark); the file is read at ``skip`` bytes
further. A range that does not decode, events the scanner would have quoted (bare ``NaN``) or could
not place: the answer says so (``ok`` False) and the caller scans the document itself.
"""

from __future__ import annotations

import itertools
import os
import re
from typing import Any, Iterator

import msgspec
import numpy as np

from .errors import TraceReadError
from .events import _RAW_LIST
from .raw_positions import locate
from .scan import Source, Unstreamable, _events

_COMMA_CUT = re.compile(rb"\}[ \t\r\n]*,")  # the end of an element followed by the next one
FIRST_WINDOW = 1 << 20  # bytes read first when looking for a cut; doubled until one is found
MAX_CANDIDATES = 64  # candidate cuts tried at a range's start before the range is left to the scanner
LOOK_AHEAD = 8  # a candidate is taken when the text up to one of the next this many decodes
READ_BYTES = 8 << 20  # the last range's blocks


def _pread(fd: int, size: int, offset: int) -> bytes:
    """``size`` bytes at ``offset`` (fewer at the end of the file)."""
    parts, got = [], 0
    while got < size:
        part = os.pread(fd, min(size - got, 1 << 30), offset + got)
        if not part:
            break
        parts.append(part)
        got += len(part)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _pread_into(fd: int, view: memoryview, offset: int) -> int:
    """Bytes read into ``view`` from ``offset`` (fewer at the end of the file)."""
    got = 0
    while got < len(view):
        n = os.preadv(fd, [view[got:]], offset + got)
        if not n:
            break
        got += n
    return got


# The buffer of the ranges a worker scans, kept from one range to the next (:func:`_bracketed`): a fresh
# one is zeroed and page-faulted first, a quarter of a 50 MB range's scan; dropped by :func:`drop_buffer`
_buffer = bytearray()


def _bracketed(fd: int, size: int, offset: int) -> memoryview | None:
    """``[`` + the ``size`` bytes at file offset ``offset`` + ``]``, read in place (no second copy of
    the range, as joining the brackets to it would make) into this process's range buffer (grown to
    the largest range; the view must be released before the next call); None when the file ends before them."""
    global _buffer
    if len(_buffer) < size + 2:
        _buffer = bytearray()  # (the old pages go before the new ones are made)
        _buffer = bytearray(size + 2)
    view = memoryview(_buffer)[: size + 2]
    view[0], view[-1] = ord("["), ord("]")
    if _pread_into(fd, view[1:-1], offset) != size:
        view.release()
        return None
    return view


def drop_buffer() -> None:
    """Free the range buffer of :func:`_bracketed` (the first pass is over in this process)."""
    global _buffer
    if _buffer:
        _buffer = bytearray()


def _first_cut(fd: int, at: int, limit: int) -> tuple[int, int] | None:
    """``(end of the element, start after the comma)``: the first ``}`` + blanks + ``,`` at or past
    file offset ``at`` whose text up to one of the next :data:`LOOK_AHEAD` candidates decodes as whole
    elements (a candidate inside a string rarely passes; one that does makes its range fail to decode),
    read in doubling windows up to ``limit`` bytes; None when there is none."""
    window = FIRST_WINDOW
    while True:
        data = _pread(fd, min(window, limit), at)
        found = list(itertools.islice(_COMMA_CUT.finditer(data), MAX_CANDIDATES + 1))
        for i, m in enumerate(found):  # (a "}" and blanks cut by the window's end match in the next window)
            if any(_elements(data, m.end(), later.start() + 1) for later in found[i + 1 : i + 1 + LOOK_AHEAD]):
                return at + m.start() + 1, at + m.end()
        if len(found) > MAX_CANDIDATES or len(data) < min(window, limit) or window >= limit:
            return None
        window *= 2


def _elements(data: bytes, start: int, end: int) -> bool:
    """Whether ``data[start:end]`` is whole JSON values separated by commas."""
    try:
        _RAW_LIST.decode(b"".join((b"[", memoryview(data)[start:end], b"]")))
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        return False
    return True


def scan_range(path: str, skip: int, start: int, stop: int | None, first: bool, chunk_bytes: int) -> dict[str, Any]:
    """The events of the range ``[start, stop)`` (document offsets; ``stop`` None: the last range,
    read to the array's ``]``): ``{"ok", "offsets", "lengths", "next"}`` (``next``: where the next
    range's events start; the last range gives ``end``, the offset after the ``]``, instead)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        begin = start
        if not first:
            cut = _first_cut(fd, start + skip, chunk_bytes * 4)
            if cut is None:
                return {"ok": False, "why": "no cut"}
            begin = cut[1] - skip
        if stop is None:
            try:
                return _last_range(fd, skip, begin, chunk_bytes)
            except Unstreamable as exc:  # (a wrong start cut, or an array the scanner cannot split)
                return {"ok": False, "why": str(exc)}
        cut = _first_cut(fd, stop + skip, chunk_bytes * 4)
        if cut is None:
            return {"ok": False, "why": "no cut at the end"}
        end, following = cut[0] - skip, cut[1] - skip
        if end <= begin:  # no element starts in this range (one event larger than it)
            return {
                "ok": True,
                "offsets": np.zeros(0, dtype=np.int64),
                "lengths": np.zeros(0, dtype=np.int32),
                "next": max(begin, following),
            }
        text = _bracketed(fd, end - begin, begin + skip)
        if text is None:
            return {"ok": False, "why": "the file shrank"}
        try:  # (bare NaN literals fail here too: the scanner quotes them)
            raws = _RAW_LIST.decode(text)
            where = locate(text, 1, raws, quoted=False)
        except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
            return {"ok": False, "why": "range does not decode"}
        finally:
            raws = []  # (the raws are views of the buffer, which is reused)
            try:
                text.release()
            except BufferError:  # (still exported: the buffer is left to its holders, a new one made)
                drop_buffer()
        if where is None:
            return {"ok": False, "why": "not placed"}
        offsets = where[0] + (begin - 1)  # (positions in the text, after its "[")
        return {"ok": True, "offsets": offsets, "lengths": where[1].astype(np.int32), "next": following}
    finally:
        os.close(fd)


def _blocks(fd: int, offset: int) -> Iterator[bytes]:
    while True:
        block = os.pread(fd, READ_BYTES, offset)
        if not block:
            return
        offset += len(block)
        yield block


def _last_range(fd: int, skip: int, begin: int, chunk_bytes: int) -> dict[str, Any]:
    """The last range: chunks cut by the scanner (:func:`.scan._events`) up to the array's ``]``."""
    source = Source(_blocks(fd, begin + skip), max_carry=max(8 * chunk_bytes, 256 << 20))
    facts: dict[str, Any] = {"nonfinite": 0, "cut_off": None}
    offsets, lengths = [], []
    for _raws, where in _events(source, chunk_bytes, facts, False, True):
        if where is None or facts["nonfinite"] or facts["cut_off"] is not None:
            return {"ok": False, "why": "the last range needs the serial scan"}
        offsets.append(where[0] + begin)
        lengths.append(where[1].astype(np.int32))  # (an event's length is a src_length: int32)
    joined = [np.concatenate(a) if a else np.zeros(0, dtype=t) for a, t in ((offsets, np.int64), (lengths, np.int32))]
    return {"ok": True, "offsets": joined[0], "lengths": joined[1], "end": begin + source.offset}


def span_batches(path: str, skip: int, offsets: np.ndarray, lengths: np.ndarray, sizes: list[int]) -> list[memoryview]:
    """The batches of one unit (``sizes`` events each, placed by ``offsets`` and ``lengths``), each ``[`` +
    its events as they stand in the file (commas and any blanks between them) + ``]``, read from the file
    straight into a buffer of its own (:func:`.decode_workers.decode_batch` decodes them, ``spaced``): the
    unit's bytes are not read whole first and then copied into the batches (on the 0.3 GB trace 0.25 ->
    0.07 s of the workers' CPU for the reads, one round over the file)."""
    out, end = [], 0
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            for size in sizes:
                if not size:
                    out.append(memoryview(b"[]"))
                    continue
                first, last = end, end + size - 1
                end += size
                a, b = int(offsets[first]), int(offsets[last] + lengths[last])
                batch = np.empty(b - a + 2, dtype=np.uint8)  # (uncleared: every byte between is read)
                batch[0], batch[-1] = ord("["), ord("]")
                if _pread_into(fd, batch.data[1:-1], a + skip) != b - a:
                    raise _Shrank
                out.append(batch.data)
        finally:
            os.close(fd)
    except OSError as exc:
        raise TraceReadError(f"cannot read file: {exc}") from None
    except _Shrank:
        raise TraceReadError("the file shrank while it was read") from None
    return out


class _Shrank(Exception):
    """The file ended before a batch's last event (:func:`span_batches`)."""


def to_document(state: dict, where: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> None:
    """Turn a decoded unit's raw-event offsets, counted by the worker in the unit's joined batches
    (``[`` + raws joined by ``,`` + ``]``, one after the other), into offsets and lengths in the
    document (−1: not placed)."""
    offsets, lengths = (np.concatenate([w[i] for w in where]) for i in (0, 1))
    starts, base = [], 0  # where each raw starts in the joined batches
    for _, _, raw in where:
        starts.append(base + 1 + np.concatenate(([0], np.cumsum(raw[:-1] + 1))))
        base += 2 + int(raw.sum()) + max(len(raw) - 1, 0)
    joined = np.concatenate(starts)

    def relocate(col: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k = np.minimum(np.searchsorted(joined, col), max(len(joined) - 1, 0))
        ok = (col >= 0) & (joined[k] == col) if len(joined) else np.zeros(len(col), dtype=bool)
        return np.where(ok, offsets[k], -1), np.where(ok, lengths[k], -1)

    chunks = state["chunks"]
    for i, col in enumerate(chunks["src_offset"]):
        chunks["src_offset"][i], length = relocate(np.asarray(col))
        chunks["src_length"][i] = length.astype(np.int32)
    state["begin_end"] = [
        row if row[8] is None else row[:8] + (np.stack(relocate(np.asarray(row[8][:1]))).reshape(2),)
        for row in state["begin_end"]
    ]
