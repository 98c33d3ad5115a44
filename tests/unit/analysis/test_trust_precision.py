"""Step breakdown precision: no category exceeds the union of its own intervals."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, SAMPLES, flight_recorder_dump
from synth.ops import ULP_T0_US, ulp_kernels

from tb_plugin.analysis import breakdown
from tb_plugin.analysis.breakdown import CATEGORIES, category_masks, compute_breakdown
from tb_plugin.analysis.steps import compute_steps
from tb_plugin.registry.parse import load_trace_file
from tb_plugin.trace.decode import decode_trace


def _exact_union(starts, ends, lo, hi) -> Fraction:
    """Length of the union of [s, e) clipped to [lo, hi], in exact rational arithmetic (µs)."""
    spans = sorted((max(Fraction(s), lo), min(Fraction(e), hi)) for s, e in zip(starts.tolist(), ends.tolist()))
    total, reach = Fraction(0), lo
    for s, e in spans:
        if e > max(s, reach):
            total += e - max(s, reach)
            reach = e
    return total


@pytest.fixture(scope="module")
def ulp_trace():
    return decode_trace(json.dumps(ulp_kernels()).encode())


def test_synth_edges_are_one_ulp_apart(ulp_trace):
    ev = ulp_trace.events
    k1 = ulp_trace.name_mask(lambda s: s == "k1")
    assert ev.ts[k1].min() > 7e12 and (ev.ts[k1] + ev.dur[k1] == np.nextafter(ev.ts[k1], np.inf)).all()
    assert np.spacing(ULP_T0_US) == 2.0**-10


ULP = 2.0**-10  # µs, the float64 spacing at 7e12 µs


def test_breakdown_known_answer_at_7e12(ulp_trace):
    """Known by construction (synth.ops.ulp_kernels, 64 segments)."""
    steps = compute_steps(ulp_trace)
    got = compute_breakdown(ulp_trace, steps).step(0)
    assert got["kernel_us"] == 25.0 + 64 * ULP  # 25 µs + 64 ULPs (before: 63 ULPs more, the gaps)
    assert got["memcpy_us"] == 64 * ULP  # (before: 0)
    assert got["runtime_us"] == 64 * ULP  # (before: 128 ULPs)
    assert got["other_us"] == 100.0 - 25.0 - 3 * 64 * ULP


def test_breakdown_never_exceeds_union_at_7e12(ulp_trace):
    steps = compute_steps(ulp_trace)
    per_step = compute_breakdown(ulp_trace, steps).per_step
    masks = category_masks(ulp_trace)
    ev = ulp_trace.events
    lo, hi = Fraction(float(steps.start[0])), Fraction(float(steps.end[0]))
    unions = breakdown.category_unions(ulp_trace, steps)
    for c, name in enumerate(CATEGORIES[:-1]):
        rows = masks[name]
        exact = _exact_union(ev.ts[rows], ev.ts[rows] + ev.dur[rows], lo, hi)
        assert Fraction(float(unions[0, c])) == exact, name  # the check function is exact
        assert Fraction(float(per_step[0, c])) <= exact, name  # no tolerance
    # kernel has the first claim: it gets exactly its union
    assert per_step[0, 0] == unions[0, 0] > 0
    # the categories add up to the step exactly
    assert sum(Fraction(float(v)) for v in per_step[0]) == hi - lo
    assert (per_step <= unions).all()


def _traces():
    for root in (SAMPLES, REPO / "samples"):
        for path in sorted(Path(root).rglob("*.json*")):
            if (
                path.name.endswith((".json", ".json.gz"))
                and not path.name.endswith((".expected.json", "RECORDED.json"))
                and ".pt.trace.memory." not in path.name
                and not flight_recorder_dump(path)
            ):
                yield path  # (*.expected.json, RECORDED.json: the known answers of samples/; memory exports: not traces)


@pytest.mark.corpus
@pytest.mark.parametrize("path", list(_traces()), ids=lambda p: p.name[:40])
def test_breakdown_within_unions_on_every_sample(path):
    trace = load_trace_file(str(path))
    steps = compute_steps(trace)
    if not len(steps):
        pytest.skip("no steps")
    per_step = compute_breakdown(trace, steps).per_step
    unions = breakdown.category_unions(trace, steps)
    assert (per_step <= unions).all()
    # the categories add up to the step length (exact sums of the float64 values)
    assert [sum(map(Fraction, row.tolist())) for row in per_step] == list(map(Fraction, unions[:, -1].tolist()))
    assert unions[:, -1] == pytest.approx(steps.end - steps.start, rel=1e-12, abs=1e-6)
