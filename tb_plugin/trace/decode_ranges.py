"""The ranged parse: the decode workers read a local uncompressed trace's events themselves.

When :func:`.decode_stream.decode_stream` decodes a local uncompressed file on several workers with
its events left in place, the main process reads only the top level of the document. At the
``traceEvents`` array (:func:`.scan.scan_document` calls :class:`RangedEvents` there) it splits the
rest of the file into byte ranges, one or more per worker, and:

1. the workers find each range's events (:func:`.ranges.scan_range`: offsets and lengths, every cut
   checked by a strict decode); the main process concatenates them;
2. it groups them into the batches of :data:`~.events.BATCH_EVENTS` and the units the streamed parse
   uses, in document order, and the workers read and decode each unit from the file
   (:func:`.ranges.span_batches`); the answers are merged in order, exactly as the streamed parse
   merges them, so the columns are byte for byte the same. A unit is sent as soon as the ranges taken
   so far (in order) hold all its events (:class:`_Plan`): a worker that found its ranges' events
   decodes while the other still scans;
3. the main process reads the document again from the array's closing ``]`` for the keys after it.

So the main process neither reads, scans nor copies the events (on a 16-core host the streamed
parse stopped gaining past 8 workers: its main process read and scanned every byte). When a range
cannot be read this way (it does not decode, holds bare ``NaN`` literals, or events the scanner would
not place) the events are scanned by the main process as before (the streamed parse), from the
array's first element: nothing was merged yet.
"""

from __future__ import annotations

import collections
import os
from typing import Any, Callable, Iterator

import numpy as np

from .decode_workers import DEPTH, PENDING, Call, Workers, run_parallel
from .events import BATCH_EVENTS
from .scan import Source

RANGE_BYTES = 64 << 20  # the most document bytes one worker scans in one range (first pass)
MIN_EVENTS_BYTES = 8 << 20  # an events array smaller than this is scanned by the main process
READ_BYTES = 8 << 20  # blocks of the document after the events array


class SpanUnit(Call):
    """One unit of the second pass: the bytes of its joined batches (``joined_bytes``); the worker places
    its events in the file itself."""

    def __init__(self, args: tuple, joined_bytes: int) -> None:
        super().__init__("decode_span", *args)
        self.joined_bytes = joined_bytes


class RangedEvents:
    """The hook :func:`.scan.scan_document` calls at the ``traceEvents`` array: the ranged parse of it
    (see the module docstring), or None to let the scanner read the array itself.

    ``path``: the file; ``skip()``: bytes before the document (a byte order mark), known once the first
    block is read; ``raw()``: whether the blocks are the file's own bytes; ``take(state, unit)``: the
    streamed parse's merge; ``pool``: the started workers (set before the scan reaches the array)."""

    def __init__(
        self,
        path: str,
        skip: Callable[[], int],
        raw: Callable[[], bool],
        take: Callable[[dict, Any], None],
        chunk_bytes: int,
        first_units: tuple[int, ...],
        unit_batches: int,
    ) -> None:
        self.path, self.skip, self.raw, self.take = path, skip, raw, take
        self.chunk_bytes, self.first_units, self.unit_batches = chunk_bytes, first_units, unit_batches
        self.pool: Workers | None = None
        self.done = 0  # units merged, of ``total``: the parse's progress
        self.total = 0

    def fraction(self) -> float:
        return self.done / self.total if self.total else 0.0

    def __call__(self, source: Source, array_form: bool) -> Iterator | None:
        pool = self.pool
        if pool is None or pool.broken or not self.raw() or source.peek() in (None, ord("]")):
            return None
        skip = self.skip()
        start = source.offset  # the first element
        try:
            size = os.path.getsize(self.path) - skip
        except OSError:
            return None
        if size - start < MIN_EVENTS_BYTES:
            return None
        end = self._parse(pool, skip, start, size)
        if end is None:
            return None
        _reposition(source, self.path, skip, end)
        return iter(())

    def _parse(self, pool: Workers, skip: int, start: int, size: int) -> int | None:
        """Both passes on the workers, the second begun as soon as the first's answers (taken in order)
        place a whole unit, not once every range is found (a worker that finished its ranges waited for
        the other's): the offset after the array's ``]``, or None when a range cannot be read this way
        (known when the last range's answer is taken, before any unit's answer is: nothing merged)."""
        n = len(pool.procs)
        count = n * max(1, -(-(size - start) // (n * RANGE_BYTES)))
        bounds = [start + (size - start) * i // count for i in range(count)]
        calls = [
            Call(
                "scan_range",
                self.path,
                skip,
                bounds[i],
                bounds[i + 1] if i + 1 < count else None,
                i == 0,
                self.chunk_bytes,
            )
            for i in range(count)
        ]
        plan = _Plan(start, count, self.first_units, self.unit_batches, n * DEPTH * 2)

        def units() -> Iterator[Any]:  # (Calls, and PENDING)
            yield from calls
            while True:
                got = plan.next_unit()
                if got is None:
                    return
                if got is PENDING:
                    yield PENDING
                    continue
                sizes, offs, lens = got
                joined = sum(2 + max(size - 1, 0) for size in sizes) + int(lens.sum())
                yield SpanUnit((self.path, skip, offs, lens, sizes), joined)

        def take(state: dict, unit: Call) -> None:
            if not isinstance(unit, SpanUnit):  # a range's events (the first pass)
                plan.add(state)
                self.total = plan.total
            elif not plan.failed:  # (a unit planned before a later range failed: dropped)
                self.take(state, unit)
                self.done += 1

        run_parallel(units(), n, True, take, pool)
        return None if plan.failed else plan.end


class _Plan:
    """The second pass's units (those of the streamed parse: :func:`_units`), planned from the first
    pass's answers as they are taken, range by range in order; each range's arrays are dropped once
    its events are planned."""

    def __init__(
        self, start: int, ranges: int, first_units: tuple[int, ...], unit_batches: int, last_single: int = 0
    ) -> None:
        self.ranges, self.taken = ranges, 0
        self.pieces: collections.deque = collections.deque()  # (first event, offsets, lengths) per range
        self.known = 0  # events of the ranges taken
        self.last = start - 1  # the last event's offset so far (every next one must be larger)
        self.failed = False
        self.end: int | None = None  # the offset after the array's "]", once every range is taken
        self.total = 0  # units, once every range is taken
        self.steps, self.unit_batches = iter(first_units), unit_batches
        self.step: int | None = None  # batches of the next unit
        self.first = 0  # the next unit's first event
        self.first_units = first_units
        self.last_single = last_single  # the last batches, one unit each (_units)

    def add(self, answer: dict) -> None:
        """The next range's answer (``scan_range``'s)."""
        if self.failed:
            return
        if not answer.get("ok") or not _in_order([answer["offsets"]], self.last + 1):  # (a guard)
            self.failed = True
            return
        offsets, lengths = answer["offsets"], answer["lengths"]
        if len(offsets):
            self.last = int(offsets[-1])
            self.pieces.append((self.known, offsets, lengths))
            self.known += len(offsets)
        self.taken += 1
        if self.taken == self.ranges:
            self.end = int(answer["end"])
            self.total = sum(1 for _ in _units(self.known, self.first_units, self.unit_batches, self.last_single))

    def next_unit(self) -> tuple[list[int], np.ndarray, np.ndarray] | None | Any:
        """``(batch sizes, offsets, lengths)`` of the next unit; :data:`PENDING` while its events are
        not all known; None when every unit is planned (or a range failed)."""
        if self.failed:
            return None
        if self.step is None:
            self.step = next(self.steps, self.unit_batches)
        stop = self.first + self.step * BATCH_EVENTS
        if self.end is None:
            # (the last batches are planned once the array's end is known: they may be the last ones)
            if stop + self.last_single * BATCH_EVENTS > self.known:
                return PENDING
        elif self.first >= self.known:
            return None
        else:  # (the last ``last_single`` batches one per unit: _units)
            left = -(-(self.known - self.first) // BATCH_EVENTS)
            stop = min(stop, self.first + max(left - self.last_single, 1) * BATCH_EVENTS)
        a, b = self.first, min(stop, self.known)
        self.first, self.step = b, None
        full, rest = divmod(b - a, BATCH_EVENTS)
        return [BATCH_EVENTS] * full + ([rest] if rest else []), *self._slice(a, b)

    def _slice(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        """Offsets and lengths of events ``a`` to ``b`` (the ranges before them dropped)."""
        while self.pieces and self.pieces[0][0] + len(self.pieces[0][1]) <= a:
            self.pieces.popleft()
        offsets, lengths = [], []
        for first, offs, lens in self.pieces:
            if first >= b:
                break
            lo, hi = max(a - first, 0), min(b - first, len(offs))
            offsets.append(offs[lo:hi])
            lengths.append(lens[lo:hi])
        if len(offsets) == 1:
            return offsets[0], lengths[0]
        return np.concatenate(offsets), np.concatenate(lengths)


def _in_order(parts: list[np.ndarray], start: int) -> bool:
    """Whether the ranges' offsets, one after the other, rise strictly from ``start`` on. Checked range
    by range (each one's arrays stay in the caches; the whole file's difference array was 8 bytes an
    event, page-faulted fresh: 22× the time for 5× the events)."""
    last = start - 1
    for offsets in parts:
        if not len(offsets):
            continue
        if offsets[0] <= last or np.any(offsets[1:] <= offsets[:-1]):
            return False
        last = int(offsets[-1])
    return True


def _units(events: int, first_units: tuple[int, ...], unit_batches: int, last_single: int = 0) -> Iterator[list[int]]:
    """The units of the streamed parse for ``events`` events: lists of batch sizes, the first units
    of ``first_units`` batches, then ``unit_batches`` each, and the last ``last_single`` batches one per
    unit: the workers end together (with whole units, one worker idled while the other decoded its last
    one or two: 17-53 ms on the 0.3 GB trace, 2 workers; a batch is ~11 ms there)."""
    sizes = [BATCH_EVENTS] * (events // BATCH_EVENTS) + ([events % BATCH_EVENTS] if events % BATCH_EVENTS else [])
    plan = iter(first_units)
    i = 0
    while i < len(sizes):
        step = min(next(plan, unit_batches), max(len(sizes) - i - last_single, 1))
        yield sizes[i : i + step]
        i += step


def _reposition(source: Source, path: str, skip: int, end: int) -> None:
    """Point ``source`` at document offset ``end`` (after the events array), reading the file from there."""
    close = getattr(source.blocks, "close", None)
    if close is not None:
        close()
    source.buf = bytearray()
    source.pos = 0
    source.consumed = end
    source.eof = False
    source.blocks = _file_blocks(path, skip + end)


def _file_blocks(path: str, offset: int) -> Iterator[bytes]:
    with open(path, "rb") as f:
        f.seek(offset)
        while True:
            block = f.read(READ_BYTES)
            if not block:
                return
            yield block
