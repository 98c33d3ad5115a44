"""Diff view: steps, aligned operator tree, kernels, and the headless `kinetoscope diff`."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import diff_query, loaded_registry, sample, write_json, x

from tb_plugin import api
from tb_plugin.analysis.diff import CHANGE_PCT, CHANGE_US, kernel_diff, op_diff, verdict
from tb_plugin.cli import main
from tb_plugin.registry.parse import load_trace_file

NW0 = "kineto/resnet50_num_workers_0"
NW4 = "kineto/resnet50_num_workers_4"


@pytest.mark.corpus
def test_cli_diff_dataloader_shrinks_by_the_overview_difference(capsys):
    assert main(["diff", str(sample(NW0)), str(sample(NW4)), "--json", "--no-cache"]) == 0
    doc = json.loads(capsys.readouterr().out)
    steps = doc["steps"]
    assert steps["delta"]["dataloader_us"] == pytest.approx(1186.1666666 - 59261.8333333, abs=1e-3)
    assert steps["delta"]["total_us"] == pytest.approx(steps["experiment"]["total_us"] - steps["baseline"]["total_us"])
    dl = next(r for r in doc["operators"] if r["path"] == ["ProfilerStep", "enumerate(DataLoader)"])
    assert dl["status"] == "faster" and dl["delta"]["host_total_us"] < -50_000
    assert {"name", "baseline_calls", "experiment_calls", "delta_per_step_us"} <= set(doc["kernels"][0])


@pytest.mark.corpus
def test_cli_diff_text_marks_cut_operator_paths(capsys):
    """Long operator paths are cut from the left to 90 characters and start with "…", never mid-word bare."""
    assert main(["diff", str(sample(NW0)), str(sample(NW4)), "--no-cache"]) == 0
    text = capsys.readouterr().out
    rows = text.split("Largest operator changes (per average step", 1)[1].splitlines()[1:]
    paths = [line[12:].rsplit(": host ", 1)[0] for line in rows if line.strip()]
    assert len(paths) == 15 and all(len(p) <= 90 for p in paths)
    cut = [p for p in paths if len(p) == 90]
    assert cut and all(p.startswith("\u2026") for p in cut)


@pytest.mark.corpus
def test_identical_traces_are_unchanged():
    trace = load_trace_file(str(sample(NW0) / "worker0.1623143089861.pt.trace.json.gz"))
    other = load_trace_file(str(sample(NW0) / "worker0.1623143089861.pt.trace.json.gz"))
    rows = op_diff(trace, other)
    assert rows and all(r["status"] == "unchanged" and r["delta"]["host_total_us"] == 0 for r in rows)
    assert all(k["delta_per_step_us"] == 0 for k in kernel_diff(trace, other))


@pytest.mark.corpus
def test_diff_route_drills_down(tmp_path):
    shutil.copytree(sample(NW0), tmp_path / "nw0")
    shutil.copytree(sample(NW4), tmp_path / "nw4")
    reg = loaded_registry(tmp_path)
    q = diff_query("nw0", "nw4")
    code, top = api.diff(reg, q)
    assert code == 200 and "ProfilerStep" in [r["name"] for r in top["operators"]]
    code, level2 = api.diff(reg, dict(q, path=json.dumps(["ProfilerStep", "enumerate(DataLoader)"])))
    assert (
        code == 200
        and level2["operators"]
        and all(r["path"][:2] == ["ProfilerStep", "enumerate(DataLoader)"] for r in level2["operators"])
    )
    cumulative = [r["cumulative_delta_us"] for r in level2["operators"]]
    assert cumulative[-1] == pytest.approx(sum(r["delta"]["host_total_us"] for r in level2["operators"]))
    wf = level2["waterfall"]
    assert wf["total_us"] == level2["steps"]["delta"]["total_us"]
    assert wf["rows_us"] + wf["remainder_us"] == pytest.approx(wf["total_us"], abs=1e-6)
    assert api.diff(reg, dict(q, path="{not json"))[0] == 400
    assert api.diff(reg, dict(q, exp_run="missing"))[0] == 404


# -- one verdict rule on one quantity; the waterfall adds up to the step-total delta -------------------
def _steps(children_of_step: dict[str, float], step_us: float, outside: float = 0.0) -> dict:
    """Two CPU steps of ``step_us`` µs, each with the named children (µs, laid out one after another),
    and optionally an operator of ``outside`` µs before the first step (in no step)."""
    events = [x("warmup", "cpu_op", 0, outside)] if outside else []
    for k in range(2):
        t0 = 10_000 + k * 20_000
        events.append(x(f"ProfilerStep#{k + 1}", "user_annotation", t0, step_us))
        t = t0 + 10
        for name, dur in children_of_step.items():
            events.append(x(name, "cpu_op", t, dur))
            t += dur + 10
    return {"traceEvents": events}


def _pair(tmp_path):
    """Baseline: steps of 3000 µs holding A 1000, B 100, D 1000. Experiment: steps of 4000 µs holding
    A 2000 (+1000 µs, +100 %: slower), B 108 (+8 µs, +8 %: unchanged, within 10 µs), D 1020 (+20 µs,
    +2 %: unchanged, within 5 %), C 50 (added), and a 5000 µs operator before the first step (no step)."""
    write_json(tmp_path / "base" / "worker0.1.pt.trace.json", _steps({"A": 1000, "B": 100, "D": 1000}, 3000))
    write_json(
        tmp_path / "exp" / "worker0.1.pt.trace.json",
        _steps({"A": 2000, "B": 108, "D": 1020, "C": 50}, 4000, outside=5000),
    )
    return loaded_registry(tmp_path)


def test_verdicts_and_waterfall_known_by_construction(tmp_path):
    reg = _pair(tmp_path)
    q = diff_query("base", "exp")
    code, top = api.diff(reg, q)
    assert code == 200 and top["steps"]["delta"]["total_us"] == 1000.0
    assert [(r["name"], r["status"], r["change_us"], r["change_pct"]) for r in top["operators"]] == [
        ("ProfilerStep", "slower", 1000.0, pytest.approx(100 / 3))
    ]  # "warmup" lies in no step
    assert top["waterfall"] == {"rows_us": 1000.0, "remainder_us": 0.0, "total_us": 1000.0}
    code, level = api.diff(reg, dict(q, path=json.dumps(["ProfilerStep"])))
    got = {
        r["name"]: (r["status"], r["reason"], r["change_us"], r["change_pct"], r["compared"])
        for r in level["operators"]
    }
    assert got == {
        "A": ("slower", "changed", 1000.0, 100.0, "host_total_us"),
        "C": ("added", "one_side", 50.0, None, "host_total_us"),
        "D": ("unchanged", "within_pct", 20.0, 2.0, "host_total_us"),
        "B": ("unchanged", "within_us", 8.0, 8.0, "host_total_us"),
    }
    assert [r["name"] for r in level["operators"]] == ["A", "C", "D", "B"]  # largest |Δ| first
    assert [r["cumulative_delta_us"] for r in level["operators"]] == [1000.0, 1050.0, 1070.0, 1078.0]
    # the steps got 1000 µs longer, the rows 1078 µs: ProfilerStep's own time shrank by 78 µs
    assert level["waterfall"] == {"rows_us": 1078.0, "remainder_us": -78.0, "total_us": 1000.0}


def test_cli_json_and_text_carry_the_same_verdicts(tmp_path, capsys):
    _pair(tmp_path)
    base, exp = str(tmp_path / "base"), str(tmp_path / "exp")
    assert main(["diff", base, exp, "--json", "--no-cache"]) == 0
    doc = json.loads(capsys.readouterr().out)
    status = {" > ".join(r["path"]): r["status"] for r in doc["operators"]}
    assert status == {
        "ProfilerStep": "slower",
        "ProfilerStep > A": "slower",
        "ProfilerStep > C": "added",
        "ProfilerStep > D": "unchanged",
        "ProfilerStep > B": "unchanged",
    }
    assert doc["waterfall"] == {"rows_us": 1000.0, "remainder_us": 0.0, "total_us": 1000.0}
    assert main(["diff", base, exp, "--no-cache"]) == 0
    text = capsys.readouterr().out
    assert "Top-level operators +1000.0 µs + not in them +0.0 µs = step +1000.0 µs" in text
    for path, st in status.items():
        assert any(line.split()[:1] == [st] and f" {path}: host " in line for line in text.splitlines()), path


@pytest.mark.parametrize(
    "b, e, want",
    [
        (None, 5.0, ("added", "one_side")),
        (5.0, None, ("removed", "one_side")),
        (100.0, 110.0, ("unchanged", "within_us")),
        (100.0, 111.0, ("slower", "changed")),
        (1000.0, 1050.0, ("unchanged", "within_pct")),
        (1000.0, 949.0, ("faster", "changed")),
        (0.0, 11.0, ("slower", "changed")),
        (0.0, 0.0, ("unchanged", "within_us")),
    ],
)
def test_verdict_rule_edges(b, e, want):
    v = verdict(b, e)
    assert (v["status"], v["reason"]) == want and v["change_us"] == (e or 0) - (b or 0)
    assert (CHANGE_US, CHANGE_PCT) == (10.0, 5.0)


@pytest.mark.corpus
@pytest.mark.parametrize(
    "base, exp",
    [
        ("hta/trace_compare/base/base.json.gz", "hta/trace_compare/test/test.json.gz"),
        ("hta/trace_diff/control/control.json.gz", "hta/trace_diff/test/test.json.gz"),
        (
            "torch213_cpu/worker0.1795324943899052487.pt.trace.json",
            "kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
        ),
    ],
)
def test_real_pairs_waterfall_sums_to_the_step_delta_and_step_verdict_follows_it(tmp_path, base, exp):
    """Real traces of different lengths (CPU vs GPU, A100 vs V100, trimmed): every level's rows plus
    its remainder is the step-total Δ; ProfilerStep's verdict has the step total's sign."""
    for side, rel in (("b", base), ("e", exp)):
        (tmp_path / side).mkdir()
        shutil.copy(sample(rel), tmp_path / side / ("worker0.1.pt.trace.json" + (".gz" if rel.endswith(".gz") else "")))
    reg = loaded_registry(tmp_path)
    q = diff_query("b", "e")
    code, top = api.diff(reg, q)
    assert code == 200, top
    step = top["steps"]["delta"]["total_us"]
    for path in ([], ["ProfilerStep"]):
        code, doc = api.diff(reg, dict(q, path=json.dumps(path)))
        wf = doc["waterfall"]
        assert wf["total_us"] == step
        assert wf["rows_us"] == pytest.approx(sum(r["change_us"] for r in doc["operators"]))
        assert wf["rows_us"] + wf["remainder_us"] == pytest.approx(step, abs=1e-6)
    ps = next(r for r in top["operators"] if r["name"] == "ProfilerStep")
    assert ps["change_us"] == ps["delta"]["host_total_us"] and (ps["change_us"] > 0) == (step > 0)
    assert ps["status"] == ("slower" if step > 0 else "faster")
