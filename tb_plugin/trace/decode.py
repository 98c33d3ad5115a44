"""Decode Chrome-trace JSON bytes into a columnar :class:`~tb_plugin.trace.model.Trace`.

Decoding is two-pass and never builds a dict per event:

1. msgspec splits the document into the top-level facts and a list of ``msgspec.Raw`` slices, one
   per event (zero-copy views into the input buffer);
2. the slices are decoded in batches into small typed structs that keep only the fields we use,
   and each batch is turned into numpy columns at once, so peak memory stays near the input size
   (the command line's parse decodes the second half's batches in a forked child: :mod:`.decode_halves`).

Both forms are accepted: the object form ``{"traceEvents": [...], ...}`` and the array form
``[{...}, ...]``, whose closing ``]`` may be missing (the Chrome trace format allows that). Bare
``NaN``/``Infinity`` literals, which some writers emit although JSON has none, are quoted and read
as those numbers (see :mod:`.nonfinite`), with a warning.

This module splits the document and reports why a file is not a trace; :mod:`.events` holds the
typed event structs, :mod:`.columns` turns batches into columns (and pairs ``B``/``E`` events),
:mod:`.finish` builds the :class:`~.model.Trace`.
"""

from __future__ import annotations

import mmap
import re
from typing import Any, Callable

import msgspec

from .columns import ColumnBuilder, EventsSink
from .decode_halves import decode_batches
from .early_split import EarlySplit
from .errors import TraceReadError
from .events import _OBJECT_DECODER, _RAW_LIST
from .heap import gc_paused
from .model import Trace
from .nonfinite import quote_nonfinite, token_at


def decode_trace(
    data: bytes | bytearray | memoryview | mmap.mmap,
    progress: Callable[[float], None] | None = None,
    events_sink: EventsSink | None = None,
    halves: bool = False,
    split: EarlySplit | None = None,
) -> Trace:
    """Decode a whole trace document. Raises :class:`TraceReadError` when it is not a trace.

    With ``events_sink`` (a binary file), the raw JSON of every event is written there and each
    duration event records where (``src_offset``/``src_length``), so its full args can be read back.
    With ``halves``, the second half of the events may be decoded by a fork of this process
    (:mod:`.decode_halves`: the same trace, sooner on two cores). ``split``: the document's object form
    already split into joined batches by the early reader's child (:mod:`.early_split`), taken instead of
    splitting ``data`` here when ``data`` starts as that child requires.
    """
    buf = memoryview(data)
    marked = buf[:3] == b"\xef\xbb\xbf"
    if marked:  # a UTF-8 byte order mark (Windows editors and tools write one)
        buf = buf[3:]
    first = _first_non_space(buf)
    if first is None:
        raise TraceReadError("file holds only whitespace: not a JSON trace")
    warnings: list[str] = []
    if first not in (ord("{"), ord("[")):
        raise TraceReadError(f"not a JSON trace: the document starts with {chr(first)!r}, expected '{{' or '['")
    if split is not None and not marked and first == ord("{"):  # (as write_split requires)
        builder = ColumnBuilder(events_sink)
        decode_batches(builder, split.batches, progress, halves, events=split.events)
        with gc_paused():  # (heap.gc_paused)
            return builder.finish(split.top, "object")
    try:
        raws, top, form = _split(buf, first, warnings)
    except _NonFiniteLiteral as exc:
        # bare NaN/Infinity (not JSON, but some writers emit them): quote them and decode again; a
        # valid document never comes here, so it pays nothing for this
        quoted = quote_nonfinite(buf)
        if quoted is None:
            raise exc.error from None
        data, count = quoted
        buf = memoryview(data)
        try:
            raws, top, form = _split(buf, first, warnings)
        except _NonFiniteLiteral as again:  # cannot happen once quoted; never let it escape as a crash
            raise again.error from None
        warnings.append(
            f"{count} bare NaN/Infinity literals (not valid JSON) were read as the non-finite numbers they stand for"
        )
    builder = ColumnBuilder(events_sink)
    decode_batches(builder, raws, progress, halves)
    del raws
    with gc_paused():  # (heap.gc_paused)
        trace = builder.finish(top, form)
    trace.warnings[:0] = warnings
    return trace


def _split(buf: memoryview, first: int, warnings: list[str]) -> tuple[list[msgspec.Raw], dict[str, Any], str]:
    if first == ord("{"):
        raws, top = _split_object_form(buf)
        return raws, top, "object"
    raws, recovered = _split_array_form(buf)
    if recovered:
        warnings.append(recovered)
    return raws, {}, "array"


def _first_non_space(buf: memoryview) -> int | None:
    for i in range(min(len(buf), 1 << 16)):
        b = buf[i]
        if b not in (0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF):  # whitespace and a UTF-8 BOM
            return b
    return None


def _decode_error(exc: Exception) -> TraceReadError:
    # msgspec 0.23 reports bad UTF-8 as a DecodeError ("Invalid UTF-8 encoded string"), older ones raised a
    # UnicodeDecodeError (_hostile_error): the same message for both
    if "utf-8" in str(exc).lower():
        return TraceReadError(f"invalid UTF-8 in the JSON text: {exc}")
    return TraceReadError(f"invalid JSON: {exc}")


class _NonFiniteLiteral(Exception):
    """A strict decode stopped at a bare NaN/Infinity literal; ``error`` is what to raise if quoting
    them does not help."""

    def __init__(self, error: TraceReadError) -> None:
        super().__init__(str(error))
        self.error = error


_ERROR_BYTE = re.compile(r"\(byte (\d+)\)")


def _syntax_error(exc: msgspec.DecodeError, buf: memoryview) -> Exception:
    """The error to raise for a malformed document: :class:`_NonFiniteLiteral` when the parser stopped
    at a bare NaN/Infinity literal, else a :class:`TraceReadError`."""
    error = _decode_error(exc)
    at = _ERROR_BYTE.search(str(exc))
    if at and token_at(buf, int(at.group(1))):
        return _NonFiniteLiteral(error)
    return error


# Beyond msgspec's DecodeError, hostile JSON can raise these while decoding: nesting deeper than the
# recursion limit, and invalid UTF-8 inside a string.
_HOSTILE = (RecursionError, UnicodeDecodeError)


def _hostile_error(exc: Exception) -> TraceReadError:
    if isinstance(exc, RecursionError):
        return TraceReadError("invalid JSON: arrays or objects nested too deeply to decode")
    return TraceReadError(f"invalid UTF-8 in the JSON text: {exc}")


def _split_object_form(buf: memoryview) -> tuple[list[msgspec.Raw], dict[str, Any]]:
    try:
        head = _OBJECT_DECODER.decode(buf)
    except msgspec.ValidationError as exc:
        raise TraceReadError(f"'traceEvents' is not a list of events: {exc}") from None
    except msgspec.DecodeError as exc:
        raise _syntax_error(exc, buf) from None
    except _HOSTILE as exc:
        raise _hostile_error(exc) from None
    if head.traceEvents is msgspec.UNSET:
        raise TraceReadError("JSON object has no 'traceEvents' key: not a Chrome/Kineto trace")
    top = {f: getattr(head, f) for f in head.__struct_fields__ if f != "traceEvents"}
    return head.traceEvents, top


def _split_array_form(buf: memoryview) -> tuple[list[msgspec.Raw], str | None]:
    try:
        return _RAW_LIST.decode(buf), None
    except msgspec.ValidationError as exc:
        raise TraceReadError(f"unexpected trace layout: {exc}") from None
    except msgspec.DecodeError as exc:
        first_error = exc
    except _HOSTILE as exc:
        raise _hostile_error(exc) from None
    stop = _syntax_error(first_error, buf)
    if isinstance(stop, _NonFiniteLiteral):
        raise stop from None  # not a cut-off file (quoting the literals may still leave one)
    # The array form may lack its closing bracket, or end mid-event when a job was killed:
    # keep the complete events before the cut.
    data = bytes(buf)
    end = len(data)
    for _ in range(8):
        candidate = data[:end].rstrip().rstrip(b",").rstrip()
        try:
            raws = _RAW_LIST.decode(candidate + b"]")
        except _HOSTILE as exc:
            raise _hostile_error(exc) from None
        except msgspec.DecodeError:
            end = data.rfind(b"}", 0, max(len(candidate) - 1, 0))
            if end < 0:
                break
            end += 1
            continue
        return raws, (
            f"the trace array was cut off (file ends at byte {len(data)} without its closing ']'); "
            f"recovered {len(raws)} complete events"
        )
    raise _decode_error(first_error)
