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
