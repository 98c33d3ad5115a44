"""The finished :class:`~.model.Trace` of a :class:`~.columns.ColumnBuilder`: the event columns, the
counter, memory and flow tables, devices, metadata and the warnings and notes about the file."""

from __future__ import annotations

import collections
from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from . import jsonsafe
from .categories import CUPTI_RANGE_CATEGORY, Kind, is_composer_trainer_event, kind_of_category
from .devices import unplaceable_warning
from .events import _float_column, _int_column
from .model import (
    COUNTER_COLUMNS,
    FLOW_COLUMNS,
    MEMORY_COLUMNS,
    DeviceInfo,
    Table,
    Trace,
)
from .names import strip_addresses
from .ordered_columns import stable_time_order, time_ordered_columns


class Finishing(ABC):
    """The last step of :class:`~.columns.ColumnBuilder` (a mixin: it uses the builder's lists)."""

    # the builder's state this step reads (set in ColumnBuilder.__init__)
    strings: list[str]
    chunks: dict[str, list[np.ndarray]]
    memory_parts: list[tuple]
    flow_rows: list[tuple]
    counter_rows: list[tuple]
    metadata_values: dict[str, Any]
    process_names: dict[str, str]
    thread_names: dict[str, str]
    phase_counts: collections.Counter
    no_dur: int
    no_ts: int
    bad_args: int
    bad_events: int
    string_pids: int

    @abstractmethod
    def intern(self, values: list) -> np.ndarray:
        """String-table ids of ``values``."""

    @abstractmethod
    def _pair_begin_end(self) -> tuple[int, int]:
        """Pairs the 'B' and 'E' events into columns: ``(unmatched B, unmatched E)``."""

    # -- the result ----------------------------------------------------------------------------
    def finish(self, top: dict[str, Any], form: str) -> Trace:
        unmatched_b, unmatched_e = self._pair_begin_end()
        cols = self._time_ordered_columns()
        kind_table, known = _kind_table(self.strings)
        cols["kind"] = kind_table[cols["cat"]]
        # old exports without categories (pre-Kineto Lightning): ATen-style names are operators
        op_like = np.array([s.startswith(_OP_NAME_PREFIXES) for s in self.strings] + [False], dtype=bool)
        cols["kind"] = np.where((cols["cat"] == 0) & op_like[cols["name"]], np.uint8(Kind.CPU_OP), cols["kind"])
        is_device = _PLACED_ON_DEVICE[cols["kind"]]  # (a lookup per row: np.isin compared each kind in turn)
        cols["device"] = np.where(is_device, cols["device"], -1).astype(np.int32)
        warnings, notes = self._warnings(cols, known, unmatched_b, unmatched_e)
        meta = _meta(top, form, self.strings, cols, self.phase_counts)
        meta["process_names"] = self.process_names
        meta["metadata_values"] = self.metadata_values
        meta["thread_names"] = self.thread_names
        memory, flows = self._memory_table(), self._flow_table()
        unplaced = unplaceable_warning(memory.device_type) if len(memory) else None
        if unplaced:
            warnings.append(unplaced)
        # names that differ only in an object's address (`<... object at 0x7f…>`) are one name
        if strip_addresses(self.strings):
            canon = self._canonical_ids()
            for key in ("name", "call_stack"):
                cols[key] = canon[cols[key]]
        # pid/tid 25738 and "25738" name the same thread: one id per text
        canon = self._canonical_ids()
        for table in (cols, memory.columns, flows.columns):
            for key in ("pid", "tid"):
                if len(table[key]):
                    table[key] = canon[table[key]]
        return Trace(
            strings=self.strings,
            events=Table(cols).compact(),  # constant columns hold one value (a 2021 trace: ~40% of the bytes)
            memory=memory.compact(),
            flows=flows,
            counters=self._counter_table(),
            devices=_devices(top),
            # integers beyond 64 bits become decimal strings here, so the trace is the same from the cache
            distributed=jsonsafe.clean(top["distributedInfo"])
            if isinstance(top.get("distributedInfo"), dict)
            else None,
            meta=jsonsafe.clean(meta),
            warnings=warnings,
            notes=notes,
        )

    def _time_ordered_columns(self) -> dict[str, np.ndarray]:
        """The event columns in time order (:func:`~.ordered_columns.time_ordered_columns`)."""
        chunks, self.chunks = self.chunks, {}
        return time_ordered_columns(chunks)

    def _counter_table(self) -> Table:
        if not self.counter_rows:
            return Table.empty(COUNTER_COLUMNS)
        ts, series, value = (list(c) for c in zip(*self.counter_rows))
        return _in_time_order({"ts": _float_column(ts), "series": self.intern(series), "value": _float_column(value)})

    def _canonical_ids(self) -> np.ndarray:
        """For every string id, the first id with the same text."""
        first: dict[str, int] = {}
        return np.array([first.setdefault(text, i) for i, text in enumerate(self.strings)], dtype=np.int32)

    def _memory_table(self) -> Table:
        if not self.memory_parts:
            return Table.empty(MEMORY_COLUMNS)
        parts, self.memory_parts = self.memory_parts, []
        cols = {"ts": np.concatenate([p[0] for p in parts])}
        # each part's distinct pids (then tids) interned in turn: the ids of interning every value in turn
        for at, key in ((1, "pid"), (2, "tid")):
            cols[key] = np.concatenate([self.intern(p[at][0])[p[at][1]] for p in parts])
        for key in parts[0][3]:
            cols[key] = np.concatenate([p[3][key] for p in parts])
        del parts
        return _in_time_order(cols)

    def _flow_table(self) -> Table:
        if not self.flow_rows:
            return Table.empty(FLOW_COLUMNS)
        ids, phase, ts, pid, tid = (list(f) for f in zip(*self.flow_rows))
        cols = {
            "id": _int_column(ids),
            "phase": np.array(phase, dtype=np.uint8),
            "ts": _float_column(ts),
            "pid": self.intern(pid),
            "tid": self.intern(tid),
        }
        return Table(cols)

    def _warnings(
        self, cols: dict[str, np.ndarray], known: np.ndarray, unmatched_b: int, unmatched_e: int
    ) -> tuple[list[str], list[str]]:
        """``(warnings, notes)``: warnings say what changes what the user sees (events skipped or
        guessed at, categories nothing recognizes); notes count normal content that needs no action
        (events without a duration, Composer's own trainer spans)."""
        out, notes = [], []
        cats = cols["cat"]
        ranges = _cupti_ranges_warning(self.strings, cats, cols["dur"])
        if ranges:
            out.append(ranges)
        # Composer's trainer spans, whatever their category: Composer's, not unknown content
        composer_name = np.array([is_composer_trainer_event(s) for s in self.strings] + [False], dtype=bool)
        composer = composer_name[cols["name"]] & ~known[cats] if len(cats) else np.zeros(0, dtype=bool)
        if composer.any():
            notes.append(
                f"{int(composer.sum())} Composer trainer events (engine, callback and dataloader spans); "
                "they are analysed as host (CPU) work"
            )
            cats = cats[~composer]
        counts = np.bincount(cats, minlength=len(self.strings)) if len(cats) else np.zeros(len(self.strings), int)
        if counts[0]:
            out.append(f"{int(counts[0])} duration events have no 'cat'; they are analysed as host (CPU) work")
        unknown = [(self.strings[i], int(counts[i])) for i in np.flatnonzero(counts) if i and not known[i]]
        if unknown:
            unknown.sort(key=lambda x: -x[1])
            listed = ", ".join(f"{name!r} ×{n}" for name, n in unknown[:8])
            more = f" and {len(unknown) - 8} more" if len(unknown) > 8 else ""
            total = sum(n for _, n in unknown)
            out.append(
                f"{total} events in unrecognized categories ({listed}{more}); they are analysed as host (CPU) work"
            )
        if self.no_dur:
            out.append(
                f"{self.no_dur} complete ('X') events had no 'dur' (or an unusable one: NaN, infinite, beyond 1e30); taken as 0 µs"
            )
        if self.no_ts:
            out.append(f"{self.no_ts} duration events had no usable 'ts' and were skipped")
        if self.bad_events:
            out.append(
                f"{self.bad_events} events could not be decoded (invalid UTF-8, nesting too deep or numbers "
                "out of range) and were skipped"
            )
        if self.bad_args:
            out.append(
                f"{self.bad_args} events had malformed 'args' (not an object or odd types); their args were ignored"
            )
        if unmatched_b or unmatched_e:
            out.append(
                f"{unmatched_b} 'B' events without an 'E' and {unmatched_e} 'E' events without a 'B' were skipped"
            )
        if self.string_pids:
            out.append(f"{self.string_pids} duration events have a string 'pid' (kept as a label)")
        no_duration = {str(k): v for k, v in self.phase_counts.items() if k not in ("X", "B", "E")}
        if no_duration:
            listed = ", ".join(
                f"{_PHASE_NAMES.get(k, repr(k))} ×{v}" for k, v in sorted(no_duration.items(), key=lambda kv: -kv[1])
            )
            notes.append(f"{sum(no_duration.values())} events carry no duration ({listed}); they are not step work")
        return out, notes


def _in_time_order(cols: dict[str, np.ndarray]) -> Table:
    """The table of ``cols`` with its rows in a stable sort of ``ts``: as they are where they are in it
    already (a Kineto trace's memory events and counters, in the file's order), else gathered (a copy of
    every column: the 4.5 GB trace's 1.9 M memory events, 0.23 s, and their argsort, 0.05 s)."""
    order = stable_time_order(cols["ts"])
    return Table(cols if order is None else {k: v[order] for k, v in cols.items()})


def _cupti_ranges_warning(strings: list[str], cats: np.ndarray, dur: np.ndarray) -> str | None:
    """What a trace of the CUPTI range profiler shows instead of kernel times (None without ranges)."""
    ids = [i for i, s in enumerate(strings) if s.lower() == CUPTI_RANGE_CATEGORY]
    rows = np.flatnonzero(np.isin(cats, ids)) if ids else np.zeros(0, dtype=np.int64)
    if not len(rows):
        return None
    d = dur[rows][np.isfinite(dur[rows])]
    times = (
        ""
        if not len(d)
        else (
            f"; every one lasts {d[0] / 1000:.2f} ms"
            if np.all(d == d[0])
            else f"; they last {d.min() / 1000:.2f} to {d.max() / 1000:.2f} ms"
        )
    )
    return (
        f"{len(rows)} CUPTI range-profiler ranges ('{CUPTI_RANGE_CATEGORY}'): the range profiler replays "
        f"each range of kernels to read hardware counters, so a range's time is the profiler's pass, not "
        f"how long its kernels ran{times}. They are not counted as kernel time, GPU utilization or in the "
        f"kernel table; their counters are in each range's args (Trace view)"
    )


# the kinds (uint8) whose events keep their device index: kernels, copies, sets, GPU user annotations
_PLACED_ON_DEVICE = np.zeros(256, dtype=bool)
_PLACED_ON_DEVICE[[Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET, Kind.GPU_USER_ANNOTATION]] = True
_OP_NAME_PREFIXES = ("aten::", "prim::", "c10d::", "torch::", "quantized::", "cudnn::")
_PHASE_NAMES = {
    "i": "instant",
    "I": "instant",
    "s": "flow start",
    "t": "flow step",
    "f": "flow end",
    "M": "metadata",
    "C": "counter",
    "b": "async begin",
    "e": "async end",
    "n": "async instant",
}


def _kind_table(strings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    kinds = np.zeros(len(strings) + 1, dtype=np.uint8)
    known = np.zeros(len(strings) + 1, dtype=bool)
    for i, s in enumerate(strings):
        if i == 0:
            kinds[0], known[0] = Kind.UNKNOWN_HOST, False
            continue
        k, is_known = kind_of_category(s)
        kinds[i], known[i] = k, is_known
    return kinds, known


def _devices(top: dict[str, Any]) -> list[DeviceInfo]:
    """Normalize ``deviceProperties`` (2021+) and the older ``computeProperties`` layout."""
    raw = top.get("deviceProperties") or top.get("computeProperties") or []
    out: list[DeviceInfo] = []
    if not isinstance(raw, list):
        return out
    for entry in raw:
        if not isinstance(entry, dict):
            continue
        try:
            dev_id = int(entry["id"])
        except (KeyError, TypeError, ValueError, OverflowError):
            continue
        if not -(2**31) <= dev_id < 2**31:  # beyond 32 bits is no device index
            continue

        def num(*keys: str) -> int | None:
            for k in keys:
                v = entry.get(k)
                if isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) < 2**63:
                    return int(v)  # beyond 64 bits (or NaN/inf) is no device property: unknown
            return None

        name = entry.get("name")
        arch = entry.get("gcnArchName")
        out.append(
            DeviceInfo(
                id=dev_id,
                name=name if isinstance(name, str) else None,
                memory_bytes=num("totalGlobalMem"),
                compute_major=num("computeMajor", "major"),
                compute_minor=num("computeMinor", "minor"),
                num_sms=num("numSms", "multiProcessorCount"),
                arch_name=arch if isinstance(arch, str) and arch else None,
            )
        )
    return out


def _meta(
    top: dict[str, Any], form: str, strings: list[str], cols: dict[str, np.ndarray], phases: collections.Counter
) -> dict[str, Any]:
    cats = {strings[i] for i in np.flatnonzero(np.bincount(cols["cat"]))} if len(cols["cat"]) else set()
    if cats & {"Operator", "Runtime", "Kernel", "Memcpy", "Memset"}:
        fmt = "kineto-2021"
    elif cats & {"cpu_op", "cuda_runtime", "kernel", "gpu_memcpy", "user_annotation", "python_function"}:
        fmt = "pytorch-2.x"
    else:
        fmt = "chrome-array" if form == "array" else "chrome"
    meta: dict[str, Any] = {k: v for k, v in top.items() if v is not None and isinstance(v, (str, int, float))}
    meta.update(form=form, trace_format=fmt, event_count=int(len(cols["ts"])), phase_counts=dict(phases))
    return meta
