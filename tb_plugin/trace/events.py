"""The typed structs one trace event decodes into (only the fields the analyses use), and the
conversions of decoded values into numpy columns (see :mod:`.decode`)."""

# No ``from __future__ import annotations`` here: msgspec would resolve each of the structs' string
# annotations with typing.ForwardRef, compiling each (the decoders are built at import: ~10 ms a start).
import re
from collections.abc import Callable, Sequence
from typing import Any, Optional

import msgspec
import numpy as np
import numpy.typing as npt

from .batching import BATCH_EVENTS, OBJECT_DECODER  # noqa: F401 (BATCH_EVENTS imported from here too)

# Both structs untracked by the cyclic collector (``gc=False``): a decoded event holds only JSON values and
# its args, never itself, so no cycle can form; tracking and untracking each of the millions of events a
# large trace decodes into cost ~14 % of the decoder's instructions. An absent raw arg is the one shared
# empty ``msgspec.Raw`` (immutable), not a fresh one from a factory for each event (another ~3 %).
_NO_RAW = msgspec.Raw()


class _Args(msgspec.Struct, gc=False):
    correlation: Any = None
    external_id: Any = msgspec.field(default=None, name="External id")
    external_id_old: Any = msgspec.field(default=None, name="external id")
    device: Any = None
    stream: Any = None
    grid: Any = None
    blocks_per_sm: Any = msgspec.field(default=None, name="blocks per SM")
    occupancy: Any = msgspec.field(default=None, name="est. achieved occupancy %")
    bytes: Any = msgspec.field(default=None, name="Bytes")
    addr: Any = msgspec.field(default=None, name="Addr")
    total_allocated: Any = msgspec.field(default=None, name="Total Allocated")
    total_reserved: Any = msgspec.field(default=None, name="Total Reserved")
    device_type: Any = msgspec.field(default=None, name="Device Type")
    device_id: Any = msgspec.field(default=None, name="Device Id")
    name: Any = None  # metadata events: process_name / thread_name
    block: Any = None
    registers: Any = msgspec.field(default=None, name="registers per thread")
    shared_memory: Any = msgspec.field(default=None, name="shared memory")
    input_dims: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Input Dims")
    input_dims_old: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Input dims")
    call_stack: Any = msgspec.field(default=None, name="Call stack")
    flops: Any = None
    input_types: msgspec.Raw = msgspec.field(default=_NO_RAW, name="Input type")
    collective: Any = msgspec.field(default=None, name="Collective name")
    in_msg_nelems: Any = msgspec.field(default=None, name="In msg nelems")
    out_msg_nelems: Any = msgspec.field(default=None, name="Out msg nelems")
    dtype: Any = None
    group_size: Any = msgspec.field(default=None, name="Group size")
    process_group: Any = msgspec.field(default=None, name="Process Group Name")
    group_ranks: Any = msgspec.field(default=None, name="Process Group Ranks")
    group_desc: Any = msgspec.field(default=None, name="Process Group Description")
    group_id: Any = msgspec.field(default=None, name="Process Group ID")  # PyTorch 2.1-2.2: pg_config's uid
    seq: Any = msgspec.field(default=None, name="Seq")  # per-process-group collective sequence number
    # cuda_sync "Stream Wait Event" (PyTorch 2.1+): the event's cudaEventRecord correlation and its stream
    wait_record: Any = msgspec.field(default=None, name="wait_on_cuda_event_record_corr_id")
    wait_stream: Any = msgspec.field(default=None, name="wait_on_stream")
    graph_id: Any = msgspec.field(default=None, name="graph id")  # kernels replayed from a CUDA graph
    graph_node_id: Any = msgspec.field(default=None, name="graph node id")
    epoch: Any = None  # Composer engine events
    batch: Any = None
    value: Any = None  # metadata events such as clock_sync_timestamp_us


class _Event(msgspec.Struct, gc=False):
    ph: Any = None
    cat: Any = None
    name: Any = None
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    args: Optional[_Args] = None
    id: Any = None  # flow events


class _LooseEvent(_Event):
    """Fallback when a batch has an odd-typed field: args stay generic Python objects."""

    args: Any = None


_BATCH_DECODER = msgspec.json.Decoder(list[_Event])
_ONE_DECODER = msgspec.json.Decoder(_LooseEvent)
_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])
_OBJECT_DECODER = OBJECT_DECODER
_ONE_BATCH_DECODER = msgspec.json.Decoder(_Event)


# --------------------------------------------------------------------------------------------
# Batches of events → columns
# --------------------------------------------------------------------------------------------

_MAX_TIME = 1e30  # µs; a timestamp or duration beyond this is garbage (now is about 1.7e15 µs since 1970)
_SKIPPED = "\x00undecodable"  # the phase of a placeholder for an event that could not be decoded


def _all_none(values: Sequence[Any]) -> bool:
    """Whether every value is None (C-speed count, skipped when the first value already says no)."""
    return not values or (values[0] is None and values.count(None) == len(values))


def _float_column(values: Sequence[Any]) -> np.ndarray:
    """float64 column; None and unparseable values become NaN (numeric strings are parsed)."""
    if _all_none(values):  # an arg no event of the batch has (C-speed check)
        return np.full(len(values), np.nan)
    try:
        out = np.array(values, dtype=np.float64)
        if out.ndim == 1:
            return out
    except (TypeError, ValueError, OverflowError):
        pass
    # lists where numbers belong (which numpy would make a 2-D array of), huge ints, odd strings
    return np.array([_to_float(v) for v in values], dtype=np.float64)


def _to_float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return float("nan")


def _ranks_count(ranks: Any) -> Optional[int]:
    """The number of ranks in a ``Process Group Ranks`` arg (``"[0, 1, 2]"`` or a list); None if absent."""
    if isinstance(ranks, list):
        return len(ranks) or None
    if isinstance(ranks, str) and ranks.startswith("[") and ranks.endswith("]"):
        inner = ranks[1:-1].strip()
        return inner.count(",") + 1 if inner else None
    return None


def _ranks_text(ranks: Any) -> Optional[str]:
    """A ``Process Group Ranks`` arg as text: a list becomes ``"[0, 1]"``; a string is kept (stripped)."""
    if isinstance(ranks, list):
        return "[" + ", ".join(str(r) for r in ranks) + "]"
    return ranks.strip() if isinstance(ranks, str) else None


def _int_column(values: Sequence[Any], dtype: npt.DTypeLike = np.int64) -> np.ndarray:
    """Integer column; None and unparseable values become -1."""
    if _all_none(values):  # an arg no event of the batch has (C-speed check)
        return np.full(len(values), -1, dtype=dtype)
    as_float = _float_column(values)
    out = np.full(len(values), -1, dtype=dtype)
    info = np.iinfo(dtype)
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(as_float) & (as_float >= info.min) & (as_float < float(info.max))  # others: -1
    out[ok] = as_float[ok].astype(dtype)
    # float64 keeps integers exactly only below 2**53; re-read the rare larger ones as Python ints.
    big = ok & (np.abs(as_float) >= 2.0**53)
    for i in np.flatnonzero(big):
        try:
            out[i] = int(values[int(i)])
        except (TypeError, ValueError, OverflowError):
            out[i] = -1
    return out


_MISSING: dict[Any, np.ndarray] = {}


def _missing_value(dtype: Optional[npt.DTypeLike]) -> np.ndarray:
    """The 0-d value a missing number takes: NaN for a float column (``dtype`` None), else -1."""
    try:
        return _MISSING[dtype]
    except KeyError:
        value = _MISSING[dtype] = np.array(np.nan if dtype is None else -1, dtype=dtype or np.float64)
        value.flags.writeable = False
        return value


def _numeric_columns(values: Sequence[Sequence[Any]], dtypes: Sequence[Optional[npt.DTypeLike]]) -> list[np.ndarray]:
    """``_float_column(values[i])`` where ``dtypes[i]`` is None, else ``_int_column(values[i], dtypes[i])``,
    equal value for value; a list with no value at all (most of a batch's ~30 numeric args) is one
    missing value seen through a stride-0 view, not a full column. (One ``np.array`` of all the lists
    at once is slower than one per list: numpy's type discovery over a 2-D list costs more.)"""
    n = len(values[0]) if values else 0
    return [
        np.broadcast_to(_missing_value(dtype), (n,))
        if _all_none(column)
        else _float_column(column)
        if dtype is None
        else _int_column(column, dtype)
        for column, dtype in zip(values, dtypes)
    ]


def _list_text(value: Any) -> Optional[str]:
    """``[13, 1, 1]`` → ``"[13, 1, 1]"``; None stays None."""
    if value is None:
        return None
    if isinstance(value, list):
        return "[" + ", ".join(map(str, value)) + "]"
    return str(value)


def _reprs(values: Sequence[Any]) -> tuple[list[str], dict[str, Any]]:
    """Each value's ``repr`` and one value for each distinct ``repr`` (both made in C). Decoded JSON
    values with the same ``repr`` are equal, so a conversion made once per distinct ``repr`` is each
    value's: a batch's grids and blocks are a few launch configurations repeated."""
    reprs = list(map(repr, values))
    return reprs, dict(zip(reprs, values))


def _list_texts(values: Sequence[Any]) -> list:
    """:func:`_list_text` of each value (None kept). A value's ``repr`` is the same text unless a string
    is in it (strings are quoted by ``repr``, not by :func:`_list_text`), which a quote in the ``repr``
    shows: the rare quoted ones are converted in Python, once per distinct value."""
    if _all_none(values):
        return list(values)
    texts, first = _reprs(values)
    text = {r: None if v is None else r if "'" not in r and '"' not in r else _list_text(v) for r, v in first.items()}
    return list(map(text.__getitem__, texts))


def _json_text(raw: bytes) -> str:
    try:
        return repr(msgspec.json.decode(raw)) if raw.strip()[:1] in (b"[", b"{") else raw.decode("utf-8", "replace")
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):  # too deep to show, or not UTF-8
        return raw.decode("utf-8", "replace")


_DEVICE_PID = re.compile(r"^\s*(?:mtia|gpu|xpu|hpu|device)[ _:#-]*(\d{1,6})\s*$", re.IGNORECASE)


def _device_of_pid(pid: object) -> Optional[int]:
    """The device index of a string pid that names a device ("MTIA 0", "GPU 1"), else None."""
    if isinstance(pid, str):
        m = _DEVICE_PID.match(pid)
        if m:
            return int(m.group(1))
    return None


# The args of complete events that become columns, read from every event at once (one C-level pass and
# a transpose instead of a Python loop per arg)
ARG_FIELDS = (
    "correlation",
    "external_id",
    "external_id_old",
    "device",
    "stream",
    "grid",
    "blocks_per_sm",
    "occupancy",
    "block",
    "registers",
    "shared_memory",
    "input_dims",
    "input_dims_old",
    "call_stack",
    "flops",
    "input_types",
    "collective",
    "in_msg_nelems",
    "out_msg_nelems",
    "dtype",
    "group_size",
    "group_ranks",
    "process_group",
    "group_desc",
    "group_id",
    "seq",
    "epoch",
    "batch",
    "wait_record",
    "wait_stream",
    "graph_id",
    "graph_node_id",
)
EVENT_FIELDS = ("cat", "name", "pid", "tid", "ts", "dur", "args")
_ARG_AT = tuple(map(_Args.__struct_fields__.index, ARG_FIELDS))  # positions in msgspec's field order
_EVENT_AT = tuple(map(_Event.__struct_fields__.index, EVENT_FIELDS))


def _fields(structs: Sequence[Any], at: tuple[int, ...]) -> list[tuple]:
    """The values of every struct (all of one type) for each field position in ``at``: each struct as a
    tuple (``msgspec.structs.astuple``) and the tuples transposed by ``zip``, both in C (on a V100 trace's
    batches 2.3× faster than one ``attrgetter`` map per field for the args). The transposed tuples are
    returned as they are (read-only: a copy of each into a list cost ~20 % of this)."""
    if not structs:
        return [() for _ in at]
    columns = list(zip(*map(msgspec.structs.astuple, structs)))
    return [columns[i] for i in at]


def arg_columns(args: Sequence[Any]) -> dict[str, tuple]:
    """``{field: values of every event}`` for :data:`ARG_FIELDS` (``args``: ``_Args`` structs)."""
    return dict(zip(ARG_FIELDS, _fields(args, _ARG_AT)))


def event_columns(events: list) -> list[tuple]:
    """The values of every event (``_Event`` structs) for each of :data:`EVENT_FIELDS`, in that order."""
    return _fields(events, _EVENT_AT)


def interned_keys(values: Sequence[Any]) -> list:
    """``values`` as the string table keys them where one of them is unhashable (a list or dict where a
    name or id should be): None, strings and numbers as they are, anything else as its text."""
    return [v if v is None or isinstance(v, (str, int, float)) else str(v) for v in values]


def _mapped(values: Sequence[Any], convert: Callable[[Any], Any]) -> list:
    """``convert(v)`` of each value, None kept (all-None columns at C speed)."""
    if _all_none(values):
        return list(values)
    return [convert(v) if v is not None else None for v in values]


def _strings_only(values: Sequence[Any]) -> list:
    """The values that are strings, None for the others."""
    if _all_none(values):
        return list(values)
    if set(map(type, values)) <= _STRING_OR_NONE:  # the usual case: nothing to replace (checked in C)
        return list(values)
    return [v if isinstance(v, str) else None for v in values]


_STRING_OR_NONE = {str, type(None)}
