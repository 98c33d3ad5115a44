"""Worker processes that decode event batches for :mod:`.decode_stream`, results in order.

A worker runs :func:`_serve`. Where no other thread runs but known ones (:func:`can_fork`: the command
line's report), it is a fork of this process (:class:`_Forked`: it starts in ~5 ms with everything
imported, so a file of a few tens of MB gains from both cores); elsewhere (a threaded server, whose
locks a fork could copy held) a ``python -c`` started with :mod:`subprocess` (~0.15 s to import numpy
and this package). Never :mod:`multiprocessing`: ``spawn`` would import the caller's main script again.
Through its pipes it reads units of batches (a header: a flag byte and the count of batches; their
lengths; the batches, each ``[`` + events joined by ``,`` + ``]``) and answers each with the pickled
state of :func:`decode_batch`, its arrays' bytes out of band (:func:`_pickled`: neither side copies them
into or out of the pickle). Each worker holds :data:`DEPTH` units; the caller reads an answer as
soon as one arrives, from whichever worker (``poll``), and sends that worker the next unit, so a
worker slowed by anything (this process's merges on its core, another job) gets fewer units; the
answers are taken in the units' order. Units are written by one thread per worker and answers by one
thread in each worker (:func:`_serve`): no side blocks on a write while the other waits on it.
A unit may instead be a :class:`Call` of one of :mod:`.ranges`' functions (the ranged parse: the
worker reads its events from the file itself), sent pickled and answered the same way. At the end a
forked worker is left to exit while this process goes on (:mod:`.forked_worker`).
"""

from __future__ import annotations

import collections
import io
import os
import pickle
import queue
import select
import struct
import subprocess
import sys
import threading
from typing import IO, Any, Callable, Iterable, Iterator, Protocol, Sequence, cast

import numpy as np

from . import ranges
from .columns import ColumnBuilder
from .events import _RAW_LIST
from .forked_worker import PIPE_BYTES, ForkedWorker, reap_exited, reap_later  # noqa: F401  (PIPE_BYTES: named here as before)
from .forked_worker import widen as _widen  # noqa: F401  (named here as before)
from .heap import gc_paused
from .joined import OneValuePickler
from .placed_raws import PlacedRaws, raw_lengths

_HEADER = struct.Struct("<BI")  # with_sink (or _CALL), count of batches (their lengths follow)
_CALL = 2  # the flag of a unit that is a pickled :class:`Call` (one part) instead of joined batches
# Batches in flight per worker: the next one waits in its pipe while the worker decodes, so a worker
# never idles while this process scans the document or merges another worker's answer
DEPTH = 2
_LENGTH = struct.Struct("<Q")
_ANSWER = struct.Struct("<QI")  # an answer: bytes of its pickle, count of out-of-band buffers (their lengths follow)


# Threads that may run while workers are forked: the events side file's writer (storage/writer.py)
# holds only its own queue's lock and file, which a worker never touches
_FORK_SAFE_THREADS = ("kinetoscope-writer",)


class _WorkerProcess(Protocol):
    """What :class:`Workers` uses of a worker: a :class:`_Forked` or a :class:`subprocess.Popen`
    started with both pipes."""

    stdin: IO[bytes]
    stdout: IO[bytes]

    def kill(self) -> None: ...

    def wait(self, timeout: float | None = None) -> int: ...


def can_fork() -> bool:
    """Whether workers can be forks of this process: on Linux (macOS's system frameworks are not safe
    to use in a forked child, which is why Python's multiprocessing spawns there), when every other
    thread is one of :data:`_FORK_SAFE_THREADS` (a forked child gets copies of every lock, held ones
    too, but only the forking thread: a lock another thread held would stay held forever in the child)."""
    current = threading.current_thread()
    return (
        sys.platform.startswith("linux")
        and hasattr(os, "fork")
        and all(t is current or t.name in _FORK_SAFE_THREADS for t in threading.enumerate())
    )


class _Forked(ForkedWorker):
    """A worker forked from this process that serves :func:`_serve` (:class:`.forked_worker.ForkedWorker`)."""

    def __init__(self, inherited: list[int]) -> None:
        super().__init__(inherited, _serve)


class Call:
    """A unit of work that is a call of one of :mod:`.ranges`' functions (the worker reads the file
    itself): sent pickled, answered like a unit of batches; :meth:`run` makes it here."""

    def __init__(self, name: str, *args: Any) -> None:
        if name not in _CALLS:
            raise ValueError(f"not a worker call: {name}")
        self.name, self.args = name, args

    def run(self) -> Any:
        return _CALLS[self.name](*self.args)


# What a unit iterator yields when it has nothing to send until an answer sent before is taken (the
# ranged parse plans its second pass from the first pass's answers): asked again after the next take
PENDING: Any = object()


class WorkerDied(Exception):
    """A worker exited or answered nonsense; the caller decodes the remaining batches itself."""


class Workers:
    """``n`` worker processes (a context manager: they exit at its end). Each is fed by its own
    writer thread, so a batch can wait in its pipe while the worker answers the one before (see
    :data:`DEPTH`) without the caller blocking on the write."""

    def __init__(self, n: int) -> None:
        # this very tb_plugin, first on the path: "python -m" would put the working directory first,
        # where another checkout of tb_plugin may stand
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        code = f"import sys; sys.path.insert(0, {root!r}); from tb_plugin.trace.decode_workers import _serve; _serve()"
        self.procs: list[_WorkerProcess] = []
        forked: list[_Forked] = []  # (each child closes the parent's ends of those before it)
        self.queues: list[queue.Queue] = []
        self.feeders: list[threading.Thread] = []
        self.failed: str | None = None  # a write failed: the worker is gone
        self.broken = False  # an answer did not come: what is left runs in this process
        reap_exited()  # (the workers of a parse before, left to exit on their own)
        fork = can_fork()  # (before any feeder thread starts below)
        try:
            for _ in range(n):
                if fork:
                    forked.append(_Forked([fd for proc in forked for fd in proc.fds()]))
                    self.procs.append(forked[-1])
                else:
                    spawned = subprocess.Popen(
                        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE
                    )
                    self.procs.append(cast(_WorkerProcess, spawned))  # (both pipes asked for: neither is None)
        except OSError as exc:
            self.__exit__(type(exc), exc, None)
            raise WorkerDied(f"cannot start a decode worker: {exc}") from None
        for proc in self.procs:
            q: queue.Queue = queue.Queue()
            thread = threading.Thread(target=self._feed, args=(proc, q), name="kinetoscope-decode-feed", daemon=True)
            thread.start()
            self.queues.append(q)
            self.feeders.append(thread)

    def _feed(self, proc: _WorkerProcess, q: queue.Queue) -> None:
        while True:
            item = q.get()
            if item is None:
                return
            try:
                proc.stdin.write(item[0])
                for part in item[1]:  # (not joined first: one copy less of every event)
                    proc.stdin.write(part)
                proc.stdin.flush()
            except (BrokenPipeError, OSError, ValueError) as exc:  # the worker died (its answer never comes)
                self.failed = str(exc) or type(exc).__name__
                return

    def send(self, i: int, parts: list[bytes] | Call, with_sink: bool) -> None:
        if self.failed is not None:
            raise WorkerDied(self.failed)
        if isinstance(parts, Call):
            body = pickle.dumps((parts.name, parts.args), protocol=pickle.HIGHEST_PROTOCOL)
            self.queues[i % len(self.procs)].put((_HEADER.pack(_CALL, 1) + _LENGTH.pack(len(body)), [body]))
            return
        lengths = [len(p) for p in parts]
        head = _HEADER.pack(with_sink, len(parts)) + struct.pack(f"<{len(parts)}Q", *lengths)
        self.queues[i % len(self.procs)].put((head, parts))

    def receive(self, i: int) -> dict:
        """The next answer of worker ``i % n`` (read from its pipe's descriptor, never through a buffered
        reader: :meth:`answering` asks the descriptors which answers are there): its pickle, then its
        out-of-band buffers, each read into a buffer of its own that the unpickled array adopts."""
        fd = self.procs[i % len(self.procs)].stdout.fileno()
        head = _read_exact(fd, _ANSWER.size)
        if head is None:
            self.broken = True
            raise WorkerDied("a decode worker exited")
        length, count = _ANSWER.unpack(head)
        sizes = _read_exact(fd, 8 * count)
        parts = _read_parts(fd, [length, *struct.unpack(f"<{count}Q", sizes)]) if sizes is not None else None
        if parts is None:
            self.broken = True
            raise WorkerDied("a decode worker exited mid-answer")
        with gc_paused():  # a batch's rows: many small acyclic objects (heap.gc_paused)
            return pickle.loads(parts[0], buffers=parts[1:])

    def answering(self, candidates: list[int], in_order: int) -> int:
        """One of the workers ``candidates`` (indices) whose next answer has begun to arrive (or whose
        pipe ended), waiting until one has; where pipes cannot be polled (Windows), ``in_order``: the
        worker whose answer is taken next."""
        if not hasattr(select, "poll"):
            return in_order
        poller = select.poll()  # (not select(): no limit on the descriptors' numbers)
        fds = {}
        for w in candidates:
            fds[self.procs[w].stdout.fileno()] = w
            poller.register(self.procs[w].stdout.fileno(), select.POLLIN)  # (an end or error: reported too)
        while True:
            ready = poller.poll()
            if ready:
                return fds[ready[0][0]]

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        failing = bool(exc and exc[0] is not None)
        if failing:  # (a budget error, an interrupt): answers are not wanted
            for proc in self.procs:
                proc.kill()
        for q in self.queues:
            q.put(None)
        for thread in self.feeders:
            thread.join(timeout=5)
        for proc in self.procs:
            try:
                proc.stdin.close()
            except OSError:
                pass
        for proc in self.procs:
            if isinstance(proc, ForkedWorker) and not failing:  # exits while this process goes on (forked_worker)
                reap_later(proc)
                continue
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            proc.stdout.close()


class _NullSink:
    """Stands in for the events side file in a worker: offsets are counted from 0, nothing written."""

    def write(self, data: bytes | memoryview) -> None:
        pass


def decode_batch(
    parts: Sequence[bytes | memoryview],
    with_sink: bool,
    spaced: bool = False,
    placed: list[tuple[np.ndarray, np.ndarray]] | None = None,
) -> dict[str, Any]:
    """Consecutive batches (each ``[`` + events joined by ``,`` + ``]``) decoded one after the other by
    a fresh builder, as the whole-document decoder decodes them: its state (interned keys and texts in
    id order, column chunks, rows, counts), which :func:`.decode_stream.merge` appends to the main builder.
    ``spaced``: each batch is ``[`` + its events as the file has them (blanks beside the commas) + ``]``,
    the same events; their offsets are counted as if joined by bare commas, as the merge expects.
    ``placed``: per batch, its events' starts in it and lengths, as the ranged parse's first pass found
    them (:class:`.placed_raws.PlacedRaws`: the batch is not split into raw events again)."""
    builder = ColumnBuilder(_NullSink() if with_sink else None)
    for k, joined in enumerate(parts):
        raws = _RAW_LIST.decode(joined) if placed is None else PlacedRaws(joined, *placed[k])
        before = builder.sink_pos
        builder.add_batch(raws, joined)
        if spaced:
            builder.sink_pos = before + 2 + int(raw_lengths(raws).sum()) + max(len(raws) - 1, 0)
    return builder.state()


def local(unit: list[bytes] | Call, with_sink: bool) -> Any:
    """A unit's answer computed in this process (no worker, or the worker died)."""
    return unit.run() if isinstance(unit, Call) else decode_batch(unit, with_sink)


def run_parallel(
    units: Iterable[list[bytes] | Call], n: int, with_sink: bool, take: Callable, workers: Workers | None = None
) -> None:
    """``take(state, parts)`` for every unit (``parts``: a list of joined batches, or a :class:`Call`)
    in order, the states decoded by ``n`` workers (``workers``, when given: started by the caller; else
    started here), here for the rest if one dies, :data:`DEPTH` units in flight per worker. ``units``
    may yield :data:`PENDING` while what it yields next depends on answers not yet taken."""
    if workers is not None:
        _run_on(workers, iter(units), with_sink, take)
        return
    try:
        started = Workers(n)
    except WorkerDied:
        _run_here(iter(units), with_sink, take)
        return
    with started:
        _run_on(started, iter(units), with_sink, take)


def _read_exact(fd: int, size: int) -> bytearray | memoryview | None:
    """``size`` bytes read from the descriptor ``fd`` (a pipe gives them in pieces), or None at its end."""
    return None if (got := _read_parts(fd, [size])) is None else got[0]


_IOV_MAX = 512  # the most buffers one ``readv`` call fills (POSIX guarantees at least 16; Linux takes 1024)
_UNCLEARED = 1 << 12  # from this size a part is read into an uncleared array (_read_parts)


def _read_parts(fd: int, sizes: list[int]) -> list[bytearray | memoryview] | None:
    """Consecutive parts of ``sizes`` bytes read from the descriptor ``fd``, each into a buffer of its own,
    in as few calls as the pipe allows (``readv`` fills several buffers at once); None at its end. A part
    of :data:`_UNCLEARED` bytes or more is a byte array left uncleared (every byte is read into it): a
    ``bytearray`` writes zeros first (the 0.3 GB trace's ~120 MB of answers: ~0.03 s of this process's CPU)."""
    parts = [bytearray(size) if size < _UNCLEARED else np.empty(size, np.uint8).data for size in sizes]
    views = [memoryview(part) for part in parts if len(part)]
    try:
        k = 0  # the first view not yet full
        while k < len(views):
            if hasattr(os, "readv"):
                got = os.readv(fd, views[k : k + _IOV_MAX])
            else:  # (Windows: a copy more)
                chunk = os.read(fd, len(views[k]))
                views[k][: len(chunk)] = chunk
                got = len(chunk)
            if not got:
                return None
            while got:  # past the views filled, and into the one filled in part
                step = min(got, len(views[k]))
                got -= step
                views[k] = views[k][step:]
                k += not len(views[k])
    finally:
        for view in views:
            view.release()
    return parts


def _run_on(workers: Workers, units: Iterator, with_sink: bool, take: Callable) -> None:
    """The units fed to the workers as they answer: each worker holds :data:`DEPTH` units, and an answer
    is read as soon as it arrives (whichever worker's), so the next unit goes to the worker that is
    free, not to a fixed one (a worker slowed by this process's merges, or by another job on its core,
    gets fewer); the answers are taken in the units' order, each once."""
    n = len(workers.procs)
    held: list[collections.deque] = [collections.deque() for _ in range(n)]  # per worker: units sent, not read
    sent: dict[int, Any] = {}  # index -> unit, not yet taken
    read: dict[int, dict] = {}  # index -> its answer, read and not yet taken (at most DEPTH * n)
    count = taken = 0
    starved = False  # the units said PENDING: workers to feed once an answer is taken

    def feed(w: int) -> bool:
        """Send worker ``w`` the next unit; False when there is none (now, or at all)."""
        nonlocal count, starved
        unit = next(units, None)
        if unit is PENDING:
            starved = True
        if unit is None or unit is PENDING:
            return False
        sent[count] = unit
        held[w].append(count)
        count += 1
        workers.send(w, unit, with_sink)
        return True

    try:
        if workers.broken:
            raise WorkerDied("a decode worker died before")
        for _ in range(DEPTH):
            for w in range(n):
                feed(w)
        while taken < count:
            while taken not in read:
                w = workers.answering(
                    [k for k in range(n) if held[k]], next(k for k in range(n) if held[k] and held[k][0] == taken)
                )
                read[held[w][0]] = workers.receive(w)
                held[w].popleft()
                feed(w)
            state, unit = read.pop(taken), sent.pop(taken)
            taken += 1
            take(state, unit)
            if starved:
                starved = False
                for w in range(n):
                    while len(held[w]) < DEPTH and feed(w):
                        pass
        if next(units, None) is not None:  # (PENDING with nothing in flight: the iterator's error)
            raise RuntimeError("units left that wait for answers that were all taken")
    except WorkerDied:
        workers.broken = True
        for index in sorted(sent):  # (in order; the answers already read are used)
            unit = sent.pop(index)
            take(read.pop(index) if index in read else local(unit, with_sink), unit)
        _run_here(units, with_sink, take)


def _run_here(units: Iterator, with_sink: bool, take: Callable) -> None:
    """The units decoded in this process, in order (each taken before the next is asked for, so the
    iterator never has to wait on an answer: :data:`PENDING` here is a caller's error)."""
    for unit in units:
        if unit is PENDING:
            raise RuntimeError("a unit waits for an answer that was taken")
        take(local(unit, with_sink), unit)


def _serve(source: IO[bytes] | None = None, sink: IO[bytes] | None = None) -> None:
    """Answer batches from ``source`` (default: standard input) on ``sink`` (standard output) until EOF.

    The answers are written by a thread of their own (:func:`_write_answers`): the caller reads them in
    order, so an answer waits in its pipe while the caller waits on another worker's, and meanwhile
    this worker decodes its next unit instead of waiting on the write. It holds at most the answers of
    the units sent and not taken (:data:`DEPTH`)."""
    source = sys.stdin.buffer if source is None else source
    sink = sys.stdout.buffer if sink is None else sink
    answers: queue.Queue = queue.Queue()
    writer = threading.Thread(target=_write_answers, args=(answers, sink), name="kinetoscope-answers", daemon=True)
    writer.start()
    try:
        while writer.is_alive():  # (it ends when the caller closed its end: nobody reads the answers)
            head = source.read(_HEADER.size)
            if len(head) != _HEADER.size:
                return
            flag, count = _HEADER.unpack(head)
            parts = [source.read(size) for size in struct.unpack(f"<{count}Q", source.read(8 * count))]
            if flag == _CALL:  # (pickled by our own parent, like the answers it unpickles)
                name, args = pickle.loads(parts[0])
                if name != "scan_range":  # the first pass is over: its range buffer is not wanted again
                    ranges.drop_buffer()
                answer = _CALLS[name](*args)
            else:
                answer = decode_batch(parts, bool(flag))
            answers.put(_pickled(answer))
    finally:
        answers.put(None)
        writer.join()


def _pickled(answer: Any) -> tuple[bytes, list[pickle.PickleBuffer]]:
    """``answer`` pickled with its arrays' bytes out of band: the pickle, and the buffers it refers to
    (views of the arrays, written to the pipe as they are: the pickle holds no copy of them); a column
    whose rows all hold one value (a stride-0 view) as that value (:class:`.joined.OneValuePickler`)."""
    buffers: list[pickle.PickleBuffer] = []
    out = io.BytesIO()
    OneValuePickler(out, protocol=5, buffer_callback=buffers.append).dump(answer)
    return out.getvalue(), buffers


def _write_answers(answers: queue.Queue, sink: IO[bytes]) -> None:
    """Write each answer taken from ``answers`` (:func:`_pickled`) to ``sink`` until None: the pickle's
    length, the count and lengths of the buffers, the pickle, the buffers."""
    while True:
        got = answers.get()
        if got is None:
            return
        body, buffers = got
        try:
            views = [buffer.raw() for buffer in buffers]  # (contiguous: the pickler takes no other out of band)
            sink.write(_ANSWER.pack(len(body), len(views)) + struct.pack(f"<{len(views)}Q", *map(len, views)))
            sink.write(body)
            for view in views:
                sink.write(view)
            sink.flush()
        except (BrokenPipeError, OSError, ValueError):  # the caller is gone: nothing more to answer
            return


def _decode_span(path: str, skip: int, offsets: np.ndarray, lengths: np.ndarray, sizes: list[int]) -> dict[str, Any]:
    """The state of the batches :func:`.ranges.span_batches` reads from the file, its events placed in the
    file (:func:`.ranges.to_document`, here rather than in the merging process: ``placed`` True)."""
    placed, k = [], 0
    for size in sizes:  # each event's start in its batch ("[" + the file's bytes from its first event)
        at = offsets[k : k + size]
        placed.append((1 + at - at[0] if size else at, lengths[k : k + size]))
        k += size
    state = decode_batch(ranges.span_batches(path, skip, offsets, lengths, sizes), True, spaced=True, placed=placed)
    where, k = [], 0
    for size in sizes:  # file offsets: document offsets past a byte order mark
        where.append((offsets[k : k + size] + skip, lengths[k : k + size], lengths[k : k + size]))
        k += size
    ranges.to_document(state, where)
    state["placed"] = True
    return state


_CALLS: dict[str, Callable[..., Any]] = {"scan_range": ranges.scan_range, "decode_span": _decode_span}

if __name__ == "__main__":
    _serve()
