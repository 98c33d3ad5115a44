"""Forked decode workers left to exit on their own (trace/forked_worker.py): at the end of a parse this
process goes on (the finish) instead of waiting for the workers' exit; their status is collected later
(the next workers' start, the caller's end, this process's exit), a worker that does not exit is
killed, and a failing parse still stops and reaps its workers at once."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tb_plugin.trace import decode_workers as dw
from tb_plugin.trace import forked_worker

pytestmark = pytest.mark.skipif(not (sys.platform.startswith("linux") and hasattr(os, "fork")), reason="forks on Linux")

BATCH = b"[" + b",".join(b'{"ph":"X","name":"n%d","ts":%d,"dur":1}' % (i, i) for i in range(50)) + b"]"


@pytest.fixture(autouse=True)
def nothing_left():
    forked_worker.reap_exited(block=True)
    yield
    forked_worker.reap_exited(block=True)
    assert forked_worker.unreaped() == 0


def _exited(pid: int, timeout: float = 10.0) -> bool:
    """Whether ``pid`` (a child) has exited within ``timeout`` s; it is not reaped."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT):
            return True
        time.sleep(0.005)
    return False


def _decode_on(workers: dw.Workers) -> list[int]:
    got: list[int] = []
    dw.run_parallel(iter([[BATCH]] * 4), 2, False, lambda state, parts: got.append(len(state["texts"])), workers)
    return got


def test_a_parse_leaves_its_forked_workers_to_exit_and_they_are_reaped_later():
    if not dw.can_fork():
        pytest.skip("workers are subprocesses here")
    with dw.Workers(2) as workers:
        assert _decode_on(workers) == [50] * 4
        pids = [proc.pid for proc in workers.procs]
    assert forked_worker.unreaped() == 2  # not waited for at the end of the parse
    assert all(_exited(pid) for pid in pids)  # (their input closed: they exit by themselves)
    forked_worker.reap_exited()  # (no waiting: both have exited)
    assert forked_worker.unreaped() == 0
    for pid in pids:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def test_the_next_workers_reap_those_of_the_parse_before():
    if not dw.can_fork():
        pytest.skip("workers are subprocesses here")
    with dw.Workers(2) as workers:
        _decode_on(workers)
        pids = [proc.pid for proc in workers.procs]
    assert all(_exited(pid) for pid in pids)
    with dw.Workers(1) as again:
        assert forked_worker.unreaped() == 0
        again_pid = again.procs[0].pid
    assert forked_worker.unreaped() == 1 and _exited(again_pid)


def test_a_failing_parse_kills_and_reaps_its_workers_at_once():
    if not dw.can_fork():
        pytest.skip("workers are subprocesses here")
    with pytest.raises(RuntimeError):
        with dw.Workers(2) as workers:
            pids = [proc.pid for proc in workers.procs]
            raise RuntimeError("a budget error")
    assert forked_worker.unreaped() == 0
    for pid in pids:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def test_a_worker_that_does_not_exit_is_killed_when_waited_for():
    worker = forked_worker.ForkedWorker([], lambda source, sink: time.sleep(60))
    worker.stdin.close()
    forked_worker.reap_later(worker)
    forked_worker.reap_exited()  # (still serving: left as it is)
    assert forked_worker.unreaped() == 1 and worker.returncode is None
    forked_worker.reap_exited(block=True, timeout=0.05)
    assert forked_worker.unreaped() == 0 and worker.returncode == -9


# a process that leaves a worker whose exit takes 0.3 s of CPU, then ends (argv[1]: this checkout)
LEAVES_A_SLOW_WORKER = """
import sys, time
sys.path.insert(0, sys.argv[1])
from tb_plugin.trace import forked_worker

def serve(source, sink):
    source.read()
    started = time.process_time()
    while time.process_time() - started < 0.3:  # CPU spent after its input ended
        pass

worker = forked_worker.ForkedWorker([], serve)
worker.stdin.close()
forked_worker.reap_later(worker)
print(forked_worker.unreaped())
"""


def test_a_process_that_ends_waits_for_the_workers_it_left():
    """The workers' CPU counts in the process's children's (whole-process benchmarks read it): the exit
    waits for the workers still exiting; a worker slowed at its exit keeps its parent until it ends."""
    import resource

    checkout = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([sys.executable, "-c", LEAVES_A_SLOW_WORKER, checkout], capture_output=True, timeout=60)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert out.returncode == 0, out.stderr
    assert out.stdout == b"1\n"
    assert (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime) >= 0.3
