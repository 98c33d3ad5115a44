"""The kernels' occupancy and threads per block (analysis/gpu.kernel_occupancy, trace/geometry.block_threads)
made on the rows that can hold a value: the same held rows, values, fill and size, byte for byte, as
SparseColumn.of the dense per-event column they were made from before (kept here as the reference)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from conftest import sample

from tb_plugin.analysis import gpu
from tb_plugin.registry.parse import load_trace_file
from tb_plugin.trace import geometry
from tb_plugin.trace.sparse import SparseColumn

SAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "samples")


def _dense_block_threads(trace) -> np.ndarray:
    out = np.full(len(trace.events), np.nan)
    rows, _, block, _ = geometry._kernel_geometry(trace, "block")
    if len(rows):
        out[rows] = geometry._dims_table(trace, geometry.unique_values(block))[block].prod(axis=1)
    return out


def _dense_occupancy(trace) -> np.ndarray:
    ev = trace.events
    occ = np.where(ev.occupancy_pct >= 0, ev.occupancy_pct, np.nan)
    zero = np.flatnonzero(occ == 0)
    if len(zero):
        floor = (
            np.minimum(ev.blocks_per_sm[zero], 1.0) * _dense_block_threads(trace)[zero] / gpu.MAX_THREADS_PER_SM * 100
        )
        occ[zero[floor >= 1.0]] = np.nan
    return occ


def _assert_same(got: SparseColumn, dense: np.ndarray) -> int:
    want = SparseColumn.of(dense, np.nan)
    assert got.rows.dtype == want.rows.dtype and got.rows.tobytes() == want.rows.tobytes()
    assert got.values.dtype == want.values.dtype and got.values.tobytes() == want.values.tobytes()
    assert np.isnan(got.fill) and got.size == want.size
    return len(want.rows)


def _assert_both(trace) -> int:
    held = _assert_same(geometry.block_threads(trace), _dense_block_threads(trace))
    return held + _assert_same(gpu.kernel_occupancy(trace), _dense_occupancy(trace))


@pytest.mark.parametrize(
    "rel",
    [
        "gpu_transformer_bf16/h200.1795664832269.pt.trace.json.gz",
        "gpu_cudagraph/h200.1795664852348.pt.trace.json.gz",
        "synthetic_resnet/worker0.1751410836000.pt.trace.json.gz",
    ],
)
def test_kernel_columns_on_repository_samples(rel):
    assert _assert_both(load_trace_file(os.path.join(SAMPLES, rel))) > 0


def test_kernel_columns_with_zero_negative_and_missing_occupancy():
    """Zeros a computed value cannot be (dropped) and can be (kept), negative and missing values, a
    kernel without a block, and events that are no kernel but carry the arg."""
    import json

    from tb_plugin.trace.decode import decode_trace

    def kernel(ts, occ, block="[256, 1, 1]", bps=4.0, cat="kernel"):
        args = {"grid": "[80, 1, 1]", "blocks per SM": bps}
        if block is not None:
            args["block"] = block
        if occ is not None:
            args["est. achieved occupancy %"] = occ
        return {"ph": "X", "cat": cat, "name": "k", "pid": 0, "tid": 7, "ts": ts, "dur": 5, "args": args}

    events = [
        kernel(0, 50),
        kernel(10, 0),  # 4 blocks of 256 threads: at least 12.5 %: a failed calculation
        kernel(20, 0, block="[1, 1, 1]", bps=0.01),  # a tiny grid: 0 stays
        kernel(30, -1),
        kernel(40, None),
        kernel(50, 0, block=None),  # unknown threads: the 0 stays
        kernel(60, 25, cat="cpu_op"),
    ]
    trace = decode_trace(json.dumps({"traceEvents": events}).encode())
    assert _assert_both(trace) > 0


@pytest.mark.corpus
def test_kernel_columns_on_the_corpus():
    for rel in (
        "tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz",
        "kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
    ):
        assert _assert_both(load_trace_file(str(sample(rel)))) > 0
