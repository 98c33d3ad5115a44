"""The decode workers (trace/decode_workers.py) with two batches in flight each, fed by writer
threads: a worker that dies mid-run leaves its batches to this process (the result equal to the
serial decode), and a failing caller stops them without hanging."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest
from fuzz_inputs import time_bound

from tb_plugin.trace import decode_workers as dw
from tb_plugin.trace.columns import ColumnBuilder
from tb_plugin.trace.decode_workers import decode_batch, run_parallel
from tb_plugin.trace.events import _RAW_LIST

FORKS = sys.platform.startswith("linux") and hasattr(os, "fork")  # where can_fork() may be true
BATCHES = [
    b"["
    + b",".join(
        b'{"ph":"X","cat":"cpu_op","name":"op%d","pid":1,"tid":%d,"ts":%d,"dur":1}' % (i % 7, b, i) for i in range(200)
    )
    + b"]"
    for b in range(12)
]


def _states(batches, n, monkeypatch=None):
    got = []
    run_parallel(
        iter([[b] for b in batches]),
        n,
        False,
        lambda state, parts: got.append((b"".join(parts), state["keys"], state["texts"])),
    )
    return got


@pytest.fixture(params=["fork", "subprocess"])
def start_method(request, monkeypatch):
    """Each test runs with forked workers and with ``python -c`` workers."""
    if request.param == "fork" and not FORKS:
        pytest.skip("no fork here")
    monkeypatch.setattr(dw, "can_fork", lambda: request.param == "fork")
    return request.param


def test_parallel_answers_in_order_equal_the_in_process_decode(start_method):
    got = _states(BATCHES, 3)
    assert [j for j, _, _ in got] == BATCHES
    for joined, keys, texts in got:
        state = decode_batch([joined], False)
        assert (keys, texts) == (state["keys"], state["texts"])


def test_a_worker_killed_mid_run_leaves_its_batches_to_this_process(monkeypatch, start_method):
    real = dw.Workers.receive
    calls = []

    def receive(self, i):
        calls.append(i)
        if len(calls) == 3:
            self.procs[i % len(self.procs)].kill()
            self.procs[i % len(self.procs)].wait()
        return real(self, i)

    monkeypatch.setattr(dw.Workers, "receive", receive)
    got = _states(BATCHES, 2)
    assert [j for j, _, _ in got] == BATCHES  # every batch once, in order
    # answers the killed worker had already written may still be read; the rest were decoded here
    assert 3 <= len(calls) < len(BATCHES)


def test_a_failing_caller_stops_the_workers_promptly(start_method):
    def take(state, joined):
        raise RuntimeError("budget")

    with time_bound(120), pytest.raises(RuntimeError):  # a hang guard: workers left running never return
        run_parallel(iter([[b] for b in BATCHES * 4]), 2, False, take)


def test_workers_are_forks_only_beside_known_threads():
    """A fork copies every lock but only the forking thread: beside an unknown thread (a server's),
    workers are fresh interpreters; beside the events file's writer alone, forks."""
    others_known = all(
        t is threading.current_thread() or t.name in dw._FORK_SAFE_THREADS for t in threading.enumerate()
    )
    assert dw.can_fork() == (FORKS and others_known)
    stop = threading.Event()
    for name, expected in (("kinetoscope-writer", True), ("some-server-thread", False)):
        thread = threading.Thread(target=stop.wait, name=name)
        thread.start()
        try:
            others_ok = all(
                t is threading.current_thread() or t is thread or t.name in dw._FORK_SAFE_THREADS
                for t in threading.enumerate()
            )
            assert dw.can_fork() == (FORKS and expected and others_ok)
            if others_ok:
                with dw.Workers(1) as workers:
                    assert isinstance(workers.procs[0], dw._Forked) == expected
        finally:
            stop.set()
            thread.join()
            stop.clear()


@pytest.mark.skipif(not FORKS, reason="workers are forks on Linux only")
def test_a_forked_worker_leaves_the_parents_output_alone():
    """A forked worker exits without flushing the buffers it copied: text this process had not yet
    flushed is written once, by this process, and the decoded batches are right."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    code = (
        f"import sys; sys.path.insert(0, {root!r}); sys.stdout = open(1, 'w', buffering=1 << 20)\n"
        "from tb_plugin.trace import decode_workers as dw\n"
        "assert dw.can_fork()\n"
        "print('before', end='')\n"
        "got = []\n"
        'batches = [[b\'[\' + b\',\'.join(b\'{"ph":"X","name":"n%d","ts":%d,"dur":1}\' % (i, i) for i in range(50)) + b\']\']] * 5\n'
        "dw.run_parallel(iter(batches), 2, False, lambda state, joined: got.append(len(state['texts'])))\n"
        "print(' after', got, end='')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout == b"before after [50, 50, 50, 50, 50]"  # (each batch interns its own names)


@pytest.mark.skipif(not FORKS, reason="workers are forks on Linux only")
@pytest.mark.parametrize("pidfd", [True, False])
def test_a_forked_worker_is_waited_for_with_a_timeout(monkeypatch, pidfd):
    """A forked worker serving its pipe does not exit: waiting times out; killed, its status is the
    signal's; a worker whose input ends exits 0. With or without process file descriptors."""
    if not pidfd:
        monkeypatch.setattr(os, "pidfd_open", lambda pid: (_ for _ in ()).throw(OSError("none")), raising=False)
    worker = dw._Forked([])
    with pytest.raises(subprocess.TimeoutExpired):
        worker.wait(timeout=0.05)
    worker.kill()
    assert worker.wait(timeout=10) == -9
    worker.stdin.close()
    worker.stdout.close()
    done = dw._Forked([])
    done.stdin.close()
    assert done.wait(timeout=10) == 0 and done.stdout.read() == b""
    done.stdout.close()


def test_a_unit_of_batches_decodes_as_the_whole_document_decoder_decodes_them():
    """Several batches sent as one unit come back as one state whose strings are interned as the
    whole-document decoder interns them, batch after batch (first occurrence across the unit)."""
    parts = BATCHES[:3]
    state = decode_batch(parts, True)
    builder = ColumnBuilder(dw._NullSink())
    for joined in parts:
        builder.add_batch(_RAW_LIST.decode(joined), joined)
    assert state["keys"] == list(builder._ids)[1:] and state["texts"] == builder.strings[1:]
    assert sum(len(c) for c in state["chunks"]["ts"]) == 600
    offsets = np.concatenate(state["chunks"]["src_offset"])  # counted across the unit's batches
    assert offsets[0] == 1 and offsets[200] == len(parts[0]) + 1


@pytest.mark.skipif(not FORKS, reason="forked workers run on Linux only")
def test_a_forked_workers_pipes_hold_a_whole_answer_where_the_system_allows():
    """A worker's answer (~1.5 MB for a unit of the ranged parse) waits in its pipe instead of the worker
    waiting on the write: the pipes are widened to PIPE_BYTES, or left as they are past the system's limit."""
    import fcntl

    limit = int(open("/proc/sys/fs/pipe-max-size").read())
    worker = dw._Forked([])
    try:
        sizes = [fcntl.fcntl(fd, getattr(fcntl, "F_GETPIPE_SZ", 1032)) for fd in worker.fds()]
    finally:
        worker.stdin.close()
        worker.wait(timeout=5)
        worker.stdout.close()
    assert sizes == [dw.PIPE_BYTES] * 2 if limit >= dw.PIPE_BYTES else all(s >= 4096 for s in sizes)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        dw._widen(null)  # not a pipe: left alone, nothing raised
    finally:
        os.close(null)


@pytest.mark.skipif(not FORKS, reason="forked workers run on Linux only")
def test_the_next_unit_goes_to_the_worker_that_answered(tmp_path, monkeypatch):
    """Unit 0 waits for a file that only unit 2 * DEPTH makes: fed to a fixed worker (unit i to worker
    i % 2), that unit would wait behind unit 0 on the same worker; fed to the worker that answered
    first, it runs on the other one and unit 0 sees the file. Answers are still taken in order."""
    monkeypatch.setattr(dw, "can_fork", lambda: True)
    flag = tmp_path / "flag"

    def step(i: int, make: bool) -> dict:
        if make:
            flag.write_text("made")
        if i == 0:
            import time

            deadline = time.monotonic() + 60
            while not flag.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
            return {"i": i, "saw": flag.exists()}
        return {"i": i}

    monkeypatch.setitem(dw._CALLS, "test_step", step)
    units = [dw.Call("test_step", i, i == 2 * dw.DEPTH) for i in range(2 * dw.DEPTH + 3)]
    got: list[dict] = []
    with time_bound(120):
        run_parallel(iter(units), 2, False, lambda state, unit: got.append(state))
    assert [g["i"] for g in got] == list(range(len(units)))
    assert got[0]["saw"]


def test_where_pipes_cannot_be_polled_the_answers_are_read_in_order(monkeypatch, start_method):
    """Without ``select.poll`` (Windows: ``select`` takes no pipe) the next answer read is the one taken
    next, as before the workers were fed as they answer: the same states, in order."""
    monkeypatch.delattr(dw.select, "poll")
    got = _states(BATCHES, 2)
    assert [j for j, _, _ in got] == BATCHES


def test_an_answers_arrays_travel_out_of_band_and_come_back_equal():
    """An answer's arrays are written after its pickle, not inside it (no copy into the pickle), and the
    arrays read back equal the worker's, dtypes, shapes and strides of one value included."""
    state = decode_batch([BATCHES[0]], False)
    state["extra"] = [np.arange(5, dtype=np.int32), np.broadcast_to(np.float64(2.5), (4,)), np.zeros(0)]
    body, buffers = dw._pickled(state)
    assert any(bytes(b.raw()) == np.arange(5, dtype=np.int32).tobytes() for b in buffers)  # outside the pickle
    assert np.arange(5, dtype=np.int32).tobytes() not in body
    read, write = os.pipe()
    writer = threading.Thread(target=lambda: dw._write_answers(_queue([(body, buffers), None]), open(write, "wb")))
    writer.start()

    class _Proc:
        stdout = open(read, "rb")

    workers = dw.Workers.__new__(dw.Workers)
    workers.procs = [_Proc()]
    workers.broken = False
    got = workers.receive(0)
    writer.join()
    _Proc.stdout.close()
    assert got["keys"] == state["keys"] and got["texts"] == state["texts"]
    for key, chunks in state["chunks"].items():
        for a, b in zip(chunks, got["chunks"][key], strict=True):
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    for a, b in zip(state["extra"], got["extra"], strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _queue(items):
    import queue

    q: queue.Queue = queue.Queue()
    for item in items:
        q.put(item)
    return q


@pytest.mark.parametrize("readv", [True, False])
def test_parts_are_read_whole_however_the_pipe_cuts_them(monkeypatch, readv):
    """``_read_parts`` fills consecutive parts (empty ones too) from a pipe written a few bytes at a time,
    with ``readv`` and without it (Windows), and says None when the pipe ends early."""
    if not readv:
        monkeypatch.delattr(os, "readv", raising=False)
    data = bytes(range(256)) * 40
    sizes = [3, 0, 1000, 1, 0, len(data) - 1004]  # (the last one past _UNCLEARED: an uncleared array)
    assert sizes[-1] >= dw._UNCLEARED > sizes[2]
    read, write = os.pipe()

    def dribble():
        for i in range(0, len(data), 7):
            os.write(write, data[i : i + 7])
        os.close(write)

    writer = threading.Thread(target=dribble)
    writer.start()
    parts = dw._read_parts(read, sizes)
    assert parts is not None and [len(p) for p in parts] == sizes and b"".join(parts) == data
    assert dw._read_parts(read, [1]) is None  # (the writer closed its end)
    writer.join()
    os.close(read)
