"""Performance recommendations derived from the Overview numbers: each one a ``rule``, the numbers it
rests on (units in the field names: ``_pct``, ``_us``, ``_bytes``, ``_ratio``) and its sentence, whose
numbers are those values written by the one rounding rule (:func:`tb_plugin.analysis.numfmt.fixed`, the UI's too).

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

from .numfmt import duration, fixed

from .breakdown import CATEGORY_LABELS, category_phrase

DATALOADER_PCT = 5.0
COMMUNICATION_PCT = 10.0
LOW_UTILIZATION_PCT = 50.0
MEMORY_PEAK_FRACTION = 0.9
UNBALANCED_RATIO = 1.5
#: Rules on a category's share of the average step: (category, threshold %, sentence).
_SHARE_RULES = (
    ("dataloader", DATALOADER_PCT,
     "DataLoader takes {pct}% of the average step. Load data in parallel: raise num_workers in "
     "torch.utils.data.DataLoader, and set pin_memory=True and persistent_workers=True."),
    ("communication", COMMUNICATION_PCT,
     "Communication takes {pct}% of the average step without overlapping computation. Overlap it (DDP "
     "bucket_cap_mb, gradient accumulation with no_sync) or send less (compress gradients, a larger batch "
     "per rank)."),
)


def recommend(average: dict[str, float], step_totals: list[float], step_names: list[str], gpus: list,
              fp32_eligible_kernel_us: dict[int, float], peak_memory: dict[int, int],
              first_step_prior_us: float = 0.0, step_breakdown: list[dict] | None = None) -> list[dict]:
    """Recommendations, most important first: ``{"rule", <values>, "text"}``. ``average`` holds the
    ``*_us`` keys; ``fp32_eligible_kernel_us`` maps a device to the kernel time of its FP32
    tensor-core-eligible ops; ``peak_memory`` a GPU index to its peak allocated bytes
    (:func:`.memory.gpu_peaks`); ``step_breakdown`` the per-step ``*_us`` categories (to name what
    makes a step long)."""
    out: list[dict] = []
    total = average.get("total_us", 0.0)
    if total <= 0:
        return out
    pct = {k: 100.0 * v / total for k, v in average.items() if k != "total_us"}
    for rule, threshold, sentence in _SHARE_RULES:
        value = pct.get(f"{rule}_us", 0.0)
        if value > threshold:
            out.append({"rule": rule, f"{rule}_pct": value, "text": sentence.format(pct=fixed(value, 1))})
    for gpu in gpus:
        if gpu.utilization_pct < LOW_UTILIZATION_PCT:
            worst = max((k for k in pct if k != "kernel_us"), key=lambda k: pct[k])
            out.append({"rule": "low_utilization", "gpu": gpu.id, "utilization_pct": gpu.utilization_pct,
                        "category": worst, "category_pct": pct[worst], "text":
                        f"GPU {gpu.id} is busy with kernels only {fixed(gpu.utilization_pct, 1)}% of the steps window. "
                        f"The largest non-kernel share of the step is {category_phrase(worst)} at "
                        f"{fixed(pct[worst], 1)}%: reduce it first."})
    for gpu in gpus:
        fp32_us = fp32_eligible_kernel_us.get(gpu.id, 0.0)
        if gpu.matrix_units and gpu.tensor_core_us == 0.0 and fp32_us > 0:
            units = "matrix cores" if gpu.vendor == "AMD" else "tensor cores"
            label = (f"architecture {gpu.architecture}" if gpu.architecture
                     else f"compute capability {gpu.compute_capability}" if gpu.compute_capability else "")
            out.append({"rule": "mixed_precision", "gpu": gpu.id, "fp32_eligible_kernel_us": fp32_us, "text":
                        f"GPU {gpu.id} has {units}{f' ({label})' if label else ''} but no kernel uses them, while "
                        f"matmul/convolution operators with FP32 inputs spend {duration(fp32_us)} in kernels. "
                        "Enable automatic mixed precision (torch.autocast with float16 or bfloat16)."})
    for gpu in gpus:
        peak = peak_memory.get(gpu.id)
        if peak and gpu.memory_bytes and peak > MEMORY_PEAK_FRACTION * gpu.memory_bytes:
            out.append({"rule": "memory_peak", "gpu": gpu.id, "peak_allocated_bytes": peak,
                        "memory_bytes": gpu.memory_bytes, "text":
                        f"GPU {gpu.id} peaks at {fixed(peak / 2**30, 1)} GiB allocated, over 90% of its "
                        f"{fixed(gpu.memory_bytes / 2**30, 1)} GiB. Use activation checkpointing or mixed precision "
                        "to leave headroom."})
    unbalanced = _unbalanced_step(step_totals, step_names, first_step_prior_us, step_breakdown)
    if unbalanced:
        out.append(unbalanced)
    return out


def _unbalanced_step(step_totals: list[float], step_names: list[str], first_step_prior_us: float,
                     step_breakdown: list[dict] | None) -> dict | None:
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
    doc = {"rule": "unbalanced_steps", "step": step_names[worst], "step_us": float(footing[worst]),
           "prior_us": float(prior) if worst == 0 else 0.0, "median_step_us": median,
           "ratio": float(footing[worst]) / median}
    took = f"Step {doc['step']} takes {duration(doc['step_us'])}"
    if worst == 0 and prior > 0:
        took += f" without the {duration(prior)} of GPU work launched before it"
    text = f"{took}, {fixed(doc['ratio'], 1)}× the median step ({duration(median)})."
    if step_breakdown and len(step_breakdown) == len(footing):
        keys = [k for k in CATEGORY_LABELS if all(k in row for row in step_breakdown)]
        excess = {k: step_breakdown[worst][k] - float(np.median([row[k] for row in step_breakdown])) for k in keys}
        top = max(excess, key=lambda k: excess[k]) if excess else None
        if top is not None and excess[top] > 0:
            doc.update(category=top, category_excess_us=excess[top])
            text += f" Most of the extra time is {category_phrase(top)} (+{duration(excess[top])} over the median step)."
    doc["text"] = text + " Look for what is special about it (warm-up, checkpointing, evaluation, a data stall)."
    return doc
