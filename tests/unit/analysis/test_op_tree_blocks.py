"""The operator tree's pointer-jumping kernels (analysis/op_tree.py), run block by block, give the same
answers as a plain loop and as the one pass over the whole array they replaced: random cases with
ties, −inf ends, zero lengths and thread boundaries, with blocks small enough that chains cross many
of them; and the whole tree of a trace with NaN and infinite times equals the one the old kernels
build."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import x

from tb_plugin.analysis import op_tree as ot
from tb_plugin.trace.decode import decode_trace


def _whole_nearest(e: np.ndarray, linked: np.ndarray, step: int, strict: bool) -> np.ndarray:
    """The kernel before blocks: every position's rounds over the whole array at once."""
    cand = np.arange(len(e)) + step
    cand[~linked] = -1
    todo = np.flatnonzero(cand >= 0)
    while len(todo):
        c = cand[todo]
        done = e[c] > e[todo] if strict else e[c] >= e[todo]
        todo = todo[~done]
        cand[todo] = cand[cand[todo]]
        todo = todo[cand[todo] >= 0]
    return cand


def _whole_first(link: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """The chain kernel before blocks."""
    nearest = np.where(wanted, np.arange(len(link)), link)
    while True:
        step = (nearest >= 0) & ~wanted[np.maximum(nearest, 0)]
        if not step.any():
            break
        nearest[step] = nearest[nearest[step]]
    first = np.full(len(link), -1, dtype=np.int64)
    has = link >= 0
    first[has] = nearest[link[has]]
    return first


def _loop_nearest(e: np.ndarray, linked: np.ndarray, step: int, strict: bool) -> np.ndarray:
    """The definition, one position at a time."""
    out = np.full(len(e), -1, dtype=np.int64)
    for i in range(len(e)):
        j = i
        while linked[j]:
            j += step
            if (e[j] > e[i]) if strict else (e[j] >= e[i]):
                out[i] = j
                break
    return out


def _loop_first(link: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    out = np.full(len(link), -1, dtype=np.int64)
    for i in range(len(link)):
        j = link[i]
        while j >= 0 and not wanted[j]:
            j = link[j]
        out[i] = j
    return out


def _case(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nested-looking ends with ties and −inf, and thread cuts: ``(e, linked back, linked forward)``."""
    e = np.round(rng.normal(0, 3, n).cumsum() + rng.integers(0, 40, n), int(rng.integers(0, 2)))
    e[rng.random(n) < 0.05] = -np.inf
    cut = rng.random(n) < rng.choice([0.0, 0.01, 0.2])
    cut[0] = True
    back = ~cut
    fwd = np.r_[~cut[1:], False]
    return e, back, fwd


@pytest.mark.parametrize("block", [4, 16, 64, 1 << 15])
def test_nearest_reaching_equals_the_whole_array_pass_and_the_loop(monkeypatch, block):
    monkeypatch.setattr(ot, "BLOCK", block)
    monkeypatch.setattr(ot, "FEW", max(block >> 3, 0))
    rng = np.random.default_rng(block)
    for _ in range(60):
        e, back, fwd = _case(rng, int(rng.integers(1, 400)))
        for linked, step, strict in ((back, -1, False), (fwd, 1, True), (back, -1, True), (fwd, 1, False)):
            got = ot._nearest_reaching(e, linked, step, strict)
            assert got.dtype == np.int32  # positions under 2³¹: half the bytes of int64
            assert np.array_equal(got, _whole_nearest(e, linked, step, strict))
            assert np.array_equal(got, _loop_nearest(e, linked, step, strict))


@pytest.mark.parametrize("block", [4, 16, 1 << 15])
def test_first_in_chain_equals_the_whole_array_pass_and_the_loop(monkeypatch, block):
    monkeypatch.setattr(ot, "BLOCK", block)
    monkeypatch.setattr(ot, "FEW", block >> 3)
    rng = np.random.default_rng(100 + block)
    for _ in range(60):
        e, back, _ = _case(rng, int(rng.integers(1, 400)))
        link = _whole_nearest(e, back, -1, False)
        if rng.random() < 0.5:  # a forest given in any order (a parent after its child, as row numbers are)
            perm = rng.permutation(len(link))
            inv = np.argsort(perm)
            link = np.where(link[perm] >= 0, inv[np.maximum(link[perm], 0)], -1)
        wanted = rng.random(len(link)) < rng.choice([0.05, 0.5, 0.95])
        got = ot._first_in_chain(link, wanted)
        assert np.array_equal(got, _whole_first(link, wanted))
        assert np.array_equal(got, _loop_first(link, wanted))


def test_empty_and_single():
    for n in (0, 1):
        e = np.zeros(n)
        assert len(ot._nearest_reaching(e, np.zeros(n, bool), -1, False)) == n
        assert len(ot._first_in_chain(np.full(n, -1), np.zeros(n, bool))) == n


def test_tree_with_nan_and_infinite_times_equals_the_old_kernels(monkeypatch):
    """Threads, zero lengths, a crossing, NaN and infinite durations: the tree built block by block
    (blocks of 4 rows) equals the one the whole-array kernels build."""
    rng = np.random.default_rng(7)
    kinds = ["cpu_op", "user_annotation", "python_function", "cuda_runtime"]
    ev = []
    for i in range(600):
        dur = int(rng.choice([0, 1, 5, 40, 300]))
        ev.append(x(f"op{i % 13}", kinds[i % 4], int(rng.integers(0, 3000)), dur, tid=int(rng.integers(1, 4))))
    trace = decode_trace(json.dumps({"traceEvents": ev}).encode())
    dur = trace.events.dur
    dur[::97] = np.nan
    dur[5::89] = np.inf
    trace.events.ts[7::101] = -np.inf
    monkeypatch.setattr(ot, "BLOCK", 4)
    monkeypatch.setattr(ot, "FEW", 1)
    got = ot._build(trace)
    monkeypatch.setattr(ot, "_nearest_reaching", _whole_nearest)
    monkeypatch.setattr(ot, "_first_in_chain", _whole_first)
    want = ot._build(trace)
    assert got.crossings == want.crossings
    for name in ("op_parent", "py_parent", "order"):
        assert np.array_equal(getattr(got, name), getattr(want, name)), name
    assert (got.op_parent >= 0).sum() > 100


def _old_roll_up(arrays, rows, parent):
    """The roll-up before its passes shrank: every row each pass, every row each level."""
    if len(rows) == 0:
        return
    inside = np.zeros(len(parent), dtype=bool)
    inside[rows] = True
    depth = np.zeros(len(rows), dtype=np.int32)
    anc = parent[rows]
    while True:
        climbing = anc >= 0
        climbing[climbing] = inside[anc[climbing]]
        if not climbing.any():
            break
        depth += climbing
        anc = np.where(climbing, parent[np.maximum(anc, 0)], -1)
    has_parent = parent[rows] >= 0
    for level in range(int(depth.max()), -1, -1):
        sel = rows[(depth == level) & has_parent]
        for arr in arrays:
            np.add.at(arr, parent[sel], arr[sel])


def test_roll_up_equals_the_old_passes_bit_for_bit():
    """Random forests (parents anywhere in the rows), subsets of the rows, float values whose sums
    depend on their order: the same bits as the passes over every row."""
    rng = np.random.default_rng(11)
    for _ in range(100):
        n = int(rng.integers(1, 400))
        e, back, _ = _case(rng, n)
        parent = _whole_nearest(e, back, -1, False)
        perm = rng.permutation(n)
        inv = np.argsort(perm)
        parent = np.where(parent[perm] >= 0, inv[np.maximum(parent[perm], 0)], -1)
        rows = np.flatnonzero(rng.random(n) < rng.choice([0.3, 1.0]))
        values = [rng.normal(0, 1e6, n) * 1.1, rng.random(n) / 3]
        got, want = [v.copy() for v in values], [v.copy() for v in values]
        ot.roll_up(got, rows, parent)
        _old_roll_up(want, rows, parent)
        for g, w in zip(got, want):
            assert g.tobytes() == w.tobytes()


def test_by_thread_and_start_equals_lexsort():
    """Ascending starts with runs of ties broken by the end and the kind's rank (the operator tree's
    keys), NaN and infinite ends, few threads and more than :data:`FEW_THREADS`; starts out of order or
    NaN (the sort itself)."""
    rng = np.random.default_rng(21)
    for case in range(300):
        n = int(rng.integers(1, 300))
        threads = int(rng.choice([1, 3, ot.FEW_THREADS + 5]))
        thread = rng.integers(0, threads, n).astype(np.int64) << 32 | rng.integers(0, 2, n)
        start = np.sort(rng.integers(0, int(rng.choice([5, 50, 5000])), n)).astype(np.float64)
        if case % 10 == 0:
            start = rng.permutation(start)
        if case % 13 == 0:
            start[-1] = np.nan
        end = start + rng.choice([0.0, 1.0, 3.0, np.inf, np.nan], n)
        rank = rng.integers(0, 4, n).astype(np.int8)
        ties = (rank, -end)
        assert np.array_equal(ot.by_thread_and_start(thread, start, ties), np.lexsort(ties + (start, thread)))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_first_in_chain_reads_no_link_of_minus_one(dtype):
    """The final gather reads every position's link, −1 included (it reads the last position, then is
    overwritten): roots give −1 whatever the last position holds, in the links' own dtype (int32 or
    int64), and the result equals the loop's."""
    rng = np.random.default_rng(11)
    for _ in range(40):
        n = int(rng.integers(1, 200))
        e, back, _ = _case(rng, n)
        link = _whole_nearest(e, back, -1, False).astype(dtype)
        for wanted in (np.ones(n, bool), np.zeros(n, bool), rng.random(n) < 0.5):
            wanted[-1] = True  # the last position its own nearest: a −1 link that read it would not give −1
            got = ot._first_in_chain(link, wanted)
            assert got.dtype == dtype
            assert np.array_equal(got[link < 0], np.full(int((link < 0).sum()), -1))
            assert np.array_equal(got, _loop_first(link.astype(np.int64), wanted))
