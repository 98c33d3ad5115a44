"""The parsed trace: compact numpy columns plus an interned string table.

One row per duration event (``ph: "X"``, or a matched ``B``/``E`` pair). Times are µs, float64,
as written in the file (Kineto writes µs; ``displayTimeUnit`` is only a display hint). Missing
integers are ``-1``; missing floats are ``NaN``. String columns hold indices into ``strings``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from .heap import release_after_step
from .uniques import unique_values

#: Duration-event columns: name → dtype. The on-disk cache stores exactly these.
EVENT_COLUMNS: dict[str, Any] = {
    "kind": np.uint8,  # trace.categories.Kind
    "cat": np.int32,  # raw category, index into strings (-1 = missing)
    "name": np.int32,
    "pid": np.int32,  # the pid as written (int or string), index into strings
    "tid": np.int32,
    "ts": np.float64,  # start, µs
    "dur": np.float64,  # duration, µs (0 when the file had none)
    "correlation": np.int64,  # launch ↔ device work link (args.correlation)
    "external_id": np.int64,  # operator ↔ launch link ("External id" / "external id")
    "device": np.int32,  # device index of device work: args.device, else the integer pid
    "stream": np.int64,
    "blocks_per_sm": np.float64,  # kernel arg "blocks per SM"
    "occupancy_pct": np.float64,  # kernel arg "est. achieved occupancy %"
    "grid": np.int32,  # kernel launch grid as text "[x, y, z]" (string id; 0 = missing)
    "block": np.int32,  # kernel launch block as text
    "registers": np.int32,  # kernel "registers per thread"
    "shared_memory": np.int64,  # kernel "shared memory", bytes
    "input_dims": np.int32,  # operator "Input Dims" as text (string id)
    "call_stack": np.int32,  # operator "Call stack" (2021 traces; frames joined by ";"), string id
    "flops": np.float64,  # operator "flops" (with_flops=True)
    "input_types": np.int32,  # operator "Input type" as text (string id)
    "collective": np.int32,  # "Collective name" (PyTorch 2.x comms), string id
    "in_msg_nelems": np.int64,  # "In msg nelems"
    "out_msg_nelems": np.int64,  # "Out msg nelems"
    "dtype": np.int32,  # comms "dtype", string id
    "group_size": np.int32,  # "Group size", else the length of "Process Group Ranks"
    "seq": np.int64,  # "Seq": the collective's sequence number in its process group (-1: none)
    "process_group": np.int32,  # "Process Group Name", string id
    "process_group_desc": np.int32,  # "Process Group Description" (e.g. "default_pg", "mesh_tp"), string id
    "process_group_ranks": np.int32,  # "Process Group Ranks" as text "[0, 1]", string id
    "process_group_id": np.int32,  # "Process Group ID" (PyTorch 2.1-2.2; distributedInfo.pg_config uid), -1: none
    "wait_event_correlation": np.int64,  # cuda_sync "Stream Wait Event": its cudaEventRecord's correlation (-1: none)
    "wait_stream": np.int32,  # and the stream that event was recorded on ("wait_on_stream")
    "graph_id": np.int64,  # kernel "graph id": the CUDA graph it was replayed from (CUDA 12+ Kineto; -1: none, 0 → -1)
    "graph_node_id": np.int64,  # kernel "graph node id": its node in that graph (creation order; -1: none)
    "epoch": np.int32,  # Composer engine events' "epoch" arg
    "batch": np.int64,  # and "batch"
    "src_offset": np.int64,  # byte offset of the raw event in the events side file (-1: none)
    "src_length": np.int32,  # its length in bytes
}

#: The :data:`EVENT_COLUMNS` that hold string ids (indexes into ``Trace.strings``): a decoder that
#: merges separately decoded batches renumbers exactly these.
_T = TypeVar("_T")  # what a memoized analysis returns

STRING_ID_COLUMNS = frozenset(
    {
        "cat",
        "name",
        "pid",
        "tid",
        "grid",
        "block",
        "input_dims",
        "call_stack",
        "input_types",
        "collective",
        "dtype",
        "process_group",
        "process_group_desc",
        "process_group_ranks",
    }
)

#: ``C`` counter events: one row per numeric arg; ``series`` is "name/arg" (or "name" for ``value``).
COUNTER_COLUMNS: dict[str, Any] = {
    "ts": np.float64,
    "series": np.int32,
    "value": np.float64,
}

#: ``fwdbwd`` flow events: a start (forward op) and an end (backward op) share an ``id``.
FLOW_COLUMNS: dict[str, Any] = {
    "id": np.int64,
    "phase": np.uint8,  # 0 = start ("s"), 1 = end ("f"/"t")
    "ts": np.float64,
    "pid": np.int32,
    "tid": np.int32,
}

#: ``[memory]`` instant-event columns (bytes are signed: > 0 allocates, < 0 frees).
MEMORY_COLUMNS: dict[str, Any] = {
    "ts": np.float64,
    "pid": np.int32,
    "tid": np.int32,
    "bytes": np.int64,
    "addr": np.int64,
    "total_allocated": np.int64,
    "total_reserved": np.int64,
    "device_type": np.int32,  # 0 = CPU, 1 = GPU
    "device_id": np.int32,
}

#: The columns of each of a :class:`Trace`'s tables, by its field name (in the order the fields stand).
TABLE_COLUMNS: dict[str, dict[str, Any]] = {
    "events": EVENT_COLUMNS,
    "memory": MEMORY_COLUMNS,
    "flows": FLOW_COLUMNS,
    "counters": COUNTER_COLUMNS,
}


@dataclasses.dataclass
class Table:
    """A set of equally long named numpy columns."""

    columns: dict[str, np.ndarray]

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def __getattr__(self, key: str) -> np.ndarray:
        try:
            return self.__dict__["columns"][key]
        except KeyError:
            raise AttributeError(key) from None

    @classmethod
    def empty(cls, spec: dict[str, Any]) -> Table:
        return cls({k: np.zeros(0, dtype=t) for k, t in spec.items()})

    def compact(self) -> Table:
        """Replace (in place) every column whose rows all hold the same value (bit for bit: one NaN,
        one sign of zero) by a read-only stride-0 view of that value: same length, dtype and values,
        one value held instead of one per row. A 2021 Kineto trace has no comms, Python-id or FLOPs
        args: 15 of its 39 event columns are constant (−1, 0 or NaN), ~40% of the columns' bytes.
        Returns self."""
        for key, col in self.columns.items():
            self.columns[key] = compact_column(col)
        return self


def compact_column(col: np.ndarray) -> np.ndarray:
    """``col``, or when every row holds the same value a read-only stride-0 view of it (:meth:`Table.compact`)."""
    return np.broadcast_to(col[:1].copy(), col.shape) if _constant(col) else col


_PREFIX = 256  # rows :func:`_constant` compares first


def _constant(col: np.ndarray) -> bool:
    """Whether a 1-D column of two rows or more holds one value in every row (compared as bits)."""
    if col.ndim != 1 or len(col) < 2 or col.strides[0] == 0:
        return False
    bits = col.view(f"u{col.itemsize}") if col.dtype.kind in "fc" and col.itemsize in (1, 2, 4, 8) else col
    step = 1 << 20  # in slices, so a column that differs early costs little and no N-sized mask is made
    first = bits[0]
    if not (bits[:_PREFIX] == first).all():  # most columns differ within their first rows: no 1 M-row slice
        return False
    for lo in range(0, len(bits), step):
        if not (bits[lo : lo + step] == first).all():
            return False
    return True


def is_one_value(col: np.ndarray) -> bool:
    """Whether ``col`` is a 1-D stride-0 view of one value over two rows or more (:func:`compact_column`'s,
    or a decode process's answer's)."""
    return col.ndim == 1 and len(col) > 1 and col.strides[0] == 0


def held_bytes(col: np.ndarray) -> int:
    """The bytes a column really holds: a stride-0 view (see :meth:`Table.compact`) holds one value."""
    return col.itemsize if is_one_value(col) else col.nbytes


@dataclasses.dataclass
class DeviceInfo:
    """One entry of ``deviceProperties`` (or the older ``computeProperties``)."""

    id: int
    name: str | None
    memory_bytes: int | None
    compute_major: int | None
    compute_minor: int | None
    num_sms: int | None
    arch_name: str | None = None  # ROCm ``gcnArchName`` (``gfx942:sramecc+:xnack-``) when written

    @property
    def compute_capability(self) -> str | None:
        if self.compute_major is None:
            return None
        return f"{self.compute_major}.{self.compute_minor or 0}"


@dataclasses.dataclass
class Trace:
    """A decoded trace file. ``meta`` holds small top-level facts (JSON-serializable)."""

    strings: list[str]
    events: Table
    memory: Table
    devices: list[DeviceInfo]
    distributed: dict[str, Any] | None
    meta: dict[str, Any]
    warnings: list[str]
    flows: Table = dataclasses.field(default_factory=lambda: Table.empty(FLOW_COLUMNS))
    counters: Table = dataclasses.field(default_factory=lambda: Table.empty(COUNTER_COLUMNS))
    # facts about the file that change nothing the user sees (normal Kineto/Composer content: events
    # without a duration, Composer's trainer spans); ``warnings`` are for what does (events dropped, …)
    notes: list[str] = dataclasses.field(default_factory=list)
    # per-trace results of analyses, filled by :meth:`memo` (the registry measures it for its memory budget)
    derived: dict[str, Any] = dataclasses.field(default_factory=dict, repr=False, compare=False)

    def memo(self, key: str, make: Callable[[], _T]) -> _T:
        """``make()``, computed once per trace and kept in :attr:`derived` under ``key``; later calls
        return the kept value (``None`` included). Analyses keep their per-trace indexes here (op tree,
        timeline index, counter inputs…), so each is built once whoever asks first. ``key`` names the
        result and what it depends on (``"kernel_rows:" + group_by``)."""
        try:
            return self.derived[key]
        except KeyError:
            value = self.derived[key] = make()
            release_after_step()  # make's temporaries (a large trace's sections: trace/heap.trimmed_steps)
            return value

    def string(self, index: int) -> str | None:
        return self.strings[index] if index >= 0 else None

    def name_ids(self, predicate: Callable[[str], object]) -> np.ndarray:
        """Indices of strings for which ``predicate(str)`` holds (for vectorized name tests)."""
        return np.fromiter((i for i, s in enumerate(self.strings) if predicate(s)), dtype=np.int64)

    def name_table(self, predicate: Callable[[str], object]) -> np.ndarray:
        """Per string id, whether it is an event's name that satisfies ``predicate``, and a last entry
        (False) that id -1 (no name) reads: ``name_table(p)[events.name[rows]]`` is ``name_mask(p)[rows]``
        without a mask over all events (tested once per distinct event name, not on every string of the
        table: call stacks and shapes are most of it, and long)."""
        names = self.memo("event_name_ids", lambda: (u := unique_values(self.events.name))[u >= 0])
        strings = self.strings
        lookup = np.zeros(len(strings) + 1, dtype=bool)
        lookup[names[np.fromiter((predicate(strings[i]) for i in names.tolist()), dtype=bool, count=len(names))]] = True
        return lookup

    def name_mask(self, predicate: Callable[[str], object]) -> np.ndarray:
        """Boolean mask over events whose name satisfies ``predicate`` (:meth:`name_table`'s, per event)."""
        # ``take``: the same gather as ``lookup[...]`` (-1, no name, is the last entry: False), ~2× faster
        return self.name_table(predicate).take(self.events.name)

    def device_info(self, device_id: int) -> DeviceInfo | None:
        for info in self.devices:
            if info.id == device_id:
                return info
        return None
