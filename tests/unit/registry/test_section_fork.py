"""The report's sections on two cores (registry/executors/sections.py): a forked child computes the
distributed section while this process computes the others; the side that finishes first makes the
parse cache's writes. The aggregate must equal the one computed in turn, also when the child dies; small
traces, one core or other threads: no fork.
Cores are the usable ones (``taskset``), for the file pool and the decode workers alike."""

from __future__ import annotations

import json
import os
import threading
import time

import fsspec
import pytest

from tb_plugin.registry.executors import sections
from tb_plugin.registry.parse import load_trace_file
from tb_plugin.registry.report import rank_aggregate
from tb_plugin.registry.views import FileViews

SAMPLE = os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "samples", "synthetic_ddp", "rank0.1751410900000.pt.trace.json.gz"
)

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")


def views() -> FileViews:
    return FileViews(load_trace_file(SAMPLE, fs=fsspec.filesystem("file"), size=os.path.getsize(SAMPLE)))


def text(aggregate: dict) -> str:
    return json.dumps(aggregate, sort_keys=True, default=repr)


def aggregate_through(fork: sections.SectionFork, tables: bool) -> dict:
    """The rank's aggregate with ``fork`` computing its child's sections; the fork closed after."""
    try:
        return rank_aggregate(views(), tables, run=fork.run)
    finally:
        fork.close()


@pytest.mark.parametrize("tables", [True, False])
def test_forked_sections_equal_the_serial_ones(tables):
    serial = rank_aggregate(views(), tables)
    fork = sections.SectionFork(views(), tables)
    forked = aggregate_through(fork, tables)
    assert fork.pid is None  # reaped
    assert text(forked) == text(serial)
    assert list(forked) == list(serial) and (not tables or list(forked["tables"]) == list(serial["tables"]))


def test_a_child_that_dies_is_replaced_by_this_process(monkeypatch):
    serial = rank_aggregate(views(), True)
    monkeypatch.setattr(sections, "run_sections", _dies_in_child(sections.run_sections))
    fork = sections.SectionFork(views(), True)
    try:
        forked = rank_aggregate(views(), True, run=fork.run)
    finally:
        fork.close()
    assert text(forked) == text(serial)


def _dies_in_child(real):
    parent = os.getpid()

    def run(part, items, memos=None):
        if os.getpid() != parent:
            os._exit(3)
        return real(part, items, memos)

    return run


def test_close_ends_a_child_never_collected():
    fork = sections.SectionFork(views(), True)
    pid = fork.pid
    fork.close()
    assert fork.pid is None
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, 0)


def test_forking_only_where_it_pays(monkeypatch, runner_threads_fork_safe):
    monkeypatch.setattr(sections, "default_workers", lambda: 2)
    assert not sections.worth_forking(sections.FORK_ABOVE_ITEMS - 1)  # small: the page faults cost what it saves
    monkeypatch.setattr(sections, "_memory_for_a_child", lambda: True)
    assert sections.worth_forking(sections.FORK_ABOVE_ITEMS)
    monkeypatch.setattr(sections, "default_workers", lambda: 1)
    assert not sections.worth_forking(10 * sections.FORK_ABOVE_ITEMS)  # one core
    monkeypatch.setattr(sections, "default_workers", lambda: 2)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, name="someone-else")
    other.start()
    try:
        assert not sections.worth_forking(10 * sections.FORK_ABOVE_ITEMS)  # another thread: a fork is not safe
    finally:
        stop.set()
        other.join()


def test_the_pool_and_the_workers_count_the_usable_cores(monkeypatch):
    """Pinned to one core (``taskset -c 0``), one process parses: neither the file pool nor the decode
    workers count the machine's other cores, and the early read takes no second core."""
    from tb_plugin.registry.executors import local
    from tb_plugin.settings import usable_cores
    from tb_plugin.storage import early_read
    from tb_plugin.trace import decode_stream

    monkeypatch.delenv("KINETOSCOPE_DECODE_WORKERS", raising=False)

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    monkeypatch.setattr(local, "_available_memory", lambda: 1 << 40)
    assert local.parallel_workers([100 << 20] * 8) == 1
    assert usable_cores() == decode_stream.default_workers() == 1 and not early_read._second_core()
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    assert local.parallel_workers([100 << 20] * 8) == 4
    assert usable_cores() == decode_stream.default_workers() == 4 and early_read._second_core()


def _wait_for(path, seconds=60.0):
    """Block until ``path`` exists (another process made it); fails the test after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never made"
        time.sleep(0.005)


def _logged(log, real, hold_until=None, hold_in_child=False):
    """``run_sections`` appending ``sections PID`` to ``log`` after each side's share; the side named by
    ``hold_in_child`` first waits until ``hold_until`` exists (made by the other side's write)."""
    parent = os.getpid()

    def run(chosen, items, memos=None):
        if hold_until is not None and (os.getpid() != parent) == hold_in_child:
            _wait_for(hold_until)
        got = real(chosen, items, memos)
        with open(log, "a") as f:
            f.write(f"sections {os.getpid()}\n")
        return got

    return run


def _logged_write(log, made=None):
    def write():
        with open(log, "a") as f:
            f.write(f"write {os.getpid()}\n")
        if made is not None:
            made.write_text("")

    return write


@pytest.mark.parametrize("first", ["this process", "the child"])
def test_the_side_that_finishes_its_sections_first_makes_the_writes_once(tmp_path, monkeypatch, first):
    """The parse cache's deferred writes are made once, by whichever side finishes its share of the
    sections first (here the other side waits until they are made), after that share: the other side
    makes none, and this process knows they were made."""
    log, made = tmp_path / "log", tmp_path / "made"
    hold_child = first == "this process"
    monkeypatch.setattr(sections, "run_sections", _logged(log, sections.run_sections, made, hold_child))
    fork = sections.SectionFork(views(), True, [_logged_write(log, made)])
    try:
        forked = rank_aggregate(views(), True, run=fork.run)
    finally:
        fork.close()
    assert fork.wrote and fork.turn is None  # (its end closed)
    lines = log.read_text().splitlines()
    writes = [line for line in lines if line.startswith("write")]
    assert len(writes) == 1 and len(lines) == 3, lines
    writer = writes[0].split()[1]
    assert (writer == str(os.getpid())) == (first == "this process")
    assert lines.index(f"sections {writer}") < lines.index(writes[0])  # after the writer's own sections
    monkeypatch.undo()
    assert text(forked) == text(rank_aggregate(views(), True))


def test_a_child_that_dies_in_the_writes_is_replaced_by_this_process(tmp_path, monkeypatch):
    """The child takes the turn and dies while writing: this process makes the writes after its own
    sections and the child's, which it computes itself."""
    log, taken = tmp_path / "log", tmp_path / "taken"
    parent = os.getpid()

    def write():
        if os.getpid() != parent:
            taken.write_text("")
            os._exit(3)
        _logged_write(log)()

    serial = rank_aggregate(views(), True)
    monkeypatch.setattr(sections, "run_sections", _logged(log, sections.run_sections, taken, hold_in_child=False))
    fork = sections.SectionFork(views(), True, [write])
    try:
        forked = rank_aggregate(views(), True, run=fork.run)
    finally:
        fork.close()
    lines = log.read_text().splitlines()
    assert fork.wrote and lines[-1] == f"write {parent}" and lines.count(f"write {parent}") == 1, lines
    assert text(forked) == text(serial)


def test_one_process_of_two_takes_the_turn():
    turn = sections._Turn()
    pid = os.fork()
    if pid == 0:
        os._exit(0 if turn.take() else 1)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0  # the child took it
    assert not turn.take() and not turn.take()
    turn.close()


def test_a_failing_write_costs_no_section(tmp_path):
    def fails():
        raise OSError("disk full")

    serial = rank_aggregate(views(), True)
    fork = sections.SectionFork(views(), True, [fails])
    try:
        forked = rank_aggregate(views(), True, run=fork.run)
    finally:
        fork.close()
    assert fork.wrote and text(forked) == text(serial)


def test_a_rank_whose_child_dies_is_cached_by_this_process(tmp_path, monkeypatch, runner_threads_fork_safe):
    """The child dies: this process computes its sections and makes the cache writes itself (the next
    report reads the parse cache)."""
    from tb_plugin.registry.executors import task

    monkeypatch.setattr(task, "worth_forking", lambda items: True)
    monkeypatch.setattr(sections, "run_sections", _dies_in_child(sections.run_sections))
    job = task.RankJob(
        key="r0", url=SAMPLE, version="v", size=os.path.getsize(SAMPLE), cache_dir=str(tmp_path), tables=True
    )
    first = task.reduce_rank(job)
    assert first.error is None and not first.from_cache
    monkeypatch.setattr(task, "ResultCache", lambda *a: None)  # (the parse cache, not the results)
    again = task.reduce_rank(job)
    assert again.error is None and again.from_cache
    assert again.aggregate is not None and first.aggregate is not None
    assert text(task.received_aggregate(again.aggregate)) == text(task.received_aggregate(first.aggregate))
