"""Distributed view and insights: DLRM acceptance, known-answer constructions, clean degradation."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import sample
from synth.events import complete

from tb_plugin import api
from tb_plugin.analysis.distributed import distributed_view, rank_of_info
from tb_plugin.analysis.insights import SHORT_GAP_US, exposed_time, launch_delays, stream_idle
from tb_plugin.registry.runs import RunRegistry
from tb_plugin.trace.decode import decode_trace


def _assert_parts_fill_the_window(exposed: dict) -> None:
    """Compute, exposed communication, exposed copies and idle time add up to the window (µs)."""
    parts = exposed["compute_us"] + exposed["exposed_comm_us"] + exposed["exposed_memcpy_us"] + exposed["idle_us"]
    assert parts == pytest.approx(exposed["window_us"])


@pytest.fixture(scope="module")
def dlrm(tmp_path_factory):
    root = tmp_path_factory.mktemp("dlrm")
    shutil.copytree(sample("dlrm_8ranks"), root / "job")
    reg = RunRegistry(str(root))
    reg.scan()
    return reg


@pytest.mark.corpus
def test_dlrm_ranks_matching_and_identity(dlrm):
    result = dlrm.distributed("job", "1")
    view = result["view"]
    assert not [m for m in result["messages"] if "distributedInfo" in m]  # every rank from distributedInfo
    assert sorted(r["rank"] for r in view["ranks"]) == list(range(8)) and view["world_size"] == 8
    assert view["instances"] == {"matched": 8, "total": 8}  # each collective matched on all 8 ranks
    for r in view["ranks"]:
        assert r["transfer_us"] + r["sync_us"] == pytest.approx(r["latency_us"])
        for op in r["comm_ops"]:
            assert op["transfer_us"] + op["sync_us"] == pytest.approx(op["latency_us"])
    names = {c["name"]: c for c in view["collectives"]}
    assert names["allreduce"]["calls"] == 3 and names["alltoall"]["calls"] == 5
    assert names["allreduce"]["bytes"] == 4 * (394241 + 112 + 226960)  # ∏ Input Dims × float size
    assert names["allreduce"]["busbw_gbps"] == pytest.approx(names["allreduce"]["algbw_gbps"] * 2 * 7 / 8)


def _rank_trace(rank: int, compute_us: float, slowest_end: float, transfer_us: float, world: int = 4) -> dict:
    """One step: a compute kernel, then an all-reduce kernel that ends when the slowest rank arrived + transfer."""

    x = complete
    compute_end = 10 + compute_us
    return {
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world},
        "traceEvents": [
            x("ProfilerStep#1", "user_annotation", 0, 5),
            x("aten::mm", "cpu_op", 1, 2),
            x("cudaLaunchKernel", "cuda_runtime", 1.5, 1, correlation=1),
            x(
                "nccl:all_reduce",
                "cpu_op",
                3,
                1,
                **{"In msg nelems": 1000, "dtype": "Float", "Group size": world, "Collective name": "allreduce"},
            ),
            x("cudaLaunchKernel", "cuda_runtime", 3.2, 0.5, correlation=2),
            x("gemm", "kernel", 10, compute_us, correlation=1, device=0, stream=7),
            x(
                "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                "kernel",
                compute_end,
                slowest_end + transfer_us - compute_end,
                correlation=2,
                device=0,
                stream=7,
            ),
        ],
    }


def test_straggler_transfer_and_sync_by_construction():
    computes = {0: 100.0, 1: 110.0, 2: 105.0, 3: 400.0}  # rank 3 is slow on purpose
    slowest_end = 10 + max(computes.values())
    ranks = [
        (r, f"rank{r}", decode_trace(json.dumps(_rank_trace(r, c, slowest_end, 50.0)).encode()))
        for r, c in computes.items()
    ]
    view = distributed_view(ranks)
    # rank 3 arrived last at the one all-reduce (the others waited 300, 290, 295 µs for it), but one
    # instance in four ranks is chance (1/4), not a straggler: the rule needs ≥ 3 instances
    assert view["stragglers"] == []
    last = {e["rank"]: e for e in view["arrivals"]}[3]
    assert (last["last"], last["instances"]) == (1, 1) and last["wait_mean_us"] == pytest.approx(295.0)
    by = {r["rank"]: r for r in view["ranks"]}
    for r, c in computes.items():
        assert by[r]["transfer_us"] == pytest.approx(50.0)
        assert by[r]["sync_us"] == pytest.approx(max(computes.values()) - c)
        assert by[r]["overlap_us"] == 0
        assert by[r]["computation_us"] == pytest.approx(c)
        assert by[r]["communication_us"] == pytest.approx(slowest_end + 50 - (10 + c))
    (coll,) = view["collectives"]
    assert coll["bytes"] == 4000 and coll["algbw_gbps"] == pytest.approx(4000 / (50 * 1e3))
    assert coll["busbw_gbps"] == pytest.approx(coll["algbw_gbps"] * 2 * 3 / 4)


def test_launch_delay_and_idle_by_construction():
    x = complete
    events = [x("ProfilerStep#1", "user_annotation", 0, 1000)]
    # (launch start, launch dur, kernel start, kernel dur)
    plan = [(0, 5, 10, 20), (6, 5, 32, 10), (100, 5, 110, 5), (120, 5, 200, 50), (126, 5, 300, 10)]
    for i, (ls, ld, ks, kd) in enumerate(plan, start=1):
        events.append(x("cudaLaunchKernel", "cuda_runtime", ls, ld, correlation=i))
        events.append(x(f"k{i}", "kernel", ks, kd, correlation=i, device=0, stream=7))
    trace = decode_trace(json.dumps({"traceEvents": events}).encode())
    # launch delays: 5, 21, 5, 75, 169
    got = launch_delays(trace)
    assert got["kernels"] == 5 and got["max"] == 169 and got["p50"] == 21
    assert got["short_kernel_share"] == 0.0  # every kernel outlasts its 5 µs launch call
    (idle,) = stream_idle(trace)["gpus"]
    # GPU gaps in the [0, 1000] window: [0,10) host wait (k1's launch ended at 5 > 0);
    # [30,32) short (its kernel's launch ended at 11, before the gap);
    # [42,110) host wait (its launch returned at 105, in the gap's second half);
    # [115,200) other (its launch returned at 125, before the gap's midpoint 157.5: the work then waited
    # 75 µs queued, not for the host); [250,300) other (launch ended at 131, long before; 50 µs ≥ the
    # short-gap threshold); [310,1000) other (no work after it)
    assert SHORT_GAP_US == 10
    assert idle["short_gap_us"] == 2
    assert idle["host_wait_us"] == 10 + (110 - 42)
    assert idle["other_us"] == (200 - 115) + 50 + 690
    exposed = exposed_time(trace)
    assert exposed["compute_us"] == 20 + 10 + 5 + 50 + 10
    _assert_parts_fill_the_window(exposed)


@pytest.mark.corpus
def test_degrades_cleanly(tmp_path):
    one = tmp_path / "single"
    shutil.copytree(sample("hta/distributed_info_unavailable"), one)
    two = tmp_path / "two"
    two.mkdir()
    src = sample("hta/distributed_info_unavailable/distributed_info_not_found.json.gz")
    shutil.copy(src, two / "rank-0.json.gz")
    shutil.copy(src, two / "rank-1.json.gz")
    cpu = tmp_path / "gloo"
    cpu.mkdir()
    shutil.copy(
        sample("hta/cpu_only__older_b8cce2c/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"),
        cpu / "rank-34.1.pt.trace.json.gz",
    )
    shutil.copy(
        sample("hta/cpu_only__older_b8cce2c/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"),
        cpu / "rank-35.1.pt.trace.json.gz",
    )
    reg = RunRegistry(str(tmp_path))
    reg.scan()
    single = reg.distributed("single", "1")
    assert single["view"] is None and "only one rank" in single["reason"]
    pair = reg.distributed("two", "1")
    assert [r["rank"] for r in pair["view"]["ranks"]] == [0, 1]
    assert any("rank 0 taken from the file name" in m for m in pair["messages"])
    gloo = reg.distributed("gloo", "1")
    assert gloo["view"] is not None and any("no communication kernels" in m for m in gloo["messages"])
    assert api.distributed(reg, {"run": "nope"})[0] == 404
    assert api.distributed(reg, {"run": "two", "span": "x"})[0] == 400


@pytest.mark.corpus
def test_launch_delays_without_kernels_keep_the_histogram_shape():
    """A CPU-only trace: no launched kernels, yet both histograms are {edges_us, counts} with zero counts
    (the Insights tab drew `null.counts` and crashed before)."""
    trace = decode_trace(sample("torch213_cpu/worker0.1795324943899052487.pt.trace.json").read_bytes())
    got = launch_delays(trace)
    assert got["kernels"] == 0 and got["p50"] is None and got["short_kernel_share"] is None
    for key in ("delay_histogram", "duration_histogram"):
        h = got[key]
        assert h["edges_us"][0] == 0 and h["edges_us"][-1] is None
        assert len(h["counts"]) == len(h["edges_us"]) - 1 and set(h["counts"]) == {0}


def test_rank_from_name_and_position():
    trace = decode_trace(b'{"traceEvents": []}')
    assert rank_of_info(trace.distributed, "rank_12", 0) == (12, "file name")
    assert rank_of_info(trace.distributed, "worker", 5) == (5, "position")


@pytest.mark.corpus
def test_insights_route_on_h100(tmp_path):
    (tmp_path / "h100").mkdir()
    shutil.copy(
        sample("tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz"),
        tmp_path / "h100" / "w.1.pt.trace.json.gz",
    )
    reg = RunRegistry(str(tmp_path))
    reg.scan()
    reg.load(reg.files()[0])
    code, doc = api.insights(reg, {"run": "h100", "worker": "w", "span": "1"})
    assert code == 200 and doc["launch"]["kernels"] > 0 and "recommendations" in doc
    _assert_parts_fill_the_window(doc["exposed"])


@pytest.mark.corpus
def test_no_view_counts_loaded_ranks_not_listed_files(tmp_path):
    """A run whose files all failed said "only one rank" while its span listed several files."""
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "empty.pt.trace.json").write_bytes(b"")
    (bad / "junk.pt.trace.json").write_bytes(b"<html>")
    mixed = tmp_path / "mixed"
    shutil.copytree(bad, mixed)
    shutil.copy(sample("hta/distributed_info_unavailable/distributed_info_not_found.json.gz"), mixed / "rank-0.json.gz")
    reg = RunRegistry(str(tmp_path))
    reg.scan()
    got = reg.distributed("bad", "1")
    assert got["view"] is None and (got["files"], got["ranks_loaded"]) == (2, 0)
    assert [m.split(":")[0] for m in got["messages"]] == ["bad/empty.pt.trace.json", "bad/junk.pt.trace.json"]
    assert (
        got["reason"]
        == "2 of the 2 files of span 1 failed to load, leaving 0 ranks: there is nothing to compare across ranks"
    )
    got = reg.distributed("mixed", "1")
    assert got["view"] is None and (got["files"], got["ranks_loaded"]) == (3, 1)
    assert got["reason"].startswith("2 of the 3 files of span 1 failed to load, leaving 1 rank:")
    two = reg.distributed("bad", "2")
    assert (two["files"], two["ranks_loaded"], two["messages"]) == (0, 0, [])
    assert two["reason"] == "no file of this run has span 2: there is nothing to compare across ranks"
