"""The report's sections on two cores (registry/executors/sections.py): a forked child computes the
distributed, insights and overview sections while this process computes the other tables. The aggregate must equal
the one computed in turn, also when the child dies; small traces, one core or other threads: no fork.
Cores are the usable ones (``taskset``), for the file pool and the decode workers alike."""

from __future__ import annotations

import gc
import json
import os
import threading

import fsspec
import numpy as np
import pytest
from method_spy import blocking_waits

from tb_plugin.registry import report
from tb_plugin.registry.executors import handed_memos, memo_swap, sections
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
    assert fork.pid is None  # its answer taken
    assert text(forked) == text(serial)
    assert list(forked) == list(serial) and (not tables or list(forked["tables"]) == list(serial["tables"]))


def test_a_child_that_answered_is_left_to_exit_and_reaped_later(monkeypatch):
    """Its whole answer read, a small trace's child is not waited for (the kernel frees its memory while
    this process goes on): no blocking wait on it; :func:`~tb_plugin.trace.forked_worker.reap_exited`
    collects it. A large trace's child is waited for."""
    from tb_plugin.trace import forked_worker

    blocking = blocking_waits(monkeypatch)
    fork = sections.SectionFork(views(), True, leave=True)  # (a small trace's: small_sections.split)
    pid = fork.pid
    assert text(aggregate_through(fork, True)) == text(rank_aggregate(views(), True))
    assert pid not in blocking and pid in [child.pid for child in forked_worker._exiting]
    # a large trace's child is waited for: its memory freed before this process goes on
    fork = sections.SectionFork(views(), True)
    large = fork.pid
    assert text(aggregate_through(fork, True)) == text(rank_aggregate(views(), True))
    assert large in blocking and large not in [child.pid for child in forked_worker._exiting]
    forked_worker.reap_exited(block=True)
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


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

    def run(part, items, memos=None, trim=True, untrimmed=frozenset(), lazily_trimmed=frozenset()):
        if os.getpid() != parent:
            os._exit(3)
        return real(part, items, memos, trim, untrimmed, lazily_trimmed)

    return run


def _state(pid: int) -> str:
    """A process's state letter from ``/proc/PID/stat`` (``Z``: exited, not yet reaped)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads /proc")
def test_a_child_whose_answer_outgrows_the_pipe_exits_before_it_is_asked_for(monkeypatch):
    """An answer larger than the pipe holds (the 4.5 GB trace's is ~1 MB) is read by a thread of this
    process as the child writes it, so the child exits (and its memory is freed) while this process is
    still busy with its own sections; before, it waited in its write until :meth:`_collect`. The
    aggregate is the serial one."""
    import pickle
    import time
    import types

    padded = types.SimpleNamespace(  # (bytes past a pickle are ignored by pickle.loads)
        dumps=lambda obj, protocol: pickle.dumps(obj, protocol=protocol) + bytes(4 << 20),
        loads=pickle.loads,
        HIGHEST_PROTOCOL=pickle.HIGHEST_PROTOCOL,
    )
    monkeypatch.setattr(sections, "pickle", padded)
    fork = sections.SectionFork(views(), True)
    pid = fork.pid
    deadline = time.monotonic() + 120  # (a bound on a wait that before this change never ended)
    while _state(pid) != "Z" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _state(pid) == "Z"  # exited, its answer not yet asked for
    assert text(aggregate_through(fork, True)) == text(rank_aggregate(views(), True))
    assert fork.pid is None
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped by _collect


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


def _write_pid(path):
    def write():
        path.write_text(str(os.getpid()))

    return write


def test_this_process_makes_the_cache_writes_on_a_thread_beside_its_sections(tmp_path, monkeypatch):
    """The parse cache's deferred writes run in this process, on their own thread, while this process
    computes its share of the sections (the child makes none), and are done when ``run`` returns."""
    out = tmp_path / "written"
    done: list[str] = []
    real = sections.run_sections
    writing, parent = threading.Event(), os.getpid()

    def logged(chosen, items, memos=None, trim=True, untrimmed=frozenset(), lazily_trimmed=frozenset()):
        assert os.getpid() != parent or writing.wait(30)  # here, the write began before these sections end
        got = real(chosen, items, memos, trim, untrimmed, lazily_trimmed)
        done.append("sections")
        return got

    def write():
        writing.set()
        done.append("write on " + threading.current_thread().name)
        _write_pid(out)()

    monkeypatch.setattr(sections, "run_sections", logged)
    fork = sections.SectionFork(views(), True, [write])
    try:
        rank_aggregate(views(), True, run=fork.run)
        assert fork.wrote and fork._writer is None  # begun and joined
    finally:
        fork.close()
    assert out.read_text() == str(os.getpid())
    assert done == ["write on kinetoscope-cache-write", "sections"]  # (the child's sections are logged in the child)


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


@pytest.mark.parametrize("very_large", [False, True])
def test_the_child_keeps_its_freed_pages_and_never_collects_what_it_inherited(tmp_path, monkeypatch, very_large):
    """The child computes its sections without giving freed pages back (each would be faulted in again
    by the next section or step), except for a very large trace (STEP_TRIM_ABOVE_ITEMS items: its memos'
    temporaries, its critical path's graph), and with the objects it inherited frozen (a collection would write to
    each one's header); this process's sections give them back as before."""
    if very_large:
        monkeypatch.setattr(sections, "STEP_TRIM_ABOVE_ITEMS", 1)
    out = tmp_path / "child"
    parent = os.getpid()
    real = sections.run_sections
    here: list[bool] = []

    def run(part, items, memos=None, trim=True, untrimmed=frozenset(), lazily_trimmed=frozenset()):
        if os.getpid() != parent:
            out.write_text(
                f"trim={trim} frozen={gc.get_freeze_count() > 0} untrimmed={sorted(untrimmed)} "
                f"lazily={sorted(lazily_trimmed)}"
            )
        else:
            here.append((trim, sorted(lazily_trimmed)))
        return real(part, items, memos, trim, untrimmed, lazily_trimmed)

    monkeypatch.setattr(sections, "run_sections", run)
    serial = rank_aggregate(views(), True)
    fork = sections.SectionFork(views(), True)
    forked = aggregate_through(fork, True)
    # (its insights and overview keep theirs even then: sections.UNTRIMMED_CHILD_SECTIONS; its distributed
    # section's steps trim lazily, sections.LAZILY_TRIMMED_CHILD_SECTIONS; this process's steps after each)
    assert out.read_text() == (
        f"trim={very_large} frozen=True untrimmed=['insights', 'overview'] lazily=['distributed']"
    )
    assert here == [(True, [])]
    assert text(forked) == text(serial)


def test_sections_give_freed_pages_back_unless_told_not_to(monkeypatch):
    calls: list[int] = []
    monkeypatch.setattr(report, "release_after", calls.append)
    made = [("a", lambda: 1), ("b", lambda: 2)]
    assert report.run_sections(made, 7) == {"a": 1, "b": 2} and calls == [7, 7]
    calls.clear()
    assert report.run_sections(made, 7, trim=False) == {"a": 1, "b": 2} and calls == []


@pytest.mark.parametrize(("forking", "very_large"), [(True, False), (False, False), (True, True)])
def test_the_parse_is_collected_after_the_section_fork(
    tmp_path, monkeypatch, runner_threads_fork_safe, forking, very_large
):
    """A rank whose sections fork collects the parse's cycles in this process once the child is forked
    (one core was idle while it did before), then computes the memos it hands to the child; without the
    fork, before the sections, as before. The parse itself leaves them to the caller. A very large trace
    makes the memos both processes read first (the launches and steps; not the operator tree and the GPU
    summary: the child reads them after its critical path, and this process hands them over) and collects
    before the fork (shared_before_fork)."""
    from tb_plugin.registry import parse
    from tb_plugin.registry.executors import task

    order: list[str] = []
    monkeypatch.setattr(sections, "STEP_TRIM_ABOVE_ITEMS", 1 if very_large else 10**12)
    real_shared = sections.shared_before_fork

    def shared(trace, items):
        made = real_shared(trace, items)
        order.append(f"shared {made} {'op_tree' in trace.derived} {'gpu_summary' in trace.derived}")
        return made

    monkeypatch.setattr(task, "shared_before_fork", shared)
    monkeypatch.setattr(task, "worth_forking", lambda items: forking)
    monkeypatch.setattr(task.small_sections, "worth_splitting", lambda items: False)
    monkeypatch.setattr(parse, "collect_and_release_after", lambda items: order.append("parse collects"))
    monkeypatch.setattr(task, "collect_and_release_after", lambda items: order.append("collect"))
    real_init = sections.SectionFork.__init__

    def init(self, *args, **kwargs):
        order.append("fork")
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(sections.SectionFork, "__init__", init)
    real_hand = sections.SectionFork.hand_over
    monkeypatch.setattr(sections.SectionFork, "hand_over", lambda self: order.append("hand") or real_hand(self))
    job = task.RankJob(
        key="r0", url=SAMPLE, version="v", size=os.path.getsize(SAMPLE), cache_dir=str(tmp_path), tables=True
    )
    got = task.reduce_rank(job)
    assert got.error is None and not got.from_cache
    if very_large:  # (made before the fork: the child inherits them, computed once)
        assert order == ["shared True False False", "collect", "fork", "hand", "hand"]
    else:  # (the second hand: run's, a no-op)
        assert order == (["shared False False False", "fork", "collect", "hand", "hand"] if forking else ["collect"])
    assert text(task.received_aggregate(got.aggregate)) == text(_serial_with_tables())


def _serial_with_tables() -> dict:
    """The sample's aggregate with its tables, computed in turn (as the task's comes back)."""
    from tb_plugin.registry.executors import task

    serial = rank_aggregate(views(), True)
    return task.received_aggregate(dict(serial, tables=task.pack(serial["tables"])))


# -- the memos this process hands to the child (registry/executors/handed_memos.py): the child takes them
# when they arrived before it asks, computes them itself otherwise (never waiting); the aggregate is the
# serial one either way, and this process keeps of the memos it added only those its own sections read


def _forked(monkeypatch, tmp_path, wait: bool) -> tuple[str, str]:
    """(the forked aggregate, what the child's memos took from the pipe: 'taken' or 'computed'), the
    child made to ask once this process has handed them over (``wait``) or before (the pipe not yet read)."""
    out = tmp_path / "child"
    real_take = handed_memos.Arriving._take
    _asks_once_handed(monkeypatch, wait)

    def take(self, stage):
        real_take(self, stage)
        whole = all(dict.__contains__(self, k) for k in handed_memos.STAGES[stage])
        with open(out, "a") as f:
            f.write(f"{stage}:{'taken' if whole else 'missing'} ")

    monkeypatch.setattr(handed_memos.Arriving, "_take", take)
    v = views()
    fork = sections.SectionFork(v, True, hand=True)
    try:
        kept = set(v.trace.derived)
        fork.hand_over()
        added = set(v.trace.derived) - kept  # (what this process's sections read: the operator tree among them)
        assert "op_tree" in added and "gpu_summary" not in added and added <= fork.keep
        forked = rank_aggregate(v, True, run=fork.run)
    finally:
        fork.close()
    return text(forked), out.read_text().strip() if out.exists() else "computed"


def _asks_once_handed(monkeypatch, wait: bool) -> None:
    """The child's first ask waits until this process has closed its end (everything written), or
    (not ``wait``) finds nothing there."""
    real_readable = handed_memos._readable

    def readable(fd):
        if not wait:
            return False
        import select

        poller = select.poll()
        poller.register(fd, select.POLLHUP)
        poller.poll(10_000)
        return real_readable(fd)

    monkeypatch.setattr(handed_memos, "_readable", readable)


@pytest.mark.parametrize("wait", [True, False])
def test_the_child_takes_the_handed_memos_or_computes_them(monkeypatch, tmp_path, wait):
    serial = text(rank_aggregate(views(), True))
    forked, how = _forked(monkeypatch, tmp_path, wait)
    assert forked == serial
    taken = " ".join(f"{k}:taken" for k in range(len(handed_memos.STAGES)))
    assert how == (taken if wait else "computed")  # (each stage taken when first asked for)


def test_nothing_is_handed_when_computing_them_fails(monkeypatch, tmp_path):
    """This process's computation fails: the pipe closes empty and the child computes them."""
    serial = text(rank_aggregate(views(), True))
    monkeypatch.setattr(handed_memos, "_compute", lambda trace, keys: 1 / 0)
    _asks_once_handed(monkeypatch, True)
    out = tmp_path / "child"
    real_take = handed_memos.Arriving._take

    def take(self, stage):
        real_take(self, stage)
        with open(out, "a") as f:
            f.write(",".join(sorted(k for k in handed_memos.STAGES[stage] if dict.__contains__(self, k))) or "none")

    monkeypatch.setattr(handed_memos.Arriving, "_take", take)
    v = views()
    fork = sections.SectionFork(v, True, hand=True)
    try:
        forked = text(rank_aggregate(v, True, run=fork.run))
    finally:
        fork.close()
    assert forked == serial and out.read_text() == "none" * len(handed_memos.STAGES)  # (every stage empty)


def test_no_file_for_the_handed_memos_leaves_them_to_the_child(monkeypatch):
    """Where the memos' file cannot be made (no memory files, a full folder), the fork goes on without
    handing: the child computes them, the aggregate is the serial one."""
    serial = text(rank_aggregate(views(), True))

    def no_file(folder=None):
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(sections, "Handing", no_file)
    v = views()
    fork = sections.SectionFork(v, True, hand=True)
    try:
        assert fork.handing is None
        fork.hand_over()  # (nothing to hand)
        forked = text(rank_aggregate(v, True, run=fork.run))
    finally:
        fork.close()
    assert forked == serial


def test_arriving_memos_are_looked_up_only_for_the_handed_keys():
    handing = handed_memos.Handing()  # (both sides' ends in this one process)
    assert handed_memos.STAGES[:2] == (
        ("op_tree", "gpu_summary", "steps"),
        ("insights", "gpu_idle", "runtime_calls", "named_calls", "outside_trace_rows"),
    )
    (first, read0, write0), (second, read1, write1), (third, read2, write2) = handing.stages
    memo_swap.write_memos(first, {"gpu_summary": [1], "steps": np.arange(3), "other": 3})
    os.write(write0, b"1")
    os.close(write0)
    memos = handed_memos.Arriving({"device_mask": 0}, [(read0, first), (read1, second), (read2, third)])
    with pytest.raises(KeyError):
        memos["blocking_calls"]  # (not handed: no pipe is read)
    with pytest.raises(KeyError):
        memos["insights"]  # (the second stage has not arrived: its pipe is still open)
    assert set(memos.stages) == {0, 1, 2}
    assert memos["steps"].tolist() == [0, 1, 2] and memos["gpu_summary"] == [1]
    assert "other" not in memos and set(memos.stages) == {1, 2}
    with pytest.raises(KeyError):
        memos["op_tree"]  # (a handed key not in the file: computed by the caller)
    memo_swap.write_memos(second, {"insights": {"idle": 1}, "op_tree": "late"})
    os.write(write1, b"1")
    os.close(write1)
    assert memos["insights"] == {"idle": 1} and set(memos.stages) == {2}
    assert "op_tree" not in memos  # (a key of another stage is not taken from this one)
    os.close(write2)
    memos.close()


@pytest.mark.parametrize("tables", [True, False])
def test_a_later_stage_recomputes_nothing_an_earlier_one_dropped(tables):
    """After each stage this process drops what neither its sections (``keep``) nor a later stage read
    (:data:`~handed_memos.LATER_READS`): computing the next stage then makes none of them again, and
    what is dropped includes the GPU summary (not read here, made for the child)."""
    trace = views().trace
    mine = [key for key in report.section_keys(tables) if key not in sections.CHILD_SECTIONS]
    keep = frozenset().union(*(report.SECTION_MEMOS[key] for key in mine))
    before = set(trace.derived)
    dropped: set[str] = set()
    for k, stage in enumerate(handed_memos.STAGES):
        handed_memos._compute(trace, stage)
        made = set(trace.derived) - before
        assert set(stage) <= made
        assert not dropped & made  # (none made again)
        if k == 0:
            assert handed_memos.LATER_READS <= made | before
        handed_memos._drop(trace, before, keep | handed_memos.LATER_READS)
        dropped |= made - set(trace.derived)
        if k == 0:
            assert "gpu_summary" in dropped


def test_handed_memos_lie_in_an_unnamed_file_of_the_cache_folder(tmp_path):
    """Where the parse cache's folder is given, the memos' files are unnamed files in it (page cache the
    system may take back), else memory files; the arrays read back equal those written."""
    for folder, where in ((str(tmp_path), str(tmp_path)), (None, "/memfd:")):
        handing = handed_memos.Handing(folder)
        try:
            assert len(handing.stages) == len(handed_memos.STAGES)
            for file, _, _ in handing.stages:
                assert os.readlink(f"/proc/self/fd/{file}").startswith(where)
                memo_swap.write_memos(file, {"op_tree": np.arange(5.0)})
                assert memo_swap.read_memos(file)["op_tree"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
            assert list(tmp_path.iterdir()) == []
        finally:
            handing.close()


@pytest.mark.parametrize("tables", [True, False])
def test_this_process_keeps_the_memos_of_the_sections_it_computes(tables):
    """``keep``: the memos of the aggregate's sections outside the child's, with the tables' sections only
    when the aggregate has them (a report without tables computes the distributed and insights sections,
    both in the child: nothing kept)."""
    computed = report.section_keys(tables)
    assert computed[:2] == ("distributed", "insights") and set(computed) <= set(report.SECTION_MEMOS)
    fork = sections.SectionFork(views(), tables)
    try:
        mine = [key for key in computed if key not in sections.CHILD_SECTIONS]
        assert mine == (["operators", "kernels", "modules", "graphs"] if tables else [])
        assert fork.keep == frozenset().union(*(report.SECTION_MEMOS[key] for key in mine))
        assert bool(fork.keep) is tables
    finally:
        fork.close()


def test_the_launch_links_are_made_on_a_thread_beside_the_steps_first_stage(monkeypatch):
    """A very large trace's memos made before the fork: the launch links on a thread of their own while
    this thread makes the steps' first stage (which reads no link), joined before it returns (no thread
    may run at the fork); the links and steps are those made in turn."""
    from tb_plugin.analysis import steps as steps_module
    from tb_plugin.trace import links

    ran: dict[str, str] = {}
    real_links, real_stage = links._launch_of, steps_module.host_step_launches

    def spied_links(trace):
        ran["links"] = threading.current_thread().name
        return real_links(trace)

    def spied_stage(trace):
        ran["stage"] = threading.current_thread().name
        return real_stage(trace)

    monkeypatch.setattr(links, "_launch_of", spied_links)
    monkeypatch.setattr(steps_module, "host_step_launches", spied_stage)
    monkeypatch.setattr(sections, "STEP_TRIM_ABOVE_ITEMS", 1)
    before = set(threading.enumerate())
    trace = views().trace
    assert sections.shared_before_fork(trace, len(trace.events))
    assert ran == {"links": "kinetoscope-launch-links", "stage": threading.current_thread().name}
    assert set(threading.enumerate()) == before
    serial = views().trace
    made_links = real_links(serial)
    assert trace.derived["launch_of"].tobytes() == made_links.tobytes() and (made_links >= 0).sum() == 75
    got, want = trace.derived["steps"], steps_module._compute_steps(serial, real_stage(serial))
    assert got.names == want.names and len(want.names) > 1
    for field in ("start", "end", "host_start", "host_end", "device_events"):
        assert getattr(got, field).tobytes() == getattr(want, field).tobytes(), field
    assert got.first_step_prior_work_us == want.first_step_prior_work_us


def test_links_that_fail_on_the_thread_fail_where_the_steps_make_them(monkeypatch):
    from tb_plugin.trace import links

    calls: list[str] = []

    def failing(trace):
        calls.append(threading.current_thread().name)
        raise MemoryError("no room for the links")

    monkeypatch.setattr(links, "_launch_of", failing)
    monkeypatch.setattr(sections, "STEP_TRIM_ABOVE_ITEMS", 1)
    before = set(threading.enumerate())
    trace = views().trace
    with pytest.raises(MemoryError, match="no room"):
        sections.shared_before_fork(trace, len(trace.events))
    assert calls == ["kinetoscope-launch-links", threading.current_thread().name]
    assert set(threading.enumerate()) == before and "steps" not in trace.derived
