"""gzip inflated a step at a time into a writer (storage/read.gunzip_to), as the early reader's child
writes into its memory file: the same document, bounds and errors as the registry's whole read
(``read_trace_bytes``); no step larger than ``INFLATE_STEP``; a blank start is checked before a byte is
written."""

from __future__ import annotations

import gzip
import io
import json
import os

import pytest

from tb_plugin.storage import read as rd
from tb_plugin.storage.local import LocalFS
from tb_plugin.storage.read import ReadError, gunzip_to, read_open_file_to, read_trace_bytes


def _document(events: int) -> bytes:
    body = [{"ph": "X", "name": f"op{i % 7}", "pid": 1, "tid": 1, "ts": i, "dur": 2} for i in range(events)]
    return json.dumps({"traceEvents": body}, indent=2).encode()


def _steps(data: bytes, json_document: bool = True) -> list[bytes]:
    got: list[bytes] = []
    f = io.BytesIO(data)
    length = gunzip_to(f, f.read(rd.CHUNK_BYTES), len(data), None, got.append, json_document)
    assert length == sum(map(len, got))
    return got


def _read(tmp_path, data: bytes) -> bytes:
    path = tmp_path / "t.pt.trace.json.gz"
    path.write_bytes(data)
    return bytes(read_trace_bytes(LocalFS(), str(path)))


@pytest.mark.parametrize("step", [1 << 12, 1 << 20])
def test_the_steps_join_to_the_registrys_document(tmp_path, monkeypatch, step):
    monkeypatch.setattr(rd, "INFLATE_STEP", step)
    doc = _document(3000)
    # two members, as concatenated gzip files are: both inflated, in order
    data = gzip.compress(doc[:40_000]) + gzip.compress(doc[40_000:])
    steps = _steps(data)
    assert b"".join(steps) == doc == _read(tmp_path, data)
    assert max(map(len, steps)) <= step
    assert len(steps) > len(doc) // step  # (many steps when the step is small: never the whole at once)


def test_long_blank_runs_are_squeezed_as_the_whole_read_squeezes_them(tmp_path, monkeypatch):
    monkeypatch.setattr(rd, "INFLATE_STEP", 1 << 18)
    doc = b'{"traceEvents": [' + b" " * (300_000) + b'{"ph": "i", "ts": 1}]}'
    got = b"".join(_steps(gzip.compress(doc)))
    assert got == _read(tmp_path, gzip.compress(doc))
    # the first step's 262 127 blanks kept as one space; the next step's 37 873 (a run too short) as they are
    head = len(b'{"traceEvents": [')
    assert got == doc[:head] + b" " + doc[(1 << 18) :]


def test_a_blank_start_is_held_until_its_check(monkeypatch):
    monkeypatch.setattr(rd, "INFLATE_STEP", 1 << 12)
    doc = b" " * 20_000 + b'{"traceEvents": []}'  # five blank steps, then the document
    assert b"".join(_steps(gzip.compress(doc))) == doc
    monkeypatch.setattr(rd, "JSON_HEAD_BYTES", 16_000)
    written: list[bytes] = []
    data = gzip.compress(doc)
    with pytest.raises(ReadError, match="only whitespace"):
        gunzip_to(io.BytesIO(data[10:]), data[:10], len(data), None, written.append)
    assert written == []  # nothing of a refused document reached the writer


def test_bounds_and_truncation_fail_as_the_whole_read_fails(tmp_path, monkeypatch):
    doc = _document(2000)
    cut = gzip.compress(doc)[:-30]
    with pytest.raises(ReadError) as whole:
        _read(tmp_path, cut)
    with pytest.raises(ReadError) as stepped:
        _steps(cut)
    assert str(stepped.value) == str(whole.value)
    monkeypatch.setattr(rd, "max_trace_bytes", lambda: len(doc) - 1)
    with pytest.raises(ReadError, match="decompressed"):
        _steps(gzip.compress(doc))


def test_read_open_file_to_gives_a_plain_file_whole(tmp_path):
    doc = _document(50)
    path = tmp_path / "plain.pt.trace.json.gz"  # misnamed: plain JSON read as such
    path.write_bytes(doc)
    got: list[bytes] = []
    with open(path, "rb") as f:
        read_open_file_to(f, os.path.getsize(path), str(path), got.append)
    assert got == [doc]


def _fast_steps(data: bytes) -> list[bytes]:
    got: list[bytes] = []
    f = io.BytesIO(data)
    gunzip_to(f, f.read(rd.CHUNK_BYTES), len(data), None, got.append, fast=True)
    return got


@pytest.mark.parametrize("step", [1 << 12, 1 << 20])
def test_the_fast_inflater_gives_zlibs_steps(monkeypatch, step):
    pytest.importorskip("isal")
    monkeypatch.setattr(rd, "INFLATE_STEP", step)
    doc = _document(3000)
    data = gzip.compress(doc[:40_000]) + gzip.compress(doc[40_000:])  # two members
    fast = _fast_steps(data)
    assert b"".join(fast) == doc
    assert fast == _steps(data)  # the same steps, cut at the same places
    # (and it is ISA-L's inflater that ran: its decompressor type, not zlib's)
    from tb_plugin.storage.inflate import gzip_inflater

    assert type(gzip_inflater(True)[0]).__module__ != type(gzip_inflater(False)[0]).__module__


def test_the_fast_inflater_refuses_what_zlibs_refuses(monkeypatch):
    pytest.importorskip("isal")
    doc = _document(2000)
    for bad in (gzip.compress(doc)[:-30], gzip.compress(doc)[:200] + b"\xff" * 64 + gzip.compress(doc)[264:]):
        with pytest.raises(ReadError):
            _steps(bad)
        with pytest.raises(ReadError):
            _fast_steps(bad)
    monkeypatch.setattr(rd, "max_trace_bytes", lambda: len(doc) - 1)
    with pytest.raises(ReadError, match="decompressed"):
        _fast_steps(gzip.compress(doc))


def test_without_isal_the_fast_inflater_is_zlibs(monkeypatch):
    import builtins
    import zlib

    real_import = builtins.__import__

    def no_isal(name, *args, **kwargs):
        if name == "isal" or name.startswith("isal."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_isal)
    from tb_plugin.storage.inflate import gzip_inflater

    inflater, error = gzip_inflater(True)
    assert error is zlib.error and type(inflater) is type(zlib.decompressobj())
    doc = _document(500)
    assert b"".join(_fast_steps(gzip.compress(doc))) == doc
