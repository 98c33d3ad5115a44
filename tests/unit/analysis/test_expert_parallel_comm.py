"""Expert-parallel (DeepEP) dispatch/combine kernels are communication: in the step breakdown, the
critical path's communication kernels and the Distributed view (one rule, ``is_comm_kernel_name``)."""

from __future__ import annotations

import json

from tb_plugin.analysis.breakdown import compute_breakdown
from tb_plugin.analysis.distributed import comm_kernels, step_overlap
from tb_plugin.analysis.steps import compute_steps
from tb_plugin.trace.decode import decode_trace

#: DeepEP's intranode dispatch and combine kernels (tests/test_trust_comm.py lists every expert-parallel name).
EP_NAMES = [
    "void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*, int*, long*, float*, int*, int*, int4 const*, "
    "float const*, long const*, float const*, bool const*, int const*, int, int, int, int, int, int, int, int, void**, int, int, int)",
    "void deep_ep::intranode::combine<__nv_bfloat16, 8, 768, 4096>(__nv_bfloat16*, float*, __nv_bfloat16 const*, float const*, "
    "__nv_bfloat16 const*, __nv_bfloat16 const*, void const*, int const*, int const*, int const*, int, int, int, int, void**, int, int, int, int)",
]


def _moe_step_trace():
    """One 400 µs step on one GPU: an expert GEMM [10, 110), a DeepEP dispatch [150, 180) launched by no
    communication op (DeepEP calls its kernels from its own C++ extension), an expert GEMM [200, 260)
    and a DeepEP combine [250, 290) on a second stream that overlaps the GEMM by 10 µs."""

    def x(n, cat, ts, dur, pid=1, tid=1, **args):
        return {"ph": "X", "cat": cat, "name": n, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}

    kernels = [
        ("fused_moe_kernel", 10, 100, 7),
        (EP_NAMES[0], 150, 30, 7),
        ("fused_moe_kernel", 200, 60, 7),
        (EP_NAMES[1], 250, 40, 9),
    ]
    events = [x("ProfilerStep#1", "user_annotation", 0, 400)]
    for i, (name, start, dur, stream) in enumerate(kernels, start=1):
        events.append(x("deep_ep::Buffer::dispatch" if "deep_ep" in name else "aten::mm", "cpu_op", start - 9, 3))
        events.append(x("cudaLaunchKernel", "cuda_runtime", start - 8, 1, correlation=i))
        events.append(x(name, "kernel", start, dur, pid=0, tid=stream, correlation=i, device=0, stream=stream))
    return decode_trace(json.dumps({"traceEvents": events}).encode())


def test_deepep_time_is_communication_in_breakdown_and_distributed_view():
    trace = _moe_step_trace()
    b = compute_breakdown(trace, compute_steps(trace)).step(0)
    # 70 µs of dispatch/combine, of which 10 µs under a GEMM (the GEMM wins: kernel before communication)
    assert b["kernel_us"] == 160 and b["communication_us"] == 60
    ck = comm_kernels(trace)
    assert [trace.strings[int(trace.events.name[r])] for r in ck["rows"]] == EP_NAMES[:2]
    (step,) = step_overlap(trace)
    assert (step["computation_us"], step["overlap_us"], step["communication_us"]) == (150, 10, 60)


def test_deepep_combine_is_communication_on_the_critical_path():
    """The step's path ends through the DeepEP combine (the last device work): 40 µs of communication."""
    from tb_plugin.analysis.distributed import rank_reduce, single_rank_view

    (path,) = single_rank_view(0, "w0", rank_reduce(_moe_step_trace()))["critical_path"]
    assert path["by_category"]["communication"] == 40.0 and path["by_category"]["kernel"] == 0.0
    assert any(s["category"] == "communication" and s["name"] == EP_NAMES[1] for s in path["segments"])
