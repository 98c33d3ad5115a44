"""Performance recommendations: ONE list per file, the Overview's rules here and the Insights' and
runtime calls' in :mod:`.advice`, served identically by every interface. Each recommendation is
``{"rule", "addressed_us", "threshold_us", "basis", <values>, "text"}``: the time it addresses, its
rule's threshold over the same ``basis`` (``"average_step"``: µs per average step; ``"steps_window"``:
µs over the steps window; ``"median_step"``: µs over the median step; ``"kernel_time"``: µs of the
trace's kernel time), the numbers it rests on
(units in the field names: ``_pct``, ``_us``, ``_bytes``, ``_ratio``) and its sentence, whose numbers
are those values written by the one rounding rule (:func:`tb_plugin.analysis.numfmt.fixed`, the UI's
too). A rule fires only when its addressed time reaches its threshold (:data:`THRESHOLDS`, the table
of docs/METRICS.md); byte-based advice (``memory_peak``) states bytes instead (``addressed_bytes``,
``threshold_bytes``).

Rules of this module (thresholds: :data:`THRESHOLDS`):

- DataLoader share of the average step → raise ``num_workers`` / prefetch.
- Communication share → overlap or shrink communication.
- Any GPU's utilization < 50 % → name the largest non-kernel category of the step, counting in Runtime
  only the calls no other rule explains (allocator, blocking copies, synchronizations: ``explained_us``);
  silent when that category is DataLoader or Communication and its own rule already speaks.
- AMP, per GPU: the GPU has tensor cores (NVIDIA compute capability ≥ 7) or matrix cores (AMD
  MFMA/WMMA, decided from the gfx architecture, never from the CUDA rule), none of its kernels runs
  on them (tensor-core kernel time is 0 µs), and tensor-core-eligible operators with FP32 inputs
  (``Input type`` ``float``; never BFloat16/Half/FP8) launch kernels on it for at least the threshold.
  We differ: the incumbent fires on eligible operators of any precision, at any time, and reads AMD's
  architecture number as a CUDA capability.
- Peak allocated memory > 90 % of a device's memory → activation checkpointing or AMP.
- Unbalanced steps: steps are compared on the same footing — the first step without the GPU time that
  only work launched before it explains (``Steps.first_step_prior_work_us``; in a pipelined trace it
  stretches the first step). When the slowest step is then more than 1.5× the median step and 10 % of
  the mean above it → name that step and the category that exceeds its median the most.
"""

from __future__ import annotations

from typing import Any, TypedDict, cast

import numpy as np

from ..trace import uniques
from .breakdown import CATEGORY_LABELS, category_phrase
from .numfmt import duration, fixed

DATALOADER_PCT = 5.0
COMMUNICATION_PCT = 10.0
LOW_UTILIZATION_PCT = 50.0
MEMORY_PEAK_FRACTION = 0.9
UNBALANCED_RATIO = 1.5
DEFAULT_PCT = 5.0
#: Each time-based rule's threshold, % of its basis (docs/METRICS.md "Recommendations" has this table).
THRESHOLDS = {
    "dataloader": DATALOADER_PCT,
    "communication": COMMUNICATION_PCT,
    "low_utilization": DEFAULT_PCT,
    "mixed_precision": DEFAULT_PCT,
    "unbalanced_steps": 100.0 * (UNBALANCED_RATIO - 1.0),  # % of the median step
    "cuda_graphs": 10.0,
    "cpu_overhead": 10.0,
    "allocator": DEFAULT_PCT,
    "blocking_copy": DEFAULT_PCT,
    "synchronize": DEFAULT_PCT,
    # CUDA graphs and torch.compile (analysis/graphs.py, analysis/compiled_regions.py)
    "graphs.capture_missing": 20.0,  # % of the trace's kernel time (basis "kernel_time")
    "compile.graph_breaks": DEFAULT_PCT,
    "compile.cache_lookup": DEFAULT_PCT,
    "compile.recompilation": 10.0,  # % of the median step, per recompiling step
}
#: Rules about step time, left out of a trace whose steps are not training or inference steps.
STEP_RULES = frozenset(
    ("dataloader", "communication", "low_utilization", "unbalanced_steps", "cuda_graphs", "cpu_overhead")
)


class RecommendationBase(TypedDict):
    """What every recommendation holds."""

    rule: str  # the rule's name (:data:`THRESHOLDS`, ``memory_peak``)
    text: str  # its sentence


class Recommendation(RecommendationBase, total=False):
    """One recommendation of the one list every interface shows (module docstring): the time it
    addresses and its threshold (µs over ``basis``) or, for byte-based advice, bytes, and the values of
    its rule (only the rule's own are present)."""

    addressed_us: float
    threshold_us: float
    basis: str  # "average_step", "steps_window", "median_step" or "kernel_time"
    addressed_bytes: int  # memory_peak
    threshold_bytes: int
    gpu: int  # the device the rule speaks of
    dataloader_pct: float  # % of the average step
    communication_pct: float
    utilization_pct: float  # low_utilization: the GPU's utilization
    category: str  # the breakdown category it names (low_utilization, unbalanced_steps)
    category_pct: float  # % of the average step
    category_excess_us: float  # unbalanced_steps: over the median step
    fp32_eligible_kernel_us: float  # mixed_precision
    peak_allocated_bytes: int  # memory_peak
    memory_bytes: int  # the device's memory
    step: str  # unbalanced_steps: the slowest step's name
    step_us: float
    prior_us: float  # GPU time of work launched before the first step, left out of it
    median_step_us: float
    ratio: float  # the step over the median step
    api: str  # runtime-call rules: the dominant API
    calls: int
    api_us: float
    operator: str | None  # the operator that issued most of its time
    frame: str | None  # the Python frame of that operator
    gaps: int  # cuda_graphs: launch-bound gaps
    threshold_pct: float  # graphs.*, compile.*: the rule's threshold, % of its basis
    share_pct: float
    steps: list[Any]  # compile.recompilation: the recompiling steps' names


def threshold_us(rule: str, basis_us: float) -> float:
    """The rule's threshold in µs over a basis of ``basis_us`` (the average step or the steps window)."""
    return THRESHOLDS[rule] / 100.0 * max(basis_us, 0.0)


def recommendation(
    rule: str, addressed_us: float, limit_us: float, basis: str, text: str, **values: Any
) -> Recommendation:
    """One recommendation in the documented shape (module docstring); ``values`` are keys of
    :class:`Recommendation`."""
    doc = {
        "rule": rule,
        **values,
        "addressed_us": float(addressed_us),
        "threshold_us": float(limit_us),
        "basis": basis,
        "text": text,
    }
    return cast(Recommendation, doc)


def _basis_share(rec: Recommendation) -> float:
    """The share of its basis a time-based recommendation addresses (its threshold is
    :data:`THRESHOLDS` % of that basis); 0 for byte-based advice."""
    if "addressed_us" not in rec or rec["threshold_us"] <= 0:
        return 0.0
    return rec["addressed_us"] / rec["threshold_us"] * THRESHOLDS[rec["rule"]] / 100.0


def ordered(recs: list[Recommendation]) -> list[Recommendation]:
    """Most important first: time-based advice by the share of its basis it addresses, then bytes."""
    return sorted(recs, key=lambda r: ("addressed_us" not in r, -_basis_share(r)))


#: Rules on a category's share of the average step: (category, threshold %, sentence).
_SHARE_RULES = (
    (
        "dataloader",
        DATALOADER_PCT,
        "DataLoader takes {pct}% of the average step. Load data in parallel: raise num_workers in "
        "torch.utils.data.DataLoader, and set pin_memory=True and persistent_workers=True.",
    ),
    (
        "communication",
        COMMUNICATION_PCT,
        "Communication takes {pct}% of the average step without overlapping computation. Overlap it (DDP "
        "bucket_cap_mb, gradient accumulation with no_sync) or send less (compress gradients, a larger batch "
        "per rank).",
    ),
)


def recommend(
    average: dict[str, float],
    step_totals: list[float],
    step_names: list[str],
    gpus: list,
    fp32_eligible_kernel_us: dict[int, float],
    peak_memory: dict[int, int],
    first_step_prior_us: float = 0.0,
    step_breakdown: list[dict] | None = None,
    explained_us: float = 0.0,
    window_us: float = 0.0,
) -> list[Recommendation]:
    """The Overview's recommendations (module docstring). ``average`` holds the ``*_us`` keys;
    ``fp32_eligible_kernel_us`` maps a device to the kernel time of its FP32 tensor-core-eligible ops;
    ``peak_memory`` a GPU index to its peak allocated bytes (:func:`.memory.gpu_peaks`);
    ``step_breakdown`` the per-step ``*_us`` categories (to name what makes a step long);
    ``explained_us`` the Runtime time per average step that the call rules address
    (:func:`.advice.named_call_idle_us` per step); ``window_us`` the steps window."""
    out: list[Recommendation] = []
    total = average.get("total_us", 0.0)
    if total <= 0:
        return out
    pct = {k: 100.0 * v / total for k, v in average.items() if k != "total_us"}
    for rule, _, sentence in _SHARE_RULES:
        value_us, limit = average.get(f"{rule}_us", 0.0), threshold_us(rule, total)
        if value_us > 0 and value_us >= limit:
            value = pct[f"{rule}_us"]
            out.append(
                recommendation(
                    rule,
                    value_us,
                    limit,
                    "average_step",
                    sentence.format(pct=fixed(value, 1)),
                    **{f"{rule}_pct": value},
                )
            )
    own = {k: v for k, v in average.items() if k not in ("total_us", "kernel_us")}
    if "runtime_us" in own:  # Runtime time that another rule names (allocator, blocking calls) is not overhead
        own["runtime_us"] = max(own["runtime_us"] - explained_us, 0.0)
    for gpu in gpus:
        worst = max(own, key=lambda k: own[k]) if own else None
        limit = threshold_us("low_utilization", total)
        named = worst in ("dataloader_us", "communication_us") and any(r["rule"] == worst[:-3] for r in out)
        if gpu.utilization_pct < LOW_UTILIZATION_PCT and worst and own[worst] >= limit and not named:
            share = 100.0 * own[worst] / total
            out.append(
                recommendation(
                    "low_utilization",
                    own[worst],
                    limit,
                    "average_step",
                    f"GPU {gpu.id} is busy with kernels only {fixed(gpu.utilization_pct, 1)}% of the steps window. "
                    f"The largest non-kernel share of the step{' (without allocator, blocking-copy and synchronize calls)' if worst == 'runtime_us' and explained_us > 0 else ''} "
                    f"is {category_phrase(worst)} at {fixed(share, 1)}%: reduce it first.",
                    gpu=gpu.id,
                    utilization_pct=gpu.utilization_pct,
                    category=worst,
                    category_pct=share,
                )
            )
    for gpu in gpus:
        fp32_us = fp32_eligible_kernel_us.get(gpu.id, 0.0)
        limit = threshold_us("mixed_precision", window_us)
        if gpu.matrix_units and gpu.tensor_core_us == 0.0 and fp32_us > 0 and fp32_us >= limit:
            units = "matrix cores" if gpu.vendor == "AMD" else "tensor cores"
            label = (
                f"architecture {gpu.architecture}"
                if gpu.architecture
                else f"compute capability {gpu.compute_capability}"
                if gpu.compute_capability
                else ""
            )
            out.append(
                recommendation(
                    "mixed_precision",
                    fp32_us,
                    limit,
                    "steps_window",
                    f"GPU {gpu.id} has {units}{f' ({label})' if label else ''} but no kernel uses them, while "
                    f"matmul/convolution operators with FP32 inputs spend {duration(fp32_us)} in kernels. "
                    "Enable automatic mixed precision (torch.autocast with float16 or bfloat16).",
                    gpu=gpu.id,
                    fp32_eligible_kernel_us=fp32_us,
                )
            )
    for gpu in gpus:
        peak = peak_memory.get(gpu.id)
        if peak and gpu.memory_bytes and peak > MEMORY_PEAK_FRACTION * gpu.memory_bytes:
            out.append(
                {
                    "rule": "memory_peak",
                    "gpu": gpu.id,
                    "peak_allocated_bytes": peak,
                    "memory_bytes": gpu.memory_bytes,
                    "addressed_bytes": int(peak),
                    "threshold_bytes": int(MEMORY_PEAK_FRACTION * gpu.memory_bytes),
                    "text": f"GPU {gpu.id} peaks at {fixed(peak / 2**30, 1)} GiB allocated, over 90% of its "
                    f"{fixed(gpu.memory_bytes / 2**30, 1)} GiB. Use activation checkpointing or mixed precision "
                    "to leave headroom.",
                }
            )
    unbalanced = _unbalanced_step(step_totals, step_names, first_step_prior_us, step_breakdown)
    if unbalanced:
        out.append(unbalanced)
    return out


def _unbalanced_step(
    step_totals: list[float], step_names: list[str], first_step_prior_us: float, step_breakdown: list[dict] | None
) -> Recommendation | None:
    """The unbalanced-steps advice (module docstring), or None."""
    if len(step_totals) < 3:
        return None
    footing = np.asarray(step_totals, dtype=np.float64).copy()
    prior = min(max(first_step_prior_us, 0.0), footing[0])
    footing[0] -= prior
    median = float(uniques.median(footing))
    worst = int(np.argmax(footing))
    if not (median > 0 and footing[worst] > UNBALANCED_RATIO * median and footing[worst] > 1.1 * footing.mean()):
        return None
    doc = recommendation(
        "unbalanced_steps",
        float(footing[worst]) - median,
        threshold_us("unbalanced_steps", median),
        "median_step",
        "",
        step=step_names[worst],
        step_us=float(footing[worst]),
        prior_us=float(prior) if worst == 0 else 0.0,
        median_step_us=median,
        ratio=float(footing[worst]) / median,
    )
    took = f"Step {doc['step']} takes {duration(doc['step_us'])}"
    if worst == 0 and prior > 0:
        took += f" without the {duration(prior)} of GPU work launched before it"
    text = f"{took}, {fixed(doc['ratio'], 1)}× the median step ({duration(median)})."
    if step_breakdown and len(step_breakdown) == len(footing):
        keys = [k for k in CATEGORY_LABELS if all(k in row for row in step_breakdown)]
        excess = {k: step_breakdown[worst][k] - float(uniques.median([row[k] for row in step_breakdown])) for k in keys}
        top = max(excess, key=lambda k: excess[k]) if excess else None
        if top is not None and excess[top] > 0:
            doc["category"], doc["category_excess_us"] = top, excess[top]
            text += (
                f" Most of the extra time is {category_phrase(top)} (+{duration(excess[top])} over the median step)."
            )
    doc["text"] = text + " Look for what is special about it (warm-up, checkpointing, evaluation, a data stall)."
    return doc
