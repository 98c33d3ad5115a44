"""History entries as columns, and the value rules every snapshot field is read with.

:func:`trace_columns` turns a run of history entries (dicts) into :class:`DeviceTrace` columns;
:class:`StreamedTraces` does it batch by batch while :mod:`.pickle_stream` reads the file, so the
entries' dicts are never all alive; :class:`~.snapshot_stacks.Interner` keeps each distinct stack and
frame once.

The batches' columns are :class:`array.array` buffers built by C-level passes (``map``,
``operator.itemgetter`` with the file's own key strings, :func:`~.packed_arrays.packed`), so the reader child
(:mod:`.drain`) answers without importing numpy; a column whose values ``array`` does not take as they
are (text, floats in an integer field, integers beyond 64 bits) is converted by numpy as before, and
:func:`joined` makes a device's numpy arrays in the parent.
"""

from __future__ import annotations

import itertools
import operator
from array import array
from typing import TYPE_CHECKING, Any, overload

from .packed_arrays import INT64, REFUSED, packed
from .snapshot_stacks import Interner, own_key, stack_ids

if TYPE_CHECKING:
    import numpy as np

ACTIONS = (
    "alloc",
    "free_requested",
    "free_completed",
    "segment_alloc",
    "segment_free",
    "segment_map",
    "segment_unmap",
    "snapshot",
    "oom",
    "free",
    "other",
)
_ACTION_CODE = {a: i for i, a in enumerate(ACTIONS)}
_SEGMENT_CODES = [_ACTION_CODE[a] for a in ("segment_alloc", "segment_free", "segment_map", "segment_unmap")]


class DeviceTrace:
    """One device's history: parallel arrays, in recorded order. A plain class, not a dataclass: the
    reader child, which imports this module, imports no ``dataclasses`` (nor its ``inspect``)."""

    def __init__(self, action: np.ndarray, addr: np.ndarray, size: np.ndarray, time: np.ndarray, stack: np.ndarray):
        self.action = action  # uint8 code into ACTIONS
        self.addr = addr  # int64
        self.size = size  # int64 bytes
        self.time = time  # float64 µs, NaN when the snapshot has no time_us
        self.stack = stack  # int32 index into Snapshot.stacks (-1: no frames)


_FIELDS = ("action", "addr", "size", "time", "stack")


def _field(entries: list[dict], key: str) -> list:
    try:
        return list(map(operator.itemgetter(key), entries))  # the common case, every entry has it: C speed
    except KeyError:  # (some lack it: None for those, still one C-level pass)
        pass
    try:
        return list(map(dict.get, entries, itertools.repeat(key)))
    except TypeError:  # (not all dicts)
        return [e.get(key) for e in entries]


def _action_codes(entries: list[dict], names: list | None = None) -> array:
    """uint8 codes into ACTIONS of the entries' ``action`` (given as ``names`` when already read)."""
    names = _field(entries, "action") if names is None else names
    try:
        uniq = set(names)
    except TypeError:  # a list or dict where the action's name should be: an "other" entry
        names = [a if isinstance(a, str) else None for a in names]
        uniq = set(names)
    other = _ACTION_CODE["other"]
    table = {a: _ACTION_CODE.get(a, other) if isinstance(a, str) else other for a in uniq}  # (not text: "other")
    return array("B", bytes(map(table.__getitem__, names)))  # (bytes: its length found once)


_NAN = float("nan")
_NONE_NAN = {None: _NAN}  # (``get(v, v)``: None as NaN, any other value as it is)
_NONE_ZERO = {None: 0}


def _floats(values: list) -> array:
    """float64 column; None becomes NaN. Numbers (``int``, ``float``, ``bool``) as ``array`` reads them
    (correctly rounded, as numpy); other values by numpy's own conversion (``_floats_numpy``)."""
    try:
        return packed("d", values)
    except REFUSED:
        pass
    try:  # (None among numbers: an entry without ``time_us``)
        return packed("d", list(map(_NONE_NAN.get, values, values)))
    except REFUSED:
        return _numpy_column(_floats_numpy(values), "d")


def _ints(values: list) -> array:
    """int64 column; missing or odd values become 0. Integers in int64 as ``array`` takes them; None as 0;
    other values (text, floats, integers beyond 64 bits) by numpy's conversion as before (``_ints_numpy``)."""
    try:
        return packed(INT64, values)
    except REFUSED:
        pass
    try:
        return packed(INT64, list(map(_NONE_ZERO.get, values, values)))
    except REFUSED:
        return _numpy_column(_ints_numpy(values), INT64)


def _numpy_column(values: np.ndarray, typecode: str) -> array:
    out = array(typecode)
    out.frombytes(values.tobytes())
    return out


def _floats_numpy(values: list) -> np.ndarray:
    import numpy as np

    try:
        return np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        return np.array([v if isinstance(v, (int, float)) else np.nan for v in values], dtype=np.float64)


def _ints_numpy(values: list) -> np.ndarray:
    import numpy as np

    try:
        return np.array(values, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        out = np.zeros(len(values), dtype=np.int64)
        for i, v in enumerate(values):
            try:
                out[i] = int(v)
            except (TypeError, ValueError, OverflowError):
                pass
        return out


@overload
def _int(value: Any, default: int = 0) -> int: ...
@overload
def _int(value: Any, default: None) -> int | None: ...
def _int(value: Any, default: int | None = 0) -> int | None:
    """``value`` as an int64 (as ``int()`` reads numbers and numeric text), else ``default``: for text,
    containers, None, NaN and integers beyond 64 bits (no address or size is that large)."""
    try:
        out = int(value)
    except (TypeError, ValueError, OverflowError):
        return default
    return out if -(2**63) <= out < 2**63 else default


def _list(value: Any) -> list:
    """``value`` when it is a list (or tuple), else empty: a wrong type holds no entries."""
    return list(value) if isinstance(value, (list, tuple)) else []


def _scalar(value: Any) -> Any:
    """A descriptive field (``stream``, ``segment_type``) kept as written when it is a number or text;
    an integer beyond 64 bits as its decimal string; a container or other object as None."""
    if value is None or isinstance(value, (str, bool, float)):
        return value
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**64 else str(value)
    return None


def _rows_of(codes: bytes, code: int) -> list[int]:
    """The positions of the byte ``code`` in ``codes`` (a step per one found: oom and segment
    entries, each given a record by the caller)."""
    rows = []
    at = codes.find(code)
    while at >= 0:
        rows.append(at)
        at = codes.find(code, at + 1)
    return rows


_SAME: dict = {}  # (``_SAME.get(name, name)``: no entry to take key strings from)
_SEGMENT_BYTES = bytes(1 if i in _SEGMENT_CODES else 0 for i in range(256))  # (bytes.translate: segment codes as 1)


def trace_columns(entries: list[dict], stack_of, frames: list | None = None, distinct: bool | None = None) -> dict:
    """Columns of a run of history entries (dicts): the :class:`DeviceTrace` fields, ``timed`` (any
    ``time_us``), and the rows (in ``entries``) of ``ooms`` and ``segment_streams``. ``frames``: the
    entries' ``frames`` fields when the caller has read them already (``distinct``: no list of them met
    twice, when the caller knows: :meth:`Interner.stack_ids_of`)."""
    # a field at a time (one C-level pass each: faster than one pass of 5-tuples and their transpose)
    own = own_key(entries[0]).get if entries and type(entries[0]) is dict else _SAME.get
    actions, addrs = _field(entries, own("action", "action")), _field(entries, own("addr", "addr"))
    sizes, times = _field(entries, own("size", "size")), _field(entries, own("time_us", "time_us"))
    frames = _field(entries, own("frames", "frames")) if frames is None else frames
    timed = times.count(None) != len(times)
    cols = {
        "action": _action_codes(entries, actions),
        "addr": _ints(addrs),
        "size": _ints(sizes),
        "time": _floats(times) if timed else array("d", [_NAN]) * len(entries),
        "stack": stack_ids(frames, stack_of, distinct),
    }
    codes = cols["action"].tobytes()
    ooms = [
        {
            "index": i,
            "stream": _scalar(entries[i].get("stream")),
            "device_free": _int(entries[i].get("device_free", entries[i].get("addr")), None),
        }
        for i in _rows_of(codes, _ACTION_CODE["oom"])
    ]
    streams = [
        {"index": i, "stream": _scalar(entries[i].get("stream"))} for i in _rows_of(codes.translate(_SEGMENT_BYTES), 1)
    ]
    return {"cols": cols, "timed": timed, "ooms": ooms, "segment_streams": streams, "n": len(entries)}


class StreamedTraces:
    """The ``on_rows`` of :func:`~.pickle_stream.read`: a list whose first batch are dicts with an
    ``action`` key is a device's history; each batch becomes columns (:func:`trace_columns`) as it
    is read, and its dicts are dropped. Non-dict items are dropped, as ``parse_snapshot`` does."""

    def __init__(self) -> None:
        self.interner = Interner()
        self.batches: dict[int, tuple[list, list[dict]]] = {}  # id(the list) -> (the list, its batches)

    def __call__(self, target: list, items: list) -> bool:
        got = self.batches.get(id(target))
        if got is None:
            if target or "action" not in items[0]:
                return False
            got = self.batches[id(target)] = (target, [])
        rows = [x for x in items if isinstance(x, dict)]
        if rows:
            got[1].append(trace_columns(rows, self.interner.stack_of))
        return True

    def of(self, entries: Any) -> list[dict] | None:
        got = self.batches.get(id(entries))
        return got[1] if got is not None and got[0] is entries else None


def joined(batches: list[dict], dev: int) -> tuple[DeviceTrace, list, list, bool]:
    """One device's trace from its batches: (trace as numpy arrays, ooms, segment_streams, timed)."""
    import numpy as np

    # field by field, each batch's array dropped once joined: the columns are never all there twice
    trace = DeviceTrace(
        **{f: np.concatenate([np.frombuffer(b["cols"].pop(f), _DTYPES[f]) for b in batches]) for f in _FIELDS}
    )
    return (trace, *joined_rows(batches, dev))


_DTYPES = {"action": "u1", "addr": "i8", "size": "i8", "time": "f8", "stack": "i4"}


def joined_rows(batches: list[dict], dev: int) -> tuple[list, list, bool]:
    """A device's ooms and segment_streams (each row's index in the device's whole history) and
    whether any entry is timed, from its batches."""
    offsets = [0, *itertools.accumulate(b["n"] for b in batches)]
    ooms = [dict(o, device=dev, index=o["index"] + off) for b, off in zip(batches, offsets) for o in b["ooms"]]
    streams = [
        dict(s, device=dev, index=s["index"] + off) for b, off in zip(batches, offsets) for s in b["segment_streams"]
    ]
    return ooms, streams, any(b["timed"] for b in batches)
