"""The Overview of one trace file: steps, breakdown, GPU summary, configuration, recommendations.

Returns plain JSON-ready dicts whose shape is documented in ``docs/http_api.md``; the CLI and the
HTTP route both call :func:`compute_overview`. All times are µs.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..trace.categories import Kind
from ..trace.model import Trace
from .breakdown import CATEGORIES, compute_breakdown
from .gpu import compute_gpu_summary
from .launch_context import device_work_inside, operator_mask
from .memory_peak import peak_allocated_by_gpu
from .recommendations import recommend
from .steps import compute_steps
from .tensor_cores import is_tensor_core_eligible_op

CATEGORY_KEYS = [f"{c}_us" for c in CATEGORIES]


def compute_overview(trace: Trace, workers_in_run: int = 1) -> dict[str, Any]:
    """Everything the Overview page shows, for one worker's trace file."""
    steps = compute_steps(trace)
    breakdown = compute_breakdown(trace, steps)
    ops = operator_mask(trace)
    op_launched = device_work_inside(trace, ops)
    gpus = compute_gpu_summary(trace, steps, op_launched)
    eligible_ops = ops & trace.name_mask(is_tensor_core_eligible_op)
    kernels = trace.events.kind == Kind.KERNEL
    eligible_kernel_us = float(trace.events.dur[kernels & device_work_inside(trace, eligible_ops)].sum())

    origin = float(steps.start[0]) if len(steps) else 0.0
    step_rows = []
    for i, name in enumerate(steps.names):
        row = {"step": name, "start_us": float(steps.start[i] - origin), "end_us": float(steps.end[i] - origin),
               "total_us": float(steps.end[i] - steps.start[i])}
        row.update(breakdown.step(i))
        step_rows.append(row)
    average = {"total_us": float(np.mean([r["total_us"] for r in step_rows])) if step_rows else 0.0}
    average.update(breakdown.average())

    recommendations = recommend(
        average,
        [r["total_us"] for r in step_rows],
        steps.names,
        gpus,
        eligible_kernel_us,
        peak_allocated_by_gpu(trace),
    )
    lo, hi = steps.window
    return {
        "configuration": {
            "workers_in_run": workers_in_run,
            "device_type": "GPU" if gpus else "CPU",
            "gpu_count": len(gpus),
            "step_count": len(steps),
            "steps_window_us": hi - lo,
            "average_step_us": average["total_us"],
            "has_step_markers": steps.has_markers,
            "dropped_tail_steps": steps.dropped_tail,
            "distributed": _distributed(trace),
            "trace_format": trace.meta.get("trace_format"),
            "pytorch_version": trace.meta.get("pytorch_version"),
        },
        "categories": CATEGORY_KEYS,
        "steps": step_rows,
        "average": average,
        "gpus": [_gpu_json(g) for g in gpus],
        "recommendations": recommendations,
    }


def _gpu_json(gpu) -> dict[str, Any]:
    d = dataclasses.asdict(gpu)
    d.pop("kernel_us", None)
    return d


def _distributed(trace: Trace) -> dict[str, Any] | None:
    info = trace.distributed
    if not info:
        return None
    return {"backend": info.get("backend"), "rank": info.get("rank"), "world_size": info.get("world_size")}
