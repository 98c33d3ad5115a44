"""A whole document's batches on two cores: the second half decoded by a fork of this process.

:func:`.decode.decode_trace` splits the document into raw events (one msgspec pass), then decodes them
in batches of :data:`.events.BATCH_EVENTS` into its :class:`~.columns.ColumnBuilder`. Where
:func:`wanted` says so (the command line's parse of a file of some tens of thousands of events, with a
second core), a child forked after the split decodes the second half's batches into a fresh builder (it
reads the raw events where they lie, shared copy-on-write: nothing is sent to it) and sends its state
back through a pipe, pickled, while this process decodes the first half. :func:`.decode_stream.merge`
then appends that state as the streamed decoder appends a worker's answer, so the trace is the one a
serial decode builds: the same string ids, columns, counts and side file. The child writes the second
half's batches into the events side file itself, at the offset where a serial decode puts them (the file
descriptor is shared; ``pwrite`` leaves this process's sequential writes of the first half alone), since
it joins them anyway: ~6 ms of this process's CPU after the answer on the 35 MB V100 sample. A side file
without a descriptor (a memory buffer) gets them from this process. A child that fails leaves its half
to this process (which writes the same bytes at the same place).
"""

from __future__ import annotations

import os
import pickle
import signal
from typing import Any, Callable, Sequence, cast

import msgspec

from .columns import ColumnBuilder
from .decode_stream import _joined, default_workers, merge
from .decode_workers import _NullSink, can_fork
from .events import BATCH_EVENTS
from .forked_worker import leave_to_exit
from .heap import gc_paused
from .joined import OneValuePickler
from .placed_raws import PlacedRaws

# Fewer events than this are decoded in one process: the fork, the pickled answer and the merge
# (~10 ms) would take most of what the second core saves on a small file.
HALVES_FROM_EVENTS = 20_000
# The share of the batches this process decodes: it also merges the child's and its first batches cost
# more (the interning tables are filled then), but the child's answer (pickled, sent, its exit) follows its
# last batch. The 35 MB V100 sample's 31 batches on an idle second core (five cold reports each, 13:00 UTC
# on 2026-11-30, load 0.5-1): 14 here, this process waited 8.5-23.3 ms for the answer; 15 here, 6.7-13.3 ms
# and the decode ended ~10 ms sooner; 16 here, 7.0-11.0 ms, but this process's own share was the longer.
PARENT_SHARE = 0.5


def wanted(events: int) -> bool:
    """Whether ``events`` raw events are worth decoding in two halves here: enough of them, more than
    one decode worker allowed (:func:`.decode_stream.default_workers`: ``$KINETOSCOPE_DECODE_WORKERS``,
    the usable cores, one inside a process pool's worker) and a fork that is safe
    (:func:`.decode_workers.can_fork`: no other thread that holds locks)."""
    return events >= HALVES_FROM_EVENTS and default_workers() > 1 and can_fork()


def decode_batches(
    builder: ColumnBuilder,
    raws: Sequence[Any],
    progress: Callable[[float], None] | None = None,
    halves: bool = False,
    events: int | None = None,
) -> None:
    """Every batch of ``raws`` into ``builder`` in order; with ``halves`` (see :func:`wanted`) the
    second half by a forked child. ``progress``: the fraction of the batches done. ``raws``: the raw
    events, or (``events``: their count) their batches already joined, as :class:`.placed_raws.PlacedRaws`
    (the early reader's split: :mod:`.early_split`)."""
    batches = _batches(raws) if events is None else list(raws)
    total = len(raws) if events is None else events
    cut = int(len(batches) * PARENT_SHARE)  # the child's first batch: PARENT_SHARE of them stay here
    child = None
    if halves and wanted(total):
        sink = builder.sink
        place = None if sink is None else _placement(sink)
        try:
            child = _SecondHalf(batches, cut, sink is not None, *(place or (None, 0)))
        except OSError:  # no fork now (a process limit, memory): decoded here
            child = None
    try:
        _decode_range(builder, batches, 0, len(batches) if child is None else cut, progress)
    except BaseException:
        if child is not None:
            child.stop()
        raise
    if child is None:
        return
    state = child.result()
    if state is None:  # the child failed: its half is decoded here
        _decode_range(builder, batches, cut, len(batches), progress)
        return
    base = builder.sink_pos
    if child.wrote is not None:  # the child wrote its batches where a serial decode puts them
        builder.sink_pos += child.wrote
    elif builder.sink is not None:  # the side file gets the second half's batches as a serial decode writes them
        for batch in batches[cut:]:
            joined = _joined_of(batch)
            builder.sink.write(cast(bytes, joined))  # (a memoryview of a placed batch: written as bytes are)
            builder.sink_pos += len(joined)
    with gc_paused():  # unpickled rows and merged tables: acyclic (see heap.gc_paused)
        merge(builder, state, base)
    if progress:
        progress(1.0)


def _batches(raws: Sequence[msgspec.Raw]) -> list[Sequence[msgspec.Raw]]:
    """``raws`` cut into batches of :data:`.events.BATCH_EVENTS`, as the stream decoder cuts them."""
    return [raws[start : start + BATCH_EVENTS] for start in range(0, len(raws), BATCH_EVENTS)]


def _joined_of(batch: Sequence[Any]) -> bytes | memoryview:
    """A batch's joined bytes: a placed batch's own, else joined here."""
    return batch.joined if isinstance(batch, PlacedRaws) else _joined(batch)


def _decode_range(
    builder: ColumnBuilder,
    batches: Sequence[Sequence[Any]],
    first: int,
    end: int,
    progress: Callable[[float], None] | None,
    write: Callable[[bytes | memoryview], None] | None = None,
) -> None:
    """Batches ``batches[first:end]`` into ``builder``; each batch's joined bytes also to ``write``."""
    events = (len(batches) - 1) * BATCH_EVENTS + len(batches[-1]) if batches else 0
    for k in range(first, end):  # the stream decoder cuts at the same events
        batch = batches[k]
        joined = batch.joined if isinstance(batch, PlacedRaws) else None
        if write is not None and joined is None:
            joined = _joined(batch)
        builder.add_batch(batch, joined)
        if write is not None and joined is not None:
            write(joined)
        if progress:
            progress(min(1.0, (k + 1) * BATCH_EVENTS / events))


def _placement(sink: Any) -> tuple[int, int] | None:
    """``(descriptor, position)`` of the side file ``sink`` writes into (a :class:`~tb_plugin.storage.writer.
    BackgroundWriter` on a file, or a file itself): where its next batch goes, for a child to write the
    batches after this process's; None for a memory buffer, a file opened to append (``pwrite`` would
    append there too) or one whose position is unknown."""
    import fcntl  # (POSIX only: here the halves run on Linux, where they fork)

    try:
        fd = getattr(sink, "file", sink).fileno()
        position = sink.tell()
        appends = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_APPEND
    except (AttributeError, OSError, ValueError):  # (io.UnsupportedOperation is an OSError and a ValueError)
        return None
    if appends or not (isinstance(fd, int) and isinstance(position, int) and fd >= 0 and position >= 0):
        return None
    return fd, position


def joined_bytes(raws: Sequence[Any]) -> int:
    """Bytes of ``raws``' batches joined as the decoder joins them (``[`` + ``,``-joined events + ``]``
    per :data:`.events.BATCH_EVENTS`): where the batches after them start in the events side file."""
    batches = -(-len(raws) // BATCH_EVENTS)
    return sum(map(len, raws)) + len(raws) - batches + 2 * batches


def _batches_bytes(batches: Sequence[Sequence[Any]]) -> int:
    """Bytes of ``batches`` joined: a placed batch's own joined bytes, else :func:`joined_bytes` of its events."""
    return sum(len(b.joined) if isinstance(b, PlacedRaws) else joined_bytes(b) for b in batches)  # (a batch at a time)


class _PositionalWriter:
    """Writes consecutive chunks into the file ``fd`` from ``offset`` on (``pwrite``: the descriptor's
    own position, which the parent's writes use, is left alone); ``written``: bytes so far."""

    def __init__(self, fd: int, offset: int) -> None:
        self.fd, self.offset, self.written = fd, offset, 0

    def __call__(self, data: bytes | memoryview) -> None:
        view = memoryview(data)
        while view:
            n = os.pwrite(self.fd, view, self.offset + self.written)
            if n <= 0:
                raise OSError("the events side file took no bytes")
            self.written += n
            view = view[n:]


class _SecondHalf:
    """The forked child that decodes ``raws[cut:]``; :meth:`result` is its builder's state. With ``fd``
    (the side file's descriptor; ``at``: the file position where this process's first batch goes), the
    child also writes its batches there, after this process's: ``wrote`` is then their bytes, once answered."""

    def __init__(
        self, batches: Sequence[Sequence[Any]], cut: int, with_sink: bool, fd: int | None = None, at: int = 0
    ) -> None:
        self.wrote: int | None = None
        self._writes = fd is not None
        read_end, write_end = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(read_end)
            os.close(write_end)
            raise
        if pid == 0:  # the child: decode, answer, and leave without the parent's exit handlers or buffers
            code = 1
            try:
                os.close(read_end)
                builder = ColumnBuilder(_NullSink() if with_sink else None)  # offsets counted from 0
                write = _PositionalWriter(fd, at + _batches_bytes(batches[:cut])) if fd is not None else None
                _decode_range(builder, batches, cut, len(batches), None, write)
                with open(write_end, "wb") as out:
                    answer = (builder.state(), write.written if write is not None else None)
                    OneValuePickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump(
                        answer
                    )  # (a constant column: one value)
                code = 0
            finally:
                os._exit(code)
        os.close(write_end)
        self.pid = pid
        self.source = open(read_end, "rb")

    def result(self) -> dict[str, Any] | None:
        """The child's builder state, or None when it failed (then reaped here). A whole answer is the
        child's last act: it is left to exit while this process goes on (:func:`.forked_worker.leave_to_exit`;
        the kernel freeing its memory kept this process waiting ~2 ms on the 35 MB V100 sample)."""
        try:
            body = self.source.read()
        finally:
            self.source.close()
        try:
            with gc_paused():
                state, wrote = pickle.loads(body)  # (pickled by this process's own fork; cut, it fails to load)
        except Exception:  # a cut answer (the child failed): never a crash, the half is decoded here instead
            os.waitpid(self.pid, 0)
            return None
        leave_to_exit(self.pid)
        if not isinstance(state, dict) or (self._writes and not isinstance(wrote, int)):
            return None
        self.wrote = wrote if self._writes else None
        return state

    def stop(self) -> None:
        """Kill and reap the child (this process is failing: its answer is not wanted)."""
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.source.close()
        os.waitpid(self.pid, 0)
