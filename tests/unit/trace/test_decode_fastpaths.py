"""The decoder's shortcuts (the cold report against its peers) give what the long way gives,
known by construction: an arg absent from a whole batch is the constant its conversion would make
(-1, NaN, string id 0), present in the next batch it keeps its exact value, string and numeric columns
skip their per-value Python only when that changes nothing (ranks text is still stripped, a string pid
still names its device), and ``Trace.name_mask`` tests event names only, never the call stacks and
shapes that fill most of the string table."""

from __future__ import annotations

import numpy as np
import orjson

from tb_plugin.trace.decode import decode_trace
from tb_plugin.trace.events import BATCH_EVENTS


def _kernel(i: int, **args) -> dict:
    return {
        "ph": "X",
        "cat": "kernel",
        "name": f"k{i % 3}",
        "pid": 0,
        "tid": 7,
        "ts": float(i),
        "dur": 0.5,
        "args": {"correlation": i, **args},
    }


def _trace(first: list[dict], second: list[dict]) -> bytes:
    return orjson.dumps({"traceEvents": first + second})


def test_an_arg_present_in_one_batch_only():
    """Batch 1 has no grid, call stack, group or string pid; batch 2 has one of each on its last event."""
    first = [_kernel(i) for i in range(BATCH_EVENTS)]
    last = _kernel(
        BATCH_EVENTS + 4,
        grid=[2, 3, 4],
        block=[128, 1, 1],
        **{"Call stack": "train.py(10): step", "Process Group Ranks": " [0, 1] ", "Seq": 9, "flops": 2.5},
    )
    second = [_kernel(BATCH_EVENTS + i) for i in range(4)] + [last]
    second[0]["pid"] = "GPU 3"  # a string pid naming a device
    ev = decode_trace(_trace(first, second)).events
    n = BATCH_EVENTS + 5
    order = np.argsort(ev.correlation)
    assert len(ev) == n and ev.correlation[order].tolist() == list(range(n))
    seq, flops = ev.seq[order], ev.flops[order]
    assert seq[-1] == 9 and (seq[:-1] == -1).all()
    assert flops[-1] == 2.5 and np.isnan(flops[:-1]).all()
    tr = decode_trace(_trace(first, second))
    text = [tr.strings[i] for i in tr.events.grid.tolist()]
    assert sorted(set(text)) == ["", "[2, 3, 4]"]
    ranks = {tr.strings[i] for i in tr.events.process_group_ranks.tolist()}
    assert ranks == {"", "[0, 1]"}  # stripped: the string shortcut is not taken for ranks
    assert {tr.strings[i] for i in tr.events.call_stack.tolist()} == {"", "train.py(10): step"}
    assert (tr.events.group_size == -1).all()  # " [0, 1] " is no "[...]" list text: no count
    device = dict(zip(tr.events.correlation.tolist(), tr.events.device.tolist()))
    assert device[BATCH_EVENTS] == 3 and device[0] == 0


def test_name_mask_tests_names_only():
    ops = [
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": name,
            "pid": 1,
            "tid": 1,
            "ts": float(i),
            "dur": 1.0,
            "args": {"Call stack": "aten::mm_helper in a frame", "Input Dims": [[2, 2]]},
        }
        for i, name in enumerate(["aten::mm", "aten::add", "aten::mm"])
    ]
    tr = decode_trace(orjson.dumps({"traceEvents": ops}))
    assert any(s.startswith("aten::mm_") for s in tr.strings)  # a call stack matching the predicate
    assert tr.name_mask(lambda s: s.startswith("aten::mm")).tolist() == [True, False, True]
    assert not tr.name_mask(lambda s: "frame" in s).any()  # only in a call stack: no event
    assert tr.name_mask(lambda s: True).all()


def test_list_texts_equal_list_text_one_by_one():
    """The C-speed grid/block texts (``repr``, quoted ones converted one by one) equal :func:`_list_text`
    of each value: lists of ints, floats, bools, None, strings (quoted by repr, not by _list_text),
    nested lists, dicts, scalars and None kept as None."""
    from tb_plugin.trace.events import _list_text, _list_texts

    values = [
        None,
        [13, 1, 1],
        [1.5, 2, True],
        ["a", 1],
        "abc",
        'a"b',
        7,
        2.5,
        [None, [1, 2]],
        {"x": 1},
        {},
        [],
        [[1, "b"]],
        [float("nan"), float("inf")],
        False,
        10**30,
        [-0.0],
    ]
    assert _list_texts(values) == [_list_text(v) for v in values]
    assert _list_texts(values)[:4] == [None, "[13, 1, 1]", "[1.5, 2, True]", "[a, 1]"]
    assert _list_texts([None, None]) == [None, None] and _list_texts([]) == []


def test_struct_fields_transposed_in_c_equal_one_attribute_read_per_event():
    """``arg_columns`` and ``event_columns`` (tuples of each struct, transposed by ``zip``) give, field by
    field, what reading each attribute of each event gives: decoded events with every arg set, some
    with none, and an empty batch."""
    import msgspec

    from tb_plugin.trace import events as E

    names = {f.name: f.encode_name for f in msgspec.structs.fields(E._Args)}
    full = {names[f]: f"{f}-{i}" for i, f in enumerate(E.ARG_FIELDS)}
    docs = [_kernel(i, **(full if i % 3 else {})) for i in range(50)] + [{"ph": "X", "name": "bare", "ts": 1.0}]
    decoded = msgspec.json.decode(orjson.dumps(docs), type=list[E._Event])
    args = [e.args if e.args is not None else E._Args() for e in decoded]
    assert E.arg_columns(args) == {f: tuple(getattr(a, f) for a in args) for f in E.ARG_FIELDS}
    assert E.event_columns(decoded) == [tuple(getattr(e, f) for e in decoded) for f in E.EVENT_FIELDS]
    assert E.arg_columns([]) == {f: () for f in E.ARG_FIELDS} and E.event_columns([]) == [() for _ in E.EVENT_FIELDS]


def _same_column(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal dtype, length and bits (NaN equal to NaN)."""
    return a.dtype == b.dtype and a.shape == b.shape and np.ascontiguousarray(a).tobytes() == b.tobytes()


def test_numeric_columns_equal_each_column_converted_alone():
    """``_numeric_columns`` (an all-None list as one stride-0 missing value) gives, column by column,
    what ``_float_column``/``_int_column`` give: floats, ints at the edges of int32/int64 and beyond
    2**53, numeric strings, bools, None, NaN/inf, all-None columns, hostile values."""
    from tb_plugin.trace.events import _float_column, _int_column, _numeric_columns

    types = [None, np.int64, np.int32, np.int64, None, np.int32]
    columns = [
        [1.5, None, -0.0, float("nan")],
        [2**53 + 1, -(2**63), 2**63 - 1, "7"],
        [2**31 - 1, 2**31, -(2**31), -1.9],
        [None, None, None, None],
        ["1e3", True, float("inf"), None],
        [None, None, None, None],
    ]
    hostile = [*columns[:3], [[1, 2], None, 3, 4], ["x", 1, 2, 3], [10**400, 1, 2, 3]]
    for values, dtypes in ((columns, types), (hostile, types), ([], []), ([[], []], [None, np.int32])):
        alone = [_float_column(v) if t is None else _int_column(v, t) for v, t in zip(values, dtypes)]
        at_once = _numeric_columns([tuple(v) for v in values], dtypes)
        assert len(at_once) == len(alone) and all(map(_same_column, at_once, alone))


def test_interning_straight_into_the_column_equals_the_lookup_of_each_value():
    """A miss before an unhashable value, an unhashable one before a miss, numbers and None: the ids
    are the first-occurrence ones, the same for equal values, and lists are interned as their text."""
    from tb_plugin.trace.columns import ColumnBuilder

    b = ColumnBuilder()
    assert b.intern(["a", "b", "a", None]).tolist() == [1, 2, 1, 0]
    assert b.intern(["b", "new", ["x"], "a"]).tolist() == [2, 3, 4, 1]
    assert b.intern([["y"], "later", ["x"]]).tolist() == [5, 6, 4]
    assert b.intern([7, "7", 2.5, None]).tolist() == [7, 8, 9, 0]
    assert b.strings == ["", "a", "b", "new", "['x']", "['y']", "later", "7", "7", "2.5"]


def test_input_dims_in_either_spelling():
    """ "Input Dims" (PyTorch 1.10+) where an event has it, else "Input dims" (2021's spelling): a batch
    with only the old spelling, only the new one, or both mixed gives each event its own shapes."""
    old = [{**_kernel(i), "args": {"Input dims": [[i, 2]]}} for i in range(3)]
    new = [{**_kernel(3 + i), "args": {"Input Dims": [[3 + i, 4]]}} for i in range(3)]
    for events in (old, new, old + new, [old[0], new[0], {**_kernel(9), "args": {}}]):
        tr = decode_trace(orjson.dumps({"traceEvents": events}))
        got = [tr.strings[i] for i in tr.events.input_dims.tolist()]
        want = [str(e["args"].get("Input Dims", e["args"].get("Input dims", ""))) for e in events]
        assert got == [w if w else "" for w in want]
