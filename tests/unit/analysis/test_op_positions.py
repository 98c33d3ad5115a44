"""Operator positions read by one gather instead of a binary search (op_tree.positions_among, PerOp's
lookup for many rows) and the memory view's climb over the queries still climbing: the same values
as the searches and passes they replace."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import sample

from tb_plugin.analysis.memory import innermost_ops_at
from tb_plugin.analysis.op_tree import op_tree, positions_among
from tb_plugin.analysis.operators import PerOp, op_times
from tb_plugin.registry.parse import load_trace_file
from tb_plugin.trace.decode import decode_trace
from tb_plugin.trace.sparse import SparseColumn


def test_positions_among_is_searchsorted_of_the_mask_rows():
    """Every row, held or not, reads the insertion point of np.searchsorted (left): for a held row its
    position among the held rows."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        n = int(rng.integers(0, 300))
        mask = rng.random(n) < rng.choice([0.0, 0.1, 0.5, 1.0])
        got = positions_among(mask)
        assert got.dtype == np.int32 and len(got) == n
        want = np.searchsorted(np.flatnonzero(mask), np.arange(n))
        assert got.tolist() == want.tolist()


def test_per_op_many_rows_read_as_the_binary_search_does():
    """Rows of every kind (held, not held, negative, past the last operator, repeated, unsorted), values
    with -0.0 and NaN, operators held whole or only those with a value: the same bits as
    :class:`SparseColumn`'s bisection, on the gather's path (four rows or more per event)."""
    rng = np.random.default_rng(8)
    for _ in range(200):
        n = int(rng.integers(1, 200))
        ops = np.flatnonzero(rng.random(n) < 0.6)
        if not len(ops):
            continue
        values = rng.choice([0.0, -0.0, 1.5, np.nan, 1e300], len(ops)) * rng.choice([0.0, 1.0], len(ops), p=[0.5, 0.5])
        per_op = PerOp(ops, values)
        rows = rng.integers(-5, n + 5, int(rng.integers(n, 3 * n)))
        if rng.random() < 0.5:
            rows = np.sort(rows)
        assert 4 * len(rows) >= per_op.size  # the gather's path
        got = per_op[rows]
        want = SparseColumn.__getitem__(per_op, rows)
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def _old_innermost_ops_at(trace, pid, tid, t):
    """The climb before it kept a list of the queries still climbing: masks over every query each pass
    and the end of every event computed beside the trace (the thread's last operator found the same way)."""
    ev = trace.events
    is_op = op_times(trace).is_op
    tree = op_tree(trace)
    cand = np.full(len(t), -1, dtype=np.int64)
    ops = tree.order[is_op[tree.order]]
    for i in range(len(t)):  # the query's thread's operator that started last at or before t
        mine = ops[(ev.pid[ops] == pid[i]) & (ev.tid[ops] == tid[i]) & (ev.ts[ops] <= t[i])]
        if len(mine):
            cand[i] = mine[np.lexsort((np.arange(len(mine)), ev.ts[mine]))[-1]]
    end_of = ev.ts + ev.dur
    while True:
        live = cand >= 0
        closed = np.zeros(len(cand), dtype=bool)
        closed[live] = (end_of[cand[live]] <= t[live]) | ~is_op[cand[live]]
        if not closed.any():
            break
        cand[closed] = tree.op_parent[cand[closed]]
    return cand


def _op(name, ts, dur, tid=1):
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur}


def test_innermost_ops_climb_equals_the_passes_over_every_query():
    """Nested operators four deep on two threads, a kernel-free gap, queries at every boundary and
    between: each query's innermost open operator as the old passes found it."""
    events = [
        _op("a", 0, 100),
        _op("b", 10, 50),
        _op("c", 20, 20),
        _op("d", 25, 5),
        _op("e", 70, 10),
        _op("f", 200, 30),
        _op("x", 0, 40, tid=2),
        _op("y", 5, 5, tid=2),
    ]
    trace = decode_trace(json.dumps({"traceEvents": events}).encode())
    ev = trace.events
    t = np.arange(-1.0, 240.0, 0.5)
    pid = np.full(len(t), ev.pid[0], dtype=np.int64)  # (thread ids as the decode interns them)
    other = int(ev.tid.max()) + 7
    for tid in (int(ev.tid[0]), int(ev.tid[-1]), other):
        tids = np.full(len(t), tid, dtype=np.int64)
        got = innermost_ops_at(trace, pid, tids, t)
        assert got.tolist() == _old_innermost_ops_at(trace, pid, tids, t).tolist()
        assert (got >= 0).any() == (tid != other)
    assert len(set(innermost_ops_at(trace, pid, np.full(len(t), ev.tid[0]), t).tolist())) == 7  # a..f, none


@pytest.mark.corpus
def test_innermost_ops_climb_equals_the_passes_on_a_real_traces_memory_events():
    """400 of the V100 sample's memory events: each one's innermost open operator as the old passes found it."""
    resnet = load_trace_file(str(sample("kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz")))
    mem = resnet.memory
    pick = np.arange(0, len(mem), max(1, len(mem) // 400))
    t = mem.ts[pick].astype(np.float64)
    got = innermost_ops_at(resnet, mem.pid[pick], mem.tid[pick], t)
    assert (got >= 0).sum() > 100
    assert got.tolist() == _old_innermost_ops_at(resnet, mem.pid[pick], mem.tid[pick], t).tolist()
