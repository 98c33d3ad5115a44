"""The events of a batch that are not complete (``X``) events, read a phase group at a time.

Each group's events (instants, flows, counters, ``B``/``E``, metadata) are picked out of the batch and
their fields read with C-level passes (``map``, ``zip``, ``itertools.compress``), so no Python code runs
per instant or flow event: on a Kineto trace those are nearly all the non-``X`` events (the 35 MB V100
sample: 12,840 ``[memory]`` instants and 18,192 flow events against 20 metadata events). Counters, ``B``/``E``
and metadata events, rare and each needing its own row logic, are still handled one by one.

Each group keeps the batch's order of its events, which is all its rows depend on: the groups go to
separate lists and dicts of :class:`~.columns.ColumnBuilder`.
"""

from __future__ import annotations

import itertools
import operator
from typing import Any

import numpy as np

from .events import _Event, _float_column, _int_column, interned_keys
from .model import MEMORY_COLUMNS

MEMORY_VALUE_COLUMNS = ("bytes", "addr", "total_allocated", "total_reserved", "device_type", "device_id")

# phase → group; phases outside it (and the undecodable placeholder's) are not read
_GROUP_OF_PHASE = {
    "i": "instant",
    "I": "instant",
    "s": "flow",
    "t": "flow",
    "f": "flow",
    "C": "counter",
    "B": "one_by_one",
    "E": "one_by_one",
    "M": "one_by_one",
}
_GROUPS = ("instant", "flow", "counter", "one_by_one")
_GET_NAME = operator.attrgetter("name")
_GET_ARGS = operator.attrgetter("args")
_GET_CAT = operator.attrgetter("cat")
_MEMORY_EVENT_FIELDS = operator.attrgetter("ts", "pid", "tid")
_MEMORY_ARG_FIELDS = operator.attrgetter(*MEMORY_VALUE_COLUMNS)
_FLOW_FIELDS = operator.attrgetter("id", "ts", "pid", "tid")


def _where(values: list, wanted: Any) -> list[int]:
    """Positions of the values equal to ``wanted``, in order (C-level passes)."""
    return list(itertools.compress(range(len(values)), map(operator.eq, values, itertools.repeat(wanted))))


def phase_groups(phases: list) -> dict[str, list[int]]:
    """The positions of each group's events (``phases``: each event's hashable phase), in order;
    groups without events are left out."""
    groups = list(map(_GROUP_OF_PHASE.get, phases))
    present = set(groups)
    return {group: _where(groups, group) for group in _GROUPS if group in present}


def memory_part(instants: list[_Event]) -> tuple | None:
    """The ``[memory]`` instants with args as ``(ts, pids, tids, {column: values})``, pids and tids each
    :func:`coded` (their texts are interned when the trace is finished, in order: the string ids are those
    of interning every value in turn); None if there are none."""
    names, args = list(map(_GET_NAME, instants)), list(map(_GET_ARGS, instants))
    is_memory = map(
        operator.and_,
        map(operator.eq, names, itertools.repeat("[memory]")),
        map(operator.is_not, args, itertools.repeat(None)),
    )
    at = list(itertools.compress(range(len(instants)), is_memory))
    if not at:
        return None
    ts, pids, tids = map(list, zip(*map(_MEMORY_EVENT_FIELDS, map(instants.__getitem__, at))))
    values = zip(*map(_MEMORY_ARG_FIELDS, map(args.__getitem__, at)))
    numbers = {key: _int_column(list(column), MEMORY_COLUMNS[key]) for key, column in zip(MEMORY_VALUE_COLUMNS, values)}
    return _float_column(ts), coded(pids), coded(tids), numbers


def coded(values: list) -> tuple[list, np.ndarray]:
    """``(distinct, codes)``: the distinct values in first-occurrence order (equal as dict keys; a list or
    dict, unhashable, as its text) and each value's position among them (int32), so that
    ``[distinct[c] for c in codes]`` equals ``values``. A decode worker sends a batch's memory events' pids
    and tids so, not as one Python object each: interned in the finish, the 4.5 GB trace's 1.9 M memory
    events' two lists took ~0.3 s of its one core (the other idle) and were pickled, piped and unpickled
    before that."""
    try:
        distinct = dict.fromkeys(values)
    except TypeError:  # (as ColumnBuilder.intern takes them)
        values = interned_keys(values)
        distinct = dict.fromkeys(values)
    for i, key in enumerate(distinct):
        distinct[key] = i
    codes = np.fromiter(map(distinct.__getitem__, values), dtype=np.int32, count=len(values))
    return list(distinct), codes


def memory_part_bytes(part: tuple) -> int:
    """Bytes of memory a :func:`memory_part` holds, counted for the parse's budget: its columns, and each
    distinct pid and tid at a Python object's ~72 bytes."""
    ts, (pids, pid_codes), (tids, tid_codes), numbers = part
    columns = ts.nbytes + pid_codes.nbytes + tid_codes.nbytes + sum(c.nbytes for c in numbers.values())
    return columns + 72 * (len(pids) + len(tids))


def flow_rows(flows: list[_Event], phases: list) -> list[tuple]:
    """The ``fwdbwd`` flow events as ``(id, 0 for a start else 1, ts, pid, tid)`` rows."""
    at = _where(list(map(_GET_CAT, flows)), "fwdbwd")
    if not at:
        return []
    ids, ts, pids, tids = zip(*map(_FLOW_FIELDS, map(flows.__getitem__, at)))
    ends = map(int, map(operator.ne, map(phases.__getitem__, at), itertools.repeat("s")))
    return list(zip(ids, ends, ts, pids, tids))
