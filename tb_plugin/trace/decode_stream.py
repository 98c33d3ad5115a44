"""Decode a trace read as a stream of byte blocks, in bounded memory and on all cores.

:func:`decode_stream` gives the same :class:`~.model.Trace` as :func:`.decode.decode_trace` on the
whole document, byte for byte (string ids included), without holding the document: :mod:`.scan`
cuts the ``traceEvents`` array into chunks of whole events; their events are regrouped into the
batches of :data:`~.events.BATCH_EVENTS` that the whole-document decoder uses; each batch is decoded
into column chunks by a fresh :class:`~.columns.ColumnBuilder` (in a worker process when
``workers > 1``), and the batches are merged in document order into one builder. Merging replays
the whole-document decoder's string interning exactly: a batch's strings are interned in their
first-occurrence order within the batch, so appending the ones the merged table lacks, in that
order, gives the same ids.

Peak memory: the columns, plus one batch in flight per worker, plus a chunk or two of the
document (4.5 GB trace, 6.7 M events: 2.0 GB, and ~300 MB in each worker). The columns are
counted as they grow; past ``budget`` bytes the parse stops with a :class:`TraceReadError`
naming the budget.

Anything :mod:`.scan` cannot split raises :class:`.scan.Unstreamable`; the caller then decodes the
whole document (:func:`.decode.decode_trace`), whose errors and recoveries are the reference.

A local uncompressed file decoded on several workers with its events left in place is read by the
workers themselves (:mod:`.decode_ranges`): this process reads the document's top level, plans the
units from the events the workers found, and merges the answers in the same order, so the columns
are the same again; the 1-worker case decodes inline, as before.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Iterable, Iterator

import msgspec
import numpy as np

from ..settings import current, usable_cores
from .batching import join_batch as _joined
from .columns import ColumnBuilder, EventsSink
from .decode_ranges import RangedEvents
from .decode_workers import WorkerDied, Workers, decode_batch, run_parallel
from .errors import TraceReadError
from .events import _OBJECT_DECODER, BATCH_EVENTS
from .heap import gc_paused
from .model import STRING_ID_COLUMNS, Trace, compact_column, is_one_value
from .other_events import memory_part_bytes
from .ranges import to_document
from .scan import EventsHook, Positions, Source, Unstreamable, scan_document

CHUNK_BYTES = 16 << 20  # document bytes per chunk cut by the scanner
# Batches a worker decodes at once, one answer for them (each answer costs a pickle, a pipe transfer and
# a merge: whole batches of 2 500 events would multiply that by 4), and the first units' sizes (the
# workers get something to decode after 2 500 events are scanned, not after 10 000)
UNIT_BATCHES = 4
FIRST_UNITS = (1, 2)
# Bytes of memory one parsed event may hold beyond its columns (Python rows of memory, counter,
# flow and B/E events are counted at this flat rate)
ROW_BYTES = 200


def merge(into: ColumnBuilder, state: dict[str, Any], base: int) -> int:
    """Append a decoded batch to ``into`` (``base``: the side file's length before it); returns the
    bytes of memory it adds."""
    ids, strings, keys = into._ids, into.strings, state["keys"]
    got: list[Any] = list(map(ids.get, keys))  # (most of an answer's texts are interned already: C-speed lookups)
    if None in got:
        for i, key in enumerate(keys):  # the new texts appended in the answer's order
            if got[i] is None:
                found = ids.get(key)  # (None unless the answer named one text twice)
                if found is None:
                    found = ids[key] = len(strings)
                    strings.append(state["texts"][i])
                got[i] = found
    remap = np.zeros(len(keys) + 1, dtype=np.int32)
    remap[1:] = got
    added = 0
    for key, chunks in state["chunks"].items():
        for col in chunks:
            one = is_one_value(col)  # a constant chunk (compact_column's, or as an answer carries it): one value
            if key in STRING_ID_COLUMNS:
                col = np.broadcast_to(remap[col[:1]], col.shape) if one else remap[col]
            elif key == "src_offset" and into.sink is not None and base:
                col = np.broadcast_to(col[:1] + base, col.shape) if one else col + base
            into.chunks[key].append(col if one else compact_column(col))
            added += col.nbytes
    first = len(into.begin_end)
    for row in state["begin_end"]:
        offset = row[8] if row[8] is None or into.sink is None else row[8] + np.array([base, 0])
        into.begin_end.append(row[:7] + (first + row[7], offset))
    into.memory_parts.extend(state["memory_parts"])
    added += sum(map(memory_part_bytes, state["memory_parts"]))
    for name in ("flow_rows", "counter_rows"):
        getattr(into, name).extend(state[name])
        added += ROW_BYTES * len(state[name])
    added += ROW_BYTES * len(state["begin_end"])
    for name in ("metadata_values", "process_names", "thread_names"):
        getattr(into, name).update(state[name])
    into.phase_counts.update(state["phase_counts"])
    for name in ("no_dur", "no_ts", "bad_args", "bad_events", "string_pids"):
        setattr(into, name, getattr(into, name) + state[name])
    return added


def default_workers() -> int:
    """Worker processes for a large file: ``$KINETOSCOPE_DECODE_WORKERS``, else the usable cores (1
    inside a multiprocessing worker: the registry's pool already parses files side by side)."""
    chosen = current().decode_workers
    if chosen is not None:
        return chosen
    if _in_pool_worker():  # already one of a pool's workers (files in parallel)
        return 1
    return usable_cores()


def _in_pool_worker() -> bool:
    """Whether this process is a multiprocessing worker. A pool's worker has ``multiprocessing`` imported
    (the spawn bootstrap, or the parent that forked it), so a process without it is none: it is not
    imported for the question (~3 ms of a small file's start, its ``socket`` and ``selectors`` with it)."""
    mp = sys.modules.get("multiprocessing")
    return mp is not None and mp.parent_process() is not None


def _batches(
    source: Source,
    chunk_bytes: int,
    facts: dict,
    positions: bool = False,
    hook: EventsHook | None = None,
    locate: Positions = True,
) -> Iterable:
    """The events regrouped into the batches of :data:`BATCH_EVENTS` the whole-document decoder uses;
    with ``positions``, pairs ``(raws, where)`` (see :func:`.scan.scan_document`; events the scanner
    could not place get offset and length −1; all of them while ``locate`` says no)."""
    pending: list = []
    placed: list = []  # with positions: the pending events' (offsets, lengths, raw lengths), per chunk
    for got in scan_document(source, chunk_bytes, facts, locate if positions else False, hook):
        raws, where = got if positions else (got, None)
        if positions:
            placed.append(where if where is not None else _unplaced(raws))
        pending.extend(raws)
        if len(pending) >= BATCH_EVENTS:
            table = tuple(np.concatenate(column) for column in zip(*placed)) if positions else ()
            k = 0
            while len(pending) - k >= BATCH_EVENTS:
                batch = pending[k : k + BATCH_EVENTS]
                yield (batch, tuple(a[k : k + BATCH_EVENTS] for a in table)) if positions else batch
                k += BATCH_EVENTS
            del pending[:k]
            placed = [tuple(a[k:] for a in table)] if positions else []
    if pending:
        yield (pending, tuple(np.concatenate(column) for column in zip(*placed))) if positions else pending


def _unplaced(raws: list[msgspec.Raw]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    unknown = np.full(len(raws), -1, dtype=np.int64)
    return unknown, unknown, np.fromiter(map(len, raws), dtype=np.int64, count=len(raws))


class _Unit(list):
    """The joined batches a worker decodes at once; ``where``: per batch, where its events stand in the
    document (offsets, lengths, raw lengths), when they are placed (raw events left in place)."""

    def __init__(self) -> None:
        super().__init__()
        self.where: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []


def _units(batches: Iterable, positions: bool = False) -> Iterable[_Unit]:
    """The joined batches grouped into the units a worker decodes at once (one answer each):
    :data:`UNIT_BATCHES` batches, fewer in the first units so that both workers start early."""
    unit = _Unit()
    sizes = iter(FIRST_UNITS)
    size = next(sizes, UNIT_BATCHES)
    for batch in batches:
        if positions:
            raws, where = batch
            unit.where.append(where)
        else:
            raws = batch
        unit.append(_joined(raws))
        if len(unit) == size:
            yield unit
            unit = _Unit()
            size = next(sizes, UNIT_BATCHES)
    if unit:
        yield unit


def _held(builder: ColumnBuilder) -> int:
    """Bytes of memory the builder's columns and rows hold (rows at :data:`ROW_BYTES`)."""
    rows = sum(len(getattr(builder, name)) for name in ("flow_rows", "counter_rows", "begin_end"))
    memory = sum(map(memory_part_bytes, builder.memory_parts))
    return sum(c.nbytes for chunks in builder.chunks.values() for c in chunks) + ROW_BYTES * rows + memory


def decode_stream(
    blocks: Iterable[bytes],
    progress: Callable[[float], None] | None = None,
    events_sink: EventsSink | None = None,
    workers: int = 1,
    budget: int | None = None,
    chunk_bytes: int = CHUNK_BYTES,
) -> Trace:
    """Decode the document whose bytes ``blocks`` yields (see the module docstring). ``progress``
    receives the fraction of batches done when ``blocks`` has a ``fraction()`` method, else nothing.
    Raises :class:`.scan.Unstreamable` (parse the whole document instead) or :class:`TraceReadError`."""
    stripped = _strip_bom(blocks)
    source = Source(stripped, max_carry=max(8 * chunk_bytes, 256 << 20))
    facts: dict[str, Any] = {}
    builder = ColumnBuilder(events_sink)
    with_sink = events_sink is not None
    # raw events left in place: the sink's owner takes offsets into the file itself, when the blocks are
    # its bytes (not gzip: ``blocks.raw``, known from the first block, read before the first batch is cut)
    place = with_sink and getattr(events_sink, "in_place_path", None) is not None
    held = 0

    def check(held: int) -> None:
        # (finishing concatenates the column chunks one column at a time: little beyond their bytes)
        if budget is not None and held > budget:
            raise TraceReadError(
                f"the parsed trace needs more than {budget} bytes ({budget / (1 << 30):.3g} GiB) of memory, the "
                "budget for one trace (KINETOSCOPE_MAX_TRACE_BYTES); raise it to read this file"
            )
        if progress:
            progress(stripped.fraction())

    def take(state: dict, parts: _Unit) -> None:
        nonlocal held
        in_place = place and stripped.raw
        if in_place and not state.pop("placed", False):  # (a ranged unit's worker placed its events)
            if stripped.skipped:  # document offsets → file offsets (a byte order mark)
                for w in parts.where:
                    w[0][w[0] >= 0] += stripped.skipped
            to_document(state, parts.where)
        elif not in_place and events_sink is not None:
            for joined in parts:
                events_sink.write(joined)
        with gc_paused():  # unpickled rows and merged tables: acyclic (see heap.gc_paused)
            held += merge(builder, state, 0 if in_place else builder.sink_pos)
        joined = getattr(parts, "joined_bytes", None)  # (a unit the workers read from the file: no bytes here)
        builder.sink_pos += joined if joined is not None else sum(map(len, parts))
        check(held)

    # the events of a local uncompressed file, on several workers: read by the workers themselves
    ranged = (
        RangedEvents(
            getattr(events_sink, "in_place_path", ""),
            lambda: stripped.skipped,
            lambda: stripped.raw,
            take,
            chunk_bytes,
            FIRST_UNITS,
            UNIT_BATCHES,
        )
        if place and workers > 1
        else None
    )
    if ranged is not None:
        stripped.override = ranged.fraction
    batches = _batches(source, chunk_bytes, facts, place, ranged, lambda: stripped.raw)
    if workers <= 1 and not place:
        for raws in batches:  # serially, the batches go straight into the builder, as in decode_trace
            builder.add_batch(raws)
            check(_held(builder))
    elif workers <= 1:
        for unit in _units(batches, place):
            take(decode_batch(unit, True), unit)
    else:
        try:
            pool = Workers(workers)
        except WorkerDied:  # (no worker could start: decoded here)
            for unit in _units(batches, place):
                take(decode_batch(unit, with_sink), unit)
        else:
            with pool:
                if ranged is not None:
                    ranged.pool = pool
                run_parallel(_units(batches, place), workers, with_sink, take, pool)
    if progress:
        progress(1.0)
    trace = _finish(builder, facts)
    if place and stripped.raw:
        trace.meta["events_in_place"] = True
    return trace


class _BomStripped:
    """``blocks`` without a leading UTF-8 byte order mark (keeps a ``fraction()`` method; ``skipped``:
    the bytes dropped; ``raw``: whether the blocks are the file's own bytes, as ``blocks`` says)."""

    def __init__(self, blocks: Iterable[bytes]) -> None:
        self.blocks = blocks
        self.skipped = 0
        self.override: Callable[[], float] | None = None  # the progress, when not the blocks' (ranged parse)

    def __iter__(self) -> Iterator[bytes]:
        first = True
        for block in self.blocks:
            if first and block:
                first = False
                if block[:3] == b"\xef\xbb\xbf":
                    block = block[3:]
                    self.skipped = 3
            yield block

    @property
    def raw(self) -> bool:
        return bool(getattr(self.blocks, "raw", False))

    def fraction(self) -> float:
        if self.override is not None and self.override() > 0:
            return self.override()
        fraction = getattr(self.blocks, "fraction", None)
        return fraction() if fraction is not None else 0.0


def _strip_bom(blocks: Iterable[bytes]) -> _BomStripped:
    """``blocks`` without a leading UTF-8 byte order mark (see :class:`_BomStripped`)."""
    return _BomStripped(blocks)


def _finish(builder: ColumnBuilder, facts: dict) -> Trace:
    try:
        head = _OBJECT_DECODER.decode(facts["top"])
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeDecodeError) as exc:
        raise Unstreamable(f"top-level keys: {exc}") from None
    top = {f: getattr(head, f) for f in head.__struct_fields__ if f != "traceEvents"}
    warnings = []
    if facts["cut_off"] is not None:
        total = sum(builder.phase_counts.values()) + builder.bad_events
        length = facts["length"] + 2 * facts["nonfinite"]
        warnings.append(
            f"the trace array was cut off (file ends at byte {length} without its closing ']'); "
            f"recovered {total} complete events"
        )
    if facts["nonfinite"]:
        warnings.append(
            f"{facts['nonfinite']} bare NaN/Infinity literals (not valid JSON) were read as the non-finite "
            "numbers they stand for"
        )
    form = facts["form"]
    with gc_paused():
        trace = builder.finish(top if form == "object" else {}, form)
    trace.warnings[:0] = warnings
    return trace


__all__ = ["decode_stream", "default_workers", "Unstreamable"]
