"""Where each event of a streamed chunk stands in the document: byte offset and length of its raw JSON.

With these, the parse cache can point the timeline's details panel at the trace file itself instead of
copying every event into a side file (a 4.5 GB trace wrote 4.5 GB more, and a 2-core machine spends
about 2 s of CPU per GB of writeback). :func:`locate` works on the scanner's buffer after a cut:

1. the fast rule: Kineto writes one separator between all events (``},\\n  {``); the events then
   start at ``p0 + cumsum(length + separator)``. The rule is checked for every event (each starts
   with ``{``, ends with ``}``, and the bytes between two events are exactly that separator), so a
   document that varies its separators never gets a wrong offset;
2. else the exact scan (:func:`element_ends`: quotes, escapes, depth) finds the commas that end
   the elements, and each element is the text between two of them, blanks trimmed. This also holds for
   a chunk whose bare ``NaN``/``Infinity`` literals were quoted before decoding: the offsets and lengths
   are the file's (unquoted) bytes;
3. else None: the chunk's events get no offsets (their details come from the decoded columns).
"""

from __future__ import annotations

import re

import msgspec
import numpy as np

from .nonfinite import ByteBuffer, _escaped

_SEPARATOR = re.compile(rb"[ \t\r\n]*,[ \t\r\n]*")
_BLANK = re.compile(rb"[ \t\r\n]*")

_BLANK_BYTES = np.array([0x20, 0x09, 0x0D, 0x0A], dtype=np.uint8)
OPEN, CLOSE = 0x7B, 0x7D


Where = tuple[np.ndarray, np.ndarray, np.ndarray]  # offsets, lengths in the document, lengths of the raws


def _blank_end(buf: ByteBuffer, start: int) -> int:
    """Where the JSON whitespace from ``start`` on ends (``start`` itself when there is none)."""
    blank = _BLANK.match(buf, start)  # (a run of nothing matches too: never None)
    return blank.end() if blank is not None else start


def locate(buf: ByteBuffer, start: int, raws: list[msgspec.Raw], quoted: bool) -> Where | None:
    """``(starts, lengths, raw lengths)`` (int64; starts are positions in ``buf``) of the ``raws``
    decoded from the chunk that begins at ``buf[start]`` (after the previous separator), or None when
    they cannot be placed. ``quoted``: the raws were decoded from a copy whose non-finite literals were
    quoted, so their own lengths (the third array) are not the document's."""
    n = len(raws)
    raw_lengths = np.fromiter(map(len, raws), dtype=np.int64, count=n)
    if n == 0:
        return raw_lengths, raw_lengths, raw_lengths
    arr = np.frombuffer(buf, dtype=np.uint8)
    try:
        if not quoted:
            starts = _uniform(buf, arr, _blank_end(buf, start), raw_lengths)
            if starts is not None:
                return starts, raw_lengths, raw_lengths
        got = _exact(arr, start, n)
        return (got[0], got[1], raw_lengths) if got is not None else None
    finally:
        del arr  # the scanner's bytearray must be resizable again


def _uniform(buf: ByteBuffer, arr: np.ndarray, p0: int, lengths: np.ndarray) -> np.ndarray | None:
    """Starts under one separator for the whole chunk (that of the first two events), each checked."""
    n = len(lengths)
    if n == 1:
        sep = b""
        starts = np.array([p0], dtype=np.int64)
    else:
        m = _SEPARATOR.match(buf, p0 + int(lengths[0]))
        if m is None:
            return None
        sep = m.group(0)
        starts = p0 + np.concatenate(([0], np.cumsum(lengths[:-1] + len(sep))))
    ends = starts + lengths
    if ends[-1] > len(arr) or not (np.all(arr[starts] == OPEN) and np.all(arr[ends - 1] == CLOSE)):
        return None
    for j, byte in enumerate(sep):
        if not np.all(arr[ends[:-1] + j] == byte):
            return None
    return starts


def _exact(arr: np.ndarray, start: int, n: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Starts and lengths from the exact element scan, blanks trimmed on both sides of each element."""
    ends = element_ends(arr, start, final=True)
    if len(ends) < n:
        return None
    ends = ends[:n]
    lo = np.concatenate(([start], ends[:-1] + 1))
    hi = ends - 1
    for _ in range(64):  # blank runs between events are short; a longer one is left unplaced
        step = np.isin(arr[lo], _BLANK_BYTES) & (lo < hi)
        if not step.any():
            break
        lo = lo + step
    for _ in range(64):
        step = np.isin(arr[hi], _BLANK_BYTES) & (hi > lo)
        if not step.any():
            break
        hi = hi - step
    if not (np.all(arr[lo] == OPEN) and np.all(arr[hi] == CLOSE)):
        return None
    return lo.astype(np.int64), (hi - lo + 1).astype(np.int64)


def element_ends(buf: ByteBuffer | np.ndarray, start: int, final: bool = False) -> np.ndarray:
    """Positions of the ``,``, ``]`` and ``}`` that end elements at the depth of ``start`` (which
    must lie outside any string), found in one vectorized pass: quotes not escaped by an odd run of
    backslashes delimit strings; brackets and commas outside strings count; the running depth is
    their cumulative sum. Stops being reliable where a string is still open at the buffer's end
    (those positions are dropped)."""
    arr = np.frombuffer(buf, dtype=np.uint8)[start:]
    quotes = np.flatnonzero(arr == 0x22)
    if len(quotes):
        quotes = quotes[~_escaped(arr, quotes, 0)]
    marks = np.flatnonzero((arr == 0x2C) | (arr == 0x5B) | (arr == 0x5D) | (arr == 0x7B) | (arr == 0x7D))
    outside = np.searchsorted(quotes, marks, side="right") % 2 == 0
    marks = marks[outside]
    if len(quotes) % 2 and not final:  # an open string at the end: nothing after its quote is known
        marks = marks[marks < quotes[-1]]
    kinds = arr[marks]
    step = np.where((kinds == 0x5B) | (kinds == 0x7B), 1, np.where(kinds == 0x2C, 0, -1))
    depth_before = np.cumsum(step) - step
    ends = ((kinds == 0x2C) & (depth_before == 0)) | ((step == -1) & (depth_before == 0))
    return marks[ends] + start
