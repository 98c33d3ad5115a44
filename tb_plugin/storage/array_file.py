"""A file of named numpy arrays: a small validated index, then each array's raw bytes as it is in memory.

The parse cache's entries were ``.npz`` files: ``np.savez`` copies each array in 16 MiB pieces
(``tobytes``) and ``zipfile`` runs a CRC-32 over every byte (~2 GB/s) before the write (3.1-4.9 s of
CPU for a 1.75 GB entry); reading runs the CRC again and copies out of the archive. Here a write is
one ``write`` of each C-contiguous array's memory, and a read one ``readinto`` per array into memory
allocated for it (one copy, from the page cache), so each array is its own allocation and a caller
may drop one (a constant column made one value) while reading the next. An array whose elements all
share one address (a constant column that :meth:`~tb_plugin.trace.model.Table.compact` made a stride-0
view: 47% of the 0.9 GB trace's entry's bytes) is stored as that one value and read back as the same
read-only stride-0 view, so it is neither written nor read row by row.

Layout: :data:`MAGIC` (8 bytes); the index's length in bytes and the file's whole length (two
little-endian u64); the index (JSON: ``[name, dtype, shape, offset, repeated]`` per array, ``dtype``
numpy's ``dtype.str``, ``offset`` from the data's start, ``repeated`` true when one item stands for
every element); padding to a multiple of :data:`ALIGN` bytes, where
the data starts; then each array's bytes in C order at its offset (a multiple of :data:`ALIGN`), in
the index's order with nothing but padding between them. No pickle, no object or structured dtype.

The file is read as untrusted: a wrong magic, a length other than the file's, a malformed index,
an unknown dtype, or an array reaching beyond the file or over another one is a :class:`ValueError`
raised before any array is allocated, so a read never allocates more than the file's size; a repeated
array may not have more elements than the file has bytes (no small file stands for a huge column).
"""

from __future__ import annotations

import os
import struct
from typing import IO, Any, Callable, Mapping

import numpy as np
import orjson

MAGIC = b"KSARR\x01\r\n"
_LENGTHS = struct.Struct("<QQ")  # the index's length, the file's length (bytes)
_PRELUDE = len(MAGIC) + _LENGTHS.size
ALIGN = 64  # each array starts at a multiple of this many bytes (from the file's start)
_KINDS = frozenset("biufcSU")  # numbers, booleans and fixed-width strings: never objects
_CHUNK = 16 << 20  # bytes of a non-contiguous array made contiguous at a time when written
_MAX_INDEX = 64 << 20  # bytes: an index larger than this is refused (an entry has ~500 arrays)


def _aligned(n: int) -> int:
    """``n`` rounded up to a multiple of :data:`ALIGN`."""
    return n + (-n % ALIGN)


def _checked_dtype(dtype: np.dtype) -> np.dtype:
    """``dtype`` when a file may hold it (a number, boolean or fixed-width string of one item size
    above zero), else :class:`ValueError`."""
    if dtype.kind not in _KINDS or dtype.fields is not None or dtype.subdtype is not None or dtype.itemsize <= 0:
        raise ValueError(f"an array file cannot hold dtype {dtype.str}")
    return dtype


def write_arrays(out: IO[bytes], arrays: Mapping[str, Any]) -> None:
    """Write ``arrays`` (name → array or anything ``np.asarray`` takes) to ``out``, a file opened for
    binary writing at its start. A C-contiguous array's memory is written as it is (no copy); one whose
    elements share one address (:func:`_repeated`) as that one item; any other is made contiguous
    :data:`_CHUNK` bytes at a time. :class:`ValueError` for a dtype :func:`_checked_dtype` refuses
    (nothing written then)."""
    items = [(str(name), np.asarray(a)) for name, a in arrays.items()]
    index, at = _index(items)
    body = orjson.dumps(index)
    start = _aligned(_PRELUDE + len(body))
    out.write(MAGIC + _LENGTHS.pack(len(body), start + at) + body + bytes(start - _PRELUDE - len(body)))
    for (_name, a), item in zip(items, index):
        if item[4]:
            out.write(_raw(np.ascontiguousarray(a.reshape(-1)[:1])))
            out.write(bytes(-a.itemsize % ALIGN))
            continue
        _write_one(out, a)
        out.write(bytes(-a.nbytes % ALIGN))


def stored_bytes(arrays: Mapping[str, np.ndarray]) -> int:
    """About how many bytes :func:`write_arrays` writes for ``arrays`` (the arrays' data as stored,
    without the index)."""
    return _index([(str(name), np.asarray(a)) for name, a in arrays.items()])[1]


def _index(items: list[tuple[str, np.ndarray]]) -> tuple[list[list[Any]], int]:
    """The file's index of ``items`` (``[name, dtype, shape, offset, repeated]`` each, offsets from the
    data's start) and the data's length in bytes; :class:`ValueError` for a dtype a file cannot hold."""
    index: list[list[Any]] = []
    at = 0  # from the data's start, which follows the index (aligned)
    for name, a in items:
        _checked_dtype(a.dtype)
        repeated = _repeated(a)
        index.append([name, a.dtype.str, list(a.shape), at, repeated])
        at = _aligned(at + (a.itemsize if repeated else a.nbytes))
    return index, at


def _repeated(a: np.ndarray) -> bool:
    """Whether every element of ``a`` (two or more) is the same memory (every stride 0)."""
    return a.size > 1 and not any(a.strides)


def _raw(a: np.ndarray) -> memoryview:
    """The bytes of a C-contiguous array, as a flat byte view of its memory (no copy)."""
    return a.reshape(-1).view(np.uint8).data


def _write_one(out: IO[bytes], a: np.ndarray) -> None:
    """Write one array's bytes in C order (its memory as it is when C-contiguous)."""
    if a.nbytes == 0:
        return
    if a.flags.c_contiguous:
        out.write(_raw(a))
        return
    rows = max(1, _CHUNK // max(1, a[0].nbytes if a.ndim > 1 else a.itemsize))
    for lo in range(0, len(a), rows):  # ~16 MiB a step: the count is bytes / 16 MiB, not rows
        out.write(_raw(np.ascontiguousarray(a[lo : lo + rows])))


def _layout(index: object, start: int, total: int) -> list[tuple[str, np.dtype, tuple[int, ...], int, bool]]:
    """The validated ``(name, dtype, shape, offset from the file's start, repeated)`` of each array of
    ``index`` (whose offsets are from ``start``, the data's): names unique, dtypes :func:`_checked_dtype`
    accepts, shapes of non-negative integers, each array within ``total`` bytes, after the previous one
    and aligned, a repeated one of 2 to ``total`` elements. :class:`ValueError` otherwise."""
    if not isinstance(index, list):
        raise ValueError("an array file's index is not a list")
    out: list[tuple[str, np.dtype, tuple[int, ...], int, bool]] = []
    names: set[str] = set()
    floor = 0  # where the next array may start, from ``start``
    for item in index:
        if not (isinstance(item, list) and len(item) == 5 and isinstance(item[0], str) and isinstance(item[1], str)):
            raise ValueError("an array file's array is not described")
        name, dtype_str, shape, offset, repeated = item
        dtype = _checked_dtype(np.dtype(dtype_str))
        if dtype.str != dtype_str:
            raise ValueError(f"an array file's dtype {dtype_str!r} is not in its canonical form")
        if not (isinstance(shape, list) and all(type(n) is int and 0 <= n < 1 << 62 for n in shape)):
            raise ValueError(f"an array file's shape of {name!r} is malformed")
        if type(offset) is not int or offset < floor or offset % ALIGN or name in names:
            raise ValueError(f"an array file's offset of {name!r} is malformed")
        count = 1
        for n in shape:  # Python integers: a product beyond 64 bits is only a large number
            count *= n
        if type(repeated) is not bool or (repeated and not 1 < count <= total):
            raise ValueError(f"an array file's {name!r} is repeated beyond measure")
        nbytes = dtype.itemsize * (1 if repeated else count)
        if start + offset + nbytes > total:
            raise ValueError(f"an array file's {name!r} reaches beyond the file")
        names.add(name)
        out.append((name, dtype, tuple(shape), start + offset, repeated))
        floor = offset + nbytes
    return out


def read_arrays(f: IO[bytes], compact: Callable[[np.ndarray], np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """The arrays of the file ``f`` (opened for binary reading at its start; a regular file), each read
    into its own writable array (a repeated one: a read-only stride-0 view of its one item); ``compact``
    (array → array) is applied to each array read whole as soon as it is read. :class:`ValueError` when
    the file is not one :func:`write_arrays` wrote whole (nothing is allocated for the arrays before
    the whole index is checked against the file's size)."""
    size = os.fstat(f.fileno()).st_size
    prelude = f.read(_PRELUDE)
    if len(prelude) < _PRELUDE or prelude[: len(MAGIC)] != MAGIC:
        raise ValueError("not an array file")
    index_len, total = _LENGTHS.unpack_from(prelude, len(MAGIC))
    if total != size:
        raise ValueError(f"an array file of {size} bytes says it has {total}")
    if index_len > min(_MAX_INDEX, size - _PRELUDE):
        raise ValueError("an array file's index reaches beyond the file")
    body = f.read(index_len)
    if len(body) != index_len:
        raise ValueError("an array file's index is truncated")
    layout = _layout(orjson.loads(body), _aligned(_PRELUDE + index_len), size)
    arrays: dict[str, np.ndarray] = {}
    for name, dtype, shape, offset, repeated in layout:
        a = np.empty(1 if repeated else shape, dtype=dtype)
        if a.nbytes:
            f.seek(offset)
            _read_into(f, _raw(a))
        if repeated:  # as Table.compact makes a constant column: a read-only stride-0 view of one value
            arrays[name] = np.broadcast_to(a, shape)
            continue
        arrays[name] = compact(a) if compact is not None else a
    return arrays


def _read_into(f: IO[bytes], view: memoryview) -> None:
    """Fill ``view`` from ``f`` (a read returns at most ~2 GiB on Linux: repeated until full);
    :class:`ValueError` when the file ends first."""
    got = 0
    while got < len(view):
        n = f.readinto(view[got:])  # type: ignore[attr-defined]
        if not n:
            raise ValueError("an array file ends inside an array")
        got += n
