"""Event columns whose rows all hold one value, kept as that value from the decode to the finish.

The decoders keep a batch's column whose rows all hold one value as a stride-0 view (``compact_column``).
:class:`OneValuePickler` sends such a column from a decode process as its value and length (numpy would
write every row); :func:`joined_chunks` joins a unit's batches into one such view when they share the
value; :func:`joined_column` makes the finished column from it without joining the chunks (bytes written,
then read back whole by the constancy check, only to be replaced by one value). On the 0.3 GB trace 20 of
the 42 event columns are constant (446 651 rows): the workers' answers 130 -> 61 MB; on the 4.5 GB one the
same columns are ~0.8 GB of short-lived pages in the finish."""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from typing import Any

import numpy as np

from .model import compact_column, is_one_value


def joined_column(chunks: Sequence[np.ndarray], dtype: Any) -> np.ndarray:
    """The chunks joined as a ``dtype`` column, compacted (:func:`~.model.compact_column`): the same
    array, values, dtype and strides as ``compact_column(np.concatenate(chunks).astype(dtype))``; a
    column constant across its chunks is made from its first value without joining them."""
    value = _common_value(chunks, np.dtype(dtype))
    if value is not None:
        return np.broadcast_to(value, (sum(len(c) for c in chunks),))
    joined = np.concatenate(chunks) if len(chunks) else np.zeros(0, dtype=dtype)
    return compact_column(joined.astype(dtype, copy=False))


def joined_chunks(chunks: Sequence[np.ndarray]) -> np.ndarray:
    """The chunks (two or more, of one dtype) joined: ``np.concatenate(chunks)``'s values and dtype, kept
    as a stride-0 view of their one value when every chunk is one of that same value (a decode worker's
    answer then carries one value, not every row: :class:`OneValuePickler`)."""
    value = _common_value(chunks, chunks[0].dtype) if len(chunks) else None
    return np.concatenate(chunks) if value is None else np.broadcast_to(value, (sum(len(c) for c in chunks),))


def _common_value(chunks: Sequence[np.ndarray], dtype: np.dtype) -> np.ndarray | None:
    """A one-row array of the value every row of every chunk holds, compared as bits (one NaN, one sign
    of zero, as ``compact_column``), or None: chunks of another dtype or shape, fewer than two rows in
    all, or a chunk of two rows or more that is not a stride-0 view (its rows are not known to be equal
    without reading them all, which the joined column's check does)."""
    first: np.ndarray | None = None
    rows = 0
    for chunk in chunks:
        if chunk.dtype != dtype or chunk.ndim != 1:
            return None
        if not len(chunk):
            continue
        if len(chunk) > 1 and chunk.strides[0] != 0:
            return None
        if first is None:
            first = chunk[:1]
        elif chunk[:1].tobytes() != first.tobytes():
            return None
        rows += len(chunk)
    if first is None or rows < 2:
        return None
    return first.copy()  # (its own one value: the chunks' buffers are not kept)


class OneValuePickler(pickle.Pickler):
    """A pickler that writes a stride-0 column (one value over two rows or more, as ``compact_column``
    keeps it) as its value and length, unpickled as the same read-only stride-0 view. numpy writes every row
    of such an array into the pickle (it is not contiguous, so never out of band): on the 0.3 GB trace
    ~half the decode workers' answers, copied by the worker, the pipe and the reading process, which then
    read it all again to find it constant."""

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is np.ndarray and is_one_value(obj):
            return np.broadcast_to, (obj[:1].copy(), obj.shape)
        return NotImplemented
