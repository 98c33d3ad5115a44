"""The memos made by a forked helper beside this process (registry/executors/memos_beside.py): they come
back through a memory file equal to those made here; a failed helper means they are made here."""

from __future__ import annotations

import os
import pickle

import fsspec
import pytest

from tb_plugin.analysis.op_tree import op_tree
from tb_plugin.analysis.overview import gpu_summary
from tb_plugin.registry.executors import memos_beside
from tb_plugin.registry.parse import load_trace_file
from tb_plugin.trace.decode_workers import can_fork

SAMPLE = os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "samples", "synthetic_ddp", "rank0.1751410900000.pt.trace.json.gz"
)

pytestmark = pytest.mark.skipif(not can_fork(), reason="needs fork")


def _trace():
    return load_trace_file(SAMPLE, fs=fsspec.filesystem("file"), size=os.path.getsize(SAMPLE))


def _same(a: dict, b: dict) -> None:
    assert set(a) == set(b)
    for key in a:  # (numpy arrays, dataclasses, lists: compared by their pickled bytes)
        assert pickle.dumps(a[key], protocol=5) == pickle.dumps(b[key], protocol=5), key


def test_the_helpers_memos_come_back_equal_to_those_made_here():
    serial = _trace()
    op_tree(serial)
    gpu_summary(serial)
    trace = _trace()
    parent = os.getpid()
    made_in: list[int] = []

    def helper(t):
        made_in.append(os.getpid())  # (the child's list: this one stays empty when the child made them)
        return gpu_summary(t)

    assert memos_beside.made_beside(trace, helper, op_tree)
    assert made_in == [] and os.getpid() == parent
    assert "gpu_summary" in trace.derived and "steps" in trace.derived and "op_tree" in trace.derived
    _same(trace.derived, serial.derived)


def test_a_failed_helper_means_its_memos_are_made_here():
    trace = _trace()
    parent = os.getpid()

    def helper(t):
        if os.getpid() != parent:
            os._exit(3)  # (killed, out of memory: no memos written)
        return gpu_summary(t)

    assert not memos_beside.made_beside(trace, helper, op_tree)
    serial = _trace()
    op_tree(serial)
    gpu_summary(serial)
    _same(trace.derived, serial.derived)


def test_an_error_here_ends_the_helper(monkeypatch):
    trace = _trace()
    forked: list[int] = []
    real_fork = os.fork

    def fork():
        pid = real_fork()
        if pid:
            forked.append(pid)
        return pid

    monkeypatch.setattr(memos_beside.os, "fork", fork)

    def here(t):
        raise ValueError("bad trace")

    with pytest.raises(ValueError):
        memos_beside.made_beside(trace, lambda t: gpu_summary(t), here)
    assert len(forked) == 1
    with pytest.raises(ChildProcessError):  # (reaped)
        os.waitpid(forked[0], os.WNOHANG)
