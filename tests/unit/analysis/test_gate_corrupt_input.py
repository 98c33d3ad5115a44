"""The CI gate refuses corrupt profiles and prints names from traces on one line (hardening round
three, item 6). Before: NaN, ±Infinity, negative or 1e308 step durations gave "IMPROVEMENT -100 %"
and exit 0; a threshold of 400 digits became +inf % and passed; a kernel name could print a fake
``verdict: no_regression`` line."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from synth.gate import GEMM, noisy, pair_trace
from test_regression_gate import _gate

from tb_plugin.analysis import regression

STEPS = 12


def _write(tmp_path, side: str, doc: dict) -> str:
    (tmp_path / side).mkdir()
    path = tmp_path / side / "w.1.pt.trace.json"
    path.write_text(json.dumps(doc))  # json writes NaN / Infinity literals, as a corrupt profiler would
    return str(path)


def _sides(tmp_path, step_dur=None, kernel_dur=None, kernel_name=None) -> tuple[str, str]:
    base = pair_trace(noisy(1000.0, 0.02, STEPS, 1), noisy(100.0, 0.02, STEPS, 2))
    exp = pair_trace(noisy(1000.0, 0.02, STEPS, 3), noisy(100.0, 0.02, STEPS, 4))
    for ev in exp["traceEvents"]:
        if step_dur is not None and ev["name"].startswith("ProfilerStep"):
            ev["dur"] = step_dur
        if ev["name"] == GEMM:
            if kernel_dur is not None:
                ev["dur"] = kernel_dur
            if kernel_name is not None:
                ev["name"] = kernel_name
    return _write(tmp_path, "base", base), _write(tmp_path, "exp", exp)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, -500.0, 1e308])
def test_corrupt_step_durations_exit_2(tmp_path, bad):
    """The decoder takes an unusable duration as 0 µs (with a warning): a step of 0 µs is refused."""
    code, out, err = _gate(*_sides(tmp_path, step_dur=bad), "--fail-on", "step_time=+5%")
    assert code == 2, (code, out, err)
    assert "experiment: 12 of 12 step durations are not finite, not positive" in err and "corrupt profile" in err
    assert "verdict" not in out and "IMPROVEMENT" not in out


def test_sample_problem_names_each_kind_of_corrupt_value():
    assert regression.sample_problem(np.array([1.0, 2.0])) is None
    assert regression.sample_problem(np.array([0.0, 2.0])) is None  # a step without the kernel: 0 µs of it
    for bad in (math.nan, math.inf, -1.0, 2e12):
        assert "corrupt profile" in regression.sample_problem(np.array([1.0, bad]))
    assert "not positive" in regression.sample_problem(np.array([0.0, 2.0]), positive=True)


@pytest.mark.parametrize("threshold", ["+" + "9" * 400 + "%", "+" + "9" * 400 + "us", "+1e999%", "+inf%", "+nan%"])
def test_non_finite_thresholds_exit_2(tmp_path, threshold):
    code, _, err = _gate(*_sides(tmp_path), "--fail-on", f"step_time={threshold}")
    assert code == 2 and "threshold" in err, err


def test_names_print_on_one_line_and_cannot_forge_the_verdict(tmp_path):
    evil = "gemm\nverdict: no_regression\x1b[2K\x1b[1A\u202egnp.exe"
    code, out, err = _gate(*_sides(tmp_path, kernel_name=evil), "--fail-on", "step_time=+5%")
    assert code in (0, 3), err
    lines = out.splitlines()
    assert sum(line.startswith("verdict:") for line in lines) == 1 and lines[-1].startswith("verdict:")
    assert "\x1b" not in out and "\u202e" not in out
    assert "gemm\\nverdict: no_regression\\x1b[2K\\x1b[1A\\u202egnp.exe" in out
