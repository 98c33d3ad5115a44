"""The reader child's answer: a JSON header and flat arrays, written raw and read back without a copy.

An ``.npz`` (a zip: a CRC-32 over every byte on both sides, the parent's copy out of the archive) cost
~0.02 s per 200 000 history entries; this layout costs one write and, in the parent, one
``np.frombuffer`` per array. Layout: :data:`MAGIC`; the header's length and the index's length (two
little-endian u64); the header (JSON); the index (JSON: ``[name, dtype, length]`` per array); then each
array's bytes in the index's order, each starting at a multiple of 8 bytes (from the answer's start).

The child writes ``array.array`` buffers (or numpy arrays), an array given as a list of them written
one after the other (a history's column batches, never joined there): writing imports no numpy.
The parent reads an answer as untrusted bytes (the child ran on a hostile file): a wrong magic,
length, dtype or name is a :class:`ValueError`, and no array reaches beyond the answer.
"""

from __future__ import annotations

import json
import struct
import sys
from array import array
from typing import IO, TYPE_CHECKING, Any, Mapping, Sequence, Union

# (orjson is imported by the parent's read alone: the reader child writes its answer without it)
if TYPE_CHECKING:
    import numpy as np

MAGIC = b"KSANS\x01\r\n"  # 8 bytes
_LENGTHS = struct.Struct("<QQ")
_ALIGN = 8
_ORDER = "<" if sys.byteorder == "little" else ">"  # (numpy's ``dtype.str``: this machine's byte order)
# the dtypes an answer may hold (this machine's byte order: the child runs beside the parent)
DTYPES = frozenset(
    ("|" if t[1] == "1" else _ORDER) + t for t in ("u1", "i1", "b1", "i2", "u2", "i4", "u4", "i8", "u8", "f4", "f8")
)
Column = Union["np.ndarray", array, Sequence[Union["np.ndarray", array]]]  # an array, or its parts in order


def _pad(n: int) -> int:
    """Bytes after ``n`` up to the next multiple of :data:`_ALIGN`."""
    return -n % _ALIGN


def dtype_of(part: Any) -> str:
    """numpy's ``dtype.str`` of a numpy array or an ``array.array`` (by its typecode and item size)."""
    if isinstance(part, array):
        kind = "f" if part.typecode in "fd" else "u" if part.typecode in "BHILQ" else "i"
        return ("|" if part.itemsize == 1 else _ORDER) + kind + str(part.itemsize)
    return part.dtype.str


def write_answer(out: IO[bytes], header_json: bytes, arrays: Mapping[str, Column]) -> None:
    """Write the answer (``header_json``: the header as JSON bytes; ``arrays``: 1-d arrays, or each
    array's parts in order, all of one dtype) to ``out``, each part's memory as it is (no copy of a
    C-contiguous array)."""
    parts: dict[str, list[Any]] = {
        name: [_flat(p) for p in ([a] if isinstance(a, array) or hasattr(a, "dtype") else a)]
        for name, a in arrays.items()
    }
    index = []
    for name, ps in parts.items():
        dtypes = {dtype_of(p) for p in ps}
        if len(dtypes) > 1:
            raise ValueError(f"the parts of {name} differ in type")
        index.append([name, dtypes.pop() if dtypes else "|u1", sum(len(p) for p in ps)])
    index_json = json.dumps(index, separators=(",", ":")).encode()  # (names, dtypes and counts: ASCII)
    head = MAGIC + _LENGTHS.pack(len(header_json), len(index_json)) + header_json + index_json
    out.write(head + bytes(_pad(len(head))))
    for ps in parts.values():
        nbytes = 0
        for p in ps:
            with memoryview(p) as view:
                if view.nbytes:
                    out.write(view.cast("B"))
                nbytes += view.nbytes
        out.write(bytes(_pad(nbytes)))


def _flat(part: Any) -> Any:
    """``part`` as a 1-d C-contiguous buffer (a numpy array reshaped; an ``array.array`` as it is)."""
    if isinstance(part, array):
        return part
    import numpy as np  # (a numpy array given: numpy is imported)

    return np.ascontiguousarray(part).reshape(-1)


def read_answer(payload: bytes | bytearray) -> tuple[dict, dict[str, np.ndarray]]:
    """(header, arrays) of an answer; the arrays are views of ``payload`` (writable when it is a
    ``bytearray``). :class:`ValueError` (or :class:`orjson.JSONDecodeError`, a subclass) when it does
    not read as one."""
    import numpy as np
    import orjson

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
