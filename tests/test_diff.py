"""Diff view: steps, aligned operator tree, kernels, and the headless `kinetoscope diff`."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import diff_query, loaded_registry, sample
from tb_plugin import api
from tb_plugin.analysis.diff import kernel_diff, op_diff
from tb_plugin.cli import main
from tb_plugin.registry.parse import load_trace_file

NW0 = "kineto/resnet50_num_workers_0"
NW4 = "kineto/resnet50_num_workers_4"


def test_cli_diff_dataloader_shrinks_by_the_overview_difference(capsys):
    assert main(["diff", str(sample(NW0)), str(sample(NW4)), "--json", "--no-cache"]) == 0
    doc = json.loads(capsys.readouterr().out)
    steps = doc["steps"]
    assert steps["delta"]["dataloader_us"] == pytest.approx(1186.1666666 - 59261.8333333, abs=1e-3)
    assert steps["delta"]["total_us"] == pytest.approx(steps["experiment"]["total_us"] - steps["baseline"]["total_us"])
    dl = next(r for r in doc["operators"] if r["path"] == ["ProfilerStep", "enumerate(DataLoader)"])
    assert dl["status"] == "faster" and dl["delta"]["host_total_us"] < -50_000
    assert {"name", "baseline_calls", "experiment_calls", "delta_per_step_us"} <= set(doc["kernels"][0])


def test_cli_diff_text_marks_cut_operator_paths(capsys):
    """Long operator paths are cut from the left to 90 characters and start with "…", never mid-word bare."""
    assert main(["diff", str(sample(NW0)), str(sample(NW4)), "--no-cache"]) == 0
    text = capsys.readouterr().out
    rows = text.split("Largest operator changes (per average step):\n", 1)[1].splitlines()
    paths = [line[12:].rsplit(": host ", 1)[0] for line in rows if line.strip()]
    assert len(paths) == 15 and all(len(p) <= 90 for p in paths)
    cut = [p for p in paths if len(p) == 90]
    assert cut and all(p.startswith("\u2026") for p in cut)


def test_identical_traces_are_unchanged():
    trace = load_trace_file(str(sample(NW0) / "worker0.1623143089861.pt.trace.json.gz"))
    other = load_trace_file(str(sample(NW0) / "worker0.1623143089861.pt.trace.json.gz"))
    rows = op_diff(trace, other)
    assert rows and all(r["status"] == "unchanged" and r["delta"]["host_total_us"] == 0 for r in rows)
    assert all(k["delta_per_step_us"] == 0 for k in kernel_diff(trace, other))


def test_diff_route_drills_down(tmp_path):
    shutil.copytree(sample(NW0), tmp_path / "nw0")
    shutil.copytree(sample(NW4), tmp_path / "nw4")
    reg = loaded_registry(tmp_path)
    q = diff_query("nw0", "nw4")
    code, top = api.diff(reg, q)
    assert code == 200 and "ProfilerStep" in [r["name"] for r in top["operators"]]
    code, level2 = api.diff(reg, dict(q, path=json.dumps(["ProfilerStep", "enumerate(DataLoader)"])))
    assert code == 200 and level2["operators"] and all(r["path"][:2] == ["ProfilerStep", "enumerate(DataLoader)"]
                                                     for r in level2["operators"])
    cumulative = [r["cumulative_delta_us"] for r in level2["operators"]]
    assert cumulative[-1] == pytest.approx(sum(
        r["delta"]["device_total_us"] if (r["baseline"]["device_total_us"] or r["experiment"]["device_total_us"])
        else r["delta"]["host_total_us"] for r in level2["operators"]))
    assert api.diff(reg, dict(q, path="{not json"))[0] == 400
    assert api.diff(reg, dict(q, exp_run="missing"))[0] == 404
