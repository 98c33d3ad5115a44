"""The invariant checks of tests/invariants.py catch what they are meant to (each on a case built to
break it), and the weighted means of the GPU summary and the kernel table stay inside 0–100 %."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import write_json, x
from synth.events import complete

from tb_plugin.analysis.kernels import kernel_rows
from tb_plugin.analysis.overview import compute_overview
from tb_plugin.registry.parse import load_trace_file
from tests import invariants as inv

CATS = list(inv.CATEGORY_KEYS)


def _step(total, **parts):
    row = {"step": "1", "total_us": total, **{k: 0.0 for k in CATS}}
    row.update(parts)
    return row


def test_step_sum_check():
    good = _step(10.0, kernel_us=4.0, other_us=6.0)
    assert inv.step_sum_failures({"steps": [good], "average": good}) == []
    bad = _step(10.0, kernel_us=4.0, other_us=6.5)
    failures = inv.step_sum_failures({"steps": [bad], "average": good})
    assert len(failures) == 1 and failures[0].startswith("step 1:")
    # float rounding of the sum is tolerated, a real gap is not
    close = _step(0.3, kernel_us=0.1, other_us=0.2)
    assert inv.step_sum_failures({"steps": [close], "average": close}) == []


def test_plain_union():
    s = np.array([0.0, 1.0, 5.0, 5.5, 20.0])
    e = np.array([2.0, 3.0, 6.0, 5.6, 30.0])
    assert inv.plain_union_us(s, e, 0.0, 100.0) == 4.0 + 10.0
    assert inv.plain_union_us(s, e, 1.5, 25.0) == 1.5 + 1.0 + 5.0
    assert inv.plain_union_us(s[:0], e[:0], 0.0, 1.0) == 0.0
    # exact, rounded once: 1-ULP pieces at 7e12 µs are not lost nor doubled
    t0 = 7e12
    ulp = math.ulp(t0)
    starts = t0 + ulp * np.arange(0, 2000, 2)
    assert inv.plain_union_us(starts, starts + ulp, 0.0, 1e13) == 1000 * ulp


def _kernel(name, ts, dur, **args):
    return complete(name, "kernel", ts, dur, **{"device": 0, "stream": 7, "correlation": 1, **args})


def test_union_check_catches_an_overcounted_category(tmp_path):
    path = write_json(
        tmp_path / "t.pt.trace.json",
        {
            "traceEvents": [
                x("ProfilerStep#1", "user_annotation", 0, 100),
                _kernel("k", 10, 20),
                _kernel("k", 40, 20),
            ]
        },
    )
    trace = load_trace_file(str(path))
    overview = compute_overview(trace)
    assert inv.union_failures(trace, overview) == []
    assert overview["steps"][0]["kernel_us"] == 40.0
    overview["steps"][0]["kernel_us"] = np.nextafter(40.0, 100.0)  # one ULP too many
    failures = inv.union_failures(trace, overview)
    assert len(failures) == 1 and "kernel_us" in failures[0]


def test_gpu_idle_check():
    doc = {
        "exposed": {"window_us": 100.0, "gpus": [{"device": 0, "idle_us": 30.0}]},
        "idle": {
            "gpus": [
                {"device": 0, "idle_us": 110.0, "host_wait_us": 100.0, "short_gap_us": 0.0, "other_us": 10.0},
                {"device": 1, "idle_us": 40.0, "host_wait_us": 30.0, "short_gap_us": 5.0, "other_us": 5.0},
            ]
        },
    }
    assert inv.exposed_idle_failures(doc) == []
    failures = inv.gpu_idle_failures(doc)
    assert len(failures) == 1 and failures[0].startswith("GPU 0: idle 0.110 ms > window 0.100 ms")
    doc["idle"]["gpus"][0].update(idle_us=40.0, host_wait_us=30.0)
    assert inv.gpu_idle_failures(doc) == []
    doc["idle"]["gpus"][0]["other_us"] = 20.0  # parts that do not add up to the idle are caught
    with pytest.raises(AssertionError):
        inv.gpu_idle_failures(doc)
    doc["exposed"]["gpus"][0]["idle_us"] = 101.0
    assert len(inv.exposed_idle_failures(doc)) == 1


def test_percentage_check():
    doc = {
        "gpus": [{"utilization_pct": 100.0, "sm_efficiency_pct": None, "tensor_core_pct": 100.00000000000001}],
        "launch": {"short_kernel_share": 1.5},
        "rows": [{"tc_self_pct": -0.1}],
    }
    failures = sorted(inv.percentage_failures(doc))
    assert failures == [
        ".gpus[0].tensor_core_pct = 100.00000000000001 (not within 0–100)",
        ".launch.short_kernel_share = 1.5 (not within 0–1)",
        ".rows[0].tc_self_pct = -0.1 (not within 0–100)",
    ]


def test_null_number_check():
    # world_size may be null (a distributedInfo without it: the UI leaves it out); gpu_count may not
    doc = {
        "configuration": {"distributed": {"rank": 0, "world_size": None}, "gpu_count": None},
        "gpus": [{"sm_efficiency_pct": None, "utilization_pct": float("nan"), "name": None}],
        "launch": {"p50": None},
        "steps": [{"total_us": float("inf"), "step": "1"}],
    }
    assert sorted(inv.null_number_failures(doc)) == [
        ".configuration.gpu_count is null",
        ".gpus[0].utilization_pct = nan",
        ".steps[0].total_us = inf",
    ]


def test_null_word_check():
    doc = {
        "recommendations": ["Distributed: null, rank 0 of None", "GPU idle nan ms", "fine: annulled nonetheless"],
        "messages": ["[object Object]"],
        "name": "None",
    }
    assert len(inv.null_word_failures(doc)) == 3


def test_weighted_mean_occupancy_stays_within_100(tmp_path):
    """Durations 2.1, 7.0, 6.8 µs of kernels at 100 % occupancy: Σ(o·d)/Σd rounds to 100.00000000000001
    in float64; the kernel table and the GPU summary must say 100."""
    events = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100}]
    ts = 10.0
    for dur in (2.1, 7.0, 6.8):
        events.append(_kernel("k", ts, dur, **{"est. achieved occupancy %": 100, "blocks per SM": 2.0}))
        ts += 20
    trace = load_trace_file(str(write_json(tmp_path / "t.pt.trace.json", {"traceEvents": events})))
    (row,) = kernel_rows(trace)
    assert row["achieved_occupancy_pct"] == 100.0
    assert row["blocks_per_sm"] == 2.0
    (gpu,) = compute_overview(trace)["gpus"]
    assert gpu["achieved_occupancy_pct"] == 100.0


@pytest.mark.corpus
def test_report_run_of_snapshots_only(tmp_path):
    """`kinetoscope report LOGDIR --run R` accepts a run that holds allocator snapshots and no trace."""
    import io
    import shutil

    import orjson
    from conftest import sample

    from tb_plugin.cli.report import run_report

    (tmp_path / "snaps").mkdir()
    shutil.copy(sample("memory_snapshots/mem_snapshot.pickle"), tmp_path / "snaps" / "mem_snapshot.pickle")
    out, err = io.StringIO(), io.StringIO()
    assert run_report(str(tmp_path), "snaps", True, False, out, err) == 0, err.getvalue()
    (run,) = orjson.loads(out.getvalue())["runs"]
    assert run["name"] == "snaps" and run["workers"] == []
    assert run["snapshots"][0]["devices"][0]["peak_active_bytes"] > 0


def test_ns_union_accepts_an_integer_nanosecond_analysis():
    """At 1.4e12 µs a float64 holds ts to 2.4e-4 µs: an analysis in whole ns may read a union a few
    ULPs longer than the float one, and is held to the ns union instead; 1 ns more still fails."""
    ts = np.array([1428625731456.483, 1428625731460.001])
    dur = np.array([1.001, 2.0])
    lo, hi = 1428625731000.0, 1428625732000.0
    assert inv.ns_union_us(ts, dur, lo, hi) == 3.001
    float_union = inv.plain_union_us(ts, ts + dur, lo, hi)
    assert float_union != 3.001  # the float columns' own rounding
    assert inv.to_ns(np.array([1428625731456.483]))[0] == 1428625731456483
