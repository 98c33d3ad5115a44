"""The Overview of one trace file: steps, breakdown, GPU summary, configuration, the file's ONE list of
recommendations (:func:`advise`: this module's, the Insights' and the runtime calls' rules) and the
"About this trace" warnings.

Returns plain JSON-ready dicts whose shape is documented in ``docs/http_api.md``; the CLI and the
HTTP route both call :func:`compute_overview`. All times are µs.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypedDict, cast

import numpy as np

from ..trace.categories import COMPOSER_BATCH, COMPOSER_EVENT_PREFIX
from ..trace.model import Trace
from ..trace.platform import accelerator_name
from . import advice
from .advice import AboutNote
from .breakdown import CATEGORIES, CATEGORY_LABELS, compute_breakdown
from .compiled_regions import compiled_regions
from .counters import counter_series
from .gpu import INTERNAL_FIELDS, compute_gpu_summary
from .graphs import graph_advice
from .insights import insights
from .intervals import covered_in_windows, merge
from .launch_context import device_work_inside, operator_mask
from .memory import gpu_peaks
from .recommendations import STEP_RULES, Recommendation, ordered, recommend
from .runtime_calls import RuntimeCalls, runtime_calls
from .series import reduce_to
from .steps import compute_steps
from .tensor_cores import fp32_eligible_kernel_us_by_device

CATEGORY_KEYS = [f"{c}_us" for c in CATEGORIES]


class ClippedStep(TypedDict):
    """A step whose annotation outlived the profiler, cut at its end (µs from the first step's start)."""

    step: str
    host_end_us: float
    clipped_to_us: float


class Configuration(TypedDict):
    """The Overview's configuration: workers, device, steps and versions (µs)."""

    workers_in_run: int
    device_type: str  # the accelerator's name ("GPU", "MTIA"), or "CPU" without one
    gpu_count: int
    step_count: int
    steps_window_us: float
    average_step_us: float
    has_step_markers: bool
    dropped_tail_steps: list[str]  # trailing steps left out (analysis/steps.py)
    clipped_steps: list[ClippedStep]
    distributed: dict[str, Any] | None  # the trace's distributedInfo; None without one
    trace_format: str | None
    pytorch_version: str | None


class GpuRow(TypedDict):
    """One device of the Overview (analysis/gpu.py ``GpuSummary`` without its internal fields)."""

    id: int
    name: str | None
    memory_bytes: int | None
    vendor: str | None  # "NVIDIA", "AMD" or None
    compute_capability: str | None  # None on AMD
    architecture: str | None  # AMD gfx architecture; None on NVIDIA
    utilization_pct: float
    sm_efficiency_pct: float | None
    kernel_us_without_geometry: float  # left out of SM efficiency
    achieved_occupancy_pct: float | None
    tensor_core_pct: float | None
    kernel_us_without_occupancy: float  # left out of occupancy
    device_type: str  # "GPU", or the accelerator's name ("MTIA"): GPU-only metrics are None there


class StepRow(TypedDict):
    """One step of the Overview (µs from the first step's start; the breakdown per ``CATEGORY_KEYS``)."""

    step: str  # the step's name ("5" for ``ProfilerStep#5``)
    start_us: float
    end_us: float
    total_us: float
    kernel_us: float
    memcpy_us: float
    memset_us: float
    communication_us: float
    runtime_us: float
    dataloader_us: float
    cpu_exec_us: float
    other_us: float


class TrainerEventRow(TypedDict):
    """A Composer engine event (:func:`trainer_events`): its time inside the kept steps (µs)."""

    name: str
    total_us: float
    mean_per_step_us: float


class SystemMetric(TypedDict):
    """A counter series (:func:`system_metrics`), reduced to at most ``MAX_METRIC_POINTS`` points."""

    name: str
    ts_us: list[float]  # µs from the first step's start
    values: list[float]


class Overview(TypedDict):
    """Everything the Overview page shows of one worker's trace file (:func:`compute_overview`; times
    in µs, step times from the first step's start). A plain dict at run time, so the JSON is the
    dict itself; the type checker holds the keys every interface reads."""

    configuration: Configuration
    categories: list[str]  # CATEGORY_KEYS: the breakdown's columns
    category_labels: dict[str, str]
    steps: list[StepRow]
    average: dict[str, float]  # the average step: total_us and each category
    average_pct: dict[str, float | None]  # each category's share of the average step (%; None without steps)
    gpus: list[GpuRow]
    recommendations: list[str]  # the sentences of recommendation_details
    recommendation_details: list[Recommendation]  # analysis/recommendations.py
    about: list[AboutNote]  # "About this trace" warnings (analysis/advice.py)
    runtime_calls: RuntimeCalls  # analysis/runtime_calls.py
    trainer_events: list[TrainerEventRow]
    system_metrics: list[SystemMetric]


def compute_overview(trace: Trace, workers_in_run: int = 1) -> Overview:
    """Everything the Overview page shows, for one worker's trace file."""
    steps = compute_steps(trace)
    breakdown = compute_breakdown(trace, steps)
    ops = operator_mask(trace)
    gpus = gpu_summary(trace)
    fp32_eligible_kernel_us = fp32_eligible_kernel_us_by_device(trace, ops)

    origin = float(steps.start[0]) if len(steps) else 0.0
    step_rows: list[dict[str, Any]] = []
    for i, name in enumerate(steps.names):
        row = {
            "step": name,
            "start_us": float(steps.start[i] - origin),
            "end_us": float(steps.end[i] - origin),
            "total_us": float(steps.end[i] - steps.start[i]),
        }
        row.update(breakdown.step(i))
        step_rows.append(row)
    average = {"total_us": float(np.mean([r["total_us"] for r in step_rows])) if step_rows else 0.0}
    average.update(breakdown.average())
    # each category's share of the average step (%; None without steps): the one computation of the
    # CLI's "% of step" column and the Overview's Execution Summary
    total = average["total_us"]
    average_pct = {k: (average[k] / total * 100 if total > 0 else None) for k in CATEGORY_KEYS}

    lo, hi = steps.window
    recommendations, about = advise(
        trace,
        recommend(
            average,
            [r["total_us"] for r in step_rows],
            steps.names,
            gpus,
            fp32_eligible_kernel_us,
            gpu_peaks(trace),
            first_step_prior_us=steps.first_step_prior_work_us,
            step_breakdown=step_rows,
            explained_us=advice.named_call_idle_us(trace) / len(steps) if len(steps) else 0.0,
            window_us=hi - lo,
        ),
    )
    return {
        "configuration": {
            "workers_in_run": workers_in_run,
            "device_type": accelerator_name(trace) if gpus else "CPU",
            "gpu_count": len(gpus),
            "step_count": len(steps),
            "steps_window_us": hi - lo,
            "average_step_us": average["total_us"],
            "has_step_markers": steps.has_markers,
            "dropped_tail_steps": steps.dropped_tail,
            # steps whose annotation outlived the profiler, cut at its end (µs from the first step's start)
            "clipped_steps": [
                {
                    "step": c["step"],
                    "host_end_us": c["host_end_us"] - origin,
                    "clipped_to_us": c["clipped_to_us"] - origin,
                }
                for c in steps.clipped
            ],
            "distributed": _distributed(trace),
            "trace_format": trace.meta.get("trace_format"),
            "pytorch_version": trace.meta.get("pytorch_version"),
        },
        "categories": CATEGORY_KEYS,
        "category_labels": dict(CATEGORY_LABELS),
        "steps": cast("list[StepRow]", step_rows),  # built with breakdown.step's keys
        "average": average,
        "average_pct": average_pct,
        "gpus": [_gpu_json(g) for g in gpus],
        "recommendations": [r["text"] for r in recommendations],
        "recommendation_details": recommendations,
        "about": about,
        "runtime_calls": runtime_calls(trace),
        "trainer_events": trainer_events(trace, steps),
        "system_metrics": system_metrics(trace, origin),
    }


def advise(trace: Trace, overview_recs: list[Recommendation]) -> tuple[list[Recommendation], list[AboutNote]]:
    """``(recommendations, about)``: the Overview's rules with the Insights' and the runtime calls'
    (:mod:`.advice`) and the CUDA-graph and torch.compile rules (:mod:`.graphs`, :mod:`.compiled_regions`),
    most important first; none on step time when the trace captures CUDA graphs."""
    about = advice.about(trace)
    compiled = compiled_regions(trace)
    recs = (
        overview_recs
        + advice.call_rules(trace)
        + advice.idle_rules(trace, insights(trace))
        + graph_advice(trace)
        + (compiled["advice"] if compiled is not None else [])
    )
    if any(a["kind"] == "graph_capture" for a in about):
        recs = [r for r in recs if r["rule"] not in STEP_RULES]
    return ordered(recs), about


def trainer_events(trace: Trace, steps) -> list[TrainerEventRow]:
    """Composer engine events (``event/forward``, ``event/backward``…) outside the exclusive breakdown:
    total µs inside the kept steps (the steps themselves, not the gaps between them: an event that
    spans them all, ``event/epoch``, has a mean per step of at most the average step) and the mean
    per step."""
    ev = trace.events
    rows = np.flatnonzero(
        trace.name_mask(
            lambda s: (
                s.startswith(COMPOSER_EVENT_PREFIX) and s != COMPOSER_BATCH and not s.startswith("event/dataloader")
            )
        )
    )
    if len(rows) == 0 or len(steps) == 0:
        return []
    step_s, step_e = merge(np.asarray(steps.start, dtype=np.float64), np.asarray(steps.end, dtype=np.float64))
    clipped = covered_in_windows(step_s, step_e, ev.ts[rows], ev.ts[rows] + ev.dur[rows])
    names, inv = np.unique(ev.name[rows], return_inverse=True)
    totals = np.bincount(inv, weights=clipped, minlength=len(names))
    out: list[TrainerEventRow] = [
        {"name": trace.strings[n], "total_us": float(t), "mean_per_step_us": float(t) / len(steps)}
        for n, t in zip(names, totals)
    ]
    return sorted(out, key=lambda r: -r["total_us"])


MAX_METRIC_POINTS = 2000


def system_metrics(trace: Trace, origin: float) -> list[SystemMetric]:
    """Counter series (``C`` events: Composer's cpu, memory, disk, network) relative to ``origin`` (the
    first step's start, µs): the series of :func:`.counters.counter_series` (the Trace view's counter
    tracks), each reduced to at most ``MAX_METRIC_POINTS`` points by :func:`.series.reduce_to` (per bin
    of its own span its largest and its last sample)."""
    out: list[SystemMetric] = []
    for name, ts, values in counter_series(trace):
        if len(ts) == 0:
            continue
        keep = reduce_to(ts, values, MAX_METRIC_POINTS)
        out.append({"name": name, "ts_us": (ts[keep] - origin).tolist(), "values": values[keep].tolist()})
    return out


def rank_devices(trace: Trace) -> dict[str, Any]:
    """The devices of one trace exactly as its Overview shows them: ``distributed`` (backend, rank,
    world size; None without distributedInfo) and ``gpus`` (the Overview's GPU summary rows)."""
    return {"distributed": _distributed(trace), "gpus": [_gpu_json(g) for g in gpu_summary(trace)]}


def gpu_summary(trace: Trace) -> list:
    """The Overview's GPU summary rows (:func:`~.gpu.compute_gpu_summary` over the steps' window, kernels
    launched inside operators marked), computed once per trace: the Overview and the per-rank devices
    both show them."""
    return trace.memo(
        "gpu_summary",
        lambda: compute_gpu_summary(trace, compute_steps(trace), device_work_inside(trace, operator_mask(trace))),
    )


def _gpu_json(gpu) -> GpuRow:
    d = dataclasses.asdict(gpu)
    for key in INTERNAL_FIELDS:
        d.pop(key, None)
    return cast(GpuRow, d)


def _distributed(trace: Trace) -> dict[str, Any] | None:
    info = trace.distributed
    if not info:
        return None
    return {"backend": info.get("backend"), "rank": info.get("rank"), "world_size": info.get("world_size")}
