"""The background writer's held writes and its ``writev`` of a hand-off (storage/writer.py): the file gets
the same bytes in the same order as chunk-at-a-time writes, a cut ``writev`` is completed, and a file
object that is not a plain file (a compressing one, a buffer, one appending) keeps chunk-at-a-time writes."""

from __future__ import annotations

import gzip
import io
import os

import pytest

from tb_plugin.storage import writer
from tb_plugin.storage.writer import BackgroundWriter, _descriptor

CHUNKS = [bytes([i % 251]) * (1000 + 37 * i) for i in range(120)] + [b"", memoryview(b"tail")]


def _expected() -> bytes:
    return b"".join(bytes(c) for c in CHUNKS)


@pytest.mark.parametrize("hold", [False, True])
def test_the_same_bytes_held_or_not(tmp_path, hold):
    with open(tmp_path / "out", "wb") as f:
        f.write(b"head")  # (buffered in the file object: it goes first)
        with BackgroundWriter(f) as w:
            if hold:
                w.hold()
            for c in CHUNKS:
                w.write(c)
            assert w.tell() == 4 + len(_expected())
            if hold:
                assert w._pending and w._queue.empty()  # nothing handed to the thread while held
                w.release()
                assert not w.holding and not w._pending
    assert (tmp_path / "out").read_bytes() == b"head" + _expected()


def test_a_cut_writev_is_completed(tmp_path, monkeypatch):
    calls: list[int] = []
    real = os.writev

    def short(fd, views):
        calls.append(len(views))
        return real(fd, [bytes(views[0])[:777]])  # (at most 777 bytes a call)

    monkeypatch.setattr(writer.os, "writev", short)
    monkeypatch.setattr(writer, "VECTOR_CHUNKS", 5)
    with open(tmp_path / "out", "wb") as f, BackgroundWriter(f) as w:
        w.hold()
        for c in CHUNKS:
            w.write(c)
        w.release()
    assert (tmp_path / "out").read_bytes() == _expected()
    assert calls and max(calls) <= 5


def test_only_plain_files_are_written_with_writev(tmp_path):
    with open(tmp_path / "a", "wb") as f:
        assert _descriptor(f) == f.fileno()
    with open(tmp_path / "a", "wb", buffering=0) as f:
        assert _descriptor(f) == f.fileno()
    with open(tmp_path / "a", "ab") as f:
        assert _descriptor(f) is None  # (writev would append: the same, but left to the file object)
    with open(tmp_path / "b", "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb") as z:
        assert _descriptor(z) is None
        with BackgroundWriter(z) as w:
            w.hold()
            for c in CHUNKS:
                w.write(c)
            w.release()
    assert gzip.decompress((tmp_path / "b").read_bytes()) == _expected()
    buffer = io.BytesIO()
    assert _descriptor(buffer) is None
    with BackgroundWriter(buffer) as w:
        for c in CHUNKS:
            w.write(c)
    assert buffer.getvalue() == _expected()
