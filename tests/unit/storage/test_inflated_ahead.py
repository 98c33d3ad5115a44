"""A gzip trace inflated by a thread ahead of the decoder (storage/inflate.py ``inflated_ahead``): the same
blocks in the same order, the producer's error where its block would have come, nothing left running
when the decoder stops early, and decode workers still forked (the thread starts after them)."""

from __future__ import annotations

import gzip
import json
import threading

import fsspec
import pytest

from tb_plugin.storage import read
from tb_plugin.storage.inflate import inflated_ahead
from tb_plugin.storage.read import Blocks, read_trace_bytes
from tb_plugin.trace import decode_workers
from tb_plugin.trace.decode import decode_trace
from tb_plugin.trace.decode_stream import decode_stream


def _inflating() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name == "kinetoscope-inflate"]


def test_same_blocks_in_order():
    blocks = [bytes([i]) * (i + 1) for i in range(50)]
    assert list(inflated_ahead(iter(blocks), depth=2)) == blocks
    assert not _inflating()


def test_the_producers_error_comes_after_its_blocks():
    def produce():
        yield b"a"
        yield b"b"
        raise read.ReadError("corrupt gzip data near compressed byte 7")

    got = []
    with pytest.raises(read.ReadError, match="near compressed byte 7"):
        for block in inflated_ahead(produce(), depth=1):
            got.append(block)
    assert got == [b"a", b"b"] and not _inflating()


def test_stopping_early_stops_the_thread_and_closes_the_producer():
    closed = []

    def produce():
        try:
            for i in range(10_000):
                yield b"x" * 10
        finally:
            closed.append(True)

    ahead = inflated_ahead(produce(), depth=2)
    assert next(ahead) == b"x" * 10
    ahead.close()
    assert closed == [True] and not _inflating()


def _gzipped_trace(tmp_path, events: int = 6000):
    body = json.dumps(
        {
            "traceEvents": [
                {"ph": "X", "name": f"op{i % 37}", "cat": "cpu_op", "pid": 1, "tid": i % 3, "ts": i, "dur": 1}
                for i in range(events)
            ],
            "deviceProperties": [{"id": 0}],
        }
    ).encode()
    path = tmp_path / "t.pt.trace.json.gz"
    path.write_bytes(gzip.compress(body))
    return path


def test_streamed_gzip_on_forked_workers_is_the_whole_parse(tmp_path, monkeypatch):
    monkeypatch.setattr(read, "CHUNK_BYTES", 4096)  # many inflated blocks
    path = _gzipped_trace(tmp_path)
    fs = fsspec.filesystem("file")
    forkable = []
    real = decode_workers.can_fork
    monkeypatch.setattr(decode_workers, "can_fork", lambda: forkable.append(real()) or forkable[-1])
    ref = decode_trace(read_trace_bytes(fs, str(path)))
    got = decode_stream(Blocks(fs, str(path), path.stat().st_size), workers=2, chunk_bytes=20_000)
    assert forkable and all(forkable) == real()  # the workers were started before the thread
    assert not _inflating()
    assert got.strings == ref.strings and got.meta == ref.meta and got.warnings == ref.warnings
    for key, col in ref.events.columns.items():
        assert col.dtype == got.events.columns[key].dtype and col.tobytes() == got.events.columns[key].tobytes(), key


def test_a_budget_error_mid_stream_leaves_no_thread(tmp_path, monkeypatch):
    monkeypatch.setattr(read, "CHUNK_BYTES", 4096)
    path = _gzipped_trace(tmp_path)
    fs = fsspec.filesystem("file")
    with pytest.raises(Exception, match="budget"):
        decode_stream(Blocks(fs, str(path), path.stat().st_size), chunk_bytes=20_000, budget=1000)
    assert not _inflating()
