"""The finish's event columns in time order (``Finishing._time_ordered_columns``): joined into one reused
buffer and gathered from there, they equal the columns joined first and then gathered (the rule before)."""

from __future__ import annotations

import numpy as np
import pytest

from tb_plugin.trace.finish import Finishing
from tb_plugin.trace.model import EVENT_COLUMNS, compact_column, held_bytes


class _Chunks(Finishing):
    """Only the chunks: the step under test reads nothing else of the builder."""

    def __init__(self, chunks: dict[str, list[np.ndarray]]) -> None:
        self.chunks = chunks

    def intern(self, values: list) -> np.ndarray:
        raise AssertionError("not used")

    def _pair_begin_end(self) -> tuple[int, int]:
        raise AssertionError("not used")


def _joined_then_gathered(chunks: dict[str, list[np.ndarray]]) -> dict[str, np.ndarray]:
    """The reference: every column joined (as its dtype, constant ones as a stride-0 view), then the
    columns that vary gathered by a stable sort of ``ts``."""
    cols = {
        k: compact_column((np.concatenate(v) if v else np.zeros(0, EVENT_COLUMNS[k])).astype(EVENT_COLUMNS[k]))
        for k, v in chunks.items()
    }
    order = np.argsort(cols["ts"], kind="stable")
    return {k: c[order] if held_bytes(c) == c.nbytes else c for k, c in cols.items()}


def _chunks(rng: np.random.Generator, sizes: list[int], ts_of) -> dict[str, list[np.ndarray]]:
    out: dict[str, list[np.ndarray]] = {k: [] for k in ("name", "ts", "dur", "correlation", "shared_memory", "stream")}
    for i, n in enumerate(sizes):
        out["name"].append(rng.integers(0, 50, n).astype(np.int32))
        out["ts"].append(ts_of(i, n))
        out["dur"].append(rng.random(n))
        out["correlation"].append(rng.integers(-1, 1 << 40, n))
        out["shared_memory"].append(compact_column(np.full(n, 7, dtype=np.int64)))  # constant: a stride-0 chunk
        # a chunk not of its column's dtype (int64): joined and cast as before, then gathered
        out["stream"].append(rng.integers(0, 9, n).astype(np.int32 if i == 1 else np.int64))
    return out


def _same(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    assert list(got) == list(want)
    for k in want:
        assert got[k].dtype == want[k].dtype, k
        assert np.array_equal(got[k], want[k]), k
        assert (held_bytes(got[k]) < got[k].nbytes) == (held_bytes(want[k]) < want[k].nbytes), k


def test_out_of_order_chunks_are_gathered_into_time_order_with_ties_in_file_order():
    rng = np.random.default_rng(3)
    # times repeat across chunks (ties keep file order) and the chunks overlap in time
    chunks = _chunks(rng, [700, 5, 1300], lambda i, n: rng.integers(0, 400, n).astype(np.float64))
    want = _joined_then_gathered({k: list(v) for k, v in chunks.items()})
    file_ts, file_names = np.concatenate(chunks["ts"]), np.concatenate(chunks["name"])
    got = _Chunks(chunks)._time_ordered_columns()
    _same(got, want)
    assert np.all(np.diff(got["ts"]) >= 0)
    # each row's columns moved together: the row with the latest time, the last of its ties in the file
    last = len(file_ts) - 1 - int(np.argmax(file_ts[::-1]))
    assert got["name"][-1] == file_names[last] and not np.array_equal(got["name"], file_names)
    assert got["shared_memory"].strides == (0,) and int(got["shared_memory"][0]) == 7


def test_columns_already_in_time_order_are_joined_as_they_are():
    rng = np.random.default_rng(5)
    chunks = _chunks(rng, [400, 600], lambda i, n: np.arange(n, dtype=np.float64) + 1000.0 * i)
    names = np.concatenate(chunks["name"])
    got = _Chunks({k: list(v) for k, v in chunks.items()})._time_ordered_columns()
    _same(got, _joined_then_gathered(chunks))
    assert np.array_equal(got["name"], names)


@pytest.mark.parametrize("sizes", [[0], []])
def test_no_events(sizes):
    chunks = _chunks(np.random.default_rng(1), sizes, lambda i, n: np.zeros(n))
    got = _Chunks({k: list(v) for k, v in chunks.items()})._time_ordered_columns()
    _same(got, _joined_then_gathered(chunks))
    assert all(len(c) == 0 for c in got.values())


def test_columns_made_on_two_threads_equal_those_made_on_one(monkeypatch):
    """From THREADS_ABOVE_ROWS rows on two usable cores, the columns are made on two threads (each with
    its own buffer): the same columns, dtypes and stride-0 constants, both threads used, none left."""
    import threading

    from tb_plugin.trace import ordered_columns

    rng = np.random.default_rng(11)
    chunks = _chunks(rng, [900, 40, 1100], lambda i, n: rng.integers(0, 500, n).astype(np.float64))
    want = _joined_then_gathered({k: list(v) for k, v in chunks.items()})
    made_on: list[str] = []
    real = ordered_columns._column

    def spied(*args):
        made_on.append(threading.current_thread().name)
        return real(*args)

    monkeypatch.setattr(ordered_columns, "_column", spied)
    monkeypatch.setattr(ordered_columns, "usable_cores", lambda: 2)
    monkeypatch.setattr(ordered_columns, "THREADS_ABOVE_ROWS", 1000)
    before = set(threading.enumerate())
    got = _Chunks(chunks)._time_ordered_columns()
    _same(got, want)
    assert set(threading.enumerate()) == before and len(made_on) == len(want) - 1  # (ts made first)
    assert {"kinetoscope-finish-columns", threading.current_thread().name} >= set(made_on)
    monkeypatch.setattr(ordered_columns, "usable_cores", lambda: 1)
    made_on.clear()
    chunks = _chunks(np.random.default_rng(11), [900, 40, 1100], lambda i, n: np.arange(n, dtype=np.float64)[::-1])
    _same(_Chunks({k: list(v) for k, v in chunks.items()})._time_ordered_columns(), _joined_then_gathered(chunks))
    assert set(made_on) == {threading.current_thread().name}  # (one core: this thread alone)


def test_an_error_on_the_second_thread_is_raised_here(monkeypatch):
    """The second thread fails on its column (this one waits until it has taken one): the error is
    raised by the finish once both threads have ended."""
    import threading

    from tb_plugin.trace import ordered_columns

    taken = threading.Event()
    calls: list[str] = []

    def column(*args):
        name = threading.current_thread().name
        calls.append(name)
        if name == "kinetoscope-finish-columns":
            taken.set()
            raise MemoryError("no room for the column")
        taken.wait(5)
        return np.zeros(0)

    monkeypatch.setattr(ordered_columns, "_column", column)
    monkeypatch.setattr(ordered_columns, "usable_cores", lambda: 2)
    monkeypatch.setattr(ordered_columns, "THREADS_ABOVE_ROWS", 10)
    chunks = _chunks(np.random.default_rng(2), [30, 30], lambda i, n: np.arange(n, dtype=np.float64)[::-1])
    before = set(threading.enumerate())
    with pytest.raises(MemoryError, match="no room"):
        _Chunks(chunks)._time_ordered_columns()
    assert set(threading.enumerate()) == before and calls.count("kinetoscope-finish-columns") == 1


def test_the_stable_time_order_is_none_where_the_rows_are_in_it():
    from tb_plugin.trace.ordered_columns import stable_time_order

    assert stable_time_order(np.array([1.0, 1.0, 2.0, 5.0])) is None
    assert stable_time_order(np.array([3.0])) is None and stable_time_order(np.zeros(0)) is None
    assert stable_time_order(np.array([1.0, 2.0, np.nan])) is None  # (NaN sorts last: nothing moves)
    assert stable_time_order(np.array([2.0, 1.0, 2.0, 1.0])).tolist() == [1, 3, 0, 2]  # (ties in file order)
    assert stable_time_order(np.array([np.nan, 1.0])).tolist() == [1, 0]
