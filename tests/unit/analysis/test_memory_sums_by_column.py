"""The memory section's per-operator sums made one column at a time (analysis/memory._operator_sums on
op_tree.climb's levels, the names' groups per operator): the same names, calls and float sums, byte for
byte, as the seven columns held at once and rolled up together (the code it replaced, kept here as the
reference); op_tree.roll_up the same as before on random forests; and the memory section reads op_rows,
so that the report's sections drop op_times before it."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from conftest import sample

from tb_plugin.analysis import memory, op_tree
from tb_plugin.analysis.memory import _name_groups, memory_data, memory_summary
from tb_plugin.analysis.op_tree import positions_among
from tb_plugin.analysis.operators import EXCLUDED_PREFIXES, op_rows, op_times
from tb_plugin.registry import report
from tb_plugin.registry.parse import load_trace_file
from tb_plugin.registry.views import FileViews
from tb_plugin.trace.decode import decode_trace
from tb_plugin.trace.sparse import row_dtype

SAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "samples")


def _reference_roll_up(arrays, rows, parent):
    """What op_tree.roll_up computes, one row at a time: each row's depth (its ancestors among ``rows``),
    then the rows with a parent, deepest first and in the order of ``rows`` within a depth, each adding
    its value into its parent's (np.add.at's order: the same float sums, bit for bit)."""
    rows = [int(r) for r in np.asarray(rows).tolist()]
    inside = set(rows)
    depth = {}
    for r in rows:
        d, up = 0, int(parent[r])
        while up >= 0:
            d += up in inside
            up = int(parent[up])
        depth[r] = d
    for level in sorted(set(depth.values()), reverse=True):
        climbing = [r for r in rows if depth[r] == level and parent[r] >= 0]
        for arr in arrays:
            values = [arr[r] for r in climbing]  # (each level's values read before its additions)
            for r, v in zip(climbing, values):
                arr[parent[r]] += v


def _reference_sums(trace, chosen):
    """memory._operator_sums as it was: the seven operator-space columns held at once."""
    mem, ev, data = trace.memory, trace.events, memory_data(trace)
    idx = np.flatnonzero(chosen & (data.op >= 0))
    if len(idx) == 0:
        return None
    tree = op_tree.op_tree(trace)
    is_op = op_times(trace).is_op
    ops = np.flatnonzero(is_op)
    m = len(ops)
    rank = positions_among(is_op)
    owner = rank[data.op[idx]]
    op_parent = tree.op_parent[ops]
    narrow = row_dtype(m)
    parent = np.where(op_parent >= 0, rank[op_parent].astype(narrow), narrow(-1))
    order = rank[tree.order[is_op[tree.order]]].astype(narrow, copy=False)
    b = mem.bytes[idx].astype(np.float64)
    self_inc = np.bincount(owner, weights=b, minlength=m)
    self_alloc = np.bincount(owner, weights=np.where(b > 0, b, 0), minlength=m)
    self_count = np.bincount(owner, weights=(b > 0).astype(float), minlength=m)
    self_kept = np.bincount(owner, weights=np.where(data.unfreed[idx], b, 0), minlength=m)
    totals = [self_inc.copy(), self_alloc.copy(), self_count.copy()]
    _reference_roll_up(totals, order, parent)
    merged = op_times(trace).merged[ops]
    _reference_roll_up([self_inc, self_alloc, self_count, self_kept], np.flatnonzero(merged), parent)
    excluded = trace.name_mask(lambda s: s.startswith(EXCLUDED_PREFIXES))[ops]
    rows = np.flatnonzero(~excluded & ~merged)
    keys, inv = _name_groups(ev.name[ops[rows]], len(trace.strings) + 1)
    g = len(keys)
    calls = np.bincount(inv, minlength=g)
    cols = [
        np.bincount(inv, weights=x[rows], minlength=g) for x in (self_inc, self_alloc, self_count, *totals, self_kept)
    ]
    touched = np.flatnonzero((cols[1] != 0) | (cols[4] != 0) | (cols[0] != 0) | (cols[3] != 0))
    return [trace.strings[k] for k in keys[touched].tolist()], calls[touched], [c[touched] for c in cols]


def _assert_same_sums(trace) -> int:
    """Every device's chosen memory events, and all of them: the same names, calls and sums (bytes);
    the number of operator rows compared."""
    data = memory_data(trace)
    masks = [data.device_code > 0] + [data.device_code == k + 1 for k in range(len(data.labels))]
    compared = 0
    for chosen in masks:
        want, got = _reference_sums(trace, chosen), memory._operator_sums(trace, chosen)
        if want is None:
            assert got is None
            continue
        assert got is not None and got[0] == want[0]
        assert got[1].dtype == want[1].dtype and got[1].tobytes() == want[1].tobytes()
        assert len(got[2]) == len(want[2]) == 7
        for g, w in zip(got[2], want[2]):
            assert g.dtype == w.dtype and g.tobytes() == w.tobytes()
        compared += len(want[0])
    return compared


def _nested_trace(seed: int, n_ops: int = 400, n_mem: int = 900):
    """Operators nested several deep on two threads (same-name only children among them, a few
    ``ProfilerStep#`` rows), memory events with Addr on two devices inside and outside them."""
    rng = np.random.default_rng(seed)
    events = []
    for tid in (1, 2):
        t = 0
        stack: list[tuple[int, int]] = []  # (start, end) of the open operators
        for k in range(n_ops // 2):
            while stack and t >= stack[-1][1]:
                stack.pop()
            room = (stack[-1][1] - t) if stack else 10_000
            if room < 3:
                t = stack.pop()[1] if stack else t + 1
                continue
            dur = int(rng.integers(1, max(2, room)))
            name = ["aten::add", "aten::mm", "aten::copy_", "ProfilerStep#3", "aten::linear"][int(rng.integers(5))]
            if stack and rng.random() < 0.2:
                name = "aten::same"  # a same-name chain: merged into its parent
            events.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": tid, "ts": t, "dur": dur})
            stack.append((t, t + dur))
            t += int(rng.integers(0, 3))
    end = max(e["ts"] + e["dur"] for e in events) + 10
    for k in range(n_mem):
        nbytes = int(rng.integers(1, 1 << 20)) * (1 if rng.random() < 0.6 else -1)
        args = {
            "Bytes": nbytes,
            "Device Type": int(rng.integers(0, 2)),
            "Device Id": 0,
            "Addr": int(rng.integers(0, 50)),
        }
        events.append(
            {
                "ph": "i",
                "s": "t",
                "name": "[memory]",
                "pid": 1,
                "tid": int(rng.integers(1, 3)),
                "ts": int(rng.integers(0, end)),
                "args": args,
            }
        )
    return decode_trace(json.dumps({"traceEvents": events}).encode())


@pytest.mark.parametrize("seed", range(6))
def test_sums_by_column_are_the_columns_held_at_once_on_synthetic_nesting(seed):
    trace = _nested_trace(seed)
    assert _assert_same_sums(trace) > 0
    assert bool(op_times(trace).merged.any())  # the same-name fold is exercised


@pytest.mark.parametrize(
    "rel",
    [
        "gpu_transformer_bf16/h200.1795664832269.pt.trace.json.gz",
        "synthetic_resnet/worker0.1751410836000.pt.trace.json.gz",
    ],
)
def test_sums_by_column_are_the_columns_held_at_once_on_repository_samples(rel):
    path = os.path.join(SAMPLES, rel)
    trace = load_trace_file(path)
    _assert_same_sums(trace)


@pytest.mark.corpus
def test_sums_by_column_are_the_columns_held_at_once_on_the_corpus():
    for rel in (
        "kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
        "tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz",
    ):
        assert _assert_same_sums(load_trace_file(str(sample(rel)))) > 0


@pytest.mark.parametrize("seed", range(20))
def test_roll_up_on_climb_levels_is_the_roll_up_it_replaced(seed):
    """Random forests (a parent before its child or anywhere), random subsets of rows, several
    arrays of non-integer values (the additions' order shows in the bits): the same bytes."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    parent = np.array([int(rng.integers(-1, i)) if i and rng.random() < 0.9 else -1 for i in range(n)])
    parent = parent.astype(np.int32 if seed % 2 else np.int64)
    rows = np.flatnonzero(rng.random(n) < rng.random())
    arrays = [rng.random(n) * 1e3, rng.standard_normal(n), rng.random(n)]
    want = [a.copy() for a in arrays]
    _reference_roll_up(want, rows, parent)
    op_tree.roll_up(arrays, rows, parent)
    for g, w in zip(arrays, want):
        assert g.tobytes() == w.tobytes()
    one = [a.copy() for a in want]
    climbed = op_tree.climb(rows, parent)
    for a in one:  # one array at a time on the same levels: each as when rolled up together
        climbed.add_up([a])
    twice = [a.copy() for a in want]
    op_tree.roll_up(twice, rows, parent)
    assert all(a.tobytes() == b.tobytes() for a, b in zip(one, twice))


def test_the_memory_section_reads_op_rows_not_op_times(monkeypatch):
    """op_times leaves its two masks under op_rows (the same arrays); in the report's sections the
    memory section finds op_times dropped and op_rows kept, and sums as with every memo kept."""
    path = os.path.join(SAMPLES, "gpu_transformer_bf16/h200.1795664832269.pt.trace.json.gz")
    trace = load_trace_file(path)
    times = op_times(trace)
    assert op_rows(trace)[0] is times.is_op and op_rows(trace)[1] is times.merged
    seen: list[set] = []
    real = memory.memory_summary

    def summary(trace, top=20):
        seen.append(set(trace.derived))
        return real(trace, top)

    monkeypatch.setattr(memory, "memory_summary", summary)
    views = FileViews(load_trace_file(path))
    got = report.rank_aggregate(views, True)
    assert len(seen) == 1 and "op_rows" in seen[0] and "op_times" not in seen[0]
    kept = report.rank_aggregate(FileViews(load_trace_file(path)), True, run=report.run_sections)
    assert json.dumps(got, sort_keys=True, default=repr) == json.dumps(kept, sort_keys=True, default=repr)
    assert memory_summary(load_trace_file(path)) == got["tables"]["memory"]


def _reference_memory_data(trace) -> dict:
    """memory._memory_data as it was: every per-event column held, in int64 (and the labels per event)."""
    mem = trace.memory
    label_of = np.full(len(mem), "", dtype=object)
    device_code = np.zeros(len(mem), dtype=np.int64)
    for k, (label, _, rows) in enumerate(memory.device_rows(trace)):
        label_of[rows] = label
        device_code[rows] = k + 1
    op = memory._innermost_ops(trace)
    alloc_op = op.copy()
    unfreed = np.zeros(len(mem), dtype=bool)
    freed_at = np.full(len(mem), -1, dtype=np.int64)
    ends = np.full(len(mem), -1, dtype=np.int64)
    if len(mem) and bool((mem.addr >= 0).any()):
        memory._link_frees(mem.addr, mem.bytes, device_code, freed_at, ends, unfreed)
        freed = ends >= 0
        alloc_op[freed] = op[ends[freed]]
    return {"device": label_of.tolist(), "device_code": device_code, "op": op, "alloc_op": alloc_op}, {
        "unfreed": unfreed,
        "freed_at": freed_at,
        "ends": ends,
    }


def _assert_same_memory_data(trace) -> None:
    data = memory_data(trace)
    first, second = _reference_memory_data(trace)
    assert data.device == first["device"] and all(type(x) is str for x in data.device)
    for key, want in [*first.items(), *second.items()]:
        if key == "device":
            continue
        got = getattr(data, key)
        assert len(got) == len(want) and np.array_equal(got, want), key
        assert got.dtype == (np.int32 if want.dtype == np.int64 else want.dtype), key  # rows under 2³¹: int32


@pytest.mark.parametrize("seed", range(3))
def test_memory_data_narrowed_holds_the_same_values_on_synthetic_nesting(seed):
    _assert_same_memory_data(_nested_trace(seed))


def test_memory_data_narrowed_holds_the_same_values_on_repository_samples():
    for rel in (
        "gpu_transformer_bf16/h200.1795664832269.pt.trace.json.gz",
        "synthetic_resnet/worker0.1751410836000.pt.trace.json.gz",
    ):
        trace = load_trace_file(os.path.join(SAMPLES, rel))
        assert len(trace.memory)
        _assert_same_memory_data(trace)


@pytest.mark.corpus
def test_memory_data_narrowed_holds_the_same_values_on_the_corpus():
    for rel in (
        "kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
        "tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz",
    ):
        trace = load_trace_file(str(sample(rel)))
        assert len(trace.memory)
        _assert_same_memory_data(trace)
