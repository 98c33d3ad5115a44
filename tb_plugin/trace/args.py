"""All the args of one event, for the timeline's details panel.

The decoder keeps only the columns the analyses need. When the trace was parsed with a side file
(``Trace.meta["events_file"]``: the raw JSON of every duration event, written beside the parse cache),
the event's complete ``args`` object is read back from it; otherwise the known columns are returned.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec
import numpy as np

from ..storage.private_files import open_regular
from .model import Trace

_STRING_COLUMNS = {"grid": "grid", "block": "block", "input_dims": "Input Dims", "call_stack": "Call stack"}
_NUMBER_COLUMNS = {"correlation": "correlation", "external_id": "External id", "device": "device",
                   "stream": "stream", "blocks_per_sm": "blocks per SM", "occupancy_pct": "est. achieved occupancy %",
                   "registers": "registers per thread", "shared_memory": "shared memory", "flops": "flops"}


def event_args(trace: Trace, row: int) -> dict[str, Any]:
    full = _from_events_file(trace, row)
    if full is not None:
        return full
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


def _from_events_file(trace: Trace, row: int) -> dict[str, Any] | None:
    path = trace.meta.get("events_file")
    ev = trace.events
    if not path or "src_offset" not in ev.columns or ev.src_offset[row] < 0:
        return None
    try:
        with open_regular(path) as f:  # never blocks on a FIFO put in its place
            f.seek(int(ev.src_offset[row]))
            raw = f.read(int(ev.src_length[row]))
        doc = msgspec.json.decode(raw)
    except (OSError, msgspec.DecodeError):
        return None
    args = doc.get("args") if isinstance(doc, dict) else None
    return args if isinstance(args, dict) else {}
