"""Decode Chrome-trace JSON bytes into a columnar :class:`~tb_plugin.trace.model.Trace`.

Decoding is two-pass and never builds a dict per event:

1. msgspec splits the document into the top-level facts and a list of ``msgspec.Raw`` slices, one
   per event (zero-copy views into the input buffer);
2. the slices are decoded in batches into small typed structs that keep only the fields we use,
   and each batch is turned into numpy columns at once, so peak memory stays near the input size.

Both forms are accepted: the object form ``{"traceEvents": [...], ...}`` and the array form
``[{...}, ...]``, whose closing ``]`` may be missing (the Chrome trace format allows that). Bare
``NaN``/``Infinity`` literals, which some writers emit although JSON has none, are quoted and read
as those numbers (see :mod:`.nonfinite`), with a warning.
"""

from __future__ import annotations

import collections
import re
from typing import Any, Callable

import msgspec
import numpy as np

from . import jsonsafe
from .categories import Kind, is_composer_trainer_event, kind_of_category
from .devices import unplaceable_warning
from .errors import TraceReadError
from .model import COUNTER_COLUMNS, EVENT_COLUMNS, FLOW_COLUMNS, MEMORY_COLUMNS, DeviceInfo, Table, Trace
from .nonfinite import quote_nonfinite, token_at

BATCH_EVENTS = 100_000


class _Args(msgspec.Struct):
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
    input_dims: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw, name="Input Dims")
    input_dims_old: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw, name="Input dims")
    call_stack: Any = msgspec.field(default=None, name="Call stack")
    flops: Any = None
    python_id: Any = msgspec.field(default=None, name="Python id")
    python_parent_id: Any = msgspec.field(default=None, name="Python parent id")
    input_types: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw, name="Input type")
    collective: Any = msgspec.field(default=None, name="Collective name")
    in_msg_nelems: Any = msgspec.field(default=None, name="In msg nelems")
    out_msg_nelems: Any = msgspec.field(default=None, name="Out msg nelems")
    dtype: Any = None
    group_size: Any = msgspec.field(default=None, name="Group size")
    process_group: Any = msgspec.field(default=None, name="Process Group Name")
    group_ranks: Any = msgspec.field(default=None, name="Process Group Ranks")
    seq: Any = msgspec.field(default=None, name="Seq")  # per-process-group collective sequence number
    epoch: Any = None  # Composer engine events
    batch: Any = None
    value: Any = None  # metadata events such as clock_sync_timestamp_us


class _Event(msgspec.Struct):
    ph: Any = None
    cat: Any = None
    name: Any = None
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    args: _Args | None = None
    id: Any = None  # flow events


class _LooseEvent(_Event):
    """Fallback when a batch has an odd-typed field: args stay generic Python objects."""

    args: Any = None


class _ObjectForm(msgspec.Struct):
    traceEvents: list[msgspec.Raw] | msgspec.UnsetType = msgspec.UNSET
    deviceProperties: Any = None
    computeProperties: Any = None
    distributedInfo: Any = None
    schemaVersion: Any = None
    displayTimeUnit: Any = None
    traceName: Any = None
    baseTimeNanoseconds: Any = None
    cuda_runtime_version: Any = None
    cuda_driver_version: Any = None
    hip_runtime_version: Any = None
    roctracer_version: Any = None
    rocprof_version: Any = None
    pytorch_version: Any = None  # not written by Kineto today; kept if a tool adds it


_BATCH_DECODER = msgspec.json.Decoder(list[_Event])
_ONE_DECODER = msgspec.json.Decoder(_LooseEvent)
_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])
_OBJECT_DECODER = msgspec.json.Decoder(_ObjectForm)


def decode_trace(data: bytes | bytearray | memoryview, progress: Callable[[float], None] | None = None,
                 events_sink=None) -> Trace:
    """Decode a whole trace document. Raises :class:`TraceReadError` when it is not a trace.

    With ``events_sink`` (a binary file), the raw JSON of every event is written there and each
    duration event records where (``src_offset``/``src_length``), so its full args can be read back.
    """
    buf = memoryview(data)
    if buf[:3] == b"\xef\xbb\xbf":  # a UTF-8 byte order mark (Windows editors and tools write one)
        buf = buf[3:]
    first = _first_non_space(buf)
    if first is None:
        raise TraceReadError("file holds only whitespace: not a JSON trace")
    warnings: list[str] = []
    if first not in (ord("{"), ord("[")):
        raise TraceReadError(f"not a JSON trace: the document starts with {chr(first)!r}, expected '{{' or '['")
    try:
        raws, top, form = _split(buf, first, warnings)
    except _NonFiniteLiteral as exc:
        # bare NaN/Infinity (not JSON, but some writers emit them): quote them and decode again; a
        # valid document never comes here, so it pays nothing for this
        quoted = quote_nonfinite(buf)
        if quoted is None:
            raise exc.error from None
        data, count = quoted
        buf = memoryview(data)
        try:
            raws, top, form = _split(buf, first, warnings)
        except _NonFiniteLiteral as again:  # cannot happen once quoted; never let it escape as a crash
            raise again.error from None
        warnings.append(f"{count} bare NaN/Infinity literals (not valid JSON) were read as the non-finite numbers "
                        "they stand for")
    builder = _ColumnBuilder(events_sink)
    total = len(raws)
    for start in range(0, total, BATCH_EVENTS):
        builder.add_batch(raws[start : start + BATCH_EVENTS])
        if progress:
            progress(min(1.0, (start + BATCH_EVENTS) / max(total, 1)))
    del raws
    trace = builder.finish(top, form)
    trace.warnings[:0] = warnings
    return trace


def _split(buf: memoryview, first: int, warnings: list[str]) -> tuple[list[msgspec.Raw], dict[str, Any], str]:
    if first == ord("{"):
        raws, top = _split_object_form(buf)
        return raws, top, "object"
    raws, recovered = _split_array_form(buf)
    if recovered:
        warnings.append(recovered)
    return raws, {}, "array"


def _first_non_space(buf: memoryview) -> int | None:
    for i in range(min(len(buf), 1 << 16)):
        b = buf[i]
        if b not in (0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF):  # whitespace and a UTF-8 BOM
            return b
    return None


def _decode_error(exc: Exception) -> TraceReadError:
    return TraceReadError(f"invalid JSON: {exc}")


class _NonFiniteLiteral(Exception):
    """A strict decode stopped at a bare NaN/Infinity literal; ``error`` is what to raise if quoting
    them does not help."""

    def __init__(self, error: TraceReadError) -> None:
        super().__init__(str(error))
        self.error = error


_ERROR_BYTE = re.compile(r"\(byte (\d+)\)")


def _syntax_error(exc: msgspec.DecodeError, buf: memoryview) -> Exception:
    """The error to raise for a malformed document: :class:`_NonFiniteLiteral` when the parser stopped
    at a bare NaN/Infinity literal, else a :class:`TraceReadError`."""
    error = _decode_error(exc)
    at = _ERROR_BYTE.search(str(exc))
    if at and token_at(buf, int(at.group(1))):
        return _NonFiniteLiteral(error)
    return error


# Beyond msgspec's DecodeError, hostile JSON can raise these while decoding: nesting deeper than the
# recursion limit, and invalid UTF-8 inside a string.
_HOSTILE = (RecursionError, UnicodeDecodeError)


def _hostile_error(exc: Exception) -> TraceReadError:
    if isinstance(exc, RecursionError):
        return TraceReadError("invalid JSON: arrays or objects nested too deeply to decode")
    return TraceReadError(f"invalid UTF-8 in the JSON text: {exc}")


def _split_object_form(buf: memoryview) -> tuple[list[msgspec.Raw], dict[str, Any]]:
    try:
        head = _OBJECT_DECODER.decode(buf)
    except msgspec.ValidationError as exc:
        raise TraceReadError(f"'traceEvents' is not a list of events: {exc}") from None
    except msgspec.DecodeError as exc:
        raise _syntax_error(exc, buf) from None
    except _HOSTILE as exc:
        raise _hostile_error(exc) from None
    if head.traceEvents is msgspec.UNSET:
        raise TraceReadError("JSON object has no 'traceEvents' key: not a Chrome/Kineto trace")
    top = {f: getattr(head, f) for f in head.__struct_fields__ if f != "traceEvents"}
    return head.traceEvents, top


def _split_array_form(buf: memoryview) -> tuple[list[msgspec.Raw], str | None]:
    try:
        return _RAW_LIST.decode(buf), None
    except msgspec.ValidationError as exc:
        raise TraceReadError(f"unexpected trace layout: {exc}") from None
    except msgspec.DecodeError as exc:
        first_error = exc
    except _HOSTILE as exc:
        raise _hostile_error(exc) from None
    stop = _syntax_error(first_error, buf)
    if isinstance(stop, _NonFiniteLiteral):
        raise stop from None  # not a cut-off file (quoting the literals may still leave one)
    # The array form may lack its closing bracket, or end mid-event when a job was killed:
    # keep the complete events before the cut.
    data = bytes(buf)
    end = len(data)
    for _ in range(8):
        candidate = data[:end].rstrip().rstrip(b",").rstrip()
        try:
            raws = _RAW_LIST.decode(candidate + b"]")
        except _HOSTILE as exc:
            raise _hostile_error(exc) from None
        except msgspec.DecodeError:
            end = data.rfind(b"}", 0, max(len(candidate) - 1, 0))
            if end < 0:
                break
            end += 1
            continue
        return raws, (
            f"the trace array was cut off (file ends at byte {len(data)} without its closing ']'); "
            f"recovered {len(raws)} complete events"
        )
    raise _decode_error(first_error)


# --------------------------------------------------------------------------------------------
# Batches of events → columns
# --------------------------------------------------------------------------------------------

_EVENT_PHASES = ("X",)
_MAX_TIME = 1e30  # µs; a timestamp or duration beyond this is garbage (now is about 1.7e15 µs since 1970)
_SKIPPED = "\x00undecodable"  # the phase of a placeholder for an event that could not be decoded
_INSTANT_PHASES = ("i", "I")
_FLOW_PHASES = ("s", "t", "f")


def _float_column(values: list) -> np.ndarray:
    """float64 column; None and unparseable values become NaN (numeric strings are parsed)."""
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


def _ranks_count(ranks: Any) -> int | None:
    """The number of ranks in a ``Process Group Ranks`` arg (``"[0, 1, 2]"`` or a list); None if absent."""
    if isinstance(ranks, list):
        return len(ranks) or None
    if isinstance(ranks, str) and ranks.startswith("[") and ranks.endswith("]"):
        inner = ranks[1:-1].strip()
        return inner.count(",") + 1 if inner else None
    return None


def _int_column(values: list, dtype=np.int64) -> np.ndarray:
    """Integer column; None and unparseable values become -1."""
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
            out[i] = int(values[i])
        except (TypeError, ValueError, OverflowError):
            out[i] = -1
    return out


def _list_text(value: Any) -> str | None:
    """``[13, 1, 1]`` → ``"[13, 1, 1]"``; None stays None."""
    if value is None:
        return None
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)


def _json_text(raw: bytes) -> str:
    try:
        return repr(msgspec.json.decode(raw)) if raw.strip()[:1] in (b"[", b"{") else raw.decode("utf-8", "replace")
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):  # too deep to show, or not UTF-8
        return raw.decode("utf-8", "replace")


_DEVICE_PID = re.compile(r"^\s*(?:mtia|gpu|xpu|hpu|device)[ _:#-]*(\d{1,6})\s*$", re.IGNORECASE)


def _device_of_pid(pid) -> int | None:
    """The device index of a string pid that names a device ("MTIA 0", "GPU 1"), else None."""
    if isinstance(pid, str):
        m = _DEVICE_PID.match(pid)
        if m:
            return int(m.group(1))
    return None


def _grid_size(grid: Any) -> int:
    try:
        x, y, z = grid
        size = int(x) * int(y) * int(z)
    except (TypeError, ValueError, OverflowError):
        return -1
    return size if -1 <= size < 2**63 else -1


class _ColumnBuilder:
    """Accumulates decoded batches; string id 0 is reserved for "missing"."""

    def __init__(self, events_sink=None) -> None:
        self.sink = events_sink
        self.sink_pos = 0
        self.strings: list[str] = [""]
        self._ids: dict[Any, int] = {None: 0}
        self.chunks: dict[str, list[np.ndarray]] = {k: [] for k in EVENT_COLUMNS}
        self.memory_rows: list[tuple] = []
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
    def intern(self, values: list) -> np.ndarray:
        """String-table ids of ``values`` (ints and other scalars are interned as their text)."""
        table = self._ids
        try:
            ids = list(map(table.get, values))  # C-speed lookups; misses come back as None
        except TypeError:  # an unhashable value (a list where a name should be): use its text
            values = [v if v is None or isinstance(v, (str, int, float)) else str(v) for v in values]
            ids = list(map(table.get, values))
        if None in ids:
            # first-occurrence order (not set order, which varies between processes): string ids
            # must not depend on PYTHONHASHSEED, or a cached parse and a fresh one would differ
            for v in dict.fromkeys(v for v, got in zip(values, ids) if got is None):
                table[v] = len(self.strings)
                self.strings.append(v if isinstance(v, str) else str(v))
            ids = list(map(table.get, values))
        return np.array(ids, dtype=np.int32)

    def intern_json(self, raws: list) -> np.ndarray:
        """String ids for raw JSON values (``msgspec.Raw``), shown as Python-style text."""
        table = self._json_ids
        keys = [bytes(r) if len(r) else None for r in raws]
        texts = {}
        for k in dict.fromkeys(keys):  # first-occurrence order: deterministic ids
            if k is not None and k not in table:
                texts[k] = _json_text(k)
        if texts:
            ids = self.intern(list(texts.values()))
            table.update(zip(texts.keys(), ids.tolist()))
        table_get = table.get
        return np.array([table_get(k, 0) if k is not None else 0 for k in keys], dtype=np.int32)

    # -- batches ---------------------------------------------------------------------------
    def add_batch(self, raws: list[msgspec.Raw]) -> None:
        joined = b"[" + b",".join(raws) + b"]"
        events = self._decode_batch(joined, raws)
        offsets = self._sink(joined, raws)
        phases = [e.ph for e in events]
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
            x_index = [i for i, ph in enumerate(phases) if ph == "X"]
            xs = [events[i] for i in x_index]
            x_offsets = offsets[x_index] if offsets is not None else None
            for i, (e, ph) in enumerate(zip(events, phases)):
                if ph is _SKIPPED:
                    continue
                if ph == "C":
                    self._counter(e, raws[i])
                    continue
                if ph in _FLOW_PHASES:
                    if e.cat == "fwdbwd":
                        self.flow_rows.append((e.id, 0 if ph == "s" else 1, e.ts, e.pid, e.tid))
                elif ph != "X":
                    self._other(e, ph, offsets[i] if offsets is not None else None)
        if xs:
            self._add_complete_events(xs, x_offsets)

    def _sink(self, joined: bytes, raws: list[msgspec.Raw]) -> np.ndarray | None:
        """Write the batch to the events side file; return ``[offset, length]`` rows per event."""
        if self.sink is None:
            return None
        lengths = np.fromiter((len(r) for r in raws), dtype=np.int64, count=len(raws))
        starts = 1 + np.concatenate([[0], np.cumsum(lengths + 1)[:-1]]) + self.sink_pos
        self.sink.write(joined)
        self.sink_pos += len(joined)
        return np.stack([starts, lengths], axis=1)

    def _decode_batch(self, joined: bytes, raws: list[msgspec.Raw]) -> list[_Event]:
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
                events.append(
                    _Event(loose.ph, loose.cat, loose.name, loose.pid, loose.tid, loose.ts, loose.dur, None)
                )
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

    def _other(self, ev: _Event, ph: Any, offset=None) -> None:
        if ph in _INSTANT_PHASES:
            if ev.name == "[memory]" and ev.args is not None:
                a = ev.args
                self.memory_rows.append(
                    (ev.ts, ev.pid, ev.tid, a.bytes, a.addr, a.total_allocated, a.total_reserved, a.device_type, a.device_id)
                )
        elif ph == "B" or ph == "E":
            self.begin_end.append((ev.pid, ev.tid, ev.ts, ph, ev.name, ev.cat, ev.args, len(self.begin_end),
                                   offset))
        elif ph == "M" and ev.args is not None and isinstance(ev.args.value, (int, float, str)) and isinstance(
                ev.name, str):
            self.metadata_values[ev.name] = ev.args.value  # e.g. Composer's clock_sync_timestamp_us, global_rank
        elif ph == "M" and ev.args is not None and isinstance(ev.args.name, str):
            if ev.name == "process_name":
                self.process_names[str(ev.pid)] = ev.args.name
            elif ev.name == "thread_name":
                self.thread_names[f"{ev.pid}/{ev.tid}"] = ev.args.name

    def _add_complete_events(self, xs: list[_Event], offsets=None) -> None:
        none = _Args()
        args = [e.args if e.args is not None else none for e in xs]
        ts = _float_column([e.ts for e in xs])
        dur = _float_column([e.dur for e in xs])
        self._append(
            cat=self.intern([e.cat for e in xs]),
            name=self.intern([e.name for e in xs]),
            pid_values=[e.pid for e in xs],
            tid=self.intern([e.tid for e in xs]),
            ts=ts,
            dur=dur,
            args=args,
            offsets=offsets,
        )

    def _append(self, *, cat, name, pid_values, tid, ts, dur, args, offsets=None) -> None:
        n = len(ts)
        for i in [i for i, p in enumerate(pid_values) if isinstance(p, str)]:
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
        external = _int_column([a.external_id for a in args])
        old_external = _int_column([a.external_id_old for a in args])
        external = np.where(external >= 0, external, old_external)
        device = _int_column([a.device for a in args], np.int32)
        pid_numeric = _int_column([p if isinstance(p, (int, float)) else _device_of_pid(p) for p in pid_values], np.int32)
        device = np.where(device >= 0, device, pid_numeric)
        columns = {
            "kind": np.zeros(n, dtype=np.uint8),  # filled in finish() from the category table
            "cat": cat,
            "name": name,
            "pid": self.intern(pid_values),
            "tid": tid,
            "ts": ts,
            "dur": dur,
            "correlation": _int_column([a.correlation for a in args]),
            "external_id": external,
            "device": device,
            "stream": _int_column([a.stream for a in args]),
            "grid_size": np.array([_grid_size(a.grid) if a.grid is not None else -1 for a in args], dtype=np.int64),
            "blocks_per_sm": _float_column([a.blocks_per_sm for a in args]),
            "occupancy_pct": _float_column([a.occupancy for a in args]),
            "grid": self.intern([_list_text(a.grid) if a.grid is not None else None for a in args]),
            "block": self.intern([_list_text(a.block) if a.block is not None else None for a in args]),
            "registers": _int_column([a.registers for a in args], np.int32),
            "shared_memory": _int_column([a.shared_memory for a in args]),
            "input_dims": self.intern_json([a.input_dims if len(a.input_dims) else a.input_dims_old for a in args]),
            "call_stack": self.intern([a.call_stack if isinstance(a.call_stack, str) else None for a in args]),
            "flops": _float_column([a.flops for a in args]),
            "python_id": _int_column([a.python_id for a in args]),
            "python_parent_id": _int_column([a.python_parent_id for a in args]),
            "input_types": self.intern_json([a.input_types for a in args]),
            "collective": self.intern([a.collective if isinstance(a.collective, str) else None for a in args]),
            "in_msg_nelems": _int_column([a.in_msg_nelems for a in args]),
            "out_msg_nelems": _int_column([a.out_msg_nelems for a in args]),
            "dtype": self.intern([a.dtype if isinstance(a.dtype, str) else None for a in args]),
            "group_size": _int_column([a.group_size if a.group_size is not None else _ranks_count(a.group_ranks)
                                       for a in args], np.int32),
            "seq": _int_column([a.seq for a in args]),
            "process_group": self.intern([str(a.process_group) if a.process_group is not None else None for a in args]),
            "epoch": _int_column([a.epoch for a in args], np.int32),
            "batch": _int_column([a.batch for a in args]),
            "src_offset": offsets[:, 0] if offsets is not None else np.full(n, -1, dtype=np.int64),
            "src_length": offsets[:, 1].astype(np.int32) if offsets is not None else np.full(n, -1, dtype=np.int32),
        }
        keep = ~missing_ts
        for key, col in columns.items():
            self.chunks[key].append(col if keep.all() else col[keep])

    # -- B/E pairs ---------------------------------------------------------------------------
    def _pair_begin_end(self) -> tuple[int, int]:
        """Match ``B``/``E`` events per (pid, tid) by nesting and name; return (unmatched B, unmatched E)."""
        if not self.begin_end:
            return 0, 0
        by_thread: dict[tuple, list[tuple]] = collections.defaultdict(list)
        for row in self.begin_end:
            by_thread[(str(row[0]), str(row[1]))].append(row)
        pairs = []
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
                offsets=np.array([b[8] if b[8] is not None else (-1, -1) for b in begins], dtype=np.int64).reshape(-1, 2),
            )
        return unmatched_b, unmatched_e

    # -- the result ----------------------------------------------------------------------------
    def finish(self, top: dict[str, Any], form: str) -> Trace:
        unmatched_b, unmatched_e = self._pair_begin_end()
        cols = {
            k: (np.concatenate(v) if v else np.zeros(0, dtype=EVENT_COLUMNS[k])).astype(EVENT_COLUMNS[k], copy=False)
            for k, v in self.chunks.items()
        }
        self.chunks = {}
        order = np.argsort(cols["ts"], kind="stable")
        if len(order) and not np.all(order[1:] > order[:-1]):
            cols = {k: v[order] for k, v in cols.items()}
        kind_table, known = _kind_table(self.strings)
        cols["kind"] = kind_table[cols["cat"]]
        # old exports without categories (pre-Kineto Lightning): ATen-style names are operators
        op_like = np.array([s.startswith(_OP_NAME_PREFIXES) for s in self.strings] + [False], dtype=bool)
        cols["kind"] = np.where((cols["cat"] == 0) & op_like[cols["name"]], np.uint8(Kind.CPU_OP), cols["kind"])
        is_device = np.isin(cols["kind"], (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET, Kind.GPU_USER_ANNOTATION))
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
        # pid/tid 25738 and "25738" name the same thread: one id per text
        canon = self._canonical_ids()
        for table in (cols, memory.columns, flows.columns):
            for key in ("pid", "tid"):
                if len(table[key]):
                    table[key] = canon[table[key]]
        return Trace(
            strings=self.strings,
            events=Table(cols),
            memory=memory,
            flows=flows,
            counters=self._counter_table(),
            devices=_devices(top),
            # integers beyond 64 bits become decimal strings here, so the trace is the same from the cache
            distributed=jsonsafe.clean(top["distributedInfo"]) if isinstance(top.get("distributedInfo"), dict) else None,
            meta=jsonsafe.clean(meta),
            warnings=warnings,
            notes=notes,
        )

    def _counter_table(self) -> Table:
        if not self.counter_rows:
            return Table.empty(COUNTER_COLUMNS)
        ts, series, value = (list(c) for c in zip(*self.counter_rows))
        cols = {"ts": _float_column(ts), "series": self.intern(series), "value": _float_column(value)}
        order = np.argsort(cols["ts"], kind="stable")
        return Table({k: v[order] for k, v in cols.items()})

    def _canonical_ids(self) -> np.ndarray:
        """For every string id, the first id with the same text."""
        first: dict[str, int] = {}
        return np.array([first.setdefault(text, i) for i, text in enumerate(self.strings)], dtype=np.int32)

    def _memory_table(self) -> Table:
        if not self.memory_rows:
            return Table.empty(MEMORY_COLUMNS)
        fields = list(zip(*self.memory_rows))
        cols = {"ts": _float_column(list(fields[0])), "pid": self.intern(list(fields[1])), "tid": self.intern(list(fields[2]))}
        for key, values in zip(("bytes", "addr", "total_allocated", "total_reserved", "device_type", "device_id"), fields[3:]):
            cols[key] = _int_column(list(values), MEMORY_COLUMNS[key])
        order = np.argsort(cols["ts"], kind="stable")
        return Table({k: v[order] for k, v in cols.items()})

    def _flow_table(self) -> Table:
        if not self.flow_rows:
            return Table.empty(FLOW_COLUMNS)
        ids, phase, ts, pid, tid = (list(f) for f in zip(*self.flow_rows))
        cols = {"id": _int_column(ids), "phase": np.array(phase, dtype=np.uint8), "ts": _float_column(ts),
                "pid": self.intern(pid), "tid": self.intern(tid)}
        return Table(cols)

    def _warnings(self, cols, known, unmatched_b, unmatched_e) -> tuple[list[str], list[str]]:
        """``(warnings, notes)``: warnings say what changes what the user sees (events skipped or
        guessed at, categories nothing recognizes); notes count normal content that needs no action
        (events without a duration, Composer's own trainer spans)."""
        out, notes = [], []
        cats = cols["cat"]
        # Composer's trainer spans, whatever their category: Composer's, not unknown content
        composer_name = np.array([is_composer_trainer_event(s) for s in self.strings] + [False], dtype=bool)
        composer = composer_name[cols["name"]] & ~known[cats] if len(cats) else np.zeros(0, dtype=bool)
        if composer.any():
            notes.append(f"{int(composer.sum())} Composer trainer events (engine, callback and dataloader spans); "
                         "they are analysed as host (CPU) work")
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
            out.append(f"{total} events in unrecognized categories ({listed}{more}); they are analysed as host (CPU) work")
        if self.no_dur:
            out.append(f"{self.no_dur} complete ('X') events had no 'dur' (or an unusable one: NaN, infinite, beyond 1e30); taken as 0 µs")
        if self.no_ts:
            out.append(f"{self.no_ts} duration events had no usable 'ts' and were skipped")
        if self.bad_events:
            out.append(f"{self.bad_events} events could not be decoded (invalid UTF-8, nesting too deep or numbers "
                       "out of range) and were skipped")
        if self.bad_args:
            out.append(f"{self.bad_args} events had malformed 'args' (not an object or odd types); their args were ignored")
        if unmatched_b or unmatched_e:
            out.append(f"{unmatched_b} 'B' events without an 'E' and {unmatched_e} 'E' events without a 'B' were skipped")
        if self.string_pids:
            out.append(f"{self.string_pids} duration events have a string 'pid' (kept as a label)")
        no_duration = {str(k): v for k, v in self.phase_counts.items() if k not in ("X", "B", "E")}
        if no_duration:
            listed = ", ".join(f"{_PHASE_NAMES.get(k, repr(k))} ×{v}" for k, v in sorted(no_duration.items(), key=lambda kv: -kv[1]))
            notes.append(f"{sum(no_duration.values())} events carry no duration ({listed}); they are not step work")
        return out, notes


_OP_NAME_PREFIXES = ("aten::", "prim::", "c10d::", "torch::", "quantized::", "cudnn::")
_PHASE_NAMES = {"i": "instant", "I": "instant", "s": "flow start", "t": "flow step", "f": "flow end",
                "M": "metadata", "C": "counter", "b": "async begin", "e": "async end", "n": "async instant"}

_ONE_BATCH_DECODER = msgspec.json.Decoder(_Event)


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
    out = []
    if not isinstance(raw, list):
        return out
    for entry in raw:
        if not isinstance(entry, dict):
            continue
        try:
            dev_id = int(entry.get("id"))
        except (TypeError, ValueError, OverflowError):
            continue
        if not -(2**31) <= dev_id < 2**31:  # beyond 32 bits is no device index
            continue

        def num(*keys):
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


def _meta(top: dict[str, Any], form: str, strings: list[str], cols: dict, phases) -> dict[str, Any]:
    cats = {strings[i] for i in np.unique(cols["cat"])} if len(cols["cat"]) else set()
    if cats & {"Operator", "Runtime", "Kernel", "Memcpy", "Memset"}:
        fmt = "kineto-2021"
    elif cats & {"cpu_op", "cuda_runtime", "kernel", "gpu_memcpy", "user_annotation", "python_function"}:
        fmt = "pytorch-2.x"
    else:
        fmt = "chrome-array" if form == "array" else "chrome"
    meta = {k: v for k, v in top.items() if v is not None and isinstance(v, (str, int, float))}
    meta.update(form=form, trace_format=fmt, event_count=int(len(cols["ts"])), phase_counts=dict(phases))
    return meta


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
