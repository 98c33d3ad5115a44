"""The whole-document decode in two halves (trace/decode_halves.py): the second half's batches decoded
by a forked child give the trace a serial decode gives (strings, every column, meta, warnings, the
events side file), whatever the events and wherever the cut falls; a failed child leaves its half to
this process, and a failing parent reaps its child."""

from __future__ import annotations

import gzip
import io
import json
import os
import sys
import threading

import pytest
from conftest import sample
from method_spy import blocking_waits, record_after
from test_decode_stream import assert_same

from tb_plugin.storage.writer import BackgroundWriter
from tb_plugin.trace import decode_halves as dh
from tb_plugin.trace.columns import ColumnBuilder
from tb_plugin.trace.decode import decode_trace
from tb_plugin.trace.events import BATCH_EVENTS

pytestmark = pytest.mark.skipif(not (sys.platform.startswith("linux") and hasattr(os, "fork")), reason="no fork")


@pytest.fixture
def forks(monkeypatch):
    """Halves from a few events on, two workers allowed and a fork taken as safe; the children's pids."""
    monkeypatch.setattr(dh, "HALVES_FROM_EVENTS", 10)
    monkeypatch.setattr(dh, "default_workers", lambda: 2)
    monkeypatch.setattr(dh, "can_fork", lambda: True)
    started: list[int] = record_after(monkeypatch, dh._SecondHalf, "__init__", lambda half: half.pid)
    return started


def mixed_events(n: int) -> list[dict]:
    """``n`` groups of every phase the builder handles: complete events with args, B/E pairs (some
    spanning the cut between the halves), counters, memory instants, flows, metadata, string pids."""
    events: list[dict] = []
    for i in range(n):
        events.append(
            {
                "ph": "X",
                "cat": "kernel" if i % 3 else "cpu_op",
                "name": f"op{i % 11}" if i % 5 else 'q"}',
                "pid": 0 if i % 3 else "Spans",
                "tid": i % 4,
                "ts": i * 10,
                "dur": 5 if i % 7 else -1,
                "args": {"correlation": i, "External id": i // 2, "Input Dims": [[i % 3, 2]], "stream": 7},
            }
        )
        if i % 9 == 0:
            events.append({"ph": "B", "name": f"b{i % 4}", "pid": 1, "tid": 2, "ts": i * 10})
        if i % 9 == 5:
            events.append({"ph": "E", "pid": 1, "tid": 2, "ts": i * 10 + 1})
        if i % 13 == 0:
            events.append({"ph": "C", "name": "mem", "pid": 1, "ts": i, "args": {"value": i, "other": 2}})
            events.append(
                {
                    "ph": "i",
                    "name": "[memory]",
                    "pid": 1,
                    "tid": 1,
                    "ts": i,
                    "args": {"Bytes": 64 * i, "Addr": i, "Device Type": 1, "Device Id": 0},
                }
            )
            events.append({"ph": "s", "id": i, "pid": 1, "tid": 1, "ts": i, "cat": "fwdbwd", "name": "f"})
            events.append(
                {"ph": "f", "id": i, "pid": 0, "tid": 3, "ts": i + 1, "cat": "fwdbwd", "name": "f", "bp": "e"}
            )
        if i == n // 2:
            events.append({"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}})
            events.append({"ph": "M", "name": "thread_name", "pid": 0, "tid": 3, "args": {"name": "stream 7"}})
            events.append({"ph": "M", "name": "global_rank", "pid": 0, "args": {"value": 3}})
    return events


def serial_and_halves(data: bytes):
    ref_sink, sink = io.BytesIO(), io.BytesIO()
    ref = decode_trace(data, events_sink=ref_sink)
    got = decode_trace(data, events_sink=sink, halves=True)
    assert_same(ref, got)
    assert ref_sink.getvalue() == sink.getvalue()
    no_sink = decode_trace(data, halves=True)
    assert_same(decode_trace(data), no_sink)
    return ref, got


@pytest.mark.parametrize("groups", [BATCH_EVENTS // 2, BATCH_EVENTS + 7, 3 * BATCH_EVENTS - 1])
def test_two_halves_equal_the_serial_decode(forks, groups):
    data = json.dumps({"traceEvents": mixed_events(groups), "deviceProperties": [{"id": 0, "name": "V"}]}).encode()
    ref, _ = serial_and_halves(data)
    assert len(forks) == 2  # one child per decode with halves (with the side file, without)
    assert len(ref.events) > groups and len(ref.memory) > 0 and len(ref.flows) > 0


def test_array_form_in_halves(forks):
    data = json.dumps(mixed_events(BATCH_EVENTS + 300)).encode()
    serial_and_halves(data)
    assert forks


def test_progress_ends_at_one(forks):
    data = json.dumps({"traceEvents": mixed_events(3 * BATCH_EVENTS)}).encode()
    seen: list[float] = []
    decode_trace(data, progress=seen.append, halves=True)
    assert forks and seen == sorted(seen) and 0 < seen[0] < 1 and seen[-1] == 1.0


def test_a_failed_child_leaves_its_half_to_this_process(forks, monkeypatch):
    data = json.dumps({"traceEvents": mixed_events(2 * BATCH_EVENTS)}).encode()
    ref = decode_trace(data)

    def broken(self):
        raise RuntimeError("the child's state cannot be made")

    monkeypatch.setattr(ColumnBuilder, "state", broken)  # (in the child: the parent never calls it)
    got = decode_trace(data, halves=True)
    assert forks and all(_reaped(pid) for pid in forks)
    assert_same(ref, got)


def _file_decode(path, data: bytes, background: bool, mode: str = "wb", prefix: bytes = b""):
    """``decode_trace(data, halves=True)`` with the side file ``path`` (a file opened in ``mode`` holding
    ``prefix`` first, or a BackgroundWriter on it)."""
    with open(path, mode) as file:
        file.write(prefix)
        if not background:
            return decode_trace(data, events_sink=file, halves=True)
        with BackgroundWriter(file) as sink:
            return decode_trace(data, events_sink=sink, halves=True)


@pytest.mark.parametrize("background", [False, True])
def test_the_child_writes_its_half_into_a_side_file_with_a_descriptor(forks, monkeypatch, tmp_path, background):
    """The side file's bytes and the events' offsets are the serial decode's; this process joined none
    of the second half's batches (the child wrote them: ``pwrite`` at the serial offset)."""
    data = json.dumps({"traceEvents": mixed_events(3 * BATCH_EVENTS + 5)}).encode()
    ref_sink = io.BytesIO()
    ref = decode_trace(data, events_sink=ref_sink)
    joined_here: list[int] = []
    real_joined = dh._joined
    monkeypatch.setattr(dh, "_joined", lambda raws: joined_here.append(len(raws)) or real_joined(raws))
    got = _file_decode(tmp_path / "events", data, background)
    assert forks and joined_here == []
    assert_same(ref, got)
    assert (tmp_path / "events").read_bytes() == ref_sink.getvalue()


@pytest.mark.parametrize("background", [False, True])
@pytest.mark.parametrize("mode", ["wb", "ab", "w+b"])
def test_the_side_file_after_bytes_already_there(forks, tmp_path, background, mode):
    """A side file that holds bytes before the events (its position not 0) gets the events after them,
    as the serial decode writes them; one opened to append gets them from this process (``pwrite``
    would append)."""
    data = json.dumps({"traceEvents": mixed_events(2 * BATCH_EVENTS)}).encode()
    ref_sink = io.BytesIO()
    decode_trace(data, events_sink=ref_sink)
    prefix = b"x" * 1001
    path = tmp_path / "events"
    path.write_bytes(b"old" if mode == "ab" else b"")
    _file_decode(path, data, background, mode, prefix)
    assert forks
    assert path.read_bytes() == (b"old" if mode == "ab" else b"") + prefix + ref_sink.getvalue()


def test_a_failed_writing_child_leaves_the_same_side_file(forks, monkeypatch, tmp_path):
    """A child that wrote its batches and then failed: this process decodes and writes that half
    itself, over the same bytes at the same place."""
    data = json.dumps({"traceEvents": mixed_events(2 * BATCH_EVENTS)}).encode()
    ref_sink = io.BytesIO()
    ref = decode_trace(data, events_sink=ref_sink)

    def broken(self):
        raise RuntimeError("the child's state cannot be made")

    monkeypatch.setattr(ColumnBuilder, "state", broken)  # (in the child, after its writes)
    got = _file_decode(tmp_path / "events", data, True)
    assert forks and all(_reaped(pid) for pid in forks)
    assert_same(ref, got)
    assert (tmp_path / "events").read_bytes() == ref_sink.getvalue()


def test_joined_bytes_is_the_joined_batches_length():
    raws = [b'{"a":1}', b"{}", b'{"name":"x"}'] * (BATCH_EVENTS // 2 + 3)
    expected = sum(len(dh._joined(raws[s : s + BATCH_EVENTS])) for s in range(0, len(raws), BATCH_EVENTS))
    assert dh.joined_bytes(raws) == expected and dh.joined_bytes([]) == 0


def test_no_fork_now_decodes_here(forks, monkeypatch):
    data = json.dumps({"traceEvents": mixed_events(2 * BATCH_EVENTS)}).encode()

    def no_fork():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(dh.os, "fork", no_fork)
    assert_same(decode_trace(data), decode_trace(data, halves=True))
    assert not forks


def test_a_child_that_answered_is_left_to_exit_and_reaped_later(forks, monkeypatch):
    """Its whole answer read, the child is not waited for (the kernel frees its memory while this process
    merges): no blocking wait on it in :meth:`_SecondHalf.result`; :func:`.forked_worker.reap_exited`
    collects it later."""
    from tb_plugin.trace import forked_worker

    data = json.dumps({"traceEvents": mixed_events(2 * BATCH_EVENTS)}).encode()
    blocking = blocking_waits(monkeypatch)
    assert_same(decode_trace(data), decode_trace(data, halves=True))
    assert len(forks) == 1 and forks[0] not in blocking
    assert forks[0] in [child.pid for child in forked_worker._exiting]
    forked_worker.reap_exited(block=True)
    assert _reaped(forks[0]) and forks[0] not in [child.pid for child in forked_worker._exiting]


def test_a_failing_parent_reaps_its_child(forks, monkeypatch):
    data = json.dumps({"traceEvents": mixed_events(2 * BATCH_EVENTS)}).encode()
    real = ColumnBuilder.add_batch

    def add_batch(self, raws, joined=None):
        if forks and os.getpid() != forks[-1]:  # the parent, once the child is forked
            raise KeyboardInterrupt
        return real(self, raws, joined)

    monkeypatch.setattr(ColumnBuilder, "add_batch", add_batch)
    with pytest.raises(KeyboardInterrupt):
        decode_trace(data, halves=True)
    assert forks and _reaped(forks[-1])


def test_wanted_only_with_enough_events_two_workers_and_a_safe_fork(monkeypatch):
    monkeypatch.setattr(dh, "default_workers", lambda: 2)
    monkeypatch.setattr(dh, "can_fork", lambda: True)
    assert dh.wanted(dh.HALVES_FROM_EVENTS) and not dh.wanted(dh.HALVES_FROM_EVENTS - 1)
    monkeypatch.setattr(dh, "default_workers", lambda: 1)  # one core, or a process pool's worker
    assert not dh.wanted(10**6)
    monkeypatch.setattr(dh, "default_workers", lambda: 2)
    monkeypatch.setattr(dh, "can_fork", lambda: False)  # another thread (a server) or no fork here
    assert not dh.wanted(10**6)


def test_another_thread_means_no_fork(monkeypatch):
    monkeypatch.setattr(dh, "HALVES_FROM_EVENTS", 10)
    monkeypatch.setattr(dh, "default_workers", lambda: 2)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, name="a-server-thread")
    other.start()
    try:
        assert not dh.wanted(10**6)
    finally:
        stop.set()
        other.join()


@pytest.mark.corpus
def test_the_v100_sample_in_halves(forks):
    with gzip.open(sample("kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz")) as f:
        data = f.read()
    ref_sink, sink = io.BytesIO(), io.BytesIO()
    ref = decode_trace(data, events_sink=ref_sink)
    got = decode_trace(data, events_sink=sink, halves=True)
    assert forks
    assert_same(ref, got)
    assert ref_sink.getvalue() == sink.getvalue()


def _reaped(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False
