"""Est. achieved occupancy when Kineto could not compute it (analysis/gpu.py ``kernel_occupancy``).

Kineto writes ``est. achieved occupancy %`` = 0 when CUDA's occupancy calculator fails (every Hopper
``nvjet_*``/``*wgmma*`` kernel of samples/gpu_*: 168 registers × 384 threads, > 48 KiB shared memory,
1 block per SM). Such a 0 is unknown, not 0 %: left out of the GPU's time-weighted occupancy, its time
reported as ``kernel_us_without_occupancy``, its kernel-table cell null. A 0 on a tiny grid is a real 0.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import write_json


def _doc() -> dict:
    """H100 (132 SMs), one 1000 µs step, four kernels by construction:

    - nvjet GEMM 300 µs, [2, 66, 1] × 384 threads, 1 block per SM, occupancy 0: its launch implies
      ≥ 1 × 384 / 2048 = 18.75 % → unknown;
    - elementwise 100 µs, 2 blocks per SM × 128 threads, occupancy 50;
    - a 1-block reduction 50 µs, [1, 1, 1] × 128 threads (0.0076 blocks per SM → 0.05 %), occupancy 0: a
      real 0;
    - a kernel without the arg, 40 µs: unknown.
    GPU occupancy = (50 × 100 + 0 × 50) / 150 = 33.33 %; unknown time 300 + 40 = 340 µs."""
    from synth import compute as sc

    doc = sc.build(
        sc.H100,
        [
            sc.Op(
                "aten::mm",
                100,
                150,
                [sc.BF16, sc.BF16],
                [sc.Kernel(sc.NVJET, 150, 300, grid=[2, 66, 1], block=[384, 1, 1], blocks_per_sm=1.0)],
            ),
            sc.Op(
                "aten::add",
                300,
                50,
                [sc.BF16, sc.BF16, "Scalar"],
                [sc.Kernel(sc.ELEMENTWISE, 460, 100, grid=[264, 1, 1], block=[128, 1, 1], blocks_per_sm=2.0)],
            ),
            sc.Op(
                "aten::sum",
                400,
                50,
                [sc.BF16],
                [sc.Kernel("reduce_kernel", 600, 50, grid=[1, 1, 1], block=[128, 1, 1], blocks_per_sm=1 / 132)],
            ),
            sc.Op(
                "aten::neg",
                500,
                50,
                [sc.BF16],
                [sc.Kernel("neg_kernel", 700, 40, grid=[132, 1, 1], block=[256, 1, 1], blocks_per_sm=1.0)],
            ),
        ],
    )
    occ = {sc.NVJET: 0, sc.ELEMENTWISE: 50, "reduce_kernel": 0}
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel" and e["name"] in occ:
            e["args"]["est. achieved occupancy %"] = occ[e["name"]]
    return doc


def _load(tmp_path):
    from tb_plugin.analysis.overview import compute_overview
    from tb_plugin.registry.parse import load_trace_file

    trace = load_trace_file(str(write_json(tmp_path / "t.pt.trace.json", _doc())))
    return compute_overview(trace), trace


def test_failed_zero_is_unknown_not_zero(tmp_path):
    from synth import compute as sc

    from tb_plugin.analysis.gpu import kernel_occupancy
    from tb_plugin.trace.categories import Kind

    ov, trace = _load(tmp_path)
    (gpu,) = ov["gpus"]
    assert gpu["achieved_occupancy_pct"] == pytest.approx(5000 / 150)
    assert gpu["kernel_us_without_occupancy"] == pytest.approx(340.0)
    ev = trace.events
    rows = np.flatnonzero(ev.kind == Kind.KERNEL)
    got = {trace.strings[ev.name[i]]: kernel_occupancy(trace)[i] for i in rows.tolist()}
    assert math.isnan(got[sc.NVJET]) and math.isnan(got["neg_kernel"])
    assert got[sc.ELEMENTWISE] == 50.0 and got["reduce_kernel"] == 0.0


def test_kernel_table_shows_unknown_as_null(tmp_path):
    from synth import compute as sc

    from tb_plugin.analysis.kernels import kernel_rows

    _, trace = _load(tmp_path)
    occ = {r["name"]: r["achieved_occupancy_pct"] for r in kernel_rows(trace)}
    assert occ == {sc.NVJET: None, sc.ELEMENTWISE: 50.0, "reduce_kernel": 0.0, "neg_kernel": None}


def test_cli_says_what_occupancy_leaves_out():
    from tb_plugin.cli.tables import _left_out

    assert (
        _left_out({"kernel_us_without_occupancy": 340.0}, "occupancy")
        == " (leaves out 0.340 ms of kernel time with unknown occupancy)"
    )
    assert _left_out({"kernel_us_without_occupancy": 0.0}, "occupancy") == ""
