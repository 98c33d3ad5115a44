"""Columns whose rows all hold one value travel and join as that value (trace/joined.py, the decode
``OneValuePickler``, ``decode_stream.merge``): a worker's answer carries the value and the length,
not every row; a unit's batches join into one stride-0 chunk; the merge maps the one value; the finish
makes the column from it without joining the chunks. Each gives the arrays (values, dtype, strides) the
joined rows gave."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from tb_plugin.trace import decode_workers as dw
from tb_plugin.trace.columns import ColumnBuilder
from tb_plugin.trace.decode_stream import merge
from tb_plugin.trace.decode_workers import decode_batch
from tb_plugin.trace.joined import joined_chunks, joined_column
from tb_plugin.trace.model import STRING_ID_COLUMNS, compact_column


def _one(value, n, dtype):
    return compact_column(np.full(n, value, dtype=dtype))


def _same(a: np.ndarray, b: np.ndarray) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape and a.strides == b.strides
    assert a.tobytes() == b.tobytes() and a.flags.writeable == b.flags.writeable


CASES = {
    "one value in every chunk": [_one(-1, 5, np.int64), _one(-1, 7, np.int64), _one(-1, 3, np.int64)],
    "a one-row chunk of the same value": [_one(4, 5, np.int32), np.array([4], np.int32), _one(4, 2, np.int32)],
    "a one-row chunk of another value": [_one(4, 5, np.int32), np.array([5], np.int32), _one(4, 2, np.int32)],
    "two values": [_one(-1, 5, np.int64), _one(-2, 5, np.int64)],
    "one NaN everywhere": [_one(np.nan, 4, np.float64), _one(np.nan, 6, np.float64)],
    "zero and minus zero": [_one(0.0, 4, np.float64), _one(-0.0, 4, np.float64)],
    "empty chunks between": [np.zeros(0, np.int32), _one(9, 3, np.int32), np.zeros(0, np.int32), _one(9, 2, np.int32)],
    "rows that differ": [np.arange(5, dtype=np.int64), _one(-1, 5, np.int64)],
    "equal rows not held as one value": [np.full(4, 3, np.int64), _one(3, 4, np.int64)],
    "one row in all": [np.array([1], np.int64), np.zeros(0, np.int64)],
    "no chunks": [],
    "another dtype": [_one(1, 4, np.int64), _one(1, 4, np.int64)],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_joined_column_is_the_compacted_concatenation(case):
    chunks = CASES[case]
    dtype = np.int32 if case == "another dtype" else (chunks[0].dtype if chunks else np.int64)
    whole = np.concatenate(chunks) if chunks else np.zeros(0, dtype=dtype)
    _same(joined_column(chunks, dtype), compact_column(whole.astype(dtype, copy=False)))


def test_a_column_of_one_value_is_made_without_joining_its_chunks(monkeypatch):
    monkeypatch.setattr(np, "concatenate", lambda *a, **k: pytest.fail("joined"))
    got = joined_column(CASES["one value in every chunk"], np.int64)
    assert got.strides == (0,) and len(got) == 15 and int(got[0]) == -1


@pytest.mark.parametrize("case", sorted(c for c in CASES if len(CASES[c]) > 1 and c != "another dtype"))
def test_joined_chunks_hold_the_concatenations_values(case):
    chunks = CASES[case]
    got, whole = joined_chunks(chunks), np.concatenate(chunks)
    assert got.dtype == whole.dtype and got.tobytes() == whole.tobytes()
    one_value = (
        "one value in every chunk",
        "a one-row chunk of the same value",
        "one NaN everywhere",
        "empty chunks between",
    )
    assert (got.strides == (0,)) == (case in one_value)


def test_an_answer_carries_a_constant_column_as_one_value():
    """Pickled with every row (numpy's own way for a stride-0 array: into the pickle) a 100 000-row
    constant column is 800 KB; the answer's pickle holds one value and comes back as the same view."""
    constant = _one(-1, 100_000, np.int64)
    body, buffers = dw._pickled({"c": constant, "rows": np.arange(10, dtype=np.int64)})
    assert len(body) < 1000 and sorted(len(b.raw()) for b in buffers) == [8, 80]  # (the one value, the 10 rows)
    got = pickle.loads(body, buffers=buffers)
    _same(got["c"], constant)
    assert got["rows"].tobytes() == np.arange(10, dtype=np.int64).tobytes()


def _batch(pid_text: bool, n: int = 300, start: int = 0) -> bytes:
    pid = b'"host"' if pid_text else b"7"
    return (
        b"["
        + b",".join(
            b'{"ph":"X","cat":"cpu_op","name":"op%d","pid":%s,"tid":3,"ts":%d,"dur":1,"args":{"Seq":-1}}'
            % (i % 5, pid, start + i)
            for i in range(n)
        )
        + b"]"
    )


def test_a_workers_state_joins_a_units_constant_batches_into_one_value():
    state = decode_batch([_batch(True), _batch(True, start=300)], False)
    assert state["chunks"]["pid"][0].strides == (0,) and len(state["chunks"]["pid"][0]) == 600
    assert state["chunks"]["name"][0].strides != (0,)
    body, buffers = dw._pickled(state)
    plain_buffers: list = []
    plain = pickle.dumps(state, protocol=5, buffer_callback=plain_buffers.append)  # (numpy's own: every row)
    sent, rows = (len(b) + sum(len(x.raw()) for x in bs) for b, bs in ((body, buffers), (plain, plain_buffers)))
    assert sent < rows - 8 * 600  # (at least the 600 rows of "seq", an int64 column of -1, are not sent)


@pytest.mark.parametrize("sink", [False, True])
def test_merging_answers_of_one_value_gives_the_columns_of_merging_every_row(sink):
    """The same two answers merged as the workers send them now (constant columns as one value) and as
    they were sent (every row): equal chunks, string ids renumbered and side-file offsets moved alike."""
    states = [decode_batch([_batch(False)], sink), decode_batch([_batch(True, start=300)], sink)]

    def merged(unpack):
        into = ColumnBuilder(None)
        into.intern(["other", "host"])  # (ids already taken: the merge renumbers)
        if sink:
            into.sink = _Sink()
        for base, state in enumerate(states):
            merge(into, unpack(state), 1000 * base)
        return into

    def sent(state):
        body, buffers = dw._pickled(state)
        return pickle.loads(body, buffers=buffers)

    def every_row(state):
        out = dict(state)
        out["chunks"] = {k: [np.ascontiguousarray(c) for c in v] for k, v in state["chunks"].items()}
        return out

    now, before = merged(sent), merged(every_row)
    assert now.strings == before.strings
    assert any(c.strides == (0,) and k in STRING_ID_COLUMNS for k, v in now.chunks.items() for c in v)
    for key in before.chunks:
        for a, b in zip(now.chunks[key], before.chunks[key], strict=True):
            _same(a, b)


class _Sink:
    def write(self, data):  # (the merge reads only whether there is one)
        return len(data)


def test_the_merge_appends_an_answers_new_texts_in_its_order():
    """The texts an answer interned that this builder has not are appended in the answer's order, and
    every id is renumbered to this builder's, as the merge's loop over each text did (its reference here)."""
    into = ColumnBuilder(None)
    into.intern(["b", "d"])
    state = decode_batch([_batch(False)], False)
    state["keys"], state["texts"] = ["a", "b", "c", "d", "e"], ["a", "b", "c", "d", "e"]
    state["chunks"] = {"name": [np.array([1, 2, 3, 4, 5, 1], np.int32)], "pid": [_one(3, 4, np.int32)]}
    for key in ("begin_end", "memory_parts", "flow_rows", "counter_rows"):
        state[key] = []
    reference = list(into.strings)
    ids = {text: i for i, text in enumerate(reference) if i}
    for text in state["texts"]:
        ids.setdefault(text, len(reference))
        if len(reference) == ids[text]:
            reference.append(text)
    merge(into, state, 0)
    assert into.strings == reference == [into.strings[0], "b", "d", "a", "c", "e"]
    expect = [ids[t] for t in ("a", "b", "c", "d", "e", "a")]
    assert into.chunks["name"][-1].tolist() == expect
    _same(into.chunks["pid"][-1], _one(ids["c"], 4, np.int32))


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="no fork")
def test_the_second_halfs_child_answers_a_constant_column_as_one_value():
    """The whole-document decode's second half (trace/decode_halves.py) comes back from its child with
    a constant column as one value (numpy's own pickle: every row, contiguous), its rows those of the
    same batches decoded here."""
    from tb_plugin.trace import decode_halves as dh
    from tb_plugin.trace.events import _RAW_LIST

    raws = _RAW_LIST.decode(_batch(True, 600))
    half = dh._SecondHalf([raws[:300], raws[300:]], 1, False)  # (batches; the child decodes from the second)
    state = half.result()
    here = ColumnBuilder(None)
    here.add_batch(raws[300:])
    assert state is not None and state["chunks"]["pid"][0].strides == (0,)
    for key in ("pid", "seq", "name", "ts"):
        (got,) = state["chunks"][key]
        assert got.tobytes() == np.concatenate(here.chunks[key]).tobytes()
