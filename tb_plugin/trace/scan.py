"""Split a trace document, read as a stream of byte blocks, into chunks of whole events.

:func:`scan_document` walks the top level of the document (the object form ``{"traceEvents": [...],
...}`` or the array form ``[...]``) and yields the ``traceEvents`` array as chunks of roughly
``chunk_bytes`` bytes, each cut between two events, without ever holding more than a chunk or two of
the document. The keys outside ``traceEvents`` (``deviceProperties``, ``distributedInfo``…) are
collected wherever they stand, before or after the events, and returned at the end as one small JSON
object.

A cut is placed after a ``}`` followed by ``,`` or ``]`` (found with a regular-expression search, at C
speed). Such a pattern can also stand inside a string or inside nested args; a cut there leaves the
chunk unbalanced, so the strict decode of ``[`` + chunk + ``]`` (which the caller needs anyway) rejects
it and the next candidate is tried. After :data:`MAX_TRIES` rejected candidates, an exact vectorized
scan (:func:`element_ends`: unescaped quotes, brackets outside strings, their running depth) finds
the next cut. Bare ``NaN``/``Infinity`` literals in a chunk are quoted as :mod:`.nonfinite` does for
a whole document.

Anything the scanner does not expect (a value it cannot delimit, a duplicate ``traceEvents``, text
after the document, an array element that is not an object at the end) raises :class:`Unstreamable`:
the caller then parses the file as a whole document, whose errors and recoveries are the reference.
"""

from __future__ import annotations

import re
from typing import Callable, Iterable, Iterator, Optional, Union

import msgspec
import numpy as np

from .events import _RAW_LIST
from .nonfinite import ByteBuffer, _escaped, quote_nonfinite, token_at
from .raw_positions import element_ends, locate

MAX_TRIES = 8  # candidate cuts tried (each costs a decode of the chunk) before the exact scan
# The first chunk's size (bytes); each next one doubles, up to the caller's chunk size: the decoder's
# workers get their first batches after a MB is scanned, not 16 (35 MB V100 sample: ~70 -> ~20 ms)
FIRST_CHUNK_BYTES = 1 << 20
_WS = b" \t\r\n"
_CUT = re.compile(rb"\}[ \t\r\n]*([,\]])")
_CLOSE = re.compile(rb"\}[ \t\r\n]*\]")
_ERROR_BYTE = re.compile(r"\(byte (\d+)\)")


class Unstreamable(Exception):
    """The document cannot be split here; parse it as a whole (its message says why)."""


class Source:
    """A growing window on the document: ``buf[pos:]`` is what has been read and not consumed."""

    def __init__(self, blocks: Iterable[bytes], max_carry: int) -> None:
        self.blocks = iter(blocks)
        self.buf = bytearray()
        self.pos = 0
        self.eof = False
        self.consumed = 0  # bytes of the document dropped from the front of buf
        self.max_carry = max_carry

    def more(self) -> bool:
        """Read one more block; False at the end of the document."""
        if self.eof:
            return False
        for block in self.blocks:
            if self.pos:
                del self.buf[: self.pos]
                self.consumed += self.pos
                self.pos = 0
            if len(self.buf) + len(block) > self.max_carry:
                raise Unstreamable(f"no event boundary within {self.max_carry} bytes")
            self.buf += block
            return True
        self.eof = True
        return False

    def peek(self) -> int | None:
        """The next non-blank byte (consuming the blanks), None at the end."""
        while True:
            n = len(self.buf)
            while self.pos < n and self.buf[self.pos] in _WS:
                self.pos += 1
            if self.pos < n:
                return self.buf[self.pos]
            if not self.more():
                return None

    def expect(self, byte: bytes) -> None:
        if self.peek() != byte[0]:
            raise Unstreamable(f"expected {byte!r}")
        self.pos += 1

    @property
    def offset(self) -> int:
        """Document offset of ``pos``."""
        return self.consumed + self.pos


EventsHook = Callable[[Source, bool], Optional[Iterator]]
Positions = Union[bool, Callable[[], bool]]  # whether events are placed (a callable: asked at each chunk)


def scan_document(
    source: Source, chunk_bytes: int, facts: dict, positions: Positions = False, hook: EventsHook | None = None
) -> Iterator:
    """Yield the events as lists of ``msgspec.Raw`` (one list per chunk, in document order); with
    ``positions``, pairs ``(raws, where)``: ``where`` is ``(offsets, lengths, raw lengths)`` of each raw in
    the document (bytes; :func:`.raw_positions.locate`), or None where they are not known (or not
    wanted: ``positions`` may be a callable, asked at each chunk; a gzip file's offsets are of no use).

    Fills ``facts``: ``form`` ("object"/"array"), ``top`` (the JSON bytes of an object holding the
    top-level keys other than ``traceEvents``), ``nonfinite`` (bare literals quoted), ``cut_off``
    (array form without its closing ``]``: the document length), ``length`` (bytes).

    ``hook(source, array_form)``, when given, is called where the events array starts (its ``[``
    consumed): an iterator of what to yield instead of the array's chunks, having left ``source`` after
    its ``]`` (:class:`.decode_ranges.RangedEvents`), or None to scan the array here."""
    facts.update(nonfinite=0, cut_off=None, top=b"{}")
    first = source.peek()
    if first == ord("["):
        facts["form"] = "array"
        source.pos += 1
        yield from _hooked(hook, source, chunk_bytes, facts, True, positions)
    elif first == ord("{"):
        facts["form"] = "object"
        source.pos += 1
        yield from _object(source, chunk_bytes, facts, positions, hook)
    else:
        raise Unstreamable("the document does not start with '{' or '['")
    if source.peek() is not None:
        raise Unstreamable("text after the end of the document")
    facts["length"] = source.offset


def _hooked(
    hook: EventsHook | None, source: Source, chunk_bytes: int, facts: dict, array_form: bool, positions: Positions
) -> Iterator:
    got = hook(source, array_form) if hook is not None else None
    return got if got is not None else _events(source, chunk_bytes, facts, array_form, positions)


def _object(source: Source, chunk_bytes: int, facts: dict, positions: Positions, hook: EventsHook | None) -> Iterator:
    pieces: list[bytes] = []
    seen_events = False
    if source.peek() == ord("}"):
        source.pos += 1
        raise Unstreamable("no traceEvents")
    while True:
        key_raw = _string(source)
        try:
            key = msgspec.json.decode(key_raw)
        except (msgspec.DecodeError, UnicodeDecodeError) as exc:
            raise Unstreamable(str(exc)) from None
        if not isinstance(key, str):
            raise Unstreamable("a key that is not a string")
        source.expect(b":")
        if key == "traceEvents":
            if seen_events or source.peek() != ord("["):
                raise Unstreamable("traceEvents twice, or not an array")
            seen_events = True
            source.pos += 1
            yield from _hooked(hook, source, chunk_bytes, facts, False, positions)
        else:
            value = _value(source)
            quoted = quote_nonfinite(value)
            if quoted is not None:
                value, count = quoted
                facts["nonfinite"] += count
            pieces.append(key_raw + b":" + bytes(value))
        sep = source.peek()
        source.pos += 1
        if sep == ord("}"):
            break
        if sep != ord(","):
            raise Unstreamable("expected ',' or '}' between top-level keys")
    if not seen_events:
        raise Unstreamable("no traceEvents")
    facts["top"] = b"{" + b",".join(pieces) + b"}"


def _string(source: Source) -> bytes:
    """The bytes of the JSON string starting at the next non-blank byte, quotes included (consumed)."""
    if source.peek() != 0x22:
        raise Unstreamable("a top-level key that is not a string")
    for stop in _windows(source, 1 << 10, "the document ends inside a key", skip=1):  # keys are short
        arr = np.frombuffer(source.buf, dtype=np.uint8)[source.pos + 1 : stop]
        quotes = np.flatnonzero(arr == 0x22)
        quotes = quotes[~_escaped(arr, quotes, 0)] if len(quotes) else quotes
        del arr  # (the buffer must not stay exported: reading more resizes it)
        if len(quotes):
            end = source.pos + 2 + int(quotes[0])
            key = bytes(source.buf[source.pos : end])
            source.pos = end
            return key
    raise AssertionError("unreachable: _windows raises at the end of the document")


def _value(source: Source) -> bytes:
    """The bytes of the JSON value starting at the next non-blank byte (consumed), found by
    :func:`element_ends` on a window that grows until the value's end is in it."""
    if source.peek() is None:
        raise Unstreamable("the document ends inside its top level")
    for stop in _windows(source, 1 << 16, "the document ends inside a top-level value"):
        ends = element_ends(memoryview(source.buf)[:stop], source.pos, final=source.eof and stop == len(source.buf))
        if len(ends):
            end = int(ends[0])
            value = bytes(source.buf[source.pos : end]).rstrip(_WS)
            source.pos = end
            return value
    raise AssertionError("unreachable: _windows raises at the end of the document")


def _windows(source: Source, window: int, message: str, skip: int = 0) -> Iterator[int]:
    """Ends of a window on ``source.buf`` from ``source.pos + skip``, ``window`` bytes first, four
    times larger each time the caller asks again, then the whole buffer, more of the document read
    into it each time after that; :class:`Unstreamable` (``message``) once the document has no more.
    The whole buffer is never searched for what lies in its first bytes."""
    while True:
        stop = min(len(source.buf), source.pos + skip + window)
        yield stop
        if stop < len(source.buf):
            window *= 4
        elif not source.more():
            raise Unstreamable(message)


def _events(source: Source, chunk_bytes: int, facts: dict, array_form: bool, positions: Positions) -> Iterator:
    """The elements of the array whose ``[`` was just consumed, as chunks of raws (with ``positions``,
    ``(raws, where)``: see :func:`scan_document`); consumes its ``]``."""
    if source.peek() == ord("]"):
        source.pos += 1
        return
    size = min(chunk_bytes, FIRST_CHUNK_BYTES)  # doubling up to chunk_bytes: the first events go out early
    while True:
        while len(source.buf) - source.pos < size and source.more():
            pass
        quoted_before = facts["nonfinite"]
        cut = _cut(source, size, facts)
        size = min(chunk_bytes, 2 * size)
        if cut is None:  # the document ended inside the array
            if not array_form:
                raise Unstreamable("the document ends inside traceEvents")
            tail = _recover_tail(source, facts)
            yield (tail, None) if positions else tail
            return
        raws, end, closing = cut
        if positions:  # (buf and pos are final once _cut returns: offsets are consumed + position)
            wanted = positions is True or (callable(positions) and positions())
            where = locate(source.buf, source.pos, raws, quoted=facts["nonfinite"] != quoted_before) if wanted else None
            yield raws, (where[0] + source.consumed, where[1], where[2]) if where is not None else None
        else:
            yield raws
        source.pos = end
        if closing:
            return


_Cut = tuple[list[msgspec.Raw], int, bool]  # a chunk's raws, the position after it, whether it closed the array


def _cut(source: Source, chunk_bytes: int, facts: dict) -> _Cut | None:
    """``(raws, position after the separator, whether it closed the array)`` for the next chunk,
    or None when the array is not closed before the end of the document. The array's close is
    looked for first within ``chunk_bytes``, then a cut between events past ``chunk_bytes``."""
    buf, start = source.buf, source.pos
    # The first cut past chunk_bytes, tried before the array's close is looked for in the whole chunk
    # (a regular-expression pass over every byte, ~1 ns each): when it decodes, the array does not close
    # inside the chunk (anything after the array's "]" would trail the wrapped list), so the cut is the
    # one the search below would find after it failed to find a close
    m = _CUT.search(buf, start + chunk_bytes) if len(buf) > start + chunk_bytes else None
    if m is not None:
        raws = _decode(buf, start, m.start() + 1, facts)
        if raws is not None:
            return raws, m.end(), m.group(1) == b"]"
    tries = 0
    for m in _CLOSE.finditer(buf, start, min(len(buf), start + chunk_bytes)):
        raws = _decode(buf, start, m.start() + 1, facts)
        if raws is not None:
            return raws, m.end(), True
        tries += 1
        if tries >= MAX_TRIES:
            break
    rel_from = chunk_bytes  # where to look for cuts, relative to the chunk's start
    while tries < MAX_TRIES:
        buf, start = source.buf, source.pos
        for m in _CUT.finditer(buf, min(start + rel_from, len(buf))):
            raws = _decode(buf, start, m.start() + 1, facts)
            if raws is not None:
                return raws, m.end(), m.group(1) == b"]"
            rel_from = m.start() + 1 - start
            tries += 1
            if tries >= MAX_TRIES:
                break
        else:
            if source.eof:
                return None
            rel_from = max(rel_from, len(buf) - start - 64)  # a "}  ," may straddle the next block
            source.more()
    # (outside the loops: a live finditer holds the buffer, which more() must be able to resize)
    return _exact_cut(source, chunk_bytes, facts)


def _exact_cut(source: Source, chunk_bytes: int, facts: dict) -> _Cut | None:
    """The next cut from the exact scan (:func:`element_ends`), reading more until one is found."""
    while True:
        buf, start = source.buf, source.pos
        ends = element_ends(buf, start, final=source.eof)
        closing = np.flatnonzero(np.frombuffer(buf, dtype=np.uint8)[ends] != 0x2C)
        if len(closing):  # the array's "]" (or a stray "}"): nothing after it is an element
            ends = ends[: closing[0] + 1]
        if len(ends) and (source.eof or ends[-1] - start >= chunk_bytes or len(closing)):
            far = ends[ends >= start + chunk_bytes]
            end = int(far[0]) if len(far) else int(ends[-1])
            if buf[end] == 0x7D:
                raise Unstreamable("a '}' closes the events array")
            raws = _decode(buf, start, end, facts)
            if raws is None:
                raise Unstreamable("an array element the decoder rejects")
            return raws, end + 1, buf[end] == 0x5D
        if not source.more():
            return None


def _decode(buf: ByteBuffer, start: int, end: int, facts: dict) -> list[msgspec.Raw] | None:
    """The raws of ``buf[start:end]`` (elements separated by commas), or None if it is not a
    whole number of elements."""
    text = b"".join((b"[", memoryview(buf)[start:end], b"]"))  # one copy of the chunk
    try:
        return _RAW_LIST.decode(text)
    except msgspec.DecodeError as exc:
        at = _ERROR_BYTE.search(str(exc))
        if not (at and token_at(text, int(at.group(1)))):
            return None
    except (RecursionError, UnicodeDecodeError):
        return None
    quoted = quote_nonfinite(text)
    if quoted is None:
        return None
    try:
        raws = _RAW_LIST.decode(quoted[0])
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        return None
    facts["nonfinite"] += quoted[1]
    return raws


def _recover_tail(source: Source, facts: dict) -> list[msgspec.Raw]:
    """The array form cut off (no closing ``]``): keep the complete events of the tail, trimming it
    the way :func:`.decode._split_array_form` trims a whole document (the same number of tries)."""
    data = bytes(source.buf[source.pos :])
    source.pos = len(source.buf)
    closed = data.rstrip()
    if closed.endswith(b"]"):  # closed after all, its last elements being no objects ("5]")
        raws = _decode(closed[:-1], 0, len(closed) - 1, facts)
        if raws is not None:
            return raws
    facts["cut_off"] = source.offset
    end = len(data)
    for _ in range(8):
        candidate = data[:end].rstrip().rstrip(b",").rstrip()
        if not candidate:
            return []
        raws = _decode(candidate, 0, len(candidate), facts)
        if raws is not None:
            return raws
        end = data.rfind(b"}", 0, max(len(candidate) - 1, 0))
        if end < 0:
            return []
        end += 1
    raise Unstreamable("the cut-off tail cannot be recovered")
