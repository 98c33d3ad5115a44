"""Values kept without orjson (``jsonsafe.plain_values``) and the reader child's header by the standard
library's encoder (``snapshot_parse.header_json``): each equal to what orjson's path gives, odd values
included, and the odd ones left to orjson."""

from __future__ import annotations

import math

import orjson
import pytest

from tb_plugin.artifacts.snapshot_parse import header_json
from tb_plugin.trace import jsonsafe


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


PLAIN = [
    [],
    [{"device": 0, "stage": "forward", "name": "step 1"}],
    [{"filename": "/a/b.py", "line": 12, "name": "f"}, {"filename": "??", "line": 0, "name": "c10::x"}],
    [{"a": [1, 2.5, -0.0, True, None, "é\u2028", {"b": 2**64 - 1, "c": -(2**63)}]}],
    _nested(jsonsafe.MAX_DEPTH - 1),
]
ODD = [
    [{"a": math.nan}],
    [{"a": math.inf}],
    [{"a": 2**64}],
    [{"a": -(2**63) - 1}],
    [{"a": "\ud800"}],
    [{"\udfff": 1}],
    [{1: "x"}],
    [{None: "x"}],
    [{"a": (1, 2)}],
    [{"a": {1, 2}}],
    [{"a": b"x"}],
    _nested(jsonsafe.MAX_DEPTH + 1),
]


@pytest.mark.parametrize("value", PLAIN)
def test_plain_values_are_what_clean_returns(value):
    assert jsonsafe.plain_values(value)
    assert jsonsafe.clean(value) == value


@pytest.mark.parametrize("value", ODD)
def test_odd_values_are_left_to_clean(value):
    assert not jsonsafe.plain_values(value)


def test_a_large_value_is_left_to_clean():
    value = [{"filename": "a.py", "line": i, "name": "f"} for i in range(100)]
    assert jsonsafe.plain_values(value) and not jsonsafe.plain_values(value, budget=300)


def _header(extra) -> dict:
    return {
        "format": 2,
        "segments": [{"device": 0, "address": 2**63 - 1, "stream": extra, "blocks": []}],
        "frames": [{"filename": "a.py", "line": 3, "name": "é"}],
        "annotations": [],
        "has_time": True,
        "devices": [0],
    }


@pytest.mark.parametrize(
    "extra", [None, 7, 2**64 - 1, 1e16, 1e-7, -0.0, "text\n\"'\\", "\x00\x1f\x7f", math.nan, -math.inf, "\ud800"]
)
def test_the_header_reads_back_as_orjsons(extra):
    want = jsonsafe.dumps(_header(extra), option=orjson.OPT_SERIALIZE_NUMPY)
    got = header_json(_header(extra))
    assert orjson.loads(got) == orjson.loads(want)
    if isinstance(extra, str) or extra is None or type(extra) is int:
        assert got == want  # (no float: the same bytes)


def _frame(filename="a.py", line=3, name="f") -> dict:
    return {"filename": filename, "line": line, "name": name}


@pytest.mark.parametrize(
    "odd, changed",
    [
        (_frame(line=2**64), True),
        (_frame(filename=b"a.py"), True),
        (_frame(name="\ud83d"), True),
        (_frame(filename="\ude00"), True),
        (_frame(line=True), False),  # (kept equal by clean, left to it all the same: not an int)
        (_frame(line=1.0), False),
        (_frame(line=None), False),
        (_frame(name=None), False),
    ],
)
def test_the_interners_frames_kept_only_where_clean_keeps_them(odd, changed):
    from tb_plugin.artifacts.snapshot_parse import _plain_frames

    plain = [_frame(), _frame("é.py", -(2**63), "g"), _frame(line=2**64 - 1)]
    assert _plain_frames(plain) and _plain_frames([]) and jsonsafe.clean(plain) == plain
    frames = [*plain, odd]
    assert not _plain_frames(frames) and (jsonsafe.clean(frames) != frames) == changed
    # a pair of surrogates split over two texts is two lone ones: refused as orjson refuses them
    assert not _plain_frames([_frame(name="x\ud83d"), _frame(filename="\ude00")])
