"""The CI regression gate (``kinetoscope diff BASE EXP --fail-on …``): the statistics of
tb_plugin/analysis/regression.py on arrays known by construction, and the CLI's exit status and JSON
on synthesized baseline/experiment pairs (tests/synth/gate.py) whose step times are known."""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from synth.gate import ADD, GEMM, noisy, pair_trace, step_totals
from synth.traces import write_trace

from tb_plugin import cli
from tb_plugin.analysis import regression
from tb_plugin.analysis.regression import FailOn, compare, parse_fail_on

STEPS = 30
ROOT = Path(__file__).resolve().parents[3]


# -- statistics --------------------------------------------------------------------------------
def test_parse_fail_on():
    assert parse_fail_on("step_time=+5%") == FailOn("step_time", 5.0, "%")
    assert parse_fail_on("step_time=2.5%") == FailOn("step_time", 2.5, "%")
    assert parse_fail_on("step_time=+300us") == FailOn("step_time", 300.0, "us")
    rule = parse_fail_on("kernel:a=b<c>=+10%")  # the threshold follows the last "="
    assert rule == FailOn("kernel:a=b<c>", 10.0, "%") and rule.kernel == "a=b<c>"
    for bad in ("step_time", "step_time=5", "step_time=-5%", "loss=+5%", "kernel:=+5%", "=+5%", "step_time=+x%"):
        with pytest.raises(ValueError, match="fail-on"):
            parse_fail_on(bad)


def test_a_constant_shift_is_exact():
    """No noise: the interval collapses on the delta; 10 % over 100 µs is a regression at 5 %, not at 15 %."""
    base, exp = np.full(10, 100.0), np.full(10, 110.0)
    c = compare(FailOn("step_time", 5.0, "%"), base, exp)
    assert (c["baseline_median_us"], c["experiment_median_us"], c["delta_us"]) == (100.0, 110.0, 10.0)
    assert c["delta_pct"] == pytest.approx(10.0) and c["interval_us"] == [10.0, 10.0]
    assert c["interval_pct"] == [pytest.approx(10.0), pytest.approx(10.0)] and c["status"] == "regression"
    assert compare(FailOn("step_time", 15.0, "%"), base, exp)["status"] == "unchanged"
    assert compare(FailOn("step_time", 9.0, "us"), base, exp)["status"] == "regression"
    assert compare(FailOn("step_time", 11.0, "us"), base, exp)["status"] == "unchanged"
    assert compare(FailOn("step_time", 5.0, "%"), exp, base)["status"] == "improvement"


def test_a_shift_inside_the_noise_is_not_a_regression():
    """Medians 100 → 110 µs (+10 % > 5 %) but each side alternates widely: a resampled experiment median
    of 90 µs or a baseline one of 110 µs is common, so the interval holds 0."""
    base, exp = np.array([90.0, 110.0] * 5), np.array([90.0, 130.0] * 5)
    c = compare(FailOn("step_time", 5.0, "%"), base, exp)
    assert c["delta_us"] == 10.0 and c["interval_us"][0] < 0 < c["interval_us"][1]
    assert c["status"] == "within_noise"
    assert compare(FailOn("step_time", 5.0, "%"), exp, base)["status"] == "within_noise"


def test_the_interval_is_seeded_and_covers_a_known_shift():
    """Same inputs, same interval; on 200 noisy steps with a true shift of +50 µs the 95 % interval holds
    50 and excludes 0."""
    rng = np.random.default_rng(7)
    base = 1000 + 20 * rng.standard_normal(200)
    exp = 1050 + 20 * rng.standard_normal(200)
    first = regression.bootstrap_delta_interval(base, exp)
    assert first == regression.bootstrap_delta_interval(base, exp)
    assert 0 < first[0] < 50 < first[1]


def test_few_steps_and_a_kernel_added():
    c = compare(FailOn("step_time", 5.0, "%"), np.array([100.0, 100.0]), np.array([200.0, 200.0]))
    assert c["status"] == "too_few_steps" and c["delta_us"] == 100.0 and c["interval_us"] is None
    # a kernel absent from the baseline: no percentage, yet a growth beyond the noise
    c = compare(FailOn("kernel:x", 10.0, "%"), np.zeros(5), np.full(5, 30.0))
    assert c["delta_pct"] is None and c["interval_pct"] is None and c["status"] == "regression"
    assert regression.verdict([{"status": "unchanged"}, {"status": "improvement"}]) == "improvement"
    assert regression.verdict([{"status": "improvement"}, {"status": "regression"}]) == "regression"
    assert regression.verdict([{"status": "within_noise"}, {"status": "too_few_steps"}]) == "no_regression"


# -- the CLI on synthesized pairs ----------------------------------------------------------------
def _pair(tmp_path: Path, base: tuple[list, list], exp: tuple[list, list]) -> tuple[str, str]:
    paths = []
    for side, (gemm, add) in (("base", base), ("exp", exp)):
        (tmp_path / side).mkdir()
        path = tmp_path / side / "w.1.pt.trace.json"
        write_trace(pair_trace(gemm, add), path)
        paths.append(str(path))
    return paths[0], paths[1]


def _gate(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    old = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        code = cli.main(["diff", *args, "--no-cache"])
    except SystemExit as exc:  # argparse errors
        code = exc.code
    finally:
        sys.stdout, sys.stderr = old
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def sides():
    """Baseline GEMM 1000 µs ± 2 %, elementwise 100 µs ± 2 % (seeded); 30 steps."""
    return {"gemm": noisy(1000.0, 0.02, STEPS, 1), "add": noisy(100.0, 0.02, STEPS, 2)}


def test_a_known_regression_fails_the_job(tmp_path, sides):
    """The GEMM grows by 20 % (≈ +200 µs of a ≈ 1200 µs step, +16.7 %): exit 3; the medians are the
    constructed ones, the GEMM leads the explanation."""
    exp_gemm = [g * 1.2 for g in noisy(1000.0, 0.02, STEPS, 3)]
    exp_add = noisy(100.0, 0.02, STEPS, 4)
    base, exp = _pair(tmp_path, (sides["gemm"], sides["add"]), (exp_gemm, exp_add))
    code, out, err = _gate(
        base,
        exp,
        "--fail-on",
        "step_time=+5%",
        "--fail-on",
        "kernel:xmma_gemm=+10%",
        "--fail-on",
        "kernel:elementwise=+10%",
        "--json",
    )
    assert code == 3, err
    doc = json.loads(out)
    assert doc["verdict"] == "regression"
    step, gemm, add = doc["checks"]
    assert step["baseline_median_us"] == pytest.approx(np.median(step_totals(sides["gemm"], sides["add"])))
    assert step["experiment_median_us"] == pytest.approx(np.median(step_totals(exp_gemm, exp_add)))
    assert step["baseline_steps"] == step["experiment_steps"] == STEPS
    assert step["status"] == "regression" and step["interval_us"][0] > 0
    assert step["interval_us"][0] <= step["delta_us"] <= step["interval_us"][1]
    assert gemm["baseline_median_us"] == pytest.approx(np.median(sides["gemm"]))
    assert gemm["experiment_median_us"] == pytest.approx(np.median(exp_gemm))
    assert gemm["status"] == "regression" and gemm["kernels_matched"] == {"baseline": [GEMM], "experiment": [GEMM]}
    assert add["status"] == "unchanged" and add["kernels_matched"]["experiment"] == [ADD]
    assert doc["explain"]["kernels"][0]["name"] == GEMM
    assert doc["explain"]["kernels"][0]["delta_per_step_us"] == pytest.approx(
        np.mean(exp_gemm) - np.mean(sides["gemm"])
    )
    assert doc["explain"]["operators"][0]["path"] == ["ProfilerStep", "aten::mm"]
    assert doc["method"]["resamples"] == regression.RESAMPLES
    code, text, _ = _gate(base, exp, "--fail-on", "step_time=+5%")  # the printed table says the same
    assert code == 3 and "REGRESSION" in text and "verdict: regression" in text


def test_noise_only_passes(tmp_path, sides):
    """Same distributions, other seeds: exit 0, no regression."""
    base, exp = _pair(
        tmp_path, (sides["gemm"], sides["add"]), (noisy(1000.0, 0.02, STEPS, 5), noisy(100.0, 0.02, STEPS, 6))
    )
    code, out, err = _gate(base, exp, "--fail-on", "step_time=+5%", "--fail-on", "kernel:gemm=+10%", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["verdict"] == "no_regression"
    assert [c["status"] for c in doc["checks"]] == ["unchanged", "unchanged"]
    assert abs(doc["checks"][0]["delta_pct"]) < 2


def test_noisy_steps_hide_a_shift(tmp_path):
    """Steps alternate 600/1400 µs of GEMM on both sides, the experiment's slow steps 10 % slower: the
    median moves beyond 5 % yet within the noise: exit 0, status within_noise."""
    base = ([600.0, 1400.0] * 5, [100.0] * 10)
    exp = ([600.0, 1540.0] * 5, [100.0] * 10)
    code, out, err = _gate(*_pair(tmp_path, base, exp), "--fail-on", "step_time=+5%", "--json")
    doc = json.loads(out)
    assert code == 0, err
    assert doc["checks"][0]["delta_pct"] > 5 and doc["checks"][0]["status"] == "within_noise"


def test_an_improvement_is_reported_and_passes(tmp_path, sides):
    exp_gemm = [g * 0.7 for g in noisy(1000.0, 0.02, STEPS, 7)]
    base, exp = _pair(tmp_path, (sides["gemm"], sides["add"]), (exp_gemm, noisy(100.0, 0.02, STEPS, 8)))
    code, out, err = _gate(base, exp, "--fail-on", "step_time=+5%", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["verdict"] == "improvement" and doc["checks"][0]["status"] == "improvement"
    assert doc["checks"][0]["interval_us"][1] < 0 and doc["checks"][0]["delta_pct"] < -20


def test_bad_arguments_exit_2(tmp_path, sides):
    base, exp = _pair(tmp_path, (sides["gemm"], sides["add"]), (sides["gemm"], sides["add"]))
    code, _, err = _gate(base, exp, "--fail-on", "step_time=5")
    assert code == 2 and "+5%" in err
    code, _, err = _gate(base, exp, "--fail-on", "loss=+5%")
    assert code == 2 and "step_time, kernel:NAME" in err
    code, _, err = _gate(base, exp, "--fail-on", "kernel:no_such_kernel=+10%")
    assert code == 2 and "no_such_kernel" in err and "elementwise" in err
    code, _, err = _gate(base, str(tmp_path / "missing"), "--fail-on", "step_time=+5%")
    assert code == 2 and "does not exist" in err


def test_a_broken_file_exits_1(tmp_path, sides):
    base, _ = _pair(tmp_path, (sides["gemm"], sides["add"]), (sides["gemm"], sides["add"]))
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "w.1.pt.trace.json").write_bytes(b'{"traceEvents": [{"ph": "X", "na')
    code, out, err = _gate(base, str(broken / "w.1.pt.trace.json"), "--fail-on", "step_time=+5%")
    assert code == 1 and out == "" and "w.1.pt.trace.json" in err
    code, out, err = _gate(base, str(broken / "w.1.pt.trace.json"), "--fail-on", "step_time=+5%", "--json")
    doc = json.loads(out)
    assert code == 1 and doc["verdict"] == "error" and "w.1.pt.trace.json" in doc["error"]


def test_the_console_script_exits_3(tmp_path, sides):
    """The command as a CI job runs it (this checkout's tb_plugin): the exit status reaches the shell."""
    cmd = [sys.executable, "-m", "tb_plugin.cli"]
    base, exp = _pair(tmp_path, (sides["gemm"], sides["add"]), ([g * 1.3 for g in sides["gemm"]], sides["add"]))
    proc = subprocess.run(
        [*cmd, "diff", base, exp, "--fail-on", "step_time=+5%", "--no-cache"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode == 3, proc.stderr
    assert "verdict: regression" in proc.stdout


def test_the_readme_commands(tmp_path, sides):
    """The README's gate command and its CI step, run as written (``kinetoscope`` → this checkout's CLI)
    in a folder holding ``runs/baseline`` and ``runs/exp`` with a 30 % slower GEMM: both exit 3, and
    the first writes the JSON verdict to gate.json."""
    text = (ROOT / "README.md").read_text().split("## CI regression gate", 1)[1].split("\n## ", 1)[0]
    lines = [m.strip() for m in re.findall(r"^(?:  run: )?(kinetoscope diff .*)$", text, re.M)]
    assert len(lines) == 2 and lines[0].endswith("> gate.json"), lines
    for side, gemm in (("baseline", sides["gemm"]), ("exp", [g * 1.3 for g in sides["gemm"]])):
        (tmp_path / "runs" / side).mkdir(parents=True)
        write_trace(pair_trace(gemm, sides["add"]), tmp_path / "runs" / side / "w.1.pt.trace.json")
    for line in lines:
        command = line.replace("kinetoscope ", f"{shlex.quote(sys.executable)} -m tb_plugin.cli ", 1)
        proc = subprocess.run(
            ["bash", "-c", command],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            env=dict(os.environ, PYTHONPATH=str(ROOT), KINETOSCOPE_CACHE_DIR=str(tmp_path / "cache")),
        )
        assert proc.returncode == 3, (line, proc.stderr)
    doc = json.loads((tmp_path / "gate.json").read_text())
    assert doc["verdict"] == "regression" and [c["status"] for c in doc["checks"]] == ["regression", "regression"]


# -- real samples ----------------------------------------------------------------------------------


@pytest.mark.corpus
def test_real_spans_use_the_overview_steps(tmp_path):
    """resnet50 span 1 vs span 2 (V100): the medians are those of the Overview's step totals of each
    file; a trace against itself is unchanged, even at a 0 % threshold."""
    from conftest import SAMPLES

    from tb_plugin.registry.runs import RunRegistry

    folder = SAMPLES / "kineto" / "resnet50_num_workers_0"
    reg = RunRegistry(str(folder))
    reg.scan()
    totals = [
        [s["total_us"] for s in reg.load(reg.find(".", "worker0", span)).overview["steps"]] for span in ("1", "2")
    ]
    code, out, err = _gate(str(folder), str(folder), "--exp-span", "2", "--fail-on", "step_time=+5%", "--json")
    check = json.loads(out)["checks"][0]
    assert code == 0, err
    assert check["baseline_median_us"] == pytest.approx(np.median(totals[0]))
    assert check["experiment_median_us"] == pytest.approx(np.median(totals[1]))
    assert (check["baseline_steps"], check["experiment_steps"]) == (len(totals[0]), len(totals[1]))
    code, out, _ = _gate(
        str(folder), str(folder), "--fail-on", "step_time=+0%", "--fail-on", "kernel:sgemm=+0%", "--json"
    )
    doc = json.loads(out)
    assert code == 0 and doc["verdict"] == "no_regression"
    for c in doc["checks"]:
        # each side is resampled on its own, so the interval is the noise of two such traces, around 0
        assert c["delta_us"] == 0 and c["interval_us"][0] < 0 < c["interval_us"][1] and c["status"] == "unchanged"


@pytest.mark.corpus
def test_kernel_step_times_add_up_on_a_real_trace():
    """Summed over the steps, the per-step kernel time of every kernel ("" matches all) is the duration of
    the kernels that start inside a kept step, counted here with a plain mask per step."""
    from conftest import SAMPLES

    from tb_plugin.analysis.step_metrics import kernel_step_times
    from tb_plugin.analysis.steps import compute_steps
    from tb_plugin.registry.runs import RunRegistry
    from tb_plugin.trace.categories import Kind

    reg = RunRegistry(str(SAMPLES / "kineto" / "resnet50_num_workers_0"))
    reg.scan()
    st = reg.load(reg.find(".", "worker0", "1"))
    trace = reg.views(st).trace
    per_step = kernel_step_times(trace, "")
    steps = compute_steps(trace)
    ev = trace.events
    kernel = ev.kind == Kind.KERNEL
    expected = [float(ev.dur[kernel & (ev.ts >= a) & (ev.ts < b)].sum()) for a, b in zip(steps.start, steps.end)]
    assert len(per_step) == len(steps) > 3
    assert per_step.tolist() == pytest.approx(expected)
    assert all(v > 0 for v in expected)
