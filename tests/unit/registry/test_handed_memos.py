"""The memos this process computes for the section child (registry/executors/handed_memos.py): the
child takes them when they have arrived before it asks, computes them itself otherwise (never waiting),
and the aggregate is the serial one either way; this process keeps none of the memos it added."""

from __future__ import annotations

import json
import os

import fsspec
import pytest

from tb_plugin.registry.executors import handed_memos, sections
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


def _forked(monkeypatch, tmp_path, wait: bool) -> tuple[str, str]:
    """(the forked aggregate, what the child's memos took from the pipe: 'taken' or 'computed'), the
    child made to ask once this process has handed them over (``wait``) or before (the pipe not yet read)."""
    out = tmp_path / "child"
    real_take = handed_memos.Arriving._take
    _asks_once_handed(monkeypatch, wait)

    def take(self):
        real_take(self)
        out.write_text("taken" if all(dict.__contains__(self, k) for k in handed_memos.HANDED) else "missing")

    monkeypatch.setattr(handed_memos.Arriving, "_take", take)
    v = views()
    fork = sections.SectionFork(v, True, hand=True)
    try:
        assert set(v.trace.derived) <= {"device_mask"}  # (this process kept none of what it handed)
        forked = rank_aggregate(v, True, run=fork.run)
    finally:
        fork.close()
    return text(forked), out.read_text() if out.exists() else "computed"


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
    assert how == ("taken" if wait else "computed")


def test_nothing_is_handed_when_computing_them_fails(monkeypatch, tmp_path):
    """This process's computation fails: the pipe closes empty and the child computes them."""
    serial = text(rank_aggregate(views(), True))
    monkeypatch.setattr(handed_memos, "_compute", lambda trace: 1 / 0)
    _asks_once_handed(monkeypatch, True)
    out = tmp_path / "child"
    real_take = handed_memos.Arriving._take

    def take(self):
        real_take(self)
        out.write_text(",".join(sorted(k for k in handed_memos.HANDED if dict.__contains__(self, k))) or "none")

    monkeypatch.setattr(handed_memos.Arriving, "_take", take)
    v = views()
    fork = sections.SectionFork(v, True, hand=True)
    try:
        forked = text(rank_aggregate(v, True, run=fork.run))
    finally:
        fork.close()
    assert forked == serial and out.read_text() == "none"


def test_arriving_memos_are_looked_up_only_for_the_handed_keys():
    read, write = os.pipe()
    os.write(write, __import__("pickle").dumps({"gpu_summary": [1], "steps": 2, "other": 3}))
    os.close(write)
    memos = handed_memos.Arriving({"device_mask": 0}, read)
    with pytest.raises(KeyError):
        memos["op_tree"]  # (not handed: the pipe is not read)
    assert memos.fd is not None
    assert memos["steps"] == 2 and memos["gpu_summary"] == [1] and "other" not in memos and memos.fd is None
    with pytest.raises(KeyError):
        memos["insights"]
