"""Memory view from traces: curve, pairing and per-operator statistics, exact on a known trace."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import sample

from tb_plugin.analysis.memory import (
    _name_groups,
    allocation_pairs,
    curves,
    downsample_curve,
    memory_summary,
    operator_stats,
)
from tb_plugin.registry.parse import load_trace_file
from tb_plugin.trace.decode import decode_trace


def _op(name, ts, dur, tid=1):
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur}


def _mem(ts, nbytes, addr=None, total=None, reserved=None, dev=1, tid=1):
    args = {"Bytes": nbytes, "Device Type": dev, "Device Id": 0}
    if addr is not None:
        args["Addr"] = addr
    if total is not None:
        args["Total Allocated"] = total
    if reserved is not None:
        args["Total Reserved"] = reserved
    return {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": tid, "ts": ts, "args": args}


KNOWN = [
    _op("aten::linear", 0, 100),
    _op("aten::empty", 10, 5),
    _op("aten::mm", 20, 30),
    _op("aten::relu", 200, 10),
    _mem(12, 1000, addr=1, total=1000, reserved=2048),  # linear > empty
    _mem(25, 500, addr=2, total=1500, reserved=2048),  # linear > mm
    _mem(60, -1000, addr=1, total=500, reserved=2048),  # freed in linear itself; inherits empty
    _mem(205, 300, addr=3, total=800, reserved=4096),  # relu, never freed
    _mem(300, -500, addr=2, total=300, reserved=4096),  # outside any op; inherits mm
    _mem(305, -64, addr=99, total=236, reserved=4096),  # a free without an allocation
    _mem(45, 4, addr=7, total=4, dev=0),  # a CPU allocation inside mm
]


@pytest.fixture
def known():
    return decode_trace(json.dumps({"traceEvents": KNOWN}).encode())


def test_curve_and_peak(known):
    by = {c["device"]: c for c in curves(known)}
    gpu = by["GPU0"]
    assert list(gpu["ts_us"]) == [12, 25, 60, 205, 300, 305]
    assert list(gpu["allocated_bytes"]) == [1000, 1500, 500, 800, 300, 236]
    assert (gpu["peak_allocated_bytes"], gpu["peak_allocated_ts"], gpu["peak_reserved_bytes"]) == (1500, 25, 4096)
    assert not gpu["reconstructed"]
    assert by["CPU"]["peak_allocated_bytes"] == 4


def test_pairing(known):
    rows = allocation_pairs(known)["rows"]
    got = {
        (r["device"], r["addr"]): (r["op"], r["size_bytes"], r["alloc_us"], r["free_us"], r["duration_us"])
        for r in rows
    }
    assert got == {
        ("GPU0", 1): ("aten::empty", 1000, 12, 60, 48),
        ("GPU0", 2): ("aten::mm", 500, 25, 300, 275),
        ("GPU0", 3): ("aten::relu", 300, 205, None, None),
        ("GPU0", 99): (None, 64, None, 305, None),
        ("CPU", 7): ("aten::mm", 4, 45, None, None),
    }


def test_operator_statistics_self_and_total(known):
    """Size increase = allocated − freed *during* the operator (a free counts for the
    operator running when it happens, torch-tb-profiler's documented definition; booking frees to the
    allocating operator made every size increase 0)."""
    stats = {r["name"]: r for r in operator_stats(known, "GPU0")}
    assert stats["aten::empty"] == {
        "name": "aten::empty",
        "calls": 1,
        "self_size_increase_bytes": 1000,
        "self_allocation_bytes": 1000,
        "self_allocations": 1,
        "size_increase_bytes": 1000,
        "allocation_bytes": 1000,
        "allocations": 1,
        "self_not_freed_bytes": 0,
    }
    assert (stats["aten::mm"]["self_size_increase_bytes"], stats["aten::mm"]["self_allocation_bytes"]) == (500, 500)
    linear = stats["aten::linear"]  # frees empty's 1000 B itself, at 60 µs
    assert (linear["self_size_increase_bytes"], linear["size_increase_bytes"]) == (-1000, 500)
    assert (linear["self_allocations"], linear["allocations"], linear["allocation_bytes"]) == (0, 2, 1500)
    assert (stats["aten::relu"]["size_increase_bytes"], stats["aten::relu"]["self_not_freed_bytes"]) == (300, 300)
    assert [r["name"] for r in operator_stats(known, "GPU0")] == [
        "aten::linear",
        "aten::empty",
        "aten::mm",
        "aten::relu",
    ]
    window = {r["name"]: r for r in operator_stats(known, "GPU0", start_us=0, end_us=30)}
    assert window["aten::linear"]["size_increase_bytes"] == 1500  # the free at 60 µs is outside


def test_reconstructed_curve_without_totals():
    events = [_op("aten::empty", 0, 10), _mem(1, 100), _mem(2, 50), _mem(3, -100)]
    trace = decode_trace(json.dumps({"traceEvents": events}).encode())
    (gpu,) = curves(trace)
    assert gpu["reconstructed"] and list(gpu["allocated_bytes"]) == [100, 150, 50]
    pairs = allocation_pairs(trace)
    assert pairs["rows"] == [] and "no 'Addr'" in pairs["reason"]
    assert operator_stats(trace, "GPU0")[0]["size_increase_bytes"] == 50


def test_downsampled_curve_keeps_the_peak():
    import numpy as np

    ts = np.arange(100_000, dtype=float)
    values = np.zeros(100_000, dtype=np.int64)
    values[54_321] = 10**9
    out = downsample_curve(ts, values, 0, 100_000, 1000)
    assert len(out["ts_us"]) <= 1000 and max(out["bytes"]) == 10**9
    assert 54_321.0 in out["ts_us"]
    # http_api.md's bound: at most 2 × width_px points, however narrow the request; the peak survives
    for points in (1, 2, 3, 4, 5, 6, 7, 100):
        small = downsample_curve(ts, values, 10.0, 99_000.0, points)
        assert len(small["ts_us"]) <= points and small["ts_us"] == sorted(small["ts_us"])
        assert 10**9 in small["bytes"]


@pytest.mark.corpus
def test_real_traces():
    resnet = load_trace_file(str(sample("kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz")))
    summary = memory_summary(resnet)
    gpu = next(d for d in summary["devices"] if d["device"] == "GPU0")
    assert gpu["peak_allocated_bytes"] == 2791636480  # running sum of Bytes: no totals in 2021 traces
    assert summary["top_operators"][0]["name"] == "aten::empty"
    assert allocation_pairs(resnet)["reason"]
    bert = load_trace_file(str(sample("tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz")))
    assert len(allocation_pairs(bert)["rows"]) == 118


INCUMBENT = json.loads((__import__("pathlib").Path(__file__).parents[2] / "data" / "incumbent_memory.json").read_text())
_KEYS = (
    ("calls", "calls"),
    ("size_increase_bytes", "increase_bytes"),
    ("allocation_bytes", "alloc_bytes"),
    ("self_size_increase_bytes", "self_increase_bytes"),
    ("self_allocation_bytes", "self_alloc_bytes"),
    ("allocations", "alloc_count"),
    ("self_allocations", "self_alloc_count"),
)


def _assert_equals_incumbent(rel: str):
    """Every operator row of every device equals torch-tb-profiler's table for the sample; the trace."""
    trace = load_trace_file(str(sample(rel)))
    for device, rows in INCUMBENT[rel]["stats"].items():
        ours = {r["name"]: r for r in operator_stats(trace, device)}
        assert set(ours) == {r["name"] for r in rows}, device
        for theirs in rows:
            for mine_key, their_key in _KEYS:
                assert ours[theirs["name"]][mine_key] == theirs[their_key], (device, theirs["name"], mine_key)
    return trace


@pytest.mark.corpus
def test_resnet_memory_statistics_match_incumbent():
    _assert_equals_incumbent("kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz")


@pytest.mark.corpus
def test_size_increase_matches_the_incumbent_with_addr():
    """With Addr the frees still count during the operator that frees, as in torch-tb-profiler: every
    row equals its table on the H100 sample (before, every size increase there read 0)."""
    trace = _assert_equals_incumbent("tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz")
    gpu = {r["name"]: r for r in operator_stats(trace, "GPU0")}
    assert gpu["aten::addmm"]["self_size_increase_bytes"] == -13313536
    assert sum(r["self_size_increase_bytes"] != 0 for r in gpu.values()) == 10


def test_brushed_window_reaches_its_end_and_reports_its_own_peak(known):
    """A window ending after the last event is drawn to its end (the last value held),
    and its peak is the peak inside it (the value held at its start counts), not the whole trace's."""
    from tb_plugin.analysis.memory import memory_window

    gpu = next(c for c in curves(known) if c["device"] == "GPU0")
    assert gpu["peak_allocated_bytes"] == 1500  # at 25 µs
    win = memory_window(gpu, 100.0, 400.0, 50)
    assert win["allocated"]["ts_us"] == [60.0, 205.0, 300.0, 305.0, 400.0]  # held from 60 µs, closed at 400 µs
    assert win["allocated"]["bytes"] == [500, 800, 300, 236, 236]
    assert (win["range_peak_allocated_bytes"], win["range_peak_allocated_ts"]) == (800, 205.0)
    assert win["range_peak_reserved_bytes"] == 4096
    assert win["peak_allocated_bytes"] == 1500  # the whole-trace peak is still there, under its own name
    early = memory_window(gpu, 30.0, 50.0, 50)  # no event inside: the held value is the peak, at the start
    assert (early["range_peak_allocated_bytes"], early["range_peak_allocated_ts"]) == (1500, 30.0)
    assert early["allocated"] == {"ts_us": [25.0, 50.0], "bytes": [1500, 1500]}


def test_name_groups_are_numpy_unique():
    """The operator table's grouping by name (no sort): the same keys and per-row groups as np.unique."""
    rng = np.random.default_rng(7)
    for n in (0, 1, 40, 5000):
        names = rng.integers(0, 200, n).astype(np.int32)
        keys, group = _name_groups(names, 200)
        want_keys, want_group = np.unique(names, return_inverse=True)
        assert keys.tolist() == want_keys.tolist()
        assert group.tolist() == want_group.reshape(-1).tolist()


def _summed_over_devices(trace) -> list[dict]:
    """The report's top operators as :func:`operator_stats` of each device added up (name → three sums)."""
    merged: dict[str, dict] = {}
    for d in curves(trace):
        for row in operator_stats(trace, d["device"]):
            acc = merged.setdefault(
                row["name"], {"name": row["name"], "size_increase_bytes": 0, "allocation_bytes": 0, "allocations": 0}
            )
            for key in ("size_increase_bytes", "allocation_bytes", "allocations"):
                acc[key] += row[key]
    return sorted(merged.values(), key=lambda r: (-r["allocation_bytes"], r["name"]))


def test_summary_is_the_devices_operator_stats_added_up(known):
    # one pass over every device's memory events: mm allocated on both devices (GPU 500, CPU 4 bytes),
    # linear holds mm and empty; the free outside any operator counts for none
    top = memory_summary(known)["top_operators"]
    assert top == _summed_over_devices(known)
    assert {r["name"]: (r["allocation_bytes"], r["allocations"]) for r in top} == {
        "aten::linear": (1504, 3),
        "aten::empty": (1000, 1),
        "aten::mm": (504, 2),
        "aten::relu": (300, 1),
    }


@pytest.mark.corpus
def test_summary_is_the_devices_operator_stats_added_up_on_samples():
    for rel in (
        "kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
        "tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz",
    ):
        trace = load_trace_file(str(sample(rel)))
        assert memory_summary(trace, top=10**6)["top_operators"] == _summed_over_devices(trace)
