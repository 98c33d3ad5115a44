"""The operator memos this process makes in its operators section and shares with the section child
(registry/executors/late_memos.py): the child takes them when published before it asks, makes them
itself otherwise (never waiting); the aggregate is the serial one either way."""

from __future__ import annotations

import json
import os
import pickle
import select

import fsspec
import numpy as np
import pytest

from tb_plugin.analysis import operators
from tb_plugin.registry.executors import late_memos, sections
from tb_plugin.registry.parse import load_trace_file
from tb_plugin.registry.report import rank_aggregate
from tb_plugin.registry.views import FileViews

SAMPLE = os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "samples", "gpu_cudagraph", "h200.1795664852348.pt.trace.json.gz"
)

pytestmark = pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="fork and memfd only")


def views() -> FileViews:
    return FileViews(load_trace_file(SAMPLE, fs=fsspec.filesystem("file"), size=os.path.getsize(SAMPLE)))


def text(aggregate: dict) -> str:
    """The aggregate as compared (its arrays and objects by their repr)."""
    return json.dumps(aggregate, sort_keys=True, default=repr)


def _operator_memos() -> dict:
    trace = views().trace
    operators._groups(trace, "operator")  # (and op_times)
    return {key: trace.derived[key] for key in late_memos.LATE}


def test_the_file_gives_back_the_same_memos_read_only():
    memos = _operator_memos()
    fd = os.memfd_create("test")
    try:
        late_memos._write(fd, dict(memos, other=[1, 2]))
        got = late_memos._load(fd)
        os.ftruncate(fd, os.fstat(fd).st_size - 1)  # (a truncated file: nothing)
        assert late_memos._load(fd) is None
    finally:
        os.close(fd)
    assert got is not None and set(got) == set(memos) | {"other"}
    for key in memos:  # (the same arrays' bytes, dtypes and shapes)
        assert pickle.dumps(got[key], protocol=4) == pickle.dumps(memos[key], protocol=4)
    assert not got["op_times"].is_op.flags.writeable  # (views of the shared mapping)


def _forked(monkeypatch, tmp_path, wait: bool, fail: bool = False) -> tuple[str, str, bool]:
    """(the forked aggregate, what the child's memos took from the file: 'taken', 'none' or 'computed',
    whether this process's ``op_times`` became the shared, read-only one), the child's first ask made to
    wait until this process has published (``wait``), or to find nothing there."""
    out = tmp_path / "child"
    real_closed, real_take, real_publish = (
        late_memos._closed,
        late_memos.LateMemos.take_into,
        sections.LateMemos.publish,
    )

    def closed(fd):
        if not wait:
            return False
        poller = select.poll()
        poller.register(fd, select.POLLHUP)
        poller.poll(10_000)
        return real_closed(fd)

    def take(self, memos):  # (what the child took from the file, not what it made itself)
        before = [k for k in late_memos.LATE if dict.__contains__(memos, k)]
        real_take(self, memos)
        added = [k for k in late_memos.LATE if dict.__contains__(memos, k) and k not in before]
        if added or not out.exists():
            out.write_text(",".join(added) or "none")

    shared: list[bool] = []

    def publish(self, memos):
        done = real_publish(self, memos)
        shared.append(not memos["op_times"].is_op.flags.writeable)
        return done

    monkeypatch.setattr(late_memos, "_closed", closed)
    monkeypatch.setattr(late_memos.LateMemos, "take_into", take)
    monkeypatch.setattr(late_memos.LateMemos, "publish", publish)
    if fail:
        monkeypatch.setattr(late_memos, "_write", lambda fd, memos: 1 / 0)
    v = views()
    fork = sections.SectionFork(v, True, hand=True, late=True)
    try:
        forked = rank_aggregate(v, True, run=fork.run)
    finally:
        fork.close()
    return text(forked), out.read_text() if out.exists() else "computed", shared == [True]


@pytest.mark.parametrize("wait", [True, False])
def test_the_child_takes_the_shared_operator_memos_or_makes_them(monkeypatch, tmp_path, wait):
    serial = text(rank_aggregate(views(), True))
    forked, how, shared = _forked(monkeypatch, tmp_path, wait)
    assert forked == serial and shared  # (this process's later sections read the shared copies)
    assert how == (",".join(late_memos.LATE) if wait else "none")


def test_nothing_is_shared_when_writing_fails(monkeypatch, tmp_path):
    serial = text(rank_aggregate(views(), True))
    forked, how, shared = _forked(monkeypatch, tmp_path, True, fail=True)
    assert forked == serial and how == "none" and not shared


def test_without_late_nothing_is_shared(monkeypatch):
    v = views()
    fork = sections.SectionFork(v, True, hand=True)
    try:
        assert fork.late is None
        rank_aggregate(v, True, run=fork.run)
    finally:
        fork.close()
    assert np.asarray(operators.op_times(v.trace).is_op).flags.writeable or "op_times" not in v.trace.derived
