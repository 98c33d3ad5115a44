"""The reader child's columns without numpy (:mod:`tb_plugin.artifacts.snapshot_columns`,
:mod:`tb_plugin.artifacts.snapshot_parse`): each column equals numpy's conversion of the same values,
odd values included; a batch's parts written one after the other read back as the joined array; a
whole read from the pipe imports no numpy (nor ``pickle.py``: the C unpickler alone) and answers byte for byte
what the parse cache packs, without importing orjson or dataclasses."""

from __future__ import annotations

import io
import math
import os
import random
import subprocess
import sys
from array import array

import numpy as np
import orjson
import pytest
from synth.snapshot_writer import write_snapshot_pickle

from tb_plugin.artifacts import packed_arrays
from tb_plugin.artifacts import snapshot_columns as columns
from tb_plugin.artifacts.answer import read_answer, write_answer
from tb_plugin.artifacts.snapshot import pack_snapshot, parse_pickle_whole
from tb_plugin.artifacts.snapshot_stacks import Interner
from tb_plugin.trace import jsonsafe

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ODD_VALUES = [
    0,
    -1,
    2**63 - 1,
    -(2**63),
    2**63,
    2**64 + 7,
    -(2**70),
    10**400,
    True,
    False,
    None,
    1.5,
    -2.5,
    1e19,
    -1e300,
    math.nan,
    math.inf,
    -math.inf,
    "12",
    " 7 ",
    "1_000",
    "1e3",
    "2.5",
    "nan",
    "x",
    b"5",
    [1],
    {"a": 1},
    (),
    2**53 + 1,
]


def _odd_lists(seed: int) -> list[list]:
    rng = random.Random(seed)
    ints = [rng.randrange(-(2**63), 2**63) for _ in range(50)]
    out = [ints, ints + [None], [None] * 5, [], [float(i) for i in ints[:10]] + ints[:10]]
    for _ in range(60):
        out.append([rng.choice(ODD_VALUES) if rng.random() < 0.3 else rng.randrange(1 << 40) for _ in range(12)])
    return out


def _numpy_or_error(fn, values):
    try:
        return fn(values).tobytes()
    except Exception as exc:  # (the old conversion's error, if any: the new one raises it too)
        return type(exc)


@pytest.mark.parametrize("seed", range(4))
def test_each_column_equals_numpys_conversion(seed):
    for values in _odd_lists(seed):
        for fast, slow in ((columns._ints, columns._ints_numpy), (columns._floats, columns._floats_numpy)):
            want = _numpy_or_error(slow, values)
            got = _numpy_or_error(fast, values)
            assert got == want, values


@pytest.mark.parametrize("seed", range(2))
def test_packed_takes_and_refuses_what_array_does(seed):
    # (struct's conversion in place of array's, in parts: across a part's end too)
    rng = random.Random(seed)
    long = [rng.randrange(-(2**31), 2**31) for _ in range(packed_arrays.PACKED_AT_ONCE * 2 + 5)]
    for values in [*_odd_lists(seed), long, long[:-1] + [1.5], long[:-1] + [2**64]]:
        for typecode in ("i", "l", "q", "d"):
            try:
                want = array(typecode, values)
            except (TypeError, OverflowError):
                with pytest.raises(packed_arrays.REFUSED):
                    packed_arrays.packed(typecode, values)
                continue
            got = packed_arrays.packed(typecode, values)
            assert got.typecode == typecode and got.tobytes() == want.tobytes(), values


def test_action_codes_and_empty_time_columns_are_numpys():
    names = ["alloc", "oom", "segment_map", "x", None, ["a"], "free_completed", 5, (1,), math.nan, b"alloc"]
    got = columns._action_codes([], names)
    assert got.typecode == "B" and list(got) == [0, 8, 5, 10, 10, 10, 2, 10, 10, 10, 10]
    cols = columns.trace_columns([{"action": "alloc"}] * 3, Interner().stack_of)
    assert np.frombuffer(cols["cols"]["time"], np.float64).tobytes() == np.full(3, np.nan).tobytes()
    assert not cols["timed"]


def test_parts_written_one_after_another_read_back_as_the_joined_array():
    parts = [array("q", [1, 2, 3]), array("q"), array("q", [-(2**63)])]
    whole = np.array([1, 2, 3, -(2**63)], dtype=np.int64)
    split, joined = io.BytesIO(), io.BytesIO()
    write_answer(split, b"{}", {"a": parts, "b": array("i", [7]), "c": np.arange(3, dtype=np.uint8)})
    write_answer(joined, b"{}", {"a": whole, "b": np.array([7], np.int32), "c": np.arange(3, dtype=np.uint8)})
    assert split.getvalue() == joined.getvalue()
    _, got = read_answer(split.getvalue())
    np.testing.assert_array_equal(got["a"], whole)
    with pytest.raises(ValueError):  # parts of two types
        write_answer(io.BytesIO(), b"{}", {"a": [array("q", [1]), array("d", [1.0])]})


@pytest.mark.parametrize("shared", (False, True))
def test_a_whole_read_from_the_pipe_imports_no_numpy_and_answers_the_packed_snapshot(tmp_path, shared):
    out = io.BytesIO()
    write_snapshot_pickle(out, 30_000, frames=8, protocol=4, shared_frames=shared)
    data = out.getvalue()
    path = tmp_path / "snap.pickle"
    path.write_bytes(data)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with open(path, "rb") as stdin:
        got = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "tb_plugin.artifacts.snapshot_child"]
            + [str(len(data)), str(1 << 34), "60"],
            stdin=stdin,
            capture_output=True,
            env=env,
            timeout=120,
        )
    assert got.returncode == 0, got.stderr[-2000:]
    imported = [line.rsplit("|", 1)[-1].strip() for line in got.stderr.decode().splitlines() if "|" in line]
    assert "tb_plugin.artifacts.drain" in imported and "tb_plugin.artifacts.snapshot_parse" in imported
    assert not [m for m in imported if m == "numpy" or m.startswith("numpy.")]
    assert not {"pickle", "pickletools"} & set(imported)  # (the C unpickler alone: ~1.3 ms of imports less)
    # nor orjson, dataclasses or inspect (~15 ms): the header by the standard library's encoder
    assert not {"orjson", "dataclasses", "inspect"} & set(imported)
    header, arrays = pack_snapshot(parse_pickle_whole(data))
    want = io.BytesIO()
    write_answer(want, jsonsafe.dumps(header, option=orjson.OPT_SERIALIZE_NUMPY), arrays)
    assert got.stdout == want.getvalue()


def test_the_opcodes_a_pickle_may_start_with_are_pickletools():
    import pickletools

    from tb_plugin.artifacts.unpickle import PICKLE_OPCODES

    assert PICKLE_OPCODES == frozenset(bytes([ord(op.code)]) for op in pickletools.opcodes)
