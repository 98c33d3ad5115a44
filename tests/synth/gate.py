"""Baseline/experiment trace pairs for the CI regression gate, with per-step times known by construction.

Each step ``ProfilerStep#i`` (pid 1/tid 1) starts where the previous one ends and holds two operators:
``aten::mm`` launching :data:`GEMM` and ``aten::add`` launching :data:`ADD` (``cuda_runtime`` launch
calls, kernels on device 0 stream 7 linked by ``correlation``). The kernels run back to back inside
the host step, which lasts ``HOST_PAD_US + gemm + add`` µs, so the step's total (the Overview's
``total_us``) is exactly that and the kernel time of a step is the kernel's duration. Times are µs.
"""

from __future__ import annotations

import numpy as np

from .compute import H100

GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel"
ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float> >"
HOST_PAD_US = 100.0  # host time of a step outside its kernels: 40 before, 60 after


def pair_trace(gemm_us: list[float], add_us: list[float]) -> dict:
    """The trace document of ``len(gemm_us)`` steps with these kernel durations (µs)."""
    events: list[dict] = []
    t, corr = 1000.0, 1
    for i, (g, a) in enumerate(zip(gemm_us, add_us)):
        step = HOST_PAD_US + g + a
        events.append(
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": f"ProfilerStep#{i + 1}",
                "pid": 1,
                "tid": 1,
                "ts": t,
                "dur": step,
                "args": {"External id": 10 * i + 1},
            }
        )
        k0 = t + 40.0
        for j, (op, kernel, start, dur) in enumerate((("aten::mm", GEMM, k0, g), ("aten::add", ADD, k0 + g, a))):
            ext = 10 * i + 2 + j
            events.append(
                {
                    "ph": "X",
                    "cat": "cpu_op",
                    "name": op,
                    "pid": 1,
                    "tid": 1,
                    "ts": t + 5 + 10 * j,
                    "dur": 8.0,
                    "args": {"External id": ext},
                }
            )
            events.append(
                {
                    "ph": "X",
                    "cat": "cuda_runtime",
                    "name": "cudaLaunchKernel",
                    "pid": 1,
                    "tid": 1,
                    "ts": t + 6 + 10 * j,
                    "dur": 2.0,
                    "args": {"External id": ext, "correlation": corr},
                }
            )
            events.append(
                {
                    "ph": "X",
                    "cat": "kernel",
                    "name": kernel,
                    "pid": 0,
                    "tid": 7,
                    "ts": start,
                    "dur": dur,
                    "args": {"External id": ext, "device": 0, "stream": 7, "correlation": corr},
                }
            )
            corr += 1
        t += step
    return {"schemaVersion": 1, "deviceProperties": [H100], "traceEvents": events}


def noisy(mean_us: float, rel_noise: float, steps: int, seed: int) -> list[float]:
    """``steps`` durations (µs): ``mean_us`` times (1 + rel_noise × a seeded standard normal), at least 1."""
    rng = np.random.default_rng(seed)
    return [max(1.0, float(v)) for v in mean_us * (1.0 + rel_noise * rng.standard_normal(steps))]


def step_totals(gemm_us: list[float], add_us: list[float]) -> list[float]:
    """The step totals (µs) :func:`pair_trace` gives."""
    return [HOST_PAD_US + g + a for g, a in zip(gemm_us, add_us)]
