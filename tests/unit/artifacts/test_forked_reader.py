"""The reader child forked from a nearly empty ``kinetoscope report`` (:mod:`tb_plugin.artifacts.forked`):
bounded as a started child is (address space, CPU time, its own wall-clock alarm), holding none of the
parent's descriptors, and its failures read as a started child's."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys

import pytest
from conftest import REPO

from tb_plugin.artifacts import child_terms, forked, isolated
from tb_plugin.artifacts.forked import ForkedReader, can_fork
from tb_plugin.artifacts.snapshot_child import forked_main

pytestmark = pytest.mark.skipif(not can_fork(), reason="needs fork, memory files and one thread")


def _limits(pid: int) -> dict[str, str]:
    """``/proc/PID/limits``: each limit's name → its soft value."""
    with open(f"/proc/{pid}/limits") as f:
        rows = f.read().splitlines()[1:]
    return {row[:26].strip(): row[26:47].strip() for row in rows}


def _wait_for_limits(pid: int, memory: int) -> dict[str, str]:
    """The child's limits once it has set them (it does so first; polled, at most 60 s)."""
    import time

    end = time.monotonic() + 60  # a guard against a hang, not a timing
    while time.monotonic() < end:
        got = _limits(pid)
        if got["Max address space"] == str(memory):
            return got
        time.sleep(0.01)
    return _limits(pid)


def test_the_forked_child_takes_its_limits_and_holds_no_other_descriptor():
    """While the child waits on its stdin (a pipe here), its address-space and CPU limits are the terms',
    and a pipe the parent opened before the fork ends when the parent closes it (the child closed its copy)."""
    stdin_r, stdin_w = os.pipe()
    other_r, other_w = os.pipe()
    memory, limit = 1 << 30, 40.0
    child = ForkedReader(stdin_r, ["100", str(memory), str(limit)], forked_main)
    try:
        os.close(stdin_r)
        got = _wait_for_limits(child.pid, memory)
        assert got["Max address space"] == str(memory)
        assert got["Max cpu time"] == str(int(limit) + 1)
        os.close(other_w)
        assert os.read(other_r, 1) == b""  # no other writer: the child does not hold it
    finally:
        os.close(stdin_w)
        os.close(other_r)
        child.wait(timeout=60)
        child.close()


def _started_child(argv: list[str], data: bytes) -> tuple[int, bytes, bytes]:
    """A fresh interpreter's child on ``data``: exit status, answer, messages."""
    done = subprocess.run(
        [sys.executable, "-m", "tb_plugin.artifacts.snapshot_child", *argv],
        input=data,
        capture_output=True,
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=REPO),
        timeout=120,
    )
    return done.returncode, done.stdout, done.stderr


def _forked_child(argv: list[str], data: bytes, tmp_path) -> tuple[int, bytes, bytes]:
    path = tmp_path / "input.pickle"
    path.write_bytes(data)
    with open(path, "rb") as f:
        child = ForkedReader(f.fileno(), argv, forked_main)
    code = child.wait(timeout=120)  # (said on its status pipe, or its end: the child is reaped now or later)
    out, err = child.answer()
    forked._reap_exited(block=True)
    assert child.pid not in forked._unreaped
    return code, bytes(out), err


@pytest.mark.parametrize(
    "argv, data",
    [
        (["0", str(1 << 30), "60"], pickle.dumps([print], protocol=4)),  # a global: refused
        (["0", str(1 << 30), "60"], b"not a pickle"),
        (["0", "not-a-number", "60"], b""),  # an uncaught error: a traceback, exit status 1
        (["0", str(1 << 30), "60"], pickle.dumps({"device_traces": [], "segments": []}, protocol=4)),
    ],
)
def test_a_forked_child_answers_as_a_started_one(argv, data, tmp_path):
    forked = _forked_child(argv, data, tmp_path)
    started = _started_child(argv, data)
    assert forked[0] == started[0] and forked[1] == started[1]
    if forked[0] == 1:  # the traceback's last line (the paths differ: -m against a function)
        assert forked[2].strip().splitlines()[-1] == started[2].strip().splitlines()[-1]
    else:
        assert forked[2] == started[2]


def test_a_forked_child_ends_on_its_own_wall_clock_bound(monkeypatch):
    """A child whose stdin never ends is ended by its alarm (the parent's grace lowered to 0 before the
    fork), whatever handler the parent had for that signal."""
    monkeypatch.setattr(child_terms, "WALL_GRACE_S", 0)
    previous = signal.signal(signal.SIGALRM, lambda *_: None)
    stdin_r, stdin_w = os.pipe()
    try:
        child = ForkedReader(stdin_r, ["100", str(1 << 30), "1"], forked_main)
        os.close(stdin_r)
        assert child.wait(timeout=60) == -signal.SIGALRM  # (60 s: a guard against a hang, not a timing)
        child.close()
    finally:
        signal.signal(signal.SIGALRM, previous)
        os.close(stdin_w)


def test_a_killed_forked_child_is_reaped_and_its_files_are_closed():
    stdin_r, stdin_w = os.pipe()
    with open(os.devnull, "rb") as devnull:
        started = isolated.ForkedStarted(devnull, 1000, forked_main)
    child = ForkedReader(stdin_r, ["100", str(1 << 30), "60"], forked_main)
    os.close(stdin_r)
    try:
        child.kill()
        assert child.wait(timeout=60) == -signal.SIGKILL
        assert child.poll() == -signal.SIGKILL
    finally:
        os.close(stdin_w)
        child.close()
    fds = set(os.listdir("/proc/self/fd"))
    started.kill()  # the answer unwanted: reaped, its memory files closed
    assert started.child.returncode is not None and len(set(os.listdir("/proc/self/fd"))) < len(fds)


def test_a_started_child_says_its_status_on_its_pipe_and_is_reaped_beside():
    """A started reader child with a status pipe (``start_child(status=True)``: the spare, a fresh child)
    says its exit status once its output is closed; it is reaped by a thread, its Popen never waits."""
    import threading
    import time

    from tb_plugin.artifacts.child_pipes import REAPER, said_status, start_child

    data = pickle.dumps([print], protocol=4)  # a global: refused, exit status 3
    child = start_child("tb_plugin.artifacts.snapshot_child", ["0", str(1 << 30), "60"], status=True)
    child.stdin.write(data)
    child.stdin.close()
    err = child.stderr.read()  # (its end: the child closed it before saying its status)
    assert child.stdout.read() == b"" and b"refused" in err
    assert said_status(child, time.monotonic() + 60) == child_terms.EXIT_REFUSED == child.returncode
    assert child.status_fd is None  # (read once, closed)
    # the reaping thread ends once the child has exited (only the reapers: a test process that ran the
    # cloud, Dask or browser tests holds their daemon threads for good, and each would be waited 60 s)
    reapers = [t for t in threading.enumerate() if t.name == REAPER]
    for t in reapers:
        t.join(60)
    assert not any(t.is_alive() for t in reapers)
    with pytest.raises(ChildProcessError):
        os.waitpid(child.pid, os.WNOHANG)  # reaped
    child.stdout.close()
    child.stderr.close()


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_a_forked_child_that_answers_says_its_status_first(protocol, tmp_path):
    """A reader child that answered (a whole read from the pipe on protocols 4-5, a buffered one before)
    says its exit status on its pipe before it exits: its parent takes the answer without waiting while
    the kernel frees the child's memory (the child is reaped later)."""
    import sys as _sys

    _sys.path.insert(0, os.path.join(REPO, "tests"))
    from synth.snapshot_writer import write_snapshot_pickle

    path = tmp_path / "input.pickle"
    with open(path, "wb") as f:
        write_snapshot_pickle(f, 200, frames=2, protocol=protocol)
    with open(path, "rb") as f:
        child = ForkedReader(f.fileno(), [str(path.stat().st_size), str(1 << 30), "60"], forked_main)
    assert child.wait(timeout=120) == 0  # (a guard against a hang, not a timing)
    assert child.pid in forked._unreaped  # said on the pipe: not reaped by the wait
    out, err = child.answer()
    assert len(out) > 0 and err == b""
    forked._reap_exited(block=True)
