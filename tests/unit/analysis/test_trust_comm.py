"""Communication kernels, collective matching, bus bandwidth, stragglers.

Known answers on synthesized jobs (tests/synth/comm.py) and the 8 real DLRM ranks.
"""

from __future__ import annotations

import json

import pytest
from conftest import sample_ranks
from synth.comm import Coll, job, late_rank_job
from synth.events import complete

from tb_plugin.analysis.breakdown import category_masks, compute_breakdown
from tb_plugin.analysis.distributed import bus_factor, distributed_view
from tb_plugin.analysis.steps import compute_steps
from tb_plugin.trace.categories import is_comm_kernel_name
from tb_plugin.trace.decode import decode_trace

# -- item 12: communication kernels ---------------------------------------------------------------

COMM_NAMES = [
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
    "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
    "void rcclGenericKernel<1, false>(ncclDevComm*, unsigned long, ncclWork*)",
    "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)",
    "void vllm::cross_device_reduce_2stage<float, 4>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, float*, int, int)",
    "void c10d::symmetric_memory::multimem_all_reduce_kernel<c10::BFloat16, 8, 16>(c10::BFloat16*, unsigned long, unsigned long, unsigned int**, unsigned long, unsigned long)",
    "void c10d::symmetric_memory::one_shot_all_reduce_kernel<float, 16, 8>(float**, unsigned long, unsigned long, float*, unsigned long, unsigned long, unsigned int**, unsigned long, unsigned long)",
    "void tensorrt_llm::kernels::twoShotAllReduceKernel<__nv_bfloat16, 8>(tensorrt_llm::kernels::AllReduceParams)",
    "void custom_allgather_kernel<float>(float*, int)",
    "void my_reduce_scatter_kernel<half>(half*, int)",
    "void nvshmemi_proxy_progress_kernel(void*)",
    "void nvshmemx_barrier_all_on_stream_kernel()",
    "mscclKernel_AllGather_Simple_Sum_f16(ncclDevComm*, mscclAlgo*, mscclWork*)",
    # expert-parallel (DeepEP) dispatch/combine and their helpers, NVSHMEM all-to-all
    "void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*, int*, long*, float*, int*, int*, int4 const*)",
    "void deep_ep::internode::dispatch<true, 8, 4, 1, 16, 8, 8192, 4>(int4*, float*, long*, float*, int4*, int4*, int*, int*)",
    "void deep_ep::internode::combine<__nv_bfloat16, true, 8, 4, 1, 16, 8, 8192, 4>(int4*, float*, int const*)",
    "void deep_ep::internode_ll::dispatch<true, 3, 7168>(void*, float*, int*, long*, void*, int*, int*, int*, void*)",
    "void deep_ep::intranode::notify_dispatch<8>(int const*, int*, int, int const*, int*, int, int, int, int*, int*)",
    "void deep_ep::internode::cached_notify<8, 4>(int, int, int, int, int, int*, int*, int*, void*, int, int, int)",
    "dpsk::ep::internode::dispatch",
    "dpsk::ep::internode::combine",
    "void intranode::dispatch<8, 768, 8192>(int4*, float*, int*)",
    "void internode::combine<__nv_bfloat16, 8>(int4*, float*)",
    "void nvshmemi_alltoall_on_stream_kernel<int>(int, int*, int const*, unsigned long, int, int, int)",
]

NOT_COMM_NAMES = [
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4>)",
    "void cub::DeviceReduceKernel<cub::DeviceReducePolicy<float, int, cub::Sum>::Policy600, float*, float*, int, cub::Sum>(float*, float*, int, cub::GridEvenShare<int>, cub::Sum)",
    "smallReduceKernel",  # "allReduce" inside a word is not a collective
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)",
    "triton_poi_fused_all_gather_into_tensor_copy_0",  # Inductor's copy into a collective's buffer
    "triton_red_fused_reduce_scatter_tensor_sum_1",
    "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
    # MoE computation and routing; a word that merely contains "internode" is no namespace
    "void moe_align_block_size_kernel<int>(int const*, int*, int*, int*, int, int, int, int)",
    "fused_moe_kernel",
    "void my_internode_helper(int)",
]


@pytest.mark.parametrize("name", COMM_NAMES)
def test_comm_kernel_names(name):
    assert is_comm_kernel_name(name)


@pytest.mark.parametrize("name", NOT_COMM_NAMES)
def test_not_comm_kernel_names(name):
    assert not is_comm_kernel_name(name)


def test_vllm_custom_allreduce_time_is_communication():
    """A gemm (100 µs) then two vLLM custom all-reduce kernels (30 + 20 µs) launched by no comm op:
    the breakdown puts 50 µs in Communication and 100 µs in Kernel."""
    name = "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)"

    x = complete
    events = [x("ProfilerStep#1", "user_annotation", 0, 400)]
    for i, (kname, start, dur) in enumerate([("gemm_bf16", 10, 100), (name, 150, 30), (name, 250, 20)], start=1):
        events.append(x("vllm::all_reduce" if "cross" in kname else "aten::mm", "cpu_op", start - 8, 2))
        events.append(x("cudaLaunchKernel", "cuda_runtime", start - 7, 1, correlation=i))
        events.append(x(kname, "kernel", start, dur, correlation=i, device=0, stream=7))
    trace = decode_trace(json.dumps({"traceEvents": events}).encode())
    b = compute_breakdown(trace, compute_steps(trace)).step(0)
    assert b["communication_us"] == 50 and b["kernel_us"] == 100
    masks = category_masks(trace)
    assert int(masks["communication"].sum()) == 2


# -- item 10: matching -----------------------------------------------------------------------------


def _chain(sizes, t0=0.0, dtype="Float", name="allreduce", seqs=None):
    out, t = [], t0
    for i, n in enumerate(sizes):
        out.append(Coll(name, t, t + 50, nelems=n, dtype=dtype, group_size=2, seq=seqs[i] if seqs else None))
        t += 200
    return out


def test_offset_windows_are_aligned_not_matched_in_order():
    """Two ranks sampled at different times: rank 1's window starts 3 collectives later. Sizes all
    differ, so the alignment is unique: 7 instances matched, 3 + 3 unmatched, and a message. Before:
    "matched 10/10" although every pair's sizes differed."""
    sizes = [1000 * (k + 1) for k in range(13)]
    ranks = job({0: _chain(sizes[:10]), 1: _chain(sizes[3:], t0=77.0)}, world_size=2)
    view = distributed_view(ranks)
    assert view["instances"]["matched"] == 7
    (row,) = view["matching"]["by_type"]
    assert (row["name"], row["matched"], row["unmatched"]) == ("allreduce", 7, 6)
    assert any("do not line up" in m and "rank 1" in m and "3" in m for m in view["matching"]["messages"])
    (coll,) = view["collectives"]
    assert coll["calls"] == 7 and coll["bytes"] == 4 * sum(sizes[3:10])


def test_dtype_or_size_mismatch_is_never_a_match():
    """Same order, but instance 2 differs in dtype and instance 4 in size: 3 of 5 match."""
    a = _chain([100, 200, 300, 400, 500])
    b = _chain([100, 200, 300, 400, 501])
    b[2].dtype = "BFloat16"
    b[2].nelems = 600  # same bytes (1200) as rank 0's 300 floats: bytes alone must not match
    view = distributed_view(job({0: a, 1: b}, world_size=2))
    assert view["instances"]["matched"] == 3
    (row,) = view["matching"]["by_type"]
    assert (row["matched"], row["unmatched"]) == (3, 2)
    assert any("dtype or size" in m for m in view["matching"]["messages"])


def test_sequence_numbers_match_across_gaps():
    """With ``Seq`` args, instances match by sequence number: rank 1's trace lacks seq 12 (dropped),
    so 4 of 5 match and nothing after the gap is shifted."""
    sizes = [100, 100, 100, 100, 100]
    a = _chain(sizes, seqs=[10, 11, 12, 13, 14])
    b = _chain(sizes[:4], seqs=[10, 11, 13, 14])
    view = distributed_view(job({0: a, 1: b}, world_size=2))
    assert view["matching"]["method"] == "sequence number"
    assert view["instances"]["matched"] == 4
    (row,) = view["matching"]["by_type"]
    assert (row["matched"], row["unmatched"]) == (4, 1)


# -- item 11: bus bandwidth ------------------------------------------------------------------------


def test_bus_factors():
    assert bus_factor("allreduce", 8) == pytest.approx(2 * 7 / 8)
    assert bus_factor("allgather", 8) == pytest.approx(7 / 8)
    assert bus_factor("reducescatter", 8) == pytest.approx(7 / 8)
    assert bus_factor("alltoall", 8) == pytest.approx(7 / 8)
    assert bus_factor("broadcast", 8) == 1.0


@pytest.mark.parametrize("how", ["world_size", "group_size", "group_ranks"])
def test_two_ranks_of_a_128_rank_job_use_n_128(how):
    """2 loaded ranks of a 128-rank job: one 1 MiB all-reduce whose transfer is 100 µs. algbw =
    1048576 B / 100 µs = 10.48576 GB/s; busbw = algbw × 2·127/128 (not × 2·1/2)."""
    per_rank = {}
    for r in (0, 1):
        c = Coll("allreduce", 0.0 if r == 0 else 40.0, 140.0, nelems=262144, dtype="Float")
        if how == "group_size":
            c.group_size = 128
        elif how == "group_ranks":
            c.group_ranks = str(list(range(128)))
        per_rank[r] = [c]
    view = distributed_view(job(per_rank, world_size=128 if how == "world_size" else None))
    (coll,) = view["collectives"]
    assert coll["group_size"] == 128
    assert coll["algbw_gbps"] == pytest.approx(10.48576)
    assert coll["busbw_gbps"] == pytest.approx(10.48576 * 2 * 127 / 128)


def test_allgather_bytes_are_the_gathered_buffer():
    """All-gather of 1000 floats per rank in a group of 4 (Out msg nelems 4000): the size is the
    gathered buffer (16000 B, as nccl-tests count it); transfer 10 µs → algbw 1.6 GB/s, busbw × 3/4."""
    per_rank = {r: [Coll("allgather", 5.0 * r, 25.0, nelems=1000, out_nelems=4000, group_size=4)] for r in range(4)}
    view = distributed_view(job(per_rank, world_size=4))
    (coll,) = view["collectives"]
    assert coll["bytes"] == 16000
    assert coll["algbw_gbps"] == pytest.approx(1.6)
    assert coll["busbw_gbps"] == pytest.approx(1.2)


# -- item 9: stragglers ----------------------------------------------------------------------------


@pytest.mark.parametrize("offsets", [None, {0: 0.0, 1: 3.5e6, 2: -1.2e6, 3: 250.0}])
def test_the_late_rank_is_the_straggler(offsets):
    """Rank 2 arrives 300 µs after the others at 9 of 10 all-reduces. The ranks that waited have the
    longest steps (the old rule flagged ranks 1 and 3). Clock offsets between ranks change nothing:
    arrival order comes from kernel durations, not timestamps."""
    ranks, want = late_rank_job(offsets=offsets)
    view = distributed_view(ranks)
    assert view["stragglers"] == [2]
    ev = {e["rank"]: e for e in view["arrivals"]}
    assert (ev[2]["last"], ev[2]["instances"]) == (9, 10)
    assert ev[2]["wait_mean_us"] == pytest.approx(300.0)
    assert ev[2]["wait_total_us"] == pytest.approx(2700.0)
    assert ev[0]["last"] == 1 and ev[0]["wait_mean_us"] == pytest.approx(30.0) and not ev[0]["straggler"]
    assert ev[1]["last"] == 0 and ev[3]["last"] == 0
    assert "rank 2: last at 9 of 10 allreduce" in ev[2]["text"] and "300 µs" in ev[2]["text"]


def test_no_straggler_when_arrivals_are_balanced():
    """Each of 4 ranks is last at 2 or 3 of 10 instances: chance, no straggler."""
    per_rank = {r: [] for r in range(4)}
    for i in range(10):
        for r in range(4):
            late = r == i % 4
            per_rank[r].append(Coll("allreduce", 200.0 * i + (100 if late else 0), 200.0 * i + 150, group_size=4))
    view = distributed_view(job(per_rank, world_size=4))
    assert view["stragglers"] == []
    assert sorted(e["last"] for e in view["arrivals"]) == [2, 2, 3, 3]


def test_a_rank_last_by_a_hair_is_not_a_straggler():
    """Rank 1 is last at all 10 instances, but the others wait 1 µs for it out of 500 µs: not flagged."""
    per_rank = {
        r: [Coll("allreduce", 1000.0 * i + (1 if r == 1 else 0), 1000.0 * i + 500, group_size=4) for i in range(10)]
        for r in range(4)
    }
    view = distributed_view(job(per_rank, world_size=4))
    assert view["stragglers"] == []
    assert {e["rank"]: e["last"] for e in view["arrivals"]}[1] == 10


# -- the 8 real DLRM ranks -------------------------------------------------------------------------


@pytest.mark.corpus
def test_dlrm_straggler_is_the_rank_that_arrives_last():
    """DLRM on 8 V100s: rank 7's kernels are the shortest at 5 of the 8 collectives (it arrives last;
    the others wait for it). The old rule flagged ranks 1, 3, 4, 5 (long steps: they waited) and 7."""
    view = distributed_view(sample_ranks("dlrm_8ranks"))
    assert view["stragglers"] == [7]
    ev = {e["rank"]: e for e in view["arrivals"]}
    assert (ev[7]["last"], ev[7]["instances"]) == (5, 8)
    assert (ev[5]["last"], ev[4]["last"]) == (2, 1)
    assert view["instances"] == {"matched": 8, "total": 8}
    assert {r["name"]: (r["matched"], r["unmatched"]) for r in view["matching"]["by_type"]} == {
        "allreduce": (3, 0),
        "alltoall": (5, 0),
    }


def test_pg_config_size_is_the_communicator_size():
    """No Group size / Process Group Ranks on the kernels, but distributedInfo.pg_config says group "3"
    has 16 ranks while the job has 64: n = 16 for that group's all-reduce."""
    from synth.comm import rank_doc

    ranks = []
    for r in (0, 1):
        doc = rank_doc(r, [Coll("allreduce", 0.0 if r == 0 else 30.0, 130.0, nelems=250000, group="3")], world_size=64)
        doc["distributedInfo"]["pg_config"] = [
            {"pg_name": "3", "pg_desc": "tp", "pg_size": 16, "ranks": list(range(16))}
        ]
        ranks.append((r, f"rank{r}", decode_trace(json.dumps(doc).encode())))
    (coll,) = distributed_view(ranks)["collectives"]
    assert coll["group_size"] == 16 and coll["busbw_gbps"] == pytest.approx(10.0 * 2 * 15 / 16)


def test_route_shows_windows_that_do_not_line_up(tmp_path):
    """Through the registry: the matching message reaches the route's messages (the tab's notices)."""
    from synth.comm import rank_doc

    from tb_plugin.registry.runs import RunRegistry

    sizes = [1000 * (k + 1) for k in range(13)]
    (tmp_path / "job").mkdir()
    for r, colls in ((0, _chain(sizes[:10])), (1, _chain(sizes[3:]))):
        (tmp_path / "job" / f"rank{r}.1.pt.trace.json").write_text(json.dumps(rank_doc(r, colls, world_size=2)))
    reg = RunRegistry(str(tmp_path))
    reg.scan()
    got = reg.distributed("job", "1")
    assert got["view"]["instances"] == {"matched": 7, "total": 13}
    assert any("windows do not line up" in m for m in got["messages"])
