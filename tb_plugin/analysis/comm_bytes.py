"""Message bytes of a communication kernel, and the communicator size its buffers imply (bytes).

- **Bytes** = max(``In msg nelems``, ``Out msg nelems``) × dtype size of the kernel, else of its
  communication op: the whole buffer, as nccl-tests count it (the gathered output of an all-gather,
  the input of a reduce-scatter). Without them, from ``Input Dims``: the largest single tensor
  (elements × type size) of the launching communication op, and for an all-gather or reduce-scatter
  also of the outermost communication op around it: the outer op (``c10d::_allgather_base_``) lists
  the whole output buffer, the inner one (``nccl:_all_gather_base``) often only the shard, which read
  1/64 of the bytes of a 64-rank all-gather. Other collectives keep the inner op's tensor (an
  all-to-all's send buffer; its outer op also lists the receive buffer, which differs when uneven).
  None when nothing says.
- **Size from the buffers** (all-gather and reduce-scatter only): the whole buffer ÷ the shard, when
  it divides exactly and is ≥ 2: ``Out ÷ In msg nelems`` of an all-gather, ``In ÷ Out`` of a
  reduce-scatter, else the largest ÷ the smallest tensor of the ops' ``Input Dims``. None otherwise.
"""

from __future__ import annotations

import ast

import numpy as np

from ..trace.model import Trace

# dtype spellings (comms ``dtype`` arg, ``Input type``) → canonical name; bytes per element
_DTYPE_ALIASES = {
    "float": "float32",
    "float32": "float32",
    "double": "float64",
    "float64": "float64",
    "half": "float16",
    "float16": "float16",
    "bfloat16": "bfloat16",
    "long": "int64",
    "long int": "int64",
    "int64": "int64",
    "int": "int32",
    "int32": "int32",
    "short": "int16",
    "int16": "int16",
    "char": "int8",
    "signed char": "int8",
    "int8": "int8",
    "unsigned char": "uint8",
    "uint8": "uint8",
    "byte": "uint8",
    "bool": "bool",
    "float8_e4m3fn": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2",
    "float8_e4m3fnuz": "float8_e4m3fnuz",
    "float8_e5m2fnuz": "float8_e5m2fnuz",
}
_CANONICAL_BYTES = {
    "float32": 4,
    "float64": 8,
    "float16": 2,
    "bfloat16": 2,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
    "bool": 1,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "float8_e4m3fnuz": 1,
    "float8_e5m2fnuz": 1,
}
#: Collectives whose whole buffer is n shards (n = the communicator's size).
SHARDED = ("allgather", "reducescatter")


def canonical_dtype(text: str | None) -> str | None:
    """``Float`` → ``float32``, ``c10::BFloat16`` → ``bfloat16``…; None when unknown."""
    if not text:
        return None
    low = text.strip().lower().removeprefix("c10::")
    return _DTYPE_ALIASES.get(low, low)


def message(
    trace: Trace, kernel: int, op: int, outer: int, collective: str
) -> tuple[int | None, str | None, int | None]:
    """``(bytes, dtype, size_from_buffers)`` of communication kernel ``kernel`` launched under the
    communication op ``op`` inside the outermost one ``outer`` (−1: none); see the module docstring."""
    ev = trace.events
    for row in (kernel, op):
        if row >= 0 and (ev.in_msg_nelems[row] >= 0 or ev.out_msg_nelems[row] >= 0):
            dtype = canonical_dtype(trace.string(int(ev.dtype[row])))
            size = _CANONICAL_BYTES.get(dtype or "float32", 4)
            n_in, n_out = int(ev.in_msg_nelems[row]), int(ev.out_msg_nelems[row])
            whole, shard = (n_out, n_in) if collective == "allgather" else (n_in, n_out)
            return max(n_in, n_out) * size, dtype, _ratio(whole, shard) if collective in SHARDED else None
    rows = (op, outer) if collective in SHARDED else (op,)  # only their inner op may list just a shard
    tensors = [t for row in dict.fromkeys(rows) if row >= 0 for t in _tensors(trace, row)]
    if not tensors:
        return None, None, None
    largest = max(tensors, key=lambda t: t[1])
    ratio = _ratio(max(t[0] for t in tensors), min(t[0] for t in tensors)) if collective in SHARDED else None
    return largest[1] or None, largest[2], ratio


def _ratio(whole: int, shard: int) -> int | None:
    if shard <= 0 or whole <= shard or whole % shard:
        return None
    return whole // shard


def _tensors(trace: Trace, row: int) -> list[tuple[int, int, str | None]]:
    """``(elements, bytes, dtype)`` of each tensor in an op's ``Input Dims`` (``Input type`` for the size)."""
    ev = trace.events
    if ev.input_dims[row] <= 0:
        return []
    try:
        dims = ast.literal_eval(trace.strings[ev.input_dims[row]])
        types = ast.literal_eval(trace.strings[ev.input_types[row]]) if ev.input_types[row] > 0 else []
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return []
    if not isinstance(dims, (list, tuple)) or not isinstance(types, (list, tuple)):
        return []
    out = []
    for i, shape in enumerate(dims):
        if isinstance(shape, list) and shape and all(isinstance(x, int) and x >= 0 for x in shape):
            kind = canonical_dtype(str(types[i])) if i < len(types) else None
            elements = int(np.prod(shape, dtype=np.float64))
            out.append((elements, elements * _CANONICAL_BYTES.get(kind or "float32", 4), kind))
    return out


def instance_bytes(colls: np.ndarray, per_rank: np.ndarray) -> np.ndarray:
    """Bytes per matched instance (0: unknown): the first rank's (equal on every rank of a matched
    instance), except an all-to-all, whose split sizes may differ per rank: the mean of the known ones."""
    out = per_rank[:, 0].copy()
    uneven = np.flatnonzero(colls == "alltoall")
    if len(uneven):
        known = per_rank[uneven] > 0
        total, count = np.where(known, per_rank[uneven], 0).sum(axis=1), known.sum(axis=1)
        out[uneven] = np.where(count > 0, total // np.maximum(count, 1), 0)
    return out


def communicator_sizes(col: dict, pg_size: int | None, world: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Per instance, n: the named group's size (the first rank's known ``Group size`` / ``Process Group
    Ranks``, else ``pg_config``'s ``pg_size``), else the whole buffer ÷ the shard of an all-gather or
    reduce-scatter (:func:`message`), else the world size; 0 where none is known (and True in the
    second array there)."""

    def first_known(field):
        v = np.stack(col[field], axis=1)
        return v[np.arange(len(v)), np.argmax(v > 0, axis=1)]

    sizes = first_known("group_size")
    if pg_size:
        sizes = np.where(sizes > 0, sizes, pg_size)
    sizes = np.where(sizes > 0, sizes, first_known("size_from_buffers"))
    if world:
        sizes = np.where(sizes > 0, sizes, world)
    return sizes, sizes <= 0
