"""Plain-text performance recommendations derived from the Overview numbers.

Rules (thresholds are percentages of the average step time unless said otherwise):

- DataLoader > 5 % → raise ``num_workers`` / prefetch.
- Communication > 10 % → overlap or shrink communication.
- Any GPU's utilization < 50 % → name the dominant non-kernel category of the step.
- AMP, per GPU: the GPU has tensor cores (NVIDIA compute capability ≥ 7) or matrix cores (AMD
  MFMA/WMMA, decided from the gfx architecture, never from the CUDA rule), none of its kernels runs
  on them (tensor-core kernel time is 0 µs), and tensor-core-eligible operators with FP32 inputs
  (``Input type`` ``float``; never BFloat16/Half/FP8) launch kernels on it. The figure is that kernel
  time. We differ: the incumbent fires on eligible operators of any precision and reads AMD's
  architecture number as a CUDA capability.
- Peak allocated memory > 90 % of a device's memory → activation checkpointing or AMP.
- Unbalanced steps: steps are compared on the same footing — the first step without the GPU time that
  only work launched before it explains (``Steps.first_step_prior_work_us``; in a pipelined trace it
  stretches the first step). When the slowest step is then more than 1.5× the median step and 10 % of
  the mean above it → name that step and the category that exceeds its median the most.
"""

from __future__ import annotations

import numpy as np

DATALOADER_PCT = 5.0
COMMUNICATION_PCT = 10.0
LOW_UTILIZATION_PCT = 50.0
MEMORY_PEAK_FRACTION = 0.9
UNBALANCED_RATIO = 1.5

_LABELS = {
    "kernel_us": "Kernel", "memcpy_us": "Memcpy", "memset_us": "Memset", "communication_us": "Communication",
    "runtime_us": "Runtime (CUDA/HIP API calls)", "dataloader_us": "DataLoader", "cpu_exec_us": "CPU Exec",
    "other_us": "Other (host idle or unprofiled work)",
}


def recommend(average: dict[str, float], step_totals: list[float], step_names: list[str], gpus: list,
              fp32_eligible_kernel_us: dict[int, float], peak_memory: dict[int, int],
              first_step_prior_us: float = 0.0, step_breakdown: list[dict] | None = None) -> list[str]:
    """Return recommendations, most important first. ``average`` holds the ``*_us`` keys;
    ``fp32_eligible_kernel_us`` maps a device to the kernel time of its FP32 tensor-core-eligible ops;
    ``step_breakdown`` the per-step ``*_us`` categories (to name what makes a step long)."""
    out: list[str] = []
    total = average.get("total_us", 0.0)
    if total <= 0:
        return out
    pct = {k: 100.0 * v / total for k, v in average.items() if k != "total_us"}
    if pct.get("dataloader_us", 0) > DATALOADER_PCT:
        out.append(
            f"DataLoader takes {pct['dataloader_us']:.1f}% of the average step. Load data in parallel: "
            "raise num_workers in torch.utils.data.DataLoader, and set pin_memory=True and "
            "persistent_workers=True."
        )
    if pct.get("communication_us", 0) > COMMUNICATION_PCT:
        out.append(
            f"Communication takes {pct['communication_us']:.1f}% of the average step without overlapping "
            "computation. Overlap it (DDP bucket_cap_mb, gradient accumulation with no_sync) or send less "
            "(compress gradients, a larger batch per rank)."
        )
    for gpu in gpus:
        if gpu.utilization_pct < LOW_UTILIZATION_PCT:
            worst = max((k for k in pct if k != "kernel_us"), key=lambda k: pct[k])
            out.append(
                f"GPU {gpu.id} is busy with kernels only {gpu.utilization_pct:.1f}% of the steps window. "
                f"The largest non-kernel share of the step is {_LABELS[worst]} at {pct[worst]:.1f}%: "
                "reduce it first."
            )
    for gpu in gpus:
        fp32_us = fp32_eligible_kernel_us.get(gpu.id, 0.0)
        if gpu.matrix_units and gpu.tensor_core_us == 0.0 and fp32_us > 0:
            units = "matrix cores" if gpu.vendor == "AMD" else "tensor cores"
            label = (f"architecture {gpu.architecture}" if gpu.architecture
                     else f"compute capability {gpu.compute_capability}" if gpu.compute_capability else "")
            out.append(
                f"GPU {gpu.id} has {units}{f' ({label})' if label else ''} but no kernel uses them, while "
                f"matmul/convolution operators with FP32 inputs spend {_duration(fp32_us)} in kernels. "
                "Enable automatic mixed precision (torch.autocast with float16 or bfloat16)."
            )
    for gpu in gpus:
        peak = peak_memory.get(gpu.id)
        if peak and gpu.memory_bytes and peak > MEMORY_PEAK_FRACTION * gpu.memory_bytes:
            out.append(
                f"GPU {gpu.id} peaks at {peak / 2**30:.1f} GiB allocated, over 90% of its "
                f"{gpu.memory_bytes / 2**30:.1f} GiB. Use activation checkpointing or mixed precision to leave "
                "headroom."
            )
    unbalanced = _unbalanced_step(step_totals, step_names, first_step_prior_us, step_breakdown)
    if unbalanced:
        out.append(unbalanced)
    return out


def _unbalanced_step(step_totals: list[float], step_names: list[str], first_step_prior_us: float,
                     step_breakdown: list[dict] | None) -> str | None:
    """The unbalanced-steps advice (module docstring), or None."""
    if len(step_totals) < 3:
        return None
    footing = np.asarray(step_totals, dtype=np.float64).copy()
    prior = min(max(first_step_prior_us, 0.0), footing[0])
    footing[0] -= prior
    median = float(np.median(footing))
    worst = int(np.argmax(footing))
    if not (median > 0 and footing[worst] > UNBALANCED_RATIO * median and footing[worst] > 1.1 * footing.mean()):
        return None
    took = f"Step {step_names[worst]} takes {_duration(footing[worst])}"
    if worst == 0 and prior > 0:
        took += f" without the {_duration(prior)} of GPU work launched before it"
    text = f"{took}, {footing[worst] / median:.1f}× the median step ({_duration(median)})."
    if step_breakdown and len(step_breakdown) == len(footing):
        keys = [k for k in _LABELS if all(k in row for row in step_breakdown)]
        excess = {k: step_breakdown[worst][k] - float(np.median([row[k] for row in step_breakdown])) for k in keys}
        top = max(excess, key=lambda k: excess[k]) if excess else None
        if top is not None and excess[top] > 0:
            text += f" Most of the extra time is {_LABELS[top]} (+{_duration(excess[top])} over the median step)."
    return text + " Look for what is special about it (warm-up, checkpointing, evaluation, a data stall)."


def _duration(us: float) -> str:
    return f"{us / 1000:.1f} ms" if us >= 1000 else f"{us:.0f} µs"
