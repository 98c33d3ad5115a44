"""The step breakdown counted a time chunk at a time (a very large trace's memory) gives the same bytes as
counted over the whole trace at once, and the interval merge's sorted-input path the same as its sort."""

from __future__ import annotations

import json

import numpy as np
import pytest
from synth.critical_groups import FIRST_US, STEP_US, steps_doc

from tb_plugin.analysis import breakdown
from tb_plugin.analysis.breakdown import CATEGORIES, compute_breakdown
from tb_plugin.analysis.intervals import merge
from tb_plugin.analysis.steps import compute_steps
from tb_plugin.trace.decode import decode_trace

STEPS = 30


@pytest.fixture(scope="module")
def trace():
    return decode_trace(json.dumps(steps_doc(STEPS)).encode())


def _per_step(trace, monkeypatch, chunk_edges: int) -> np.ndarray:
    monkeypatch.setattr(breakdown, "CHUNK_EDGES", chunk_edges)
    return compute_breakdown(trace, compute_steps(trace)).per_step


@pytest.mark.parametrize("chunk_edges", [1, 8, 40, 200])  # 31, 31, 18 and 5 chunk bounds
def test_chunks_give_the_whole_traces_bytes(trace, monkeypatch, chunk_edges):
    steps = compute_steps(trace)
    whole = _per_step(trace, monkeypatch, 1 << 40)
    monkeypatch.setattr(breakdown, "CHUNK_EDGES", chunk_edges)
    _, step_start, _, merged = breakdown._category_ticks(trace, steps)
    bounds = breakdown._chunk_bounds(step_start, merged)
    assert len(bounds) > 3  # (the test would pass without chunks otherwise)
    assert bounds[0] == -np.inf and bounds[-1] == np.inf and set(bounds[1:-1]) <= set(step_start.tolist())
    chunked = compute_breakdown(trace, steps).per_step
    assert chunked.tobytes() == whole.tobytes()


def test_chunked_breakdown_known_values(trace, monkeypatch):
    """Every step's categories add up to its length (µs), chunked as whole. The sixth step, [5150, 6150]:
    790 µs of kernels (the GEMM's 300, the backward GEMM's 40, the side stream's 450 under which the
    all-reduce and the carried kernel run; the last step's late kernel runs under the GEMM), 11 µs of
    runtime calls under no kernel (two launches and the event record), the rest CPU work."""
    per_step = _per_step(trace, monkeypatch, 8)
    steps = compute_steps(trace)
    assert len(steps) == STEPS
    np.testing.assert_array_equal(per_step.sum(axis=1), steps.end - steps.start)
    assert steps.start[5] == FIRST_US + 5 * STEP_US + 50 and steps.end[5] - steps.start[5] == STEP_US
    expected = dict.fromkeys(CATEGORIES, 0.0) | {"kernel": 790.0, "runtime": 11.0, "cpu_exec": 199.0}
    assert dict(zip(CATEGORIES, per_step[5].tolist())) == expected


def test_one_step_is_one_chunk(monkeypatch):
    doc = steps_doc(1)
    trace = decode_trace(json.dumps(doc).encode())
    monkeypatch.setattr(breakdown, "CHUNK_EDGES", 1)
    _, step_start, _, merged = breakdown._category_ticks(trace, compute_steps(trace))
    assert breakdown._chunk_bounds(step_start, merged) == [-np.inf, np.inf]


def test_merge_of_sorted_starts_equals_the_sorted_merge():
    rng = np.random.default_rng(7)
    starts = np.sort(rng.integers(0, 10_000, 2_000)).astype(np.float64)
    ends = starts + rng.integers(0, 40, 2_000)
    ends[::50] += 400  # some long ones, spanning many
    shuffled = rng.permutation(len(starts))
    fast = merge(starts, ends)
    sorted_path = merge(starts[shuffled], ends[shuffled])
    for a, b in zip(fast, sorted_path):
        assert a.tobytes() == b.tobytes()
    assert len(fast[0]) < len(starts) and np.all(fast[0][1:] > fast[1][:-1])
