"""The critical path's host side made a group of steps at a time gives the chains of the whole trace's
(tb_plugin/analysis/critical_path_groups.py): many groups against one, on a synthetic trace whose paths
cross step boundaries and on real samples of several steps."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
from conftest import REPO, sample
from synth.critical_groups import NCCL, steps_doc

from tb_plugin.analysis import critical_path as cp
from tb_plugin.analysis.critical_path_groups import step_groups, walks_stay_behind
from tb_plugin.analysis.distributed import comm_kernels
from tb_plugin.analysis.host_tiles import host_tiles
from tb_plugin.analysis.steps import compute_steps
from tb_plugin.registry.parse import load_trace_file
from tb_plugin.trace.decode import decode_trace
from tb_plugin.trace.uniques import unique_values


def _chains(trace, budget: int, monkeypatch) -> tuple[dict, int]:
    """``rank_chains`` with at most ``budget`` host events per group, and the number of groups it made."""
    monkeypatch.setattr(cp, "GROUP_HOST_EVENTS", budget)
    rows = np.asarray(comm_kernels(trace)["rows"], dtype=np.int64)
    steps = compute_steps(trace)
    groups = len(list(cp.RankGraph(trace, rows, host_side=False).groups(steps.start, steps.end)))
    return cp.rank_chains(trace, rows), groups


def _same_in_groups(trace, monkeypatch) -> dict:
    one, n_one = _chains(trace, 10**12, monkeypatch)
    many, n_many = _chains(trace, 1, monkeypatch)
    assert n_one == 1 and n_many == len(compute_steps(trace)) > 1  # a group per step: the test means something
    assert pickle.dumps(many) == pickle.dumps(one)
    return one


def _segments(out: dict) -> set[str]:
    chains = [s["chain"] for s in out["steps"]] + [c for c in out["comm"]["chain"] if c is not None]
    return {t[1] for c in chains for t in c["top"] + c["items"]}


@pytest.mark.parametrize("recorded", [True, False])
def test_chains_across_step_boundaries_are_the_same_in_groups(recorded, monkeypatch):
    """Device work launched in one step and run in the next, a sync across the boundary, a cross-stream
    wait on work begun before the step, a backward pass and annotation over boundaries, all-reduces
    outside every step: each step a group gives the chains of one group, byte for byte."""
    trace = decode_trace(json.dumps(steps_doc(10, recorded)).encode())
    out = _same_in_groups(trace, monkeypatch)
    names = _segments(out)
    assert {"side", "blocked on another thread (autograd)", "untraced host work", "train.py(12): loop"} <= names
    assert any(c is None for c in out["comm"]["chain"])  # the all-reduces outside every step
    assert sum(NCCL == n for n in out["comm"]["name"]) == 12


def test_each_group_s_enclosing_events_are_those_of_its_rows_alone():
    """The per-event ``parent`` array, filled once and reused by every group, holds after each group
    exactly what a fresh ``host_tiles`` of that group's rows gives (no entry left by an earlier group)."""
    trace = decode_trace(json.dumps(steps_doc(10)).encode())
    ev, steps = trace.events, compute_steps(trace)
    g = cp.RankGraph(trace, np.zeros(0, np.int64), host_side=False)
    groups = list(step_groups(ev.ts, ev.dur, g.host, steps.start, steps.end, 1))  # a group per step
    assert len(groups) == len(steps) > 1
    for _, _, rows in groups:
        g.set_host(rows)
        fresh = host_tiles(trace, rows, g.other_threads).parent
        assert (fresh >= 0).any() and g.parent.dtype == fresh.dtype and np.array_equal(g.parent, fresh)


@pytest.mark.parametrize("shuffled", [False, True])
def test_groups_hold_the_rows_of_their_steps_only(shuffled):
    """A group's rows include every host event that overlaps its steps, and fewer than the trace's
    (events in time order: a range of rows and the earlier events that reach the group; else a pass
    over the events per group, the same rows as the window's); one group (all rows) under the budget."""
    trace = decode_trace(json.dumps(steps_doc(10)).encode())
    ev, steps = trace.events, compute_steps(trace)
    host = cp.RankGraph(trace, np.zeros(0, np.int64), host_side=False).host  # host work, no step markers
    ts, dur = ev.ts.copy(), ev.dur.copy()
    if shuffled:
        order = np.random.default_rng(7).permutation(len(ev))
        ts, dur, host = ts[order], dur[order], host[order]
    groups = list(step_groups(ts, dur, host, steps.start, steps.end, 60))
    assert 1 < len(groups) < len(steps) and groups[0][0] == 0 and groups[-1][1] == len(steps)
    assert all(a[1] == b[0] for a, b in zip(groups, groups[1:]))  # consecutive steps, each in one group
    for k0, k1, rows in groups:
        lo, hi = steps.start[k0], steps.end[k0:k1].max()
        want = np.flatnonzero(host & (ts <= hi) & (ts + dur >= lo))
        assert set(want.tolist()) <= set(rows.tolist()) and host[rows].all() and len(rows) < host.sum()
        assert len(np.unique(rows)) == len(rows)
        if shuffled:
            assert np.array_equal(rows, want)
    ((k0, k1, rows),) = step_groups(ts, dur, host, steps.start, steps.end, int(host.sum()))
    assert (k0, k1) == (0, len(steps)) and np.array_equal(rows, np.flatnonzero(host))
    unsorted = steps.start.copy()
    unsorted[3] = unsorted[5]  # a step that starts after the next one: its window would miss it
    ((k0, k1, rows),) = step_groups(ts, dur, host, unsorted, steps.end, 60)
    assert (k0, k1) == (0, len(steps)) and np.array_equal(rows, np.flatnonzero(host))


def test_a_walk_that_could_go_forward_makes_one_group():
    """A device node ending before it starts, a recorded wait on later work or a sync's waited node
    starting after the sync returns could take a walk past its step: then the trace is one group."""
    ts, te = np.array([0.0, 10.0, 20.0]), np.array([5.0, 15.0, 25.0])
    none = np.full(3, -1)
    assert walks_stay_behind(ts, te, none, np.array([1]), np.array([15.0]))
    assert not walks_stay_behind(ts, np.array([5.0, 8.0, 25.0]), none, np.zeros(0, int), np.zeros(0))
    assert not walks_stay_behind(ts, te, np.array([2, -1, -1]), np.zeros(0, int), np.zeros(0))
    assert not walks_stay_behind(ts, te, none, np.array([2]), np.array([15.0]))


def _thread_sets_match(trace) -> bool:
    """The threads that have tiles (decided once over the trace: a host event of positive length) are
    those host_tiles finds over all the host events, and the graph's thread states are those threads."""
    from tb_plugin.analysis.host_tiles import host_tiles

    g = cp.RankGraph(trace, np.asarray(comm_kernels(trace)["rows"], dtype=np.int64))
    tiles = host_tiles(trace, np.flatnonzero(g.host))
    assert sorted(g.threads) == g.known.tolist()
    return np.array_equal(unique_values(tiles.thread), g.known) and not g.whole


def test_whole_trace_thread_sets_are_those_of_the_tiles():
    for doc in (steps_doc(4), steps_doc(3, False)):
        assert _thread_sets_match(decode_trace(json.dumps(doc).encode()))


LOCAL = sorted(str(p.relative_to(REPO)) for p in (REPO / "samples").glob("gpu_*/*.pt.trace.json.gz"))
SHARED = [
    "kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
    "torch213_cpu/worker0.1795324943899052487.pt.trace.json",
    "hta/trace_diff/control/control.json.gz",
]


@pytest.mark.corpus
@pytest.mark.parametrize("rel", SHARED)
def test_real_samples_are_the_same_in_groups(rel, monkeypatch):
    trace = load_trace_file(str(sample(rel)))
    _same_in_groups(trace, monkeypatch)
    assert _thread_sets_match(trace)


@pytest.mark.parametrize("rel", LOCAL)
def test_local_samples_are_the_same_in_groups(rel, monkeypatch):
    trace = load_trace_file(str(REPO / rel))
    if len(compute_steps(trace)) < 2:
        pytest.skip("one step: one group")
    _same_in_groups(trace, monkeypatch)
    assert _thread_sets_match(trace)


def test_a_very_large_trace_s_groups_give_their_freed_pages_back_and_chains_stay_the_same(monkeypatch):
    """Inside a very large trace's sections (trace/heap.trimmed_steps), rank_chains trims once after its
    device side and once after each group's host side is made (their temporaries: the section child's
    heap grew ~0.2 GB over a 4.5 GB trace's groups); outside them, never; the chains are the same."""
    from tb_plugin.trace import heap

    trace = decode_trace(json.dumps(steps_doc(10, True)).encode())
    want, _ = _chains(trace, 1, monkeypatch)  # (every memo made: the trims counted below are the walk's own)
    trims: list[int] = []
    monkeypatch.setattr(heap, "_trim", lambda pad: trims.append(pad) or 1)
    rows = np.asarray(comm_kernels(trace)["rows"], dtype=np.int64)
    assert pickle.dumps(cp.rank_chains(trace, rows)) == pickle.dumps(want) and trims == []
    with heap.trimmed_steps(heap.STEP_TRIM_ABOVE_ITEMS):
        got = cp.rank_chains(trace, rows)
    assert len(trims) == 1 + len(compute_steps(trace)) == 11  # the device side, then each step's group
    assert pickle.dumps(got) == pickle.dumps(want)
