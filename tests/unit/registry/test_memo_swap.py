"""The memos both sides of a small trace's section fork read, made half by each side and swapped
(registry/executors/memo_swap.py): each side takes the other's share instead of making it, the values
are the ones it would have made, the aggregate is the serial one; a side that fails or dies publishes
nothing and the other makes what it misses; the file a side reads is exactly what the other wrote."""

from __future__ import annotations

import os
import pickle
from typing import Callable

import numpy as np
import pytest
from test_section_fork import text, views

from tb_plugin.registry.executors import memo_swap, sections
from tb_plugin.registry.executors.memo_swap import MemoSwap
from tb_plugin.registry.report import rank_aggregate

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or not hasattr(os, "memfd_create"), reason="Linux only")

SMALL = frozenset({"distributed", "graphs"})  # (small_sections.SMALL_CHILD_SECTIONS)


def _made_here(monkeypatch, which: str) -> Callable[[], list[int]]:
    """What gives the pids of the processes in which the memo ``which`` ('op_tree' or 'steps') was made
    since, recorded in a pipe (a child's are otherwise lost)."""
    read, write = os.pipe()
    os.set_blocking(read, False)
    if which == "op_tree":
        from tb_plugin.analysis import op_tree as module

        real = module._build
        monkeypatch.setattr(module, "_build", lambda trace: (os.write(write, b"%d\n" % os.getpid()), real(trace))[1])
    else:
        from tb_plugin.analysis import steps as module

        real = module._compute_steps
        monkeypatch.setattr(
            module,
            "_compute_steps",
            lambda trace, staged: (os.write(write, b"%d\n" % os.getpid()), real(trace, staged))[1],
        )
    seen: list[int] = []

    def pids() -> list[int]:
        try:
            seen.extend(int(x) for x in os.read(read, 1 << 16).split())
        except BlockingIOError:
            pass
        return seen

    return pids


@pytest.mark.parametrize("tables", [True, False])
def test_each_side_takes_the_others_share_and_the_aggregate_is_the_serial_one(monkeypatch, tables):
    serial = rank_aggregate(views(), tables)
    op_tree_pids = _made_here(monkeypatch, "op_tree")
    steps_pids = _made_here(monkeypatch, "steps")
    mine = views()
    fork = sections.SectionFork(mine, tables, child=SMALL, swap=True)
    child = fork.pid
    assert text(rank_aggregate(mine, tables, run=fork.run)) == text(serial)
    fork.close()
    # the operator tree was made once, here (the parent's share), the steps once, in the child (the child's
    # share): each side took the other's from the swap instead of making it again
    assert op_tree_pids() == [os.getpid()]  # (the serial aggregate made before the spies)
    assert steps_pids() == [child]


def _trace_with_memos():
    trace = views().trace
    memo_swap.PARENT_SHARE(trace)
    memo_swap.CHILD_SHARE(trace)
    return trace


def test_the_file_holds_exactly_the_memos_written_their_arrays_writable(tmp_path):
    trace = _trace_with_memos()
    fd = os.memfd_create("test")
    try:
        memo_swap.write_memos(fd, dict(trace.derived))
        got = memo_swap.read_memos(fd)
    finally:
        os.close(fd)
    assert sorted(got) == sorted(trace.derived)
    for key, value in trace.derived.items():
        assert pickle.dumps(got[key], protocol=5) == pickle.dumps(value, protocol=5), key
    tree = got["op_tree"]
    arrays = [v for v in vars(tree).values() if isinstance(v, np.ndarray) and v.size]
    assert arrays and all(a.flags.writeable for a in arrays)
    arrays[0][...] = arrays[0]  # (a private mapping: written here, never in the other side's file)


def test_a_cut_file_is_refused():
    trace = _trace_with_memos()
    fd = os.memfd_create("test")
    try:
        memo_swap.write_memos(fd, {"op_tree": trace.derived["op_tree"]})
        os.ftruncate(fd, os.fstat(fd).st_size - 1)
        with pytest.raises(ValueError):
            memo_swap.read_memos(fd)
    finally:
        os.close(fd)


def test_a_side_whose_share_fails_publishes_nothing_and_the_other_makes_what_it_misses(monkeypatch):
    serial = rank_aggregate(views(), True)

    def broken(trace):
        raise RuntimeError("no share")

    monkeypatch.setattr(memo_swap, "CHILD_SHARE", broken)  # (in the child: the parent makes its own share)
    mine = views()
    fork = sections.SectionFork(mine, True, child=SMALL, swap=True)
    assert text(rank_aggregate(mine, True, run=fork.run)) == text(serial)
    fork.close()


def test_a_child_that_dies_before_it_publishes_leaves_the_parent_its_own_memos(monkeypatch):
    serial = rank_aggregate(views(), True)
    parent = os.getpid()
    real = memo_swap.MemoSwap.swap

    def swap(self, trace):
        if os.getpid() != parent:
            os._exit(3)  # the child dies before its share
        return real(self, trace)

    monkeypatch.setattr(memo_swap.MemoSwap, "swap", swap)
    mine = views()
    fork = sections.SectionFork(mine, True, child=SMALL, swap=True)
    assert text(rank_aggregate(mine, True, run=fork.run)) == text(serial)  # (its sections made here too)
    fork.close()


def test_close_before_the_fork_sides_closes_every_descriptor():
    before = set(os.listdir("/proc/self/fd"))
    swap = MemoSwap()
    assert len(set(os.listdir("/proc/self/fd")) - before) == 6
    swap.close()
    swap.close()
    assert set(os.listdir("/proc/self/fd")) == before


def test_without_memory_files_the_split_makes_every_memo_on_both_sides(monkeypatch):
    from tb_plugin.registry.executors import small_sections

    monkeypatch.delattr(memo_swap.os, "memfd_create")  # (macOS: no memory files)
    assert not memo_swap.available()
    mine = views()
    fork = small_sections.split(mine, True)
    assert fork.swap is None
    assert text(rank_aggregate(mine, True, run=fork.run)) == text(rank_aggregate(views(), True))
    fork.close()
