"""An event's raw JSON read back for the details panel, checked before it is served.

A streamed local trace keeps its events in place: the details read each event's bytes from the trace
file itself (``Trace.meta["events_file"]``, see :mod:`..trace.raw_positions`). Between the parse and
the read, the file may have been replaced (by another of the same size with its mtime restored) or its
run directory swapped for a symlink to a folder outside the logdir. So, at every read, the opened file
must still be the parsed one: the same inode, size and mtime (a swapped directory leads to another
inode), the same fingerprint of its first and last :data:`END_BYTES` (a rewrite in place), and the
range read must be the event the columns describe (its ``name``). Otherwise nothing is read from it
and the details fall back to the columns. A side file in the (private) parse cache is read as is.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

import msgspec

from ..storage.private_files import open_regular
from ..trace.args import event_span
from ..trace.model import Trace

END_BYTES = 64 << 10  # bytes hashed at each end of an in-place trace file


def ends_fingerprint(fd: int, size: int) -> str:
    """SHA-256 of the first and last :data:`END_BYTES` of the open file ``fd`` of ``size`` bytes (hex)."""
    digest = hashlib.sha256(os.pread(fd, min(END_BYTES, size), 0))
    if size > END_BYTES:
        digest.update(os.pread(fd, END_BYTES, max(END_BYTES, size - END_BYTES)))
    return digest.hexdigest()


def _same_file(fd: int, meta: dict[str, Any]) -> bool:
    st = os.fstat(fd)
    if (st.st_ino, st.st_size, st.st_mtime_ns) != (
        meta.get("events_inode"),
        meta.get("events_bytes"),
        meta.get("events_mtime_ns"),
    ):
        return False
    expected = meta.get("events_fingerprint")
    return expected is None or ends_fingerprint(fd, st.st_size) == expected


class _Named(msgspec.Struct):
    name: object = None


def read_raw_event(trace: Trace, row: int) -> bytes | None:
    """The raw JSON of event ``row``, or None (no raw events, unreadable, or a trace file that is no
    longer the one parsed: see the module docstring)."""
    span = event_span(trace, row)
    if span is None:
        return None
    path, offset, length = span
    in_place = trace.meta.get("events_inode") is not None
    try:
        with open_regular(path) as f:  # never blocks on a FIFO put in its place
            if in_place and not _same_file(f.fileno(), trace.meta):
                return None
            raw = os.pread(f.fileno(), length, offset)
    except OSError:
        return None
    if in_place:
        try:
            name = msgspec.json.decode(raw, type=_Named).name
        except (msgspec.DecodeError, msgspec.ValidationError):
            name = None  # a NaN literal or a huge number: the name is checked by the bytes instead
            if trace.strings[int(trace.events.name[row])].encode() not in raw:
                return None
        if name is not None and name != trace.strings[int(trace.events.name[row])]:
            return None
    return raw
