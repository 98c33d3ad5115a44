"""Operator, Kernel and Module views: parity with torch-tb-profiler 0.4.3, known answers, 2.x traces."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import sample
from synth.events import complete

from tb_plugin.analysis.kernels import kernel_rows
from tb_plugin.analysis.modules import module_tree
from tb_plugin.analysis.operators import _longest_member, operator_rows
from tb_plugin.registry.parse import load_trace_file
from tb_plugin.trace.decode import decode_trace

REFERENCE = json.loads((Path(__file__).parents[2] / "data" / "incumbent_tables.json").read_text())
RESNET = "kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"


@pytest.fixture(scope="module")
def resnet():
    return load_trace_file(str(sample(RESNET)))


def _by_name(ours: list[dict], reference: list[dict]) -> list[tuple[str, dict, dict]]:
    """(name, our row, the incumbent's row) for each name, once both tables are seen to list the same names."""
    ref = {r["name"]: r for r in reference}
    mine = {r["name"]: r for r in ours}
    assert set(mine) == set(ref)
    return [(name, mine[name], theirs) for name, theirs in ref.items()]


@pytest.mark.corpus
def test_operator_table_matches_incumbent(resnet):
    for name, mine, theirs in _by_name(operator_rows(resnet), REFERENCE[RESNET]["ops_by_name"]):
        assert mine["calls"] == theirs["calls"], name
        for key in ("host_self_us", "host_total_us", "device_self_us", "device_total_us"):
            assert mine[key] == pytest.approx(theirs[key], rel=0.01, abs=0.5), (name, key)
        assert mine["tc_eligible"] == theirs["tc_eligible"], name


@pytest.mark.corpus
def test_operator_by_input_shape_matches_incumbent(resnet):
    ref = {(o["name"], o["input_shape"]): o for o in REFERENCE[RESNET]["ops_by_name_input"]}
    ours = {(o["name"], o["input_shape"]): o for o in operator_rows(resnet, "input_shape")}
    assert len(ours) == len(ref)
    calls_ref = sorted((k[0], v["calls"], round(v["device_total_us"])) for k, v in ref.items())
    calls_ours = sorted((k[0], v["calls"], round(v["device_total_us"])) for k, v in ours.items())
    assert calls_ours == calls_ref


@pytest.mark.corpus
def test_kernel_table_matches_incumbent(resnet):
    for name, mine, theirs in _by_name(kernel_rows(resnet), REFERENCE[RESNET]["kernels_by_name"]):
        assert mine["calls"] == theirs["calls"]
        for key in ("total_us", "mean_us", "max_us", "min_us"):
            assert mine[key] == pytest.approx(theirs[key], rel=0.01), (name, key)
        assert mine["blocks_per_sm"] == pytest.approx(theirs["mean_blocks_per_sm"], abs=0.5)
        assert mine["achieved_occupancy_pct"] == pytest.approx(theirs["mean_occupancy_pct"], abs=0.5)
        assert mine["tensor_cores"] == theirs["tc_used"]


@pytest.mark.corpus
@pytest.mark.parametrize(
    "rel",
    [
        "tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
        "tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz",
        "tracelens/mi300/gaunernst_bert-small-uncased__1016001.json.gz",
    ],
)
def test_pytorch2_launching_ops_have_device_time(rel):
    launchers = REFERENCE[rel]["zero_device_launchers"]
    names = launchers if isinstance(launchers, list) else list(launchers)
    names = [n if isinstance(n, str) else n["name"] for n in names]
    assert names, "the incumbent shows these with device time 0"
    ours = {o["name"]: o for o in operator_rows(load_trace_file(str(sample(rel))))}
    for name in names:
        if name.startswith("aten::"):
            assert ours[name]["device_total_us"] > 0, name


def _ev(name, cat, ts, dur, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _kernel(name, ts, dur, corr):
    occupancy = {"blocks per SM": 2.0, "est. achieved occupancy %": 50}
    return complete(name, "kernel", ts, dur, correlation=corr, device=0, **occupancy)


def test_attribution_known_by_construction():
    """aten::linear ⊃ aten::addmm (launches k1); aten::relu launches nothing; the backward op on the
    autograd thread launches k2; a driver launch (Triton) starts k3 inside aten::linear itself."""
    events = [
        _ev("aten::linear", "cpu_op", 0, 100),
        _ev("aten::addmm", "cpu_op", 10, 50),
        _ev("cudaLaunchKernel", "cuda_runtime", 20, 5, correlation=1),
        _ev("cuLaunchKernel", "cuda_driver", 70, 4, correlation=3),
        _ev("aten::relu", "cpu_op", 110, 20),
        _ev("autograd::engine::evaluate_function: AddmmBackward0", "cpu_op", 200, 60, tid=2),
        _ev("AddmmBackward0", "cpu_op", 205, 50, tid=2),
        _ev("aten::mm", "cpu_op", 210, 30, tid=2),
        _ev("cudaLaunchKernel", "cuda_runtime", 215, 5, tid=2, correlation=2),
        _kernel("sm90_xmma_gemm_f16", 30, 40, 1),
        _kernel("elementwise", 250, 8, 2),
        _kernel("triton_poi_fused", 80, 6, 3),
    ]
    tr = decode_trace(json.dumps({"traceEvents": events}).encode())
    ops = {o["name"]: o for o in operator_rows(tr)}
    assert (ops["aten::addmm"]["device_self_us"], ops["aten::addmm"]["device_total_us"]) == (40, 40)
    assert (ops["aten::linear"]["device_self_us"], ops["aten::linear"]["device_total_us"]) == (6, 46)
    assert (ops["aten::linear"]["host_self_us"], ops["aten::linear"]["host_total_us"]) == (100 - 50 - 4, 100)
    assert ops["aten::addmm"]["host_self_us"] == 50 - 5
    assert ops["aten::relu"]["device_total_us"] == 0 and ops["aten::relu"]["host_self_us"] == 20
    assert ops["aten::mm"]["device_self_us"] == 8
    assert ops["AddmmBackward0"]["device_total_us"] == 8 and ops["AddmmBackward0"]["device_self_us"] == 0
    assert ops["aten::addmm"]["tc_self_pct"] == 100 and ops["aten::linear"]["tc_total_pct"] == pytest.approx(
        100 * 40 / 46
    )
    assert ops["AddmmBackward0"]["tc_eligible"] and not ops["aten::relu"]["tc_eligible"]
    kernels = {k["name"]: k for k in kernel_rows(tr, "kernel_op_config")}
    assert kernels["elementwise"]["op"] == "aten::mm"
    assert kernels["triton_poi_fused"]["op"] == "aten::linear"


def test_kernel_without_launch_args_leaves_cells_empty():
    events = [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 0, "dur": 4, "args": {}}]
    (row,) = kernel_rows(decode_trace(json.dumps({"traceEvents": events}).encode()), "kernel_op_config")
    assert row["blocks_per_sm"] is None and row["achieved_occupancy_pct"] is None and row["grid"] is None
    assert row["op"] is None and row["calls"] == 1 and row["total_us"] == 4


@pytest.mark.corpus
def test_module_tree_with_modules_trace():
    tr = load_trace_file(str(sample("tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz")))
    (root,) = module_tree(tr)
    assert root["name"] == "BertLMHeadModel_0" and root["occurrences"] == 1
    names = {c["name"] for c in root["children"]}
    assert names == {"BertModel_0", "BertOnlyMLMHead_0"}

    # totals add up: host total = self + children; device total = self + children
    def check(node):
        assert node["host_total_us"] == pytest.approx(
            node["host_self_us"] + sum(c["host_total_us"] for c in node["children"])
        )
        assert node["device_total_us"] == pytest.approx(
            node["device_self_us"] + sum(c["device_total_us"] for c in node["children"])
        )
        for c in node["children"]:
            check(c)

    check(root)
    assert root["device_total_us"] > 0


@pytest.mark.corpus
def test_module_repeated_calls_and_absent_modules():
    tr = load_trace_file(str(sample("torch213_cpu/worker0.1795324943899052487.pt.trace.json")))
    (root,) = module_tree(tr)
    assert root["name"] == "Sequential_0" and root["occurrences"] == 3  # three profiled steps
    assert {c["name"]: c["occurrences"] for c in root["children"]}["Linear_0"] == 3
    assert module_tree(load_trace_file(str(sample("kineto/gpu_metrics_input.json")))) is None


def test_flops_and_tflops():
    events = [
        _ev("aten::mm", "cpu_op", 0, 50, flops=2_000_000_000),
        _ev("cudaLaunchKernel", "cuda_runtime", 10, 5, correlation=1),
        _ev("aten::mm", "cpu_op", 100, 50, flops=2_000_000_000),
        _ev("cudaLaunchKernel", "cuda_runtime", 110, 5, correlation=2),
        _ev("aten::relu", "cpu_op", 200, 10),
        _kernel("gemm", 20, 100, 1),
        _kernel("gemm", 130, 100, 2),
    ]
    ops = {o["name"]: o for o in operator_rows(decode_trace(json.dumps({"traceEvents": events}).encode()))}
    assert ops["aten::mm"]["flops"] == 4e9
    assert ops["aten::mm"]["tflops_per_s"] == pytest.approx(4e9 / 200e-6 / 1e12)  # 20 TFLOP/s
    assert ops["aten::relu"]["flops"] is None and ops["aten::relu"]["tflops_per_s"] is None


def _longest_by_sort(rows, inverse, dur, size):
    """The reference: per group the first row of the stable sort by group, then longest first."""
    order = np.lexsort((-dur, inverse))
    first = np.ones(len(order), dtype=bool)
    first[1:] = inverse[order[1:]] != inverse[order[:-1]]
    out = np.full(size, -1, dtype=np.int64)
    out[inverse[order[first]]] = rows[order[first]]
    return out


def test_longest_member_is_the_first_longest_call():
    # group 1: 2.5 then 3.0 (the 3.0); group 3: a tie (the first); group 4: NaN only (its first);
    # group 2: empty; group 0: -inf beside NaN (the -inf)
    inverse = np.array([1, 1, 3, 3, 4, 4, 0, 0])
    dur = np.array([2.5, 3.0, 7.0, 7.0, np.nan, np.nan, np.nan, -np.inf])
    rows = np.arange(8) * 10
    assert _longest_member(rows, inverse, dur, 5).tolist() == [70, 10, -1, 20, 40]
    rng = np.random.default_rng(7)  # ties, zeros of both signs, infinities and NaN against the sort
    for _ in range(200):
        n, size = int(rng.integers(0, 60)), int(rng.integers(1, 12))
        inverse = rng.integers(0, size, n)
        dur = rng.choice([0.0, -0.0, 1.0, 2.5, 3.0, np.nan, np.inf, -np.inf], n)
        rows = rng.permutation(10 * n + 1)[:n].astype(np.int64)
        assert (_longest_member(rows, inverse, dur, size) == _longest_by_sort(rows, inverse, dur, size)).all()
