"""The first block of a local file (storage/read.py ``Blocks``): a file that is not gzip starts with a
block of ``HEAD_BYTES`` (its top-level keys are found without reading ``CHUNK_BYTES``: a ranged parse's
workers wait on that read), then blocks of ``CHUNK_BYTES``; a gzip file and a file whose start is blank
are read as before (their checks look at the first ``CHUNK_BYTES``). The blocks join to the same bytes,
and a streamed decode of them equals the one from a first block of ``CHUNK_BYTES``."""

from __future__ import annotations

import gzip
import json

import fsspec
import pytest

from tb_plugin.storage import read
from tb_plugin.storage.read import Blocks, ReadError
from tb_plugin.trace.decode_stream import decode_stream

FS = fsspec.filesystem("file")


def _doc(events: int) -> bytes:
    rows = [
        {"ph": "X", "cat": "cpu_op", "name": f"op{i % 7}", "pid": 1, "tid": i % 3, "ts": i, "dur": 1}
        for i in range(events)
    ]
    return json.dumps({"schemaVersion": 1, "traceEvents": rows, "displayTimeUnit": "ms"}).encode()


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of a few KB, so that a small file has a head and several chunks."""
    monkeypatch.setattr(read, "HEAD_BYTES", 1 << 10)
    monkeypatch.setattr(read, "CHUNK_BYTES", 8 << 10)


def test_a_plain_file_starts_with_a_head_block_then_chunks(tmp_path, small_blocks):
    data = _doc(2000)
    path = tmp_path / "t.json"
    path.write_bytes(data)
    blocks = list(Blocks(FS, str(path), len(data)))
    assert len(blocks[0]) == read.HEAD_BYTES  # (the old first block was CHUNK_BYTES)
    assert all(len(b) == read.CHUNK_BYTES for b in blocks[1:-1]) and len(blocks) > 3
    assert b"".join(blocks) == data


def test_a_file_within_the_head_is_one_block(tmp_path, small_blocks):
    data = b'{"traceEvents": []}'
    path = tmp_path / "t.json"
    path.write_bytes(data)
    assert list(Blocks(FS, str(path), len(data))) == [data]


def test_a_blank_start_is_read_and_refused_as_before(tmp_path, small_blocks, monkeypatch):
    monkeypatch.setattr(read, "JSON_HEAD_BYTES", 4 << 10)  # a whitespace bomb: only blanks in this many
    path = tmp_path / "t.json"
    path.write_bytes(b" " * (16 << 10) + _doc(10))
    with pytest.raises(ReadError, match="hold only whitespace"):
        list(Blocks(FS, str(path)))
    # blanks shorter than the check: the first block is CHUNK_BYTES (the check's reach), as before
    data = b" " * (3 << 10) + _doc(500)
    path.write_bytes(data)
    blocks = list(Blocks(FS, str(path)))
    assert len(blocks[0]) == read.CHUNK_BYTES and b"".join(blocks) == data


def test_a_gzip_file_inflates_from_the_same_head(tmp_path, small_blocks, monkeypatch):
    data = _doc(3000)
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(data, compresslevel=0))  # (stored: larger than the head)
    got = list(Blocks(FS, str(path)))
    monkeypatch.setattr(read, "HEAD_BYTES", read.CHUNK_BYTES)  # the head of CHUNK_BYTES read at once
    assert list(Blocks(FS, str(path))) == got and b"".join(got) == data


@pytest.mark.parametrize("workers", [1, 2])
def test_decoded_the_same_as_from_a_first_block_of_chunk_bytes(tmp_path, monkeypatch, workers):
    data = _doc(20000)
    path = tmp_path / "t.json"
    path.write_bytes(data)
    monkeypatch.setattr(read, "HEAD_BYTES", 1 << 10)
    got = decode_stream(Blocks(FS, str(path)), workers=workers, chunk_bytes=64 << 10)
    monkeypatch.setattr(read, "HEAD_BYTES", read.CHUNK_BYTES)
    ref = decode_stream(Blocks(FS, str(path)), workers=workers, chunk_bytes=64 << 10)
    assert got.strings == ref.strings and got.meta == ref.meta and got.warnings == ref.warnings
    for key, col in ref.events.columns.items():
        assert got.events.columns[key].tobytes() == col.tobytes(), key
