"""The concurrent ranged reader of storage/remote_blocks.py on a scripted object (per-range delays and
failures): ranges completing out of order are delivered in order, a failing middle range is reported
once with its offset and no thread is left running, the decoder stopping early stops the threads, and
the ranges held never exceed ``CONCURRENCY + AHEAD``. The real emulators are in test_cloud_stream.py."""

from __future__ import annotations

import faulthandler
import threading
import time

import pytest

from tb_plugin.storage import remote, remote_blocks
from tb_plugin.storage.read import ReadError
from tb_plugin.storage.remote_blocks import RemoteBlocks, _RangeError, _Ranges

R = 4096  # bytes per range in these tests


def document(ranges: int) -> bytes:
    """A JSON document of exactly ``ranges * R`` bytes, every range's bytes different."""
    body = b"".join(b'{"i": %07d}, ' % i for i in range(ranges * R // 14 + 1))
    doc = b'{"traceEvents": [' + body
    return doc[: ranges * R]


class Obj:
    """A fake fsspec filesystem holding one object; ``delay(index)`` seconds before range ``index``
    returns, ``fail[index]`` an exception raised by that range (every attempt)."""

    protocol = "fake"

    def __init__(self, data: bytes, delay=lambda i: 0.0, fail=None, on_start=None) -> None:
        self.data, self.delay, self.fail, self.on_start = data, delay, fail or {}, on_start
        self.lock = threading.Lock()
        self.started: list[int] = []  # range indexes in the order their GETs started
        self.finished: list[int] = []  # ... and completed
        self.in_flight = self.peak_in_flight = 0

    def unstrip_protocol(self, path: str) -> str:
        return f"fake://{path}"

    def open(self, path, mode="rb", **kwargs):
        return File(self)


class File:
    def __init__(self, obj: Obj) -> None:
        self.obj, self.size = obj, len(obj.data)

    def _fetch_range(self, start: int, end: int) -> bytes:
        obj, index = self.obj, start // R
        with obj.lock:
            obj.started.append(index)
            obj.in_flight += 1
            obj.peak_in_flight = max(obj.peak_in_flight, obj.in_flight)
        if obj.on_start:
            obj.on_start(index)
        try:
            time.sleep(obj.delay(index))
            if index in obj.fail:
                raise obj.fail[index]
            return obj.data[start:end]
        finally:
            with obj.lock:
                obj.in_flight -= 1
                obj.finished.append(index)

    def close(self) -> None:
        pass


def reader_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("kinetoscope-remote-read")]


@pytest.fixture(autouse=True)
def settings(monkeypatch):
    monkeypatch.setattr(remote_blocks, "CONCURRENCY", 4)
    monkeypatch.setattr(remote_blocks, "AHEAD", 2)
    monkeypatch.setattr(remote, "BACKOFF_S", 0.01)
    faulthandler.dump_traceback_later(120, exit=True)  # a deadlocked reader fails the run, never hangs it
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
    assert not reader_threads()


def read_all(ranges: _Ranges, n: int = 1000) -> bytes:
    out = []
    while True:
        chunk = ranges.read(n)
        if not chunk:
            return b"".join(out)
        out.append(chunk)


def test_ranges_completing_out_of_order_are_delivered_in_order():
    data = document(12)
    obj = Obj(data, delay=lambda i: 0.02 * (3 - i % 4))  # in each group of four, the last finishes first
    ranges = _Ranges(obj, "b/t.json", len(data), R)
    try:
        assert read_all(ranges) == data
    finally:
        ranges.close()
    assert sorted(obj.started) == list(range(12))
    assert obj.finished != sorted(obj.finished)  # they did complete out of order
    assert obj.peak_in_flight == 4  # CONCURRENCY GETs at once


def test_remote_blocks_yield_the_object_in_order():
    data = document(9)[: 9 * R - 100]  # a short last range
    obj = Obj(data, delay=lambda i: 0.01 * (i % 3))
    blocks = RemoteBlocks(obj, "b/t.json", len(data), range_bytes=R)
    assert b"".join(blocks) == data
    assert blocks.fraction() == 1.0
    assert sorted(obj.started) == list(range(9))


def test_failing_middle_range_is_reported_once_and_stops_the_threads():
    data = document(20)
    obj = Obj(data, delay=lambda i: 0.0 if i == 5 else 0.03, fail={5: PermissionError("access denied")})
    ranges = _Ranges(obj, "b/t.json", len(data), R)
    got = []
    with pytest.raises(_RangeError) as err:
        while True:
            got.append(ranges.read(R))
    assert err.value.start == 5 * R and isinstance(err.value.exc, PermissionError)
    assert b"".join(got) == data[: 5 * R]  # every range before it, in order
    assert ranges.read(R) == b""  # reported once: then the stream has ended
    ranges.close()
    assert not reader_threads()
    # no range started once the failure was known: only those claimed beside it (3 other threads)
    assert max(obj.started) <= 5 + 3 < 5 + ranges.bound - 1


def test_failing_middle_range_through_remote_blocks_names_the_offset():
    data = document(10)
    obj = Obj(data, fail={6: PermissionError("access denied")})
    blocks = RemoteBlocks(obj, "b/t.json", len(data), range_bytes=R)
    got = []
    with pytest.raises(ReadError, match=f"cannot read fake://b/t.json at byte {6 * R}: .*access denied"):
        for block in blocks:
            got.append(block)
    assert b"".join(got) == data[: 6 * R]
    assert not reader_threads()


def test_transient_failure_is_retried_and_the_stream_is_whole():
    data = document(8)
    tries = {"n": 0}

    def once(index):  # range 3 fails once with a transient error, then succeeds
        if index == 3:
            tries["n"] += 1
            obj.fail = {3: ConnectionError("reset")} if tries["n"] == 1 else {}

    obj = Obj(data, on_start=once)
    blocks = RemoteBlocks(obj, "b/t.json", len(data), range_bytes=R)
    assert b"".join(blocks) == data
    assert obj.started.count(3) == 2


def test_open_failure_is_reported_as_the_first_range():
    class NoOpen(Obj):
        def open(self, path, mode="rb", **kwargs):
            raise PermissionError("denied at open")

    data = document(4)
    blocks = RemoteBlocks(NoOpen(data), "b/t.json", len(data), range_bytes=R)
    with pytest.raises(ReadError, match="cannot read fake://b/t.json: .*denied at open"):
        list(blocks)


def test_shorter_range_fails_like_a_deleted_object():
    data = document(6)
    obj = Obj(data)
    blocks = RemoteBlocks(obj, "b/t.json", len(data) + 3 * R, range_bytes=R)  # listed larger than it is
    with pytest.raises(ReadError, match="deleted or replaced after it was listed"):
        list(blocks)


@pytest.mark.parametrize("how", ["generator closed", "close() while suspended"])
def test_decoder_stopping_early_stops_the_threads(how):
    """The decoder takes one block and stops (an error, the budget): no thread is left, and no range
    is started past the bound; a GET in flight finishes first."""
    data = document(40)
    obj = Obj(data, delay=lambda i: 0.05)
    blocks = RemoteBlocks(obj, "b/t.json", len(data), range_bytes=R)
    it = iter(blocks)
    assert next(it) == data[:R]
    assert reader_threads()
    if how == "generator closed":
        it.close()
    else:
        blocks.close()
    assert not reader_threads()
    assert obj.in_flight == 0
    time.sleep(0.1)
    assert len(obj.started) <= 1 + blocks._ranges.bound  # the range read, then at most a bound's worth


def test_ranges_held_never_exceed_the_bound():
    """Fast GETs, a slow decoder: the ranges started and not yet read through never exceed
    ``CONCURRENCY + AHEAD``, and reach it (the bound is what limits them)."""
    count, consumed, worst = 30, [0], [0]
    data = document(count)

    def on_start(index):  # ranges held when this one starts: it, and those the decoder has not finished
        worst[0] = max(worst[0], index + 1 - consumed[0])

    obj = Obj(data, on_start=on_start)
    ranges = _Ranges(obj, "b/t.json", len(data), R)
    total = 0
    try:
        while True:
            consumed[0] = total // R  # what read() is about to release: ranges returned in full
            chunk = ranges.read(R // 2)
            if not chunk:
                break
            total += len(chunk)
            time.sleep(0.003)
    finally:
        ranges.close()
    assert total == len(data)
    assert ranges.bound == 6
    assert worst[0] == 6 and ranges.peak_held == 6


def test_concurrency_one_is_sequential():
    data = document(6)
    obj = Obj(data, delay=lambda i: 0.01)
    ranges = _Ranges(obj, "b/t.json", len(data), R, concurrency=1, ahead=2)
    try:
        assert read_all(ranges) == data
    finally:
        ranges.close()
    assert obj.peak_in_flight == 1 and obj.started == list(range(6))


def test_empty_object_has_no_ranges():
    obj = Obj(b"")
    blocks = RemoteBlocks(obj, "b/t.json", 0, range_bytes=R)
    with pytest.raises(ReadError, match="empty"):
        list(blocks)
    assert obj.started == []


@pytest.mark.corpus
@pytest.mark.parametrize("stop", ["memory budget", "progress callback raises"])
def test_parse_stopped_early_stops_the_reader_threads(monkeypatch, stop):
    """The registry's real path (load_trace_file) on a remote V100 trace whose decode stops early (the
    memory budget, or any exception from the decoder's side): the reader threads have stopped when the
    error is raised (not later, when its traceback is collected), none in flight."""
    import gzip

    from conftest import sample

    from tb_plugin.registry.parse import load_trace_file
    from tb_plugin.trace.errors import TraceReadError

    data = gzip.decompress(sorted(sample("kineto/resnet50_num_workers_0").glob("*.gz"))[0].read_bytes())
    step = 256 << 10
    monkeypatch.setattr(remote_blocks, "RANGE_BYTES", step)
    monkeypatch.setenv("KINETOSCOPE_STREAM_ABOVE_BYTES", "0")
    monkeypatch.setenv("KINETOSCOPE_DECODE_WORKERS", "1")
    obj = Obj(data, delay=lambda i: 0.01)  # ranges of 256 KiB, a little slow: the decoder is the one that stops
    fractions = []

    def progress(x):
        fractions.append(x)
        raise RuntimeError("stop here")

    if stop == "memory budget":
        monkeypatch.setenv("KINETOSCOPE_MAX_TRACE_BYTES", str(5 << 19))
        with pytest.raises(TraceReadError, match="KINETOSCOPE_MAX_TRACE_BYTES") as err:
            load_trace_file("b/w.pt.trace.json", fs=obj, size=len(data))
    else:
        with pytest.raises(RuntimeError, match="stop here") as err:
            load_trace_file("b/w.pt.trace.json", fs=obj, size=len(data), progress=progress)
        assert len(fractions) == 1 and fractions[0] < 0.75
        assert len(obj.started) < 0.75 * -(-len(data) // step)  # stopped before the end
    assert err.value.__traceback__ is not None  # the error (and the frames it holds) still alive
    assert not reader_threads() and obj.in_flight == 0
