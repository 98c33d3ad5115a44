"""The reader child's answer (artifacts/answer.py): raw arrays read back as views, and answers that do not
read (truncated, a foreign dtype, an array reaching past the end) refused, never read out of bounds."""

from __future__ import annotations

import io
import struct

import numpy as np
import orjson
import pytest

from tb_plugin.artifacts.answer import MAGIC, read_answer, write_answer
from tb_plugin.artifacts.isolated import SnapshotError, unpack_answer


def _answer(header: dict, arrays: dict) -> bytes:
    out = io.BytesIO()
    write_answer(out, orjson.dumps(header), arrays)
    return out.getvalue()


def test_arrays_come_back_equal_aligned_and_writable():
    arrays = {
        "0.action": np.array([0, 1, 2], dtype=np.uint8),
        "0.addr": np.array([16, -1, 2**62], dtype=np.int64),
        "0.time": np.array([1.5, np.nan, 3.0]),
        "0.stack": np.array([-1, 0, 7], dtype=np.int32),
        "empty": np.zeros(0, dtype=np.int64),
        "strided": np.arange(10, dtype=np.int64)[::3],
    }
    payload = bytearray(_answer({"format": 2, "frames": [{"name": "f"}]}, arrays))
    header, got = read_answer(payload)
    assert header == {"format": 2, "frames": [{"name": "f"}]}
    assert list(got) == list(arrays)
    for name, a in arrays.items():
        assert got[name].dtype == a.dtype
        np.testing.assert_array_equal(got[name], a)
        assert got[name].ctypes.data % 8 == 0 or len(a) == 0
        assert got[name].flags.writeable  # a bytearray's views, as np.load's arrays were


def _with_index(index: list, body: bytes = b"") -> bytes:
    header, idx = b"{}", orjson.dumps(index)
    head = MAGIC + struct.pack("<QQ", len(header), len(idx)) + header + idx
    return head + bytes(-len(head) % 8) + body


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"PK\x03\x04 an npz",
        MAGIC + struct.pack("<QQ", 10**12, 0),  # a header longer than the answer
        _with_index([["a", "<i8", 2]], bytes(8)),  # an array past the end
        _with_index([["a", "<i8", 2**61]], bytes(8)),  # a count whose bytes overflow nothing but the answer
        _with_index([["a", "|O", 1]], bytes(8)),  # objects: never
        _with_index([["a", ">i8", 1]], bytes(8)),  # another byte order
        _with_index([["a", "<i8", -1]], bytes(8)),
        _with_index([["a", "<i8", 1], ["a", "<i8", 0]], bytes(8)),  # a name twice
        _with_index([["a", "<i8"]], bytes(8)),
        _with_index({"a": 1}),
        MAGIC + struct.pack("<QQ", 2, 2) + b"[]{}",  # a header that is not an object
    ],
)
def test_an_answer_that_does_not_read_is_refused(payload):
    with pytest.raises(ValueError):
        read_answer(payload)
    with pytest.raises(SnapshotError, match="unreadable"):
        unpack_answer(payload)
