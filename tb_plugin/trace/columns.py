"""Batches of decoded events → columns: interning strings, complete (``X``) events, counters,
flows and memory events, and the pairing of ``B``/``E`` events (see :mod:`.decode`)."""

from __future__ import annotations

import collections
import itertools
import operator
from collections.abc import Sequence
from typing import Any, Protocol, cast

import msgspec
import numpy as np

from .categories import Kind, kind_of_category
from .events import (
    _BATCH_DECODER,
    _MAX_TIME,
    _ONE_BATCH_DECODER,
    _ONE_DECODER,
    _SKIPPED,
    _all_none,
    _Args,
    _device_of_pid,
    _Event,
    _float_column,
    _json_text,
    _list_texts,
    _LooseEvent,
    _mapped,
    _numeric_columns,
    _ranks_count,
    _ranks_text,
    _strings_only,
    _to_float,
    arg_columns,
    event_columns,
    interned_keys,
)
from .finish import Finishing
from .heap import gc_paused
from .joined import joined_chunks
from .model import EVENT_COLUMNS, compact_column
from .other_events import flow_rows, memory_part, phase_groups
from .placed_raws import PlacedRaws, raw_lengths

_GET_PH = operator.attrgetter("ph")


def _graph_ids(col: np.ndarray) -> np.ndarray:
    """A CUDA graph id column: Kineto writes 0 for kernels outside a graph, kept as -1 (none)."""
    return np.where(col > 0, col, -1) if (col == 0).any() else col


# The numeric args of complete events and each one's column: float (None) or an int dtype. The last two
# are not args as such: the group size (else counted from the group's ranks) and the numeric pid (the
# device a pid names).
_NUMERIC_ARGS: dict[str, type[np.integer] | None] = {
    "correlation": np.int64,
    "external_id": np.int64,
    "external_id_old": np.int64,
    "device": np.int32,
    "stream": np.int64,
    "blocks_per_sm": None,
    "occupancy": None,
    "registers": np.int32,
    "shared_memory": np.int64,
    "flops": None,
    "in_msg_nelems": np.int64,
    "out_msg_nelems": np.int64,
    "seq": np.int64,
    "group_id": np.int32,
    "wait_record": np.int64,
    "wait_stream": np.int32,
    "graph_id": np.int64,
    "graph_node_id": np.int64,
    "epoch": np.int32,
    "batch": np.int64,
    "group_size": np.int32,
    "pid": np.int32,
}
_NUMERIC_ONLY_ARGS = tuple(_NUMERIC_ARGS)[:-2]


class EventsSink(Protocol):
    """Where the builder writes each batch's raw events (the events side file); the events' offsets
    count from the first byte written."""

    def write(self, data: bytes, /) -> object: ...


class ColumnBuilder(Finishing):
    """Accumulates decoded batches; string id 0 is reserved for "missing"."""

    def __init__(self, events_sink: EventsSink | None = None) -> None:
        self.sink = events_sink
        self.sink_pos = 0
        self.strings: list[str] = [""]
        self._ids: dict[Any, int] = {None: 0}
        self.chunks: dict[str, list[np.ndarray]] = {k: [] for k in EVENT_COLUMNS}
        self.memory_parts: list[tuple] = []  # per batch: (ts, coded pids, coded tids, {column: values}): other_events
        self.flow_rows: list[tuple] = []
        self.counter_rows: list[tuple] = []
        self.metadata_values: dict[str, Any] = {}
        self._json_ids: dict[bytes, int] = {}
        self.begin_end: list[tuple] = []
        self.process_names: dict[str, str] = {}
        self.thread_names: dict[str, str] = {}
        self.phase_counts: collections.Counter = collections.Counter()
        self.no_dur = 0
        self.no_ts = 0
        self.bad_args = 0
        self.bad_events = 0  # undecodable (invalid UTF-8, nested too deeply, numbers out of range)
        self.string_pids = 0

    # -- interning -------------------------------------------------------------------------
    def intern(self, values: Sequence[Any]) -> np.ndarray:
        """String-table ids of ``values`` (ints and other scalars are interned as their text)."""
        table = self._ids
        if _all_none(values):  # None is id 0
            return np.zeros(len(values), dtype=np.int32)
        try:  # C-speed lookups straight into the column; the first miss stops it
            return np.fromiter(map(table.__getitem__, values), dtype=np.int32, count=len(values))
        except (KeyError, TypeError):
            pass
        try:
            distinct = dict.fromkeys(values)
        except TypeError:  # an unhashable value (a list where a name should be): use its text
            values = interned_keys(values)
            distinct = dict.fromkeys(values)
        # first-occurrence order (not set order, which varies between processes): string ids
        # must not depend on PYTHONHASHSEED, or a cached parse and a fresh one would differ
        # (every value equal to a missed one is missed: filtering the distinct values keeps that order)
        for v in [v for v in distinct if v not in table]:
            table[v] = len(self.strings)
            self.strings.append(v if isinstance(v, str) else str(v))
        return np.fromiter(map(table.__getitem__, values), dtype=np.int32, count=len(values))

    def intern_json(self, raws: Sequence[msgspec.Raw]) -> np.ndarray:
        """String ids for raw JSON values (``msgspec.Raw``), shown as Python-style text."""
        table = self._json_ids
        if not any(map(len, raws)):  # the arg is absent from every event
            return np.zeros(len(raws), dtype=np.int32)
        keys = list(map(bytes, raws))  # an absent arg is b"", never a key of the table
        texts = {}
        for k in dict.fromkeys(keys):  # first-occurrence order: deterministic ids
            if k and k not in table:
                texts[k] = _json_text(k)
        if texts:
            ids = self.intern(list(texts.values()))
            table.update(zip(texts.keys(), ids.tolist()))
        return np.fromiter(map(table.get, keys, itertools.repeat(0)), dtype=np.int32, count=len(keys))  # b"": 0

    def state(self) -> dict[str, Any]:
        """What :func:`.decode_stream.merge` appends to another builder (a decode worker's answer, the
        second half's in :mod:`.decode_halves`): the interned keys and texts in id order, one chunk per
        column (the merge handles each chunk in Python: a remap, a constant check), the rows and counts."""
        state = {k: v for k, v in vars(self).items() if k not in ("sink", "_json_ids", "_ids", "strings")}
        state["chunks"] = {k: [joined_chunks(v)] if len(v) > 1 else v for k, v in self.chunks.items()}
        state["keys"] = list(self._ids)[1:]
        state["texts"] = self.strings[1:]
        return state

    # -- batches ---------------------------------------------------------------------------
    def add_batch(self, raws: Sequence[msgspec.Raw], joined: bytes | memoryview | None = None) -> None:
        """Decode one batch; ``joined``, when given, is ``[`` + ``,``.join(raws) + ``]`` already."""
        with gc_paused():
            self._add_batch(raws, joined)

    def _add_batch(self, raws: Sequence[msgspec.Raw], joined: bytes | memoryview | None) -> None:
        if joined is None:
            joined = b"[" + b",".join(raws) + b"]"
        events = self._decode_batch(joined, raws)
        if isinstance(raws, PlacedRaws):  # (the ranged parse's batches: split only if the placement is off)
            raws.settle(events)
        offsets = self._sink(joined, raws)
        phases = list(map(_GET_PH, events))
        try:
            counts = collections.Counter(phases)
        except TypeError:  # a list or object where the phase belongs: keep its text (never a known phase)
            phases = [p if p is None or isinstance(p, (str, int, float)) else str(p) for p in phases]
            counts = collections.Counter(phases)
        skipped = counts.pop(_SKIPPED, 0)
        self.phase_counts.update(counts)
        if counts.get("X", 0) == len(events) and not skipped:
            xs, x_offsets = events, offsets
        else:
            x_index = list(itertools.compress(range(len(phases)), map(operator.eq, phases, itertools.repeat("X"))))
            xs = list(map(events.__getitem__, x_index))
            x_offsets = offsets[x_index] if offsets is not None else None
            self._add_other_events(events, phases, raws, offsets)
        if xs:
            self._add_complete_events(xs, x_offsets)

    def _add_other_events(
        self, events: list[_Event], phases: list, raws: Sequence[msgspec.Raw], offsets: np.ndarray | None
    ) -> None:
        """The batch's non-``X`` events, a phase group at a time (see :mod:`.other_events`)."""
        groups = phase_groups(phases)
        if "instant" in groups:
            part = memory_part(list(map(events.__getitem__, groups["instant"])))
            if part is not None:
                self.memory_parts.append(part)
        if "flow" in groups:
            at = groups["flow"]
            self.flow_rows += flow_rows(list(map(events.__getitem__, at)), list(map(phases.__getitem__, at)))
        for i in groups.get("counter", ()):
            self._counter(events[i], raws[i])
        for i in groups.get("one_by_one", ()):
            self._other(events[i], phases[i], offsets[i] if offsets is not None else None)

    def _sink(self, joined: bytes | memoryview, raws: Sequence[msgspec.Raw]) -> np.ndarray | None:
        """Write the batch to the events side file; return ``[offset, length]`` rows per event."""
        if self.sink is None:
            return None
        lengths = raw_lengths(raws)
        starts = 1 + np.concatenate([[0], np.cumsum(lengths + 1)[:-1]]) + self.sink_pos
        # (a batch read into a buffer of its own, a memoryview, comes only from a ranged parse's worker,
        # whose sink counts offsets and writes nothing: decode_workers._NullSink)
        self.sink.write(cast(bytes, joined))
        self.sink_pos += len(joined)
        return np.stack([starts, lengths], axis=1)

    def _decode_batch(self, joined: bytes | memoryview, raws: Sequence[msgspec.Raw]) -> list[_Event]:
        try:
            return _BATCH_DECODER.decode(joined)
        except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
            pass
        events = []
        for raw in raws:
            try:
                events.append(_ONE_BATCH_DECODER.decode(raw))
            except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
                try:
                    loose = _ONE_DECODER.decode(raw)
                except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
                    loose = None
                if not isinstance(loose, _LooseEvent):  # undecodable: a placeholder keeps raws aligned
                    self.bad_events += 1
                    events.append(_Event(ph=_SKIPPED))
                    continue
                self.bad_args += 1
                events.append(_Event(loose.ph, loose.cat, loose.name, loose.pid, loose.tid, loose.ts, loose.dur, None))
        return events

    def _counter(self, ev: _Event, raw: msgspec.Raw) -> None:
        """``C`` events: one row per numeric arg (series ``name/arg``, or ``name`` for ``value``)."""
        try:
            args = msgspec.json.decode(raw).get("args")
        except (msgspec.DecodeError, AttributeError, RecursionError, UnicodeDecodeError):
            return
        if not isinstance(args, dict):
            return
        for key, value in args.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                series = str(ev.name) if key == "value" else f"{ev.name}/{key}"
                self.counter_rows.append((ev.ts, series, value))

    def _other(self, ev: _Event, ph: Any, offset: np.ndarray | None = None) -> None:
        """``B``/``E`` rows to pair and metadata (``M``) names and values."""
        if ph == "B" or ph == "E":
            self.begin_end.append((ev.pid, ev.tid, ev.ts, ph, ev.name, ev.cat, ev.args, len(self.begin_end), offset))
        elif (
            ph == "M"
            and ev.args is not None
            and isinstance(ev.args.value, (int, float, str))
            and isinstance(ev.name, str)
        ):
            self.metadata_values[ev.name] = ev.args.value  # e.g. Composer's clock_sync_timestamp_us, global_rank
        elif ph == "M" and ev.args is not None and isinstance(ev.args.name, str):
            if ev.name == "process_name":
                self.process_names[str(ev.pid)] = ev.args.name
            elif ev.name == "thread_name":
                self.thread_names[f"{ev.pid}/{ev.tid}"] = ev.args.name

    def _add_complete_events(self, xs: list[_Event], offsets: np.ndarray | None = None) -> None:
        cat, name, pid, tid, ts, dur, args = event_columns(xs)  # one C-level pass per field
        if None in args:
            none = _Args()
            args = tuple(a if a is not None else none for a in args)
        self._append(
            cat=self.intern(cat),
            name=self.intern(name),
            pid_values=pid,
            tid=self.intern(tid),
            ts=_float_column(ts),
            dur=_float_column(dur),
            args=args,
            offsets=offsets,
        )

    def _append(
        self,
        *,
        cat: np.ndarray,
        name: np.ndarray,
        pid_values: Sequence[Any],
        tid: np.ndarray,
        ts: np.ndarray,
        dur: np.ndarray,
        args: Sequence[_Args],
        offsets: np.ndarray | None = None,
    ) -> None:
        n = len(ts)
        pid_types = set(map(type, pid_values))  # almost always {int}: no per-event checks then
        for i in [] if str not in pid_types else [i for i, p in enumerate(pid_values) if isinstance(p, str)]:
            # Kineto's own "Traces"/"Spans" bookkeeping rows always have string pids: not worth a word.
            if kind_of_category(self.strings[cat[i]])[0] != Kind.IGNORED:
                self.string_pids += 1
        # NaN, ±inf and absurd magnitudes (1e300) are unusable: they would overflow every sum downstream
        with np.errstate(invalid="ignore"):
            missing_ts = ~(np.abs(ts) <= _MAX_TIME)
            missing_dur = ~(np.abs(dur) <= _MAX_TIME)
        self.no_ts += int(missing_ts.sum())
        self.no_dur += int(missing_dur.sum())
        dur = np.where(missing_dur, 0.0, np.maximum(dur, 0.0))
        a = arg_columns(args)
        group_size = (
            a["group_size"]
            if _all_none(ranks := a["group_ranks"])
            else [s if s is not None else _ranks_count(r) for s, r in zip(a["group_size"], ranks)]
        )
        pid_numeric = (
            pid_values
            if pid_types <= {int, float}
            else [p if isinstance(p, (int, float)) else _device_of_pid(p) for p in pid_values]
        )
        numeric = [*map(a.__getitem__, _NUMERIC_ONLY_ARGS), group_size, pid_numeric]
        numbers = dict(zip(_NUMERIC_ARGS, _numeric_columns(numeric, list(_NUMERIC_ARGS.values()))))
        external = numbers["external_id"]
        external = np.where(external >= 0, external, numbers["external_id_old"])
        device = numbers["device"]
        device = np.where(device >= 0, device, numbers["pid"])
        columns = {
            "kind": np.zeros(n, dtype=np.uint8),  # filled in finish() from the category table
            "cat": cat,
            "name": name,
            "pid": self.intern(pid_values),
            "tid": tid,
            "ts": ts,
            "dur": dur,
            "correlation": numbers["correlation"],
            "external_id": external,
            "device": device,
            "stream": numbers["stream"],
            "blocks_per_sm": numbers["blocks_per_sm"],
            "occupancy_pct": numbers["occupancy"],
            "grid": self.intern(_list_texts(a["grid"])),
            "block": self.intern(_list_texts(a["block"])),
            "registers": numbers["registers"],
            "shared_memory": numbers["shared_memory"],
            "input_dims": self.intern_json(_either(a["input_dims"], a["input_dims_old"])),
            "call_stack": self.intern(_strings_only(a["call_stack"])),
            "flops": numbers["flops"],
            "input_types": self.intern_json(a["input_types"]),
            "collective": self.intern(_strings_only(a["collective"])),
            "in_msg_nelems": numbers["in_msg_nelems"],
            "out_msg_nelems": numbers["out_msg_nelems"],
            "dtype": self.intern(_strings_only(a["dtype"])),
            "group_size": numbers["group_size"],
            "seq": numbers["seq"],
            "process_group": self.intern(_mapped(a["process_group"], str)),
            "process_group_desc": self.intern(_strings_only(a["group_desc"])),
            "process_group_ranks": self.intern(list(ranks) if _all_none(ranks) else [_ranks_text(r) for r in ranks]),
            "process_group_id": numbers["group_id"],
            "wait_event_correlation": numbers["wait_record"],
            "wait_stream": numbers["wait_stream"],
            "graph_id": _graph_ids(numbers["graph_id"]),
            "graph_node_id": _graph_ids(numbers["graph_node_id"]),
            "epoch": numbers["epoch"],
            "batch": numbers["batch"],
            "src_offset": offsets[:, 0] if offsets is not None else np.full(n, -1, dtype=np.int64),
            "src_length": offsets[:, 1].astype(np.int32) if offsets is not None else np.full(n, -1, dtype=np.int32),
        }
        keep = ~missing_ts
        for key, col in columns.items():
            self.chunks[key].append(compact_column(col if keep.all() else col[keep]))  # constant: one value held

    # -- B/E pairs ---------------------------------------------------------------------------
    def _pair_begin_end(self) -> tuple[int, int]:
        """Match ``B``/``E`` events per (pid, tid) by nesting and name; return (unmatched B, unmatched E)."""
        if not self.begin_end:
            return 0, 0
        by_thread: dict[tuple, list[tuple]] = collections.defaultdict(list)
        for row in self.begin_end:
            by_thread[(str(row[0]), str(row[1]))].append(row)
        pairs: list[tuple] = []
        unmatched_b = unmatched_e = 0
        for rows in by_thread.values():
            rows.sort(key=lambda r: (_to_float(r[2]), r[7]))
            closed, unmatched = _close_begins(rows, pairs)
            unmatched_e += closed
            unmatched_b += unmatched
        if pairs:
            begins = [b for b, _ in pairs]
            ts = _float_column([b[2] for b in begins])
            end = _float_column([e[2] for _, e in pairs])
            self._append(
                cat=self.intern([b[5] for b in begins]),
                name=self.intern([b[4] for b in begins]),
                pid_values=[b[0] for b in begins],
                tid=self.intern([b[1] for b in begins]),
                ts=ts,
                dur=end - ts,
                args=[b[6] if b[6] is not None else _Args() for b in begins],
                offsets=np.array([b[8] if b[8] is not None else (-1, -1) for b in begins], dtype=np.int64).reshape(
                    -1, 2
                ),
            )
        return unmatched_b, unmatched_e


def _either(new: Sequence[msgspec.Raw], old: Sequence[msgspec.Raw]) -> Sequence[msgspec.Raw]:
    """Each event's raw arg from ``new`` where it has one, else from ``old`` (an absent arg is an
    empty ``msgspec.Raw``); a list whole when the other has none (C-level checks: the V100 traces of
    2021 write only the old spelling)."""
    if not any(map(len, old)):
        return new
    if not any(map(len, new)):
        return old
    return [d if len(d) else o for d, o in zip(new, old)]


def _close_begins(rows: list[tuple], pairs: list[tuple]) -> tuple[int, int]:
    """Pair one thread's time-ordered ``B``/``E`` rows into ``pairs``; return (unmatched E, unmatched B).

    An ``E`` closes the innermost open ``B`` of the same name (Composer's ``E`` args differ from its
    ``B``'s, so args cannot pair them); a nameless ``E`` closes the innermost open ``B``. Open ``B``s
    are indexed by name, and a ``B`` closed through one index is skipped lazily in the other, so each
    row costs O(1) amortized: N ``B`` and N ``E`` of different names used to scan the whole open
    stack per ``E`` (4.7 MB took ~110 s)."""
    stack: list[int] = []  # indices into rows of open B, innermost last (closed ones skipped lazily)
    by_name: dict = collections.defaultdict(list)  # name -> indices of open B of that name
    is_open: list[bool] = [False] * len(rows)
    unmatched_e = 0
    for i, row in enumerate(rows):
        if row[3] == "B":
            stack.append(i)
            by_name[_name_key(row[4])].append(i)
            is_open[i] = True
            continue
        if row[4] is not None:
            same = by_name.get(_name_key(row[4]))
            while same and not is_open[same[-1]]:
                same.pop()
            k = same.pop() if same else -1
        else:
            while stack and not is_open[stack[-1]]:
                stack.pop()
            k = stack.pop() if stack else -1
        if k < 0:
            unmatched_e += 1
            continue
        is_open[k] = False
        pairs.append((rows[k], row))
    return unmatched_e, sum(is_open)


def _name_key(name):
    """A name as a dict key: strings and numbers as themselves; a list or object (hostile, not
    hashable) by its type, so such events still pair by nesting."""
    return name if isinstance(name, (str, int, float)) else f"\0{type(name).__name__}"
