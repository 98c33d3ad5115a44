"""A whole document split into joined batches by the early reader's child, while this process imports.

The early reader's child (:mod:`~tb_plugin.storage.early_read`) has inflated the trace into a memory file
by ~0.10 s into a cold report of the 35 MB V100 sample; the main process then imports numpy and the
analyses until ~0.16 s and splits the document (msgspec, ~27 ms), then joins each batch of
:data:`.batching.BATCH_EVENTS` raw events for its decode. :func:`write_split`, in the child (no numpy:
msgspec only), makes that same split and those same joins (:data:`.batching.OBJECT_DECODER`,
:func:`.batching.join_batch`'s bytes) and writes into a second memory file: the joined batches one after the
other, then each event's raw length (int64), then a pickled header ``(events, joined bytes, top-level
fields)``, then the header's length (8 bytes, little-endian). :func:`read_split`, in the main process,
gives each batch as a :class:`.placed_raws.PlacedRaws` over that file (no copy), whose events the
decode places from the lengths as its own joins would (``[`` + events joined by ``,`` + ``]``): the
same events, side file bytes and offsets as the main process's own split and joins.

Only a document that starts with ``{`` (after blanks, no byte order mark) and splits cleanly is written;
anything else (the array form, a syntax error, NaN literals) leaves the file empty, and the main process
splits the document itself, meeting the error there as before.
"""

from __future__ import annotations

import os
import pickle
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec

from .batching import BATCH_EVENTS, OBJECT_DECODER, batch_parts

if TYPE_CHECKING:
    import mmap

    from .placed_raws import PlacedRaws

_BLANKS = b" \t\r\n"
_HEADER_LENGTH_BYTES = 8
_IOV_MAX = 1024  # buffers one writev takes (Linux's IOV_MAX)


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _write_joined(fd: int, raws: list[msgspec.Raw]) -> int:
    """:func:`.batching.join_batch` of ``raws`` written to ``fd`` without joining them first (``writev`` of
    the raw events where they lie, :data:`_IOV_MAX` parts a call: one copy of the events, not two); its bytes."""
    parts = batch_parts(raws)
    total = 0
    for at in range(0, len(parts), _IOV_MAX):  # (a call per _IOV_MAX parts)
        chunk = parts[at : at + _IOV_MAX]
        size = sum(map(len, chunk))
        wrote = os.writev(fd, chunk)
        if wrote != size:  # (a short write: the rest at once)
            _write_all(fd, b"".join(chunk)[wrote:])
        total += size
    return total


def _object_form(doc: Any) -> bool:
    """Whether ``doc`` starts with ``{`` after JSON blanks within its first 64 KiB (no byte order mark)."""
    return bytes(doc[: 1 << 16]).lstrip(_BLANKS)[:1] == b"{"


def write_split(doc: Any, fd: int) -> bool:
    """The split of the document ``doc`` (a buffer) written into the empty file ``fd`` (see the module
    docstring); False, the file left empty, when the document is not written this way."""
    if not _object_form(doc):
        return False
    try:
        head = OBJECT_DECODER.decode(doc)
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError, ValueError):
        return False  # (the main process's split says why)
    raws = head.traceEvents
    if raws is msgspec.UNSET:
        return False
    top = {f: getattr(head, f) for f in head.__struct_fields__ if f != "traceEvents"}
    del head
    import array  # (the lengths without numpy, which this child never imports)

    lengths = array.array("q", map(len, raws))
    joined = 0
    for start in range(0, len(raws), BATCH_EVENTS):  # (a batch at a time)
        joined += _write_joined(fd, raws[start : start + BATCH_EVENTS])
    _write_all(fd, lengths.tobytes())
    header = pickle.dumps((len(raws), joined, top), protocol=pickle.HIGHEST_PROTOCOL)
    _write_all(fd, header)
    _write_all(fd, len(header).to_bytes(_HEADER_LENGTH_BYTES, "little"))
    return True


class EarlySplit(NamedTuple):
    """The child's split as the decode takes it: each batch's raw events, placed, and the top-level fields."""

    batches: list[PlacedRaws]
    events: int
    top: dict[str, Any]
    joined: int  # bytes of the joined batches: the file's first bytes (the events file's, as the decode writes it)


def read_split(data: mmap.mmap) -> EarlySplit | None:
    """The split that :func:`write_split` wrote into the memory file mapped as ``data``, or None (an
    empty file, or one that does not hold what it should)."""
    import numpy as np

    from .placed_raws import PlacedRaws

    size = len(data)
    if size < _HEADER_LENGTH_BYTES:
        return None
    header_bytes = int.from_bytes(data[size - _HEADER_LENGTH_BYTES :], "little")
    try:
        events, joined, top = pickle.loads(data[size - _HEADER_LENGTH_BYTES - header_bytes : -_HEADER_LENGTH_BYTES])
    except Exception:  # (a cut file: never a crash, the document is split here instead)
        return None
    if not (isinstance(events, int) and isinstance(joined, int) and isinstance(top, dict)):
        return None
    if events < 0 or joined < 0 or joined + 8 * events + header_bytes + _HEADER_LENGTH_BYTES != size:
        return None
    lengths = np.frombuffer(data, dtype=np.int64, count=events, offset=joined)
    counts = np.diff(np.append(np.arange(0, events, BATCH_EVENTS), events))
    batch_bytes = np.add.reduceat(lengths, np.arange(0, events, BATCH_EVENTS)) + counts + 1 if events else counts
    if int(batch_bytes.sum()) != joined or (lengths < 0).any():
        return None
    view = memoryview(data)
    ends = np.cumsum(batch_bytes)
    batches = []
    for k, end in enumerate(ends.tolist()):  # (a batch at a time)
        part = lengths[k * BATCH_EVENTS : (k + 1) * BATCH_EVENTS]
        starts = 1 + np.concatenate(([0], np.cumsum(part[:-1] + 1)))  # "[" then each event and its ","
        batches.append(PlacedRaws(view[end - int(batch_bytes[k]) : end], starts, part))
    return EarlySplit(batches, events, top, joined)
