"""A whole document's batches on two cores: the second half decoded by a fork of this process.

:func:`.decode.decode_trace` splits the document into raw events (one msgspec pass), then decodes them
in batches of :data:`.events.BATCH_EVENTS` into its :class:`~.columns.ColumnBuilder`. Where
:func:`wanted` says so (the command line's parse of a file of some tens of thousands of events, with a
second core), a child forked after the split decodes the second half's batches into a fresh builder (it
reads the raw events where they lie, shared copy-on-write: nothing is sent to it) and sends its state
back through a pipe, pickled, while this process decodes the first half. :func:`.decode_stream.merge`
then appends that state as the streamed decoder appends a worker's answer, and this process writes the
second half's batches to the events side file, so the trace is the one a serial decode builds: the same
string ids, columns, counts and side file. A child that fails leaves its half to this process. The
command line's report may fork it earlier, before it imports the registry (:func:`start_second_half`
from :func:`.decode.start_early`), and hand it to :func:`decode_batches` as ``started``.

The child takes its batches one at a time from a page both processes share (:class:`_Claims`). When this
process has decoded its own share and the child is still at work, it takes back the later (larger) half
of the batches the child has not begun, decodes them into a fresh builder and appends that after the child's
state (again while any remain): whichever side the load or the imports beside it slow down, the two end
within about a batch of each other.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import pickle
import signal
import struct
from typing import Any, Callable, Iterator

import msgspec

from .columns import ColumnBuilder
from .decode_stream import _joined, default_workers, merge
from .decode_workers import _NullSink, can_fork
from .events import BATCH_EVENTS
from .heap import gc_paused

# Fewer events than this are decoded in one process: the fork, the pickled answer and the merge
# (~10 ms) would take most of what the second core saves on a small file.
HALVES_FROM_EVENTS = 20_000
# The share of the batches this process decodes: it also merges the child's and its first batches cost
# more (the interning tables are filled then). The 35 MB V100 sample's 31 batches, CPU of this process
# from the fork to the answer against the child's (medians of 6, load 3.2): 15 here 0.282 / 0.235 s,
# 14 here 0.265 / 0.250 s, 13 here 0.262 / 0.265 s.
PARENT_SHARE = 0.46
# The share when the child is forked before the report's registry and analyses are imported
# (:func:`.decode.start_early`): this process imports them (~0.1 s of CPU at load 2-3) beside the child
# before it decodes, so it keeps fewer batches. The V100 sample, CPU from the fork to the answer here
# against the child's (load 2-3): 12 of 31 here 0.37-0.41 / 0.21 s; 6 here 0.19-0.29 / 0.29-0.47 s;
# 9 here 0.338 / 0.355 s (medians of 8). Kept below the balance: what the imports leave of the child's
# batches when they are quicker (an idle box) is taken back (:class:`_Claims`), while batches kept here
# cannot be given away when they are slower.
EARLY_PARENT_SHARE = 0.20


def wanted(events: int) -> bool:
    """Whether ``events`` raw events are worth decoding in two halves here: enough of them, more than
    one decode worker allowed (:func:`.decode_stream.default_workers`: ``$KINETOSCOPE_DECODE_WORKERS``,
    the usable cores, one inside a process pool's worker) and a fork that is safe
    (:func:`.decode_workers.can_fork`: no other thread that holds locks)."""
    return events >= HALVES_FROM_EVENTS and default_workers() > 1 and can_fork()


def decode_batches(
    builder: ColumnBuilder,
    raws: list[msgspec.Raw],
    progress: Callable[[float], None] | None = None,
    halves: bool = False,
    started: _SecondHalf | None = None,
) -> None:
    """Every batch of ``raws`` into ``builder`` in order; with ``halves`` (see :func:`wanted`) the
    second half by a forked child, or by ``started`` (:func:`start_second_half` on these ``raws``, with
    the builder's sink or without as ``builder``). ``progress``: the fraction of the batches done."""
    total = len(raws)
    child = started
    if child is not None and child.with_sink != (builder.sink is not None):  # its offsets would differ
        child.stop()
        child = None
    if child is None and halves:
        child = start_second_half(raws, PARENT_SHARE, builder.sink is not None)
    cut = child.cut if child is not None else total
    taken: list[tuple[int, int, ColumnBuilder]] = []  # (first, end event, builder) taken back, latest last
    try:
        _decode_range(builder, raws, 0, cut, progress)
        while child is not None and (batches := child.claims.take_back()) is not None:
            first, end = batches[0] * BATCH_EVENTS, min(total, batches[1] * BATCH_EVENTS)
            part = ColumnBuilder(_NullSink() if builder.sink is not None else None)  # offsets counted from 0
            _decode_range(part, raws, first, end, None)
            taken.append((first, end, part))
    except BaseException:
        if child is not None:
            child.stop()
        raise
    if child is None:
        return
    state = child.result()
    if state is None:  # the child failed: its batches (and any taken back) are decoded here
        _decode_range(builder, raws, cut, total, progress)
        return
    # the child's batches, then each part taken back (the latest taken lies first), as a serial decode writes them
    parts = [(cut, taken[-1][0] if taken else total, state)]
    parts += [(first, end, part.state()) for first, end, part in reversed(taken)]
    for first, end, got in parts:
        base = builder.sink_pos
        if builder.sink is not None:
            for start in range(first, end, BATCH_EVENTS):
                joined = _joined(raws[start : min(start + BATCH_EVENTS, end)])
                builder.sink.write(joined)
                builder.sink_pos += len(joined)
        with gc_paused():  # unpickled rows and merged tables: acyclic (see heap.gc_paused)
            merge(builder, got, base)
    if progress:
        progress(1.0)


def start_second_half(raws: list[msgspec.Raw], share: float, with_sink: bool) -> _SecondHalf | None:
    """The child decoding the batches of ``raws`` after the first ``share`` of them, when :func:`wanted`
    says so and the fork succeeds; else None (all decoded here). ``with_sink``: the builder it is merged
    into writes an events side file."""
    if not wanted(len(raws)):
        return None
    try:
        return _SecondHalf(raws, _cut(len(raws), share), with_sink)
    except OSError:  # no fork now (a process limit, memory): decoded here
        return None


def _cut(total: int, share: float) -> int:
    """Where the child's batches start: ``share`` of them stay here."""
    return BATCH_EVENTS * int(-(-total // BATCH_EVENTS) * share)


def _decode_range(
    builder: ColumnBuilder, raws: list[msgspec.Raw], first: int, end: int, progress: Callable[[float], None] | None
) -> None:
    for start in range(first, end, BATCH_EVENTS):  # the stream decoder cuts at the same events
        builder.add_batch(raws[start : min(start + BATCH_EVENTS, end)])
        if progress:
            progress(min(1.0, (start + BATCH_EVENTS) / len(raws)))


class _SecondHalf:
    """The forked child that decodes ``raws[cut:]`` but for what this process takes back (:attr:`claims`);
    :meth:`result` is its builder's state."""

    def __init__(self, raws: list[msgspec.Raw], cut: int, with_sink: bool) -> None:
        claims = _Claims(cut // BATCH_EVENTS, -(-len(raws) // BATCH_EVENTS))
        read_end, write_end = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(read_end)
            os.close(write_end)
            claims.close()
            raise
        if pid == 0:  # the child: decode, answer, and leave without the parent's exit handlers or buffers
            code = 1
            try:
                os.close(read_end)
                builder = ColumnBuilder(_NullSink() if with_sink else None)  # offsets counted from 0
                while (batch := claims.take_next()) is not None:  # in order, until the rest is taken back
                    start = batch * BATCH_EVENTS
                    builder.add_batch(raws[start : start + BATCH_EVENTS])
                with open(write_end, "wb") as out:
                    pickle.dump(builder.state(), out, protocol=pickle.HIGHEST_PROTOCOL)
                code = 0
            finally:
                os._exit(code)
        os.close(write_end)
        self.claims = claims
        self.pid = pid
        self.cut = cut  # the first event it decodes
        self.with_sink = with_sink
        self.source = open(read_end, "rb")

    def result(self) -> dict[str, Any] | None:
        """The child's builder state, or None when it failed (it is reaped either way)."""
        try:
            body = self.source.read()
        finally:
            self.source.close()
        status = os.waitpid(self.pid, 0)[1]
        self.claims.close()
        if os.waitstatus_to_exitcode(status) != 0:
            return None
        try:
            with gc_paused():
                state = pickle.loads(body)  # (pickled by this process's own fork)
        except Exception:  # a cut answer: never a crash, the half is decoded here instead
            return None
        return state if isinstance(state, dict) else None

    def stop(self) -> None:
        """Kill and reap the child (this process is failing: its answer is not wanted)."""
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.source.close()
        os.waitpid(self.pid, 0)
        self.claims.close()


class _Claims:
    """Which batches the child decodes: two batch numbers in a page shared with it (the child's next batch,
    and the first of those this process took back from the end; the child's are those in between), read
    and changed only under a POSIX record lock on that page's file (a process that dies holding it
    releases it). The child takes one batch at a time (:meth:`take_next`); this process takes back the
    later half of those the child has not begun (:meth:`take_back`)."""

    _FORMAT = "<qq"

    def __init__(self, first: int, end: int) -> None:
        self.fd = _unnamed_file()
        try:
            os.ftruncate(self.fd, mmap.PAGESIZE)
            self.page = mmap.mmap(self.fd, mmap.PAGESIZE)  # shared with a forked child
        except BaseException:
            os.close(self.fd)
            raise
        self.page[:16] = struct.pack(self._FORMAT, first, end)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[list[int]]:
        """The two numbers, written back on leaving, under the lock."""
        import fcntl  # (POSIX: the halves run only where forks are safe, see can_fork)

        fcntl.lockf(self.fd, fcntl.LOCK_EX)
        try:
            both = list(struct.unpack(self._FORMAT, self.page[:16]))
            yield both
            self.page[:16] = struct.pack(self._FORMAT, *both)
        finally:
            fcntl.lockf(self.fd, fcntl.LOCK_UN)

    def take_next(self) -> int | None:
        """(The child) the next batch to decode, or None when none is left."""
        with self._locked() as both:
            if both[0] >= both[1]:
                return None
            both[0] += 1
            return both[0] - 1

    def take_back(self) -> tuple[int, int] | None:
        """(This process) the batches ``[first, end)`` it takes back: the later half of those the child
        has not begun, the larger half (the child's answer, ~15 ms of pickling for the V100 sample's 22
        batches, then follows its last batch while this process decodes); None when none is left (or
        the lock fails: the child keeps them)."""
        try:
            with self._locked() as both:
                left = both[1] - both[0]
                if left < 1:
                    return None
                end = both[1]
                both[1] -= (left + 1) // 2
                return both[1], end
        except OSError:
            return None

    def close(self) -> None:
        self.page.close()
        os.close(self.fd)


def _unnamed_file() -> int:
    """A descriptor of a file with no name: a memory file where the system has them (Linux), else an
    unlinked file of the temp folder."""
    if hasattr(os, "memfd_create"):
        return os.memfd_create("kinetoscope-decode-claims", os.MFD_CLOEXEC)
    import tempfile  # (only here: the command line's imports before the decode's fork stay few)

    with tempfile.TemporaryFile() as file:
        return os.dup(file.fileno())
