"""All the args of one event, for the timeline's details panel.

The decoder keeps only the columns the analyses need. When the trace was parsed with a side file
(``Trace.meta["events_file"]``: the raw JSON of every duration event, written beside the parse cache, or
the trace file itself when a local uncompressed trace was streamed and its events left in place),
the registry reads the event's bytes back (:func:`event_span`) and :func:`args_of_raw` decodes its
complete ``args`` object; otherwise :func:`event_args` returns the known columns.
"""

from __future__ import annotations

import json
import math
from typing import Any

import msgspec
import numpy as np

from .jsonsafe import MAX_DECIMAL_DIGITS
from .model import Trace
from .nonfinite import quote_nonfinite

_STRING_COLUMNS = {"grid": "grid", "block": "block", "input_dims": "Input Dims", "call_stack": "Call stack"}
_NUMBER_COLUMNS = {
    "correlation": "correlation",
    "external_id": "External id",
    "device": "device",
    "stream": "stream",
    "blocks_per_sm": "blocks per SM",
    "occupancy_pct": "est. achieved occupancy %",
    "registers": "registers per thread",
    "shared_memory": "shared memory",
    "flops": "flops",
}


def event_args(trace: Trace, row: int) -> dict[str, Any]:
    """The known arg columns of event ``row`` (what the decoder kept)."""
    ev = trace.events
    out: dict[str, Any] = {}
    for col, label in _NUMBER_COLUMNS.items():
        value = ev.columns[col][row]
        if isinstance(value, (float, np.floating)):
            if not math.isnan(value):
                out[label] = float(value)
        elif value >= 0:
            out[label] = int(value)
    for col, label in _STRING_COLUMNS.items():
        sid = int(ev.columns[col][row])
        if sid:
            out[label] = trace.strings[sid]
    return out


def event_span(trace: Trace, row: int) -> tuple[str, int, int] | None:
    """``(events file, byte offset, byte length)`` of event ``row``'s raw JSON in the side file, or
    None when the trace has no side file or the event is not in it."""
    path = trace.meta.get("events_file")
    ev = trace.events
    if not path or "src_offset" not in ev.columns or ev.src_offset[row] < 0:
        return None
    return path, int(ev.src_offset[row]), int(ev.src_length[row])


def _number_text(text: str) -> int | str:
    """An integer literal as an int, or as its text past :data:`~.jsonsafe.MAX_DECIMAL_DIGITS` digits."""
    return int(text) if len(text) <= MAX_DECIMAL_DIGITS else text


def _decode_big_numbers(raw: bytes) -> Any:
    """``raw`` decoded by Python's json with integers past 4,000 digits kept as their text (msgspec
    refuses such a document whole); None when it does not decode either."""
    try:
        return json.loads(bytes(raw), parse_int=_number_text)
    except (ValueError, RecursionError):
        return None


def args_of_raw(raw: bytes) -> dict[str, Any] | None:
    """The ``args`` object of one event's raw JSON (``{}`` without one); None when it does not decode.
    Bare ``NaN``/``Infinity`` literals (an event read back from the trace file itself) are quoted first."""
    try:
        doc = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        quoted = quote_nonfinite(raw)
        try:
            doc = msgspec.json.decode(quoted[0]) if quoted is not None else _decode_big_numbers(raw)
        except msgspec.DecodeError:
            doc = _decode_big_numbers(raw)
        if doc is None:
            return None
    args = doc.get("args") if isinstance(doc, dict) else None
    return args if isinstance(args, dict) else {}
