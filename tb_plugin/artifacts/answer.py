"""The reader child's answer: a JSON header and flat numpy arrays, written raw and read back without a copy.

An ``.npz`` (a zip: a CRC-32 over every byte on both sides, the parent's copy out of the archive) cost
~0.02 s per 200 000 history entries; this layout costs one write and, in the parent, one
``np.frombuffer`` per array. Layout: :data:`MAGIC`; the header's length and the index's length (two
little-endian u64); the header (JSON); the index (JSON: ``[name, dtype, length]`` per array); then each
array's bytes in the index's order, each starting at a multiple of 8 bytes (from the answer's start).

The parent reads an answer as untrusted bytes (the child ran on a hostile file): a wrong magic,
length, dtype or name is a :class:`ValueError`, and no array reaches beyond the answer.
"""

from __future__ import annotations

import struct
from typing import IO

import numpy as np
import orjson

MAGIC = b"KSANS\x01\r\n"  # 8 bytes
_LENGTHS = struct.Struct("<QQ")
_ALIGN = 8
# the dtypes an answer may hold (this machine's byte order: the child runs beside the parent)
DTYPES = frozenset(np.dtype(t).str for t in ("u1", "i1", "b1", "i2", "u2", "i4", "u4", "i8", "u8", "f4", "f8"))


def _pad(n: int) -> int:
    """Bytes after ``n`` up to the next multiple of :data:`_ALIGN`."""
    return -n % _ALIGN


def write_answer(out: IO[bytes], header_json: bytes, arrays: dict[str, np.ndarray]) -> None:
    """Write the answer (``header_json``: the header as JSON bytes; ``arrays``: 1-d arrays) to ``out``,
    each array's memory as it is (no copy of a C-contiguous array)."""
    flat = {name: np.ascontiguousarray(a).reshape(-1) for name, a in arrays.items()}
    index = orjson.dumps([[name, a.dtype.str, len(a)] for name, a in flat.items()])
    head = MAGIC + _LENGTHS.pack(len(header_json), len(index)) + header_json + index
    out.write(head + bytes(_pad(len(head))))
    for a in flat.values():
        if a.nbytes:
            out.write(a.data.cast("B"))
        out.write(bytes(_pad(a.nbytes)))


def read_answer(payload: bytes | bytearray) -> tuple[dict, dict[str, np.ndarray]]:
    """(header, arrays) of an answer; the arrays are views of ``payload`` (writable when it is a
    ``bytearray``). :class:`ValueError` (or :class:`orjson.JSONDecodeError`, a subclass) when it does
    not read as one."""
    start = len(MAGIC) + _LENGTHS.size
    if len(payload) < start or bytes(payload[: len(MAGIC)]) != MAGIC:
        raise ValueError("not a snapshot reader's answer")
    header_len, index_len = _LENGTHS.unpack_from(payload, len(MAGIC))
    at = start + header_len + index_len
    if at > len(payload):
        raise ValueError("a truncated answer")
    with memoryview(payload) as view:
        header = orjson.loads(view[start : start + header_len])
        index = orjson.loads(view[start + header_len : at])
    if not isinstance(header, dict) or not isinstance(index, list):
        raise ValueError("an answer's header is not an object")
    at += _pad(at)
    arrays: dict[str, np.ndarray] = {}
    for item in index:
        if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], str) and item[1] in DTYPES):
            raise ValueError("an answer's array is not described")
        name, dtype, count = item[0], np.dtype(item[1]), item[2]
        if not isinstance(count, int) or count < 0 or name in arrays:
            raise ValueError("an answer's array is not described")
        nbytes = count * dtype.itemsize
        if at + nbytes > len(payload):
            raise ValueError("a truncated answer")
        arrays[name] = np.frombuffer(payload, dtype=dtype, count=count, offset=at)
        at += nbytes + _pad(nbytes)
    return header, arrays
