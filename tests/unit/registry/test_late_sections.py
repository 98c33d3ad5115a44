"""A very large trace's sections (registry/executors/sections.py): the section child computes the
distributed section only, then makes the parse cache's writes, and this process the insights and overview
sections after its own and after the child's answer (``LATE_SECTIONS``), keeping the memos made before the
fork that they read. The aggregate must equal the one computed in turn, also when the child dies, and the
writes are made by this process when the child did not make them; smaller traces split as before."""

from __future__ import annotations

import os

import pytest
from test_section_fork import SAMPLE, _dies_in_child, _write_pid, text, views

from tb_plugin.registry import report
from tb_plugin.registry.executors import sections
from tb_plugin.registry.report import rank_aggregate

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")


def _logged_runs(monkeypatch, child_log) -> list[str]:
    """``run_sections`` logged: in the child its section keys are written to ``child_log``; here each
    call's keys are appended to the list returned, and each answer collected from the child as 'collect'."""
    parent = os.getpid()
    real = sections.run_sections
    here: list[str] = []

    def run(part, items, memos=None, trim=True, **kw):
        keys = ",".join(key for key, _ in part)
        if os.getpid() != parent:
            child_log.write_text(keys)
        else:
            here.append(keys)
        return real(part, items, memos, trim, **kw)

    real_collect = sections.SectionFork._collect

    def collect(self, **kw):
        here.append("collect")
        return real_collect(self, **kw)

    monkeypatch.setattr(sections, "run_sections", run)
    monkeypatch.setattr(sections.SectionFork, "_collect", collect)
    return here


@pytest.mark.parametrize("very_large", [True, False])
def test_a_very_large_trace_s_child_computes_the_distributed_section_only(
    tmp_path, monkeypatch, runner_threads_fork_safe, very_large
):
    """The task of a very large trace (the threshold lowered): the child computes the distributed section
    and then makes the cache writes, this process its own sections, then the insights memo, then takes the
    child's answer, then the insights and overview sections; the aggregate is the serial one and the next
    report reads the parse cache. Smaller traces: as before (the writes made here)."""
    from tb_plugin.registry.executors import task

    monkeypatch.setattr(sections, "STEP_TRIM_ABOVE_ITEMS", 1 if very_large else 10**12)
    monkeypatch.setattr(task, "worth_forking", lambda items: True)
    monkeypatch.setattr(task.small_sections, "worth_splitting", lambda items: False)
    child_log, writer = tmp_path / "child", tmp_path / "writer"
    here = _logged_runs(monkeypatch, child_log)
    real_write = sections.SectionFork.write_pending

    def write(self):
        if not self.wrote:
            writer.write_text(str(os.getpid()))
        real_write(self)

    monkeypatch.setattr(sections.SectionFork, "write_pending", write)
    job = task.RankJob(
        key="r0", url=SAMPLE, version="v", size=os.path.getsize(SAMPLE), cache_dir=str(tmp_path / "c"), tables=True
    )
    got = task.reduce_rank(job)
    assert got.error is None and got.aggregate is not None and not got.from_cache
    assert (writer.read_text() != str(os.getpid())) == very_large  # (the child's pid: it made them)
    mine = "operators,kernels,modules,graphs,memory"
    if very_large:
        assert child_log.read_text() == "distributed"
        assert here == [mine, "insights memo", "collect", "insights,overview"]
    else:
        assert child_log.read_text() == "distributed,insights,overview"
        assert here == [mine, "collect"]
    serial = rank_aggregate(views(), True)
    assert text(task.received_aggregate(got.aggregate)) == text(
        task.received_aggregate(dict(serial, tables=task.pack(serial["tables"])))
    )
    monkeypatch.setattr(task, "ResultCache", lambda *a: None)  # (the parse cache, not the results)
    again = task.reduce_rank(job)
    assert again.error is None and again.from_cache


@pytest.mark.parametrize("tables", [True, False])
def test_the_late_sections_equal_the_serial_ones(tables):
    serial = rank_aggregate(views(), tables)
    fork = sections.SectionFork(views(), tables, child=sections.LARGE_CHILD_SECTIONS, late=sections.LATE_SECTIONS)
    try:
        forked = rank_aggregate(views(), tables, run=fork.run)
    finally:
        fork.close()
    assert fork.pid is None  # reaped
    assert text(forked) == text(serial) and list(forked) == list(serial)


def test_a_dead_child_s_section_is_computed_here_with_the_late_ones(monkeypatch):
    serial = rank_aggregate(views(), True)
    monkeypatch.setattr(sections, "run_sections", _dies_in_child(sections.run_sections))
    fork = sections.SectionFork(views(), True, child=sections.LARGE_CHILD_SECTIONS, late=sections.LATE_SECTIONS)
    try:
        assert text(rank_aggregate(views(), True, run=fork.run)) == text(serial)
    finally:
        fork.close()


def test_the_memos_made_before_the_fork_are_kept_for_the_late_sections(monkeypatch):
    """The GPU summary made before the fork (shared_before_fork) is the one the late insights section reads:
    this process's own sections, which never read it, do not drop it (it is not made again)."""
    parent = os.getpid()
    real = sections.run_sections
    seen: list[bool] = []
    v = views()
    monkeypatch.setattr(sections, "STEP_TRIM_ABOVE_ITEMS", 1)
    assert sections.shared_before_fork(v.trace, 1)
    made = v.trace.derived["gpu_summary"]

    def run(part, items, memos=None, trim=True, **kw):
        if os.getpid() == parent and part and part[0][0] == "insights":
            seen.append(memos is not None and memos.get("gpu_summary") is made)
        return real(part, items, memos, trim, **kw)

    monkeypatch.setattr(sections, "run_sections", run)
    fork = sections.SectionFork(v, True, child=sections.LARGE_CHILD_SECTIONS, late=sections.LATE_SECTIONS)
    try:
        rank_aggregate(v, True, run=fork.run)
    finally:
        fork.close()
    assert seen == [True]


def test_kept_memos_are_never_dropped():
    memos = {"op_rows": 1, "gpu_summary": 2, "steps": 3}
    report.drop_unread(memos, ["memory"], keep=frozenset({"steps"}))
    assert memos == {"op_rows": 1, "steps": 3}


@pytest.mark.parametrize("dies", [False, True])
def test_the_child_s_writes_or_this_process_s(monkeypatch, tmp_path, dies):
    """With ``child_writes`` the child makes the writes after its answer, and this process none; a child
    that dies before them (its answer sent) leaves them to this process, and the aggregate is the serial one."""
    out = tmp_path / "written"
    calls: list[int] = []
    if dies:
        real = sections.SectionFork.write_pending
        parent = os.getpid()

        def write(self):
            if os.getpid() != parent:
                os._exit(3)
            real(self)

        monkeypatch.setattr(sections.SectionFork, "write_pending", write)
    serial = rank_aggregate(views(), True)
    fork = sections.SectionFork(
        views(),
        True,
        [lambda: calls.append(os.getpid()), _write_pid(out)],
        child=sections.LARGE_CHILD_SECTIONS,
        late=sections.LATE_SECTIONS,
        child_writes=True,
    )
    try:
        forked = rank_aggregate(views(), True, run=fork.run)
    finally:
        fork.close()
    assert fork.wrote and fork.pid is None and text(forked) == text(serial)
    assert (out.read_text() == str(os.getpid())) == dies  # (written by the child unless it died)
    assert calls == ([os.getpid()] if dies else [])  # (this process's calls only: the child's are its own)
