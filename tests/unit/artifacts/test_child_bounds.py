"""A reader child never outlives what its parent asked of it: it ends itself on its own wall-clock
bound when the parent stops writing, and a parent whose write fails mid-batch ends the child."""

from __future__ import annotations

import pickle
import signal
import subprocess
import sys

import pytest
from conftest import REPO

from tb_plugin.artifacts import isolated


def test_a_child_whose_parent_stops_writing_ends_on_its_own_bound():
    """The child of a parent that never closes its pipe is ended by its alarm (here 1 s, no grace)."""
    code = (
        "import sys; import tb_plugin.artifacts.child_terms as t; t.WALL_GRACE_S = 0; t.end_after(1.0); "
        "sys.stdin.buffer.read()"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, cwd=REPO)
    try:
        assert child.wait(timeout=60) == -signal.SIGALRM  # (60 s: a guard against a hang, not a timing)
    finally:
        child.kill()
        child.stdin.close()


def test_a_batch_whose_input_fails_ends_its_child(monkeypatch):
    started: list = []
    real = isolated._child
    monkeypatch.setattr(isolated, "_child", lambda argv: started.append(real(argv)) or started[-1])
    datas = [pickle.dumps({"segments": []}), "text, not bytes"]  # the second write fails mid-batch
    with pytest.raises(TypeError):
        isolated.read_many_in_child(datas, "plain")  # type: ignore[list-item]
    assert len(started) == 1
    assert started[0].poll() is not None  # ended, not left waiting on its pipe


def test_a_child_ended_by_its_alarm_is_a_time_message():
    message = isolated._crash_message(-signal.SIGALRM, 1 << 30, 30.0)
    assert "took more than 30 s, the limit for its size" in message and "CPU" not in message
