"""Known-answer tests: the Overview computed from synthesized traces equals the answers the
synthesizer knows by construction (synth.traces.expected_overview), and the METRICS.md worked
example.

Each trace is written to a file and goes through the real path: load_trace_file (path -> Trace)
then compute_overview (Trace -> dict shaped like docs/http_api.md "overview").

Tolerance: 1e-6 relative (plus 1e-9 µs / 1e-9 points absolute, for categories that are exactly 0).
The GPU percentages are compared unrounded (the API sends data, never formatted numbers).
"""

from __future__ import annotations

import pytest
from synth.traces import (
    CATEGORY_KEYS,
    SynthSpec,
    expected_overview,
    synthesize,
    worked_example_trace,
    write_trace,
)

from tb_plugin.analysis.overview import compute_overview
from tb_plugin.registry.parse import load_trace_file

REL, ABS = 1e-6, 1e-9
GPU_KEYS = ("utilization_pct", "sm_efficiency_pct", "achieved_occupancy_pct", "tensor_core_pct")

CASES = {
    # pytorch2 (cpu_op / cuda_runtime / kernel ...), H100
    "pt2_basic": SynthSpec(steps=3, seed=0),
    "pt2_no_memory": SynthSpec(steps=3, seed=1, with_memory=False),
    "pt2_driver_launch": SynthSpec(steps=3, seed=2, with_driver_launch=True),
    "pt2_cuda_graph": SynthSpec(steps=3, seed=3, with_cuda_graph=True),
    "pt2_everything": SynthSpec(
        steps=4, seed=4, with_driver_launch=True, with_cuda_graph=True, with_python_stack=True, backward_thread=True
    ),
    "pt2_cpu_op_step_marker": SynthSpec(
        steps=3, seed=5, step_marker_cat="cpu_op", gpu_step_annotation=False, tensor_cores=False
    ),
    "pt2_no_blocks_per_sm": SynthSpec(steps=2, seed=6, omit_blocks_per_sm=True),
    "pt2_spill": SynthSpec(steps=3, seed=7, device_spill_us=25.0),
    "pt2_tail_no_device": SynthSpec(steps=3, seed=8, tail="no_device"),
    "pt2_tail_truncated": SynthSpec(steps=3, seed=9, tail="truncated"),
    "pt2_short_dataloader": SynthSpec(steps=2, seed=10, dataloader_us=12.0, first_step=41),
    "pt2_ddp_rank0": SynthSpec(steps=3, seed=11, ranks=2, rank=0),
    "pt2_ddp_rank1": SynthSpec(steps=3, seed=11, ranks=2, rank=1),
    "pt2_ddp_graph_driver": SynthSpec(
        steps=2, seed=12, ranks=2, rank=1, with_cuda_graph=True, with_driver_launch=True, with_memory=False
    ),
    # kineto 2021 (Operator / Runtime / Kernel / Memcpy / Memset), V100
    "k21_basic": SynthSpec(style="kineto2021", steps=3, seed=0),
    "k21_no_memory": SynthSpec(style="kineto2021", steps=3, seed=1, with_memory=False),
    "k21_cuda_graph_stack": SynthSpec(
        style="kineto2021", steps=3, seed=2, with_cuda_graph=True, with_python_stack=True, backward_thread=True
    ),
    "k21_no_tensor_cores": SynthSpec(style="kineto2021", steps=2, seed=3, tensor_cores=False),
    "k21_spill_truncated": SynthSpec(style="kineto2021", steps=3, seed=4, device_spill_us=12.0, tail="truncated"),
    "k21_ddp_rank0": SynthSpec(style="kineto2021", steps=2, seed=5, ranks=2, rank=0),
    "k21_ddp_rank1": SynthSpec(style="kineto2021", steps=2, seed=5, ranks=2, rank=1),
}


def _overview_of(trace: dict, path) -> dict:
    write_trace(trace, path)
    return compute_overview(load_trace_file(str(path)))


def _approx(x: float):
    return pytest.approx(x, rel=REL, abs=ABS)


def _check_steps(got: dict, exp: dict) -> None:
    assert [s["step"] for s in got["steps"]] == [s["step"] for s in exp["steps"]]
    for g, e in zip(got["steps"], exp["steps"]):
        for k in ("start_us", "end_us", "total_us", *CATEGORY_KEYS):
            assert g[k] == _approx(e[k]), f"step {e['step']} {k}: got {g[k]}, expected {e[k]}"
    for k in ("total_us", *CATEGORY_KEYS):
        assert got["average"][k] == _approx(exp["average"][k]), f"average {k}"
    conf, econf = got["configuration"], exp["configuration"]
    assert conf["step_count"] == econf["step_count"]
    assert conf["steps_window_us"] == _approx(econf["steps_window_us"])
    assert conf["average_step_us"] == _approx(econf["average_step_us"])
    assert conf["has_step_markers"] is True


def _check_gpus(got: dict, exp: dict) -> None:
    by_id = {g["id"]: g for g in got["gpus"]}
    assert sorted(by_id) == sorted(g["id"] for g in exp["gpus"])
    for e in exp["gpus"]:
        g = by_id[e["id"]]
        for k in GPU_KEYS:
            assert g[k] is not None, f"gpu {e['id']} {k} is null"
            assert g[k] == _approx(e[k]), f"gpu {e['id']} {k}: got {g[k]}, expected {e[k]}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_overview_matches_construction(name, tmp_path):
    spec = CASES[name]
    path = tmp_path / f"rank{spec.rank}.1700000000000.pt.trace.json.gz"
    got = _overview_of(synthesize(spec), path)
    exp = expected_overview(spec)
    _check_steps(got, exp)
    _check_gpus(got, exp)
    assert got["configuration"]["distributed"] == exp["configuration"]["distributed"]
    assert got["configuration"]["device_type"] == "GPU"
    assert got["configuration"]["gpu_count"] == exp["configuration"]["gpu_count"]
    assert got["categories"] == list(CATEGORY_KEYS)


@pytest.mark.parametrize("suffix", [".pt.trace.json", ".pt.trace.json.gz"])
def test_worked_example(suffix, tmp_path):
    trace, exp = worked_example_trace()
    got = _overview_of(trace, tmp_path / f"worker0.1{suffix}")
    (row,) = got["steps"]
    assert row["step"] == "1"
    assert row["total_us"] == _approx(400.0)
    assert {k: row[k] for k in CATEGORY_KEYS} == {
        "kernel_us": _approx(15.0),
        "memcpy_us": _approx(10.0),
        "memset_us": _approx(5.0),
        "communication_us": _approx(0.0),
        "runtime_us": _approx(30.0),
        "dataloader_us": _approx(180.0),
        "cpu_exec_us": _approx(35.0),
        "other_us": _approx(125.0),
    }
    _check_steps(got, exp)
    _check_gpus(got, exp)


def test_ddp_ranks_share_a_world(tmp_path):
    """Both ranks of one synthesized DDP run report the same world and their own GPU."""
    for rank in (0, 1):
        spec = SynthSpec(steps=2, seed=21, ranks=2, rank=rank)
        got = _overview_of(synthesize(spec), tmp_path / f"rank{rank}.1.pt.trace.json.gz")
        assert got["configuration"]["distributed"] == {"backend": "nccl", "rank": rank, "world_size": 2}
        assert [g["id"] for g in got["gpus"]] == [rank]
        exp = expected_overview(spec)
        _check_steps(got, exp)
        assert all(s["communication_us"] > 0 for s in got["steps"])


def _committed_samples():
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[3] / "samples"
    return sorted(root.glob("synthetic_*/*.pt.trace.json.gz"))


@pytest.mark.parametrize("path", _committed_samples(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_committed_sample(path):
    """The committed demo samples give the answers stored next to them (<file>.expected.json)."""
    import json

    exp = json.loads(path.with_name(path.name + ".expected.json").read_text())
    got = compute_overview(load_trace_file(str(path)))
    _check_steps(got, exp)
    _check_gpus(got, exp)
