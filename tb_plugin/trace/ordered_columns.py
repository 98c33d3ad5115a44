"""The finished trace's event columns joined from their chunks in time order (a stable sort of ``ts``).

Each column whose chunks have its dtype and hold rows is joined into a reused buffer and gathered from
there in time order: one new column each, not a joined one and then a gathered one, whose fresh pages the
kernel would fault in and zero twice (a 4.5 GB trace's 6.7 M events: ~50 MB a column). Other columns are
joined as :func:`~.joined.joined_column` joins them (a column of one value without its rows). The chunks
and the result are never all held twice: each column's chunks are let go once it is made.

From :data:`THREADS_ABOVE_ROWS` rows, the columns are made on two threads, each with its own buffer: numpy
gives up the GIL for the joins, the constancy checks and the gathers, and the finish otherwise runs on
one core while the other is idle (the decode workers are done, the section child not yet forked). The
columns are the same either way: each is a function of its chunks and the order alone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from ..settings import usable_cores
from .heap import release_freed_memory
from .joined import joined_column
from .model import EVENT_COLUMNS, compact_column, held_bytes, is_one_value

TRIM_ABOVE_BYTES = 8 << 20  # a column this large gives its chunks' freed heap pages back at once
# Rows from which the columns are made on two threads (below, a thread's start and the second buffer cost
# about what they save). The finish, 4.5 GB trace (6.7 M events): 2.29 / 2.16 s -> 1.80 / 1.66 s, CPU +0.25 s
THREADS_ABOVE_ROWS = 1_000_000


def time_ordered_columns(chunks: dict[str, list[np.ndarray]]) -> dict[str, np.ndarray]:
    """The event columns of ``chunks`` (per column, its chunks in the document's order; emptied as the
    columns are made), in time order, keyed in ``chunks``' order (module docstring)."""
    keys = list(chunks)
    ts_chunks = chunks.pop("ts", [])
    n = sum(len(c) for c in ts_chunks)
    cols: dict[str, np.ndarray] = {"ts": joined_column(ts_chunks, EVENT_COLUMNS["ts"])}
    held = sum(map(held_bytes, ts_chunks))
    del ts_chunks
    order = stable_time_order(cols["ts"])
    if order is not None:
        cols["ts"] = cols["ts"][order]
    if held >= TRIM_ABOVE_BYTES:  # the chunks' heap pages (heap.py): else RSS holds them twice
        release_freed_memory()
    widest = max((np.dtype(EVENT_COLUMNS[k]).itemsize for k in chunks), default=1)
    pending = list(chunks)  # (list.pop is one step under the GIL: each column is taken by one thread)

    def make_columns() -> None:
        buffer = np.empty(n * widest if order is not None else 0, dtype=np.uint8)
        while True:
            try:
                key = pending.pop(0)
            except IndexError:
                return
            cols[key] = _column(chunks.pop(key), np.dtype(EVENT_COLUMNS[key]), order, buffer, n)

    threads = 2 if order is not None and n >= THREADS_ABOVE_ROWS and usable_cores() >= 2 else 1
    _on_threads(make_columns, threads)
    return {k: cols[k] for k in keys}


def stable_time_order(ts: np.ndarray) -> np.ndarray | None:
    """The rows' stable sort by ``ts`` (µs), or None where they are in that order already (times that
    never decrease, or a sort that moves nothing: NaN, which compares False, sorted last)."""
    if len(ts) < 2 or bool(np.all(ts[1:] >= ts[:-1])):
        return None
    order = np.argsort(ts, kind="stable")
    return None if bool(np.all(order[1:] > order[:-1])) else order


def _column(
    chunks: list[np.ndarray], dtype: np.dtype, order: np.ndarray | None, buffer: np.ndarray, n: int
) -> np.ndarray:
    """One column of ``n`` rows from its ``chunks``, gathered by ``order`` (None: as they are), joined in
    ``buffer`` (``n`` rows of the widest dtype) where it is gathered; its chunks' pages given back."""
    held = sum(map(held_bytes, chunks))  # (chunks of one value each held one: nothing of theirs to give back)
    rows_held = any(len(c) > 1 and not is_one_value(c) for c in chunks)  # else nothing to gather
    if order is None or not rows_held or any(c.dtype != dtype for c in chunks):
        col = joined_column(chunks, dtype)
        if order is not None and held_bytes(col) == col.nbytes:  # a constant column: in any order
            col = col[order]
    else:
        joined = buffer[: n * dtype.itemsize].view(dtype)
        np.concatenate(chunks, out=joined)
        col = compact_column(joined)
        col = col[order] if col is joined else col  # (a constant column holds a copy of its value)
    chunks.clear()
    if held >= TRIM_ABOVE_BYTES:
        release_freed_memory()
    return col


def _on_threads(work: Callable[[], None], threads: int) -> None:
    """``work()`` on ``threads`` threads (this one among them), all ended when this returns; the first
    error raised in any of them is raised here."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # (raised in the caller's thread below)
            errors.append(exc)

    started: list[threading.Thread] = []
    for _ in range(threads - 1):
        thread = threading.Thread(target=run, name="kinetoscope-finish-columns")
        try:
            thread.start()
        except RuntimeError:  # (no thread now: this one makes them all)
            break
        started.append(thread)
    run()
    for thread in started:
        thread.join()
    if errors:
        raise errors[0]
