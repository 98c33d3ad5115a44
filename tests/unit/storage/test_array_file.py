"""The parse cache's array files: exact round trips (the same fields as the npz they replace) and
malformed files refused before any array is allocated."""

from __future__ import annotations

import io
import json
import os
import struct

import numpy as np
import pytest

from tb_plugin.storage import array_file
from tb_plugin.storage.array_file import ALIGN, MAGIC, read_arrays, write_arrays


def _arrays() -> dict[str, np.ndarray]:
    """Every dtype the trace's columns use and more: empty, 0-d, non-contiguous, stride-0, other byte order."""
    out: dict[str, np.ndarray] = {}
    for t in ("i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8", "c8", "c16", "?"):
        dtype = np.dtype(t)
        out[f"n.{t}"] = (np.arange(37) * 7 % 5).astype(dtype)
        out[f"e.{t}"] = np.zeros(0, dtype=dtype)
        out[f"z.{t}"] = np.array(3, dtype=dtype)  # 0-d
    out["f8.special"] = np.array([np.nan, -0.0, np.inf, -np.inf, 5e-324])
    out["big.i8"] = np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max])
    out["swapped"] = np.arange(9, dtype=">i4")
    out["strided"] = np.arange(100, dtype=np.int64)[::3]
    out["fortran"] = np.asfortranarray(np.arange(24, dtype=np.float32).reshape(4, 6))
    out["transposed"] = np.arange(30, dtype=np.int16).reshape(5, 6).T
    out["constant"] = np.broadcast_to(np.int32(-4), (1001,))  # a compacted column: stride 0
    out["empty2d"] = np.zeros((0, 4), dtype=np.int64)
    out["str"] = np.array(["", "é", "ab\x00c"])
    out["bytes"] = np.array([b"", b"\x00\xff"])
    out["ünïcode name"] = np.array([1, 2])
    return out


def _roundtrip(arrays, **kwargs) -> dict[str, np.ndarray]:
    buf = io.BytesIO()
    write_arrays(buf, arrays)
    return _read(buf.getvalue(), **kwargs)


def _read(data: bytes, **kwargs) -> dict[str, np.ndarray]:
    import tempfile

    with tempfile.TemporaryFile() as f:
        f.write(data)
        f.seek(0)
        return read_arrays(f, **kwargs)


def _same(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes()  # bits: NaN, -0.0


def test_every_dtype_shape_and_layout_reads_back_as_written():
    arrays = _arrays()
    got = _roundtrip(arrays)
    assert list(got) == list(arrays)
    for name, want in arrays.items():
        _same(got[name], want)
        if any(want.strides) or want.size < 2:
            assert got[name].flags.writeable and got[name].flags.c_contiguous  # each its own array


def test_a_stride_0_array_is_stored_as_one_value_and_read_back_as_one():
    column = np.broadcast_to(np.float64(-0.0), (100_000,))  # what Table.compact makes of a constant column
    grid = np.broadcast_to(np.array([7], dtype=">i2"), (30, 40))
    full = np.zeros(100_000)  # constant but its own memory: stored whole
    buf = io.BytesIO()
    write_arrays(buf, {"column": column, "grid": grid, "full": full})
    assert len(buf.getvalue()) < full.nbytes + 4096
    got = _read(buf.getvalue())
    for name, want in (("column", column), ("grid", grid)):
        _same(got[name], want)
        assert not any(got[name].strides) and not got[name].flags.writeable  # as compact_column gives
    _same(got["full"], full)
    assert got["full"].strides == (8,)


def test_the_same_fields_as_the_npz_it_replaces():
    arrays = _arrays()
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    buf.seek(0)
    with np.load(buf, allow_pickle=False) as npz:
        old = {k: npz[k] for k in npz.files}
    new = _roundtrip(arrays)
    assert set(old) == set(new)
    for name in old:
        _same(new[name], old[name])


def test_non_contiguous_arrays_are_written_in_pieces(monkeypatch):
    monkeypatch.setattr(array_file, "_CHUNK", 64)  # several pieces and a short last one
    arrays = {
        "constant": np.broadcast_to(np.float64(2.5), (1000,)),
        "rows": np.arange(3000, dtype=np.int32).reshape(100, 30)[:, ::2],
        "strided": np.arange(1000, dtype=np.uint8)[::7],
    }
    got = _roundtrip(arrays)
    for name, want in arrays.items():
        _same(got[name], want)


def test_arrays_start_aligned_and_the_file_has_its_stated_length():
    buf = io.BytesIO()
    write_arrays(buf, {"a": np.arange(3, dtype=np.int8), "b": np.arange(5, dtype=np.int64)})
    data = buf.getvalue()
    index_len, total = struct.unpack_from("<QQ", data, len(MAGIC))
    assert total == len(data) and len(data) % ALIGN == 0
    start = -(-(len(MAGIC) + 16 + index_len) // ALIGN) * ALIGN
    index = json.loads(data[len(MAGIC) + 16 : len(MAGIC) + 16 + index_len])
    assert [i[3] % ALIGN for i in index] == [0, 0]
    b = index[1]
    assert data[start + b[3] : start + b[3] + 40] == np.arange(5, dtype=np.int64).tobytes()


def test_compact_is_applied_to_each_array_as_it_is_read():
    seen = []
    arrays = {"a": np.ones(4), "b": np.arange(3), "c": np.broadcast_to(np.int8(1), (5,))}
    got = _roundtrip(arrays, compact=lambda a: seen.append(len(a)) or a[:1])
    assert seen == [4, 3] and len(got["a"]) == 1 and len(got["b"]) == 1  # (c is one value already)
    _same(got["c"], arrays["c"])


@pytest.mark.parametrize(
    "bad", [np.array([{}, None], dtype=object), np.zeros(2, dtype=[("x", "i4")]), np.zeros(2, "V4")]
)
def test_dtypes_that_need_pickle_or_fields_are_refused_when_written(bad):
    buf = io.BytesIO()
    with pytest.raises(ValueError):
        write_arrays(buf, {"ok": np.arange(3), "bad": bad})
    assert buf.getvalue() == b""  # checked before anything is written


def _file(index: list, data_bytes: int = 64, total: int | None = None) -> bytes:
    """An array file with this index (raw JSON values) and ``data_bytes`` of data."""
    body = json.dumps(index).encode()
    start = -(-(len(MAGIC) + 16 + len(body)) // ALIGN) * ALIGN
    size = start + data_bytes
    head = MAGIC + struct.pack("<QQ", len(body), size if total is None else total) + body
    return head + bytes(start - len(head)) + bytes(data_bytes)


def test_a_handmade_file_reads():
    got = _read(_file([["a", "<i8", [8], 0, False], ["b", "|u1", [3, 5], 64, True]], data_bytes=128))
    _same(got["a"], np.zeros(8, dtype=np.int64))
    _same(got["b"], np.zeros((3, 5), dtype=np.uint8))


@pytest.mark.parametrize(
    "index",
    [
        [["a", "<i8", [9], 0, False]],  # one item beyond the data
        [["a", "<i8", [1 << 40], 0, False]],  # far beyond: refused before the allocation
        [["a", "<i8", [1 << 30, 1 << 30, 1 << 30], 0, False]],  # a product beyond 64 bits
        [["a", "<i8", [-1], 0, False]],
        [["a", "<i8", [True], 0, False]],
        [["a", "<i8", [1.0], 0, False]],
        [["a", "<i8", 4, 0, False]],
        [["a", "<i8", [4], 8, False]],  # not aligned
        [["a", "<i8", [4], -64, False]],
        [["a", "<i8", [4], 0, False], ["b", "<i8", [4], 0, False]],  # overlapping
        [["a", "<i8", [1], 0, False], ["a", "<i8", [1], 64, False]],  # a name twice (with data to hold both)
        [["a", "|O", [1], 0, False]],  # an object: a pickle
        [["a", "|V8", [1], 0, False]],
        [["a", "|S0", [1 << 60], 0, False]],  # zero-sized items: any count
        [["a", "i8", [1], 0, False]],  # not numpy's dtype.str
        [["a", [["x", "<i4"]], [1], 0, False]],
        [["a", "<i8", [1], 0]],  # the last format's items
        [["a", "<i8", [1], 0, 0]],
        [["a", "<i8", [1], 0, True]],  # one element repeated
        [["a", "<i8", [1 << 20], 0, True]],  # more elements than the file has bytes
        [["a", "<i8", [0], 0, True]],
        [[1, "<i8", [1], 0, False]],
        {"a": 1},
        "a",
    ],
)
def test_a_malformed_index_is_refused_before_any_array_is_allocated(index, monkeypatch):
    made = []
    real = np.empty
    monkeypatch.setattr(array_file.np, "empty", lambda *a, **k: made.append(a) or real(*a, **k))
    data = _file(
        index, data_bytes=128 if isinstance(index, list) and index[:1] == [["a", "<i8", [1], 0, False]] else 64
    )
    with pytest.raises((ValueError, TypeError)):
        _read(data)
    assert made == []


def test_truncated_padded_or_foreign_files_are_refused():
    buf = io.BytesIO()
    write_arrays(buf, {"a": np.arange(100, dtype=np.int64), "b": np.arange(3, dtype=np.float32)})
    data = buf.getvalue()
    for cut in sorted({0, 1, 7, 8, 15, 23, 24, 30, len(data) // 2, len(data) - ALIGN, len(data) - 1}):
        with pytest.raises(ValueError):
            _read(data[:cut])
    with pytest.raises(ValueError):
        _read(data + b"\x00")  # longer than it says: not the file written
    with pytest.raises(ValueError):
        _read(b"PK\x03\x04" + data[4:])  # a zip (an npz of an older cache)
    with pytest.raises(ValueError):
        _read(_file([["a", "<i8", [1], 0, False]], total=10**6))  # says it is longer than it is
    huge = MAGIC + struct.pack("<QQ", 1 << 62, 1 << 62)
    with pytest.raises(ValueError):
        _read(huge)  # an index said to be beyond the file


def test_a_file_that_shrinks_while_read_is_refused(tmp_path):
    path = tmp_path / "f"
    with open(path, "wb") as f:
        write_arrays(f, {"a": np.arange(1000, dtype=np.int64)})
    with open(path, "rb") as f:
        os.truncate(path, 200)  # after the open, before the read: fstat sees 200 bytes
        with pytest.raises(ValueError):
            read_arrays(f)
