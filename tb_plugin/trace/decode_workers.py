"""Worker processes that decode event batches for :mod:`.decode_stream`, results in order.

Each worker is a ``python -c`` that runs :func:`_serve`, started with :mod:`subprocess`, not
:mod:`multiprocessing`: it imports only this package (``spawn`` would import the caller's main
script again, and ``fork`` is unsafe in a threaded server). Through its pipes it reads batches
(an 8-byte length, a flag byte, the joined events) and answers each with the pickled state of
:func:`.decode_stream.decode_batch`. Batch ``i`` goes to worker ``i % n``, one batch in flight per
worker: a worker is only written to after its previous answer was read in full, so no pipe can
block both sides.
"""

from __future__ import annotations

import collections
import os
import pickle
import struct
import subprocess
import sys
from typing import Any, Callable, Iterable

from .columns import ColumnBuilder
from .events import _RAW_LIST
from .heap import gc_paused

_HEADER = struct.Struct("<QB")
_LENGTH = struct.Struct("<Q")


class WorkerDied(Exception):
    """A worker exited or answered nonsense; the caller decodes the remaining batches itself."""


class Workers:
    """``n`` worker processes (a context manager: they exit at its end)."""

    def __init__(self, n: int) -> None:
        # this very tb_plugin, first on the path: "python -m" would put the working directory first,
        # where another checkout of tb_plugin may stand
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        code = f"import sys; sys.path.insert(0, {root!r}); from tb_plugin.trace.decode_workers import _serve; _serve()"
        self.procs = []
        try:
            for _ in range(n):
                self.procs.append(subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                                   stdout=subprocess.PIPE))
        except OSError as exc:
            self.__exit__(type(exc), exc, None)
            raise WorkerDied(f"cannot start a decode worker: {exc}") from None

    def send(self, i: int, joined: bytes, with_sink: bool) -> None:
        proc = self.procs[i % len(self.procs)]
        try:
            proc.stdin.write(_HEADER.pack(len(joined), with_sink))
            proc.stdin.write(joined)
            proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise WorkerDied(str(exc)) from None

    def receive(self, i: int) -> dict:
        out = self.procs[i % len(self.procs)].stdout
        head = out.read(_LENGTH.size)
        if len(head) != _LENGTH.size:
            raise WorkerDied("a decode worker exited")
        (length,) = _LENGTH.unpack(head)
        body = out.read(length)
        if len(body) != length:
            raise WorkerDied("a decode worker exited mid-answer")
        with gc_paused():  # a batch's rows: many small acyclic objects (heap.gc_paused)
            return pickle.loads(body)

    def __enter__(self) -> "Workers":
        return self

    def __exit__(self, *exc) -> None:
        if exc and exc[0] is not None:  # failing (a budget error, an interrupt): answers are not wanted
            for proc in self.procs:
                proc.kill()
        for proc in self.procs:
            try:
                proc.stdin.close()
            except OSError:
                pass
        for proc in self.procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            proc.stdout.close()


class _NullSink:
    """Stands in for the events side file in a worker: offsets are counted from 0, nothing written."""

    def write(self, data) -> None:
        pass


def decode_batch(joined: bytes, with_sink: bool) -> dict[str, Any]:
    """One batch (``[`` + events joined by ``,`` + ``]``) decoded by a fresh builder: its state
    (interned keys and texts in id order, column chunks, rows, counts), which
    :func:`.decode_stream.merge` appends to the main builder."""
    builder = ColumnBuilder(_NullSink() if with_sink else None)
    builder.add_batch(_RAW_LIST.decode(joined), joined)
    state = {k: v for k, v in vars(builder).items() if k not in ("sink", "_json_ids", "_ids", "strings")}
    state["keys"] = list(builder._ids)[1:]
    state["texts"] = builder.strings[1:]
    return state


def run_parallel(batches: Iterable[bytes], n: int, with_sink: bool, take: Callable) -> None:
    """``take(state, joined)`` for every batch in order, the states decoded by ``n`` workers (here,
    by :func:`decode_batch`, for the rest if one dies)."""
    decode = decode_batch
    flight: collections.deque = collections.deque()  # (index, joined) sent, not yet taken
    batches = iter(batches)
    sent = 0
    try:
        with Workers(n) as workers:
            for joined in batches:
                flight.append((sent, joined))
                sent += 1
                workers.send(sent - 1, joined, with_sink)
                if len(flight) == n:
                    break
            while flight:
                index, joined = flight[0]
                state = workers.receive(index)
                flight.popleft()
                following = next(batches, None)
                if following is not None:  # keep this worker busy while the answer is merged
                    flight.append((sent, following))
                    sent += 1
                    workers.send(sent - 1, following, with_sink)
                take(state, joined)
    except WorkerDied:
        for _, joined in flight:
            take(decode(joined, with_sink), joined)
        for joined in batches:
            take(decode(joined, with_sink), joined)


def _serve() -> None:
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    while True:
        head = source.read(_HEADER.size)
        if len(head) != _HEADER.size:
            return
        length, with_sink = _HEADER.unpack(head)
        body = pickle.dumps(decode_batch(source.read(length), bool(with_sink)), protocol=pickle.HIGHEST_PROTOCOL)
        sink.write(_LENGTH.pack(len(body)))
        sink.write(body)
        sink.flush()


if __name__ == "__main__":
    _serve()
