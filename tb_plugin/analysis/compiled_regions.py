"""``torch.compile`` in a trace: time per compiled region, Inductor's Triton kernels by region, and
recompilations and graph breaks per step.

Definitions (µs):

- **Regions** are the operator events ``Torch-Compiled Region: i/j`` (``i`` the Dynamo frame, ``j`` its
  compiled version: ``j > 0`` is a recompilation; older PyTorch writes no ``i/j``), ``CompiledFunction``
  (the compiled forward), ``CompiledFunctionBackward`` and ``TorchDynamo Cache Lookup`` (guard checks
  before a compiled frame runs). Per region name: calls, host time (Σ durations), device time (Σ the
  kernels, memcpy and memset launched inside them, by time on the launching thread), those kernels, Triton
  ones (name ``triton_…``) apart. Regions nest (``CompiledFunction`` runs inside a
  ``Torch-Compiled Region``), so a kernel counts for each region around it.
- **Triton kernels**: per name, calls, time and the innermost region name around its launch; Inductor's
  name tells the kind (``poi`` pointwise, ``red`` reduction, ``per`` persistent reduction, ``tem``
  template, ``for`` foreach) and the fused ATen ops (``fused``: the text between ``fused_`` and the
  final ``_N``, as Inductor joined it). When Inductor's provenance file (``kernel_information.json``)
  lies beside the trace (read by the registry into ``meta["inductor_kernels"]``), ``source_nodes`` are
  the FX nodes the kernel fused (its pre-grad nodes, else its post-grad nodes) and ``source_lines``
  their stack traces; else both are None.
- **Per step** (the Overview's steps): compiled-region calls, distinct frames ``i``, the versions
  ``i/j`` that ran, **recompilations** (versions with ``j > 0`` first seen in that step), cache-lookup
  time, and **between** = on each thread, the time from the end of one ``Torch-Compiled Region`` to the
  start of the next in the step (eager code between compiled frames: graph breaks, or code that was
  never compiled).
- **Advice** (data for the recommendation list; each with ``rule``, ``addressed_us`` and the
  threshold it passed): ``compile.graph_breaks`` when two frames or more run per step and the time
  between them is ≥ :data:`BETWEEN_PCT` % of the average step; ``compile.cache_lookup`` when the
  cache lookups take ≥ :data:`LOOKUP_PCT` %; ``compile.recompilation`` when a profiled step
  recompiled and it is ≥ :data:`RECOMPILE_PCT` % longer than the median step (the excess is the
  figure).
"""

from __future__ import annotations

import re
from typing import TypedDict

import numpy as np

from ..trace.categories import Kind
from ..trace.links import launch_of
from ..trace.model import Trace
from .launch_context import device_work_inside, operator_mask
from .numfmt import duration, fixed
from .op_tree import op_tree
from .recommendations import THRESHOLDS, Recommendation, recommendation, threshold_us
from .steps import compute_steps

REGION_PREFIX = "Torch-Compiled Region"
REGION_NAMES = ("CompiledFunction", "CompiledFunctionBackward", "TorchDynamo Cache Lookup")
BETWEEN_PCT = THRESHOLDS["compile.graph_breaks"]
LOOKUP_PCT = THRESHOLDS["compile.cache_lookup"]
RECOMPILE_PCT = THRESHOLDS["compile.recompilation"]
_VERSION = re.compile(r"^Torch-Compiled Region: (\d+)/(\d+)$")
_TRITON = re.compile(r"^triton_(poi|red|per|tem|for|\w+?)_(?:fused_(.*?))?_?(\d+)?$")
_KINDS = {"poi": "pointwise", "red": "reduction", "per": "persistent_reduction", "tem": "template", "for": "foreach"}


class RegionRow(TypedDict):
    """One compiled region name: its calls and the work inside them (µs)."""

    name: str
    calls: int
    host_us: float
    device_us: float  # device work launched inside its calls
    kernels: int
    kernel_us: float
    triton_kernels: int
    triton_us: float


class TritonKernelRow(TypedDict):
    """One Triton kernel in its innermost region: its kind, fused ops and where Inductor made it (µs)."""

    name: str
    kind: str | None  # pointwise, reduction, …; None when the name does not say
    fused: str | None  # the fused ops the name lists
    region: str | None  # None when launched outside every region
    calls: int
    total_us: float
    source_nodes: list[str] | None  # Inductor's graph nodes, when the trace has its provenance
    source_lines: list[str] | None  # their stack traces


class CompiledStepRow(TypedDict):
    """One step's compiled regions: frames, versions, recompilations and the time around them (µs)."""

    step: str
    step_us: float
    regions: int  # region calls in the step
    frames: int
    versions: list[str]  # "frame/version"
    recompilations: int  # versions first seen in this step (above version 0)
    cache_lookup_us: float
    between_us: float  # Σ per thread of the gaps between regions


class CompiledRegions(TypedDict):
    """The torch.compile regions of a trace (:func:`compiled_regions`; µs, the module docstring)."""

    regions: list[RegionRow]  # per region name
    triton_kernels: list[TritonKernelRow]
    steps: list[CompiledStepRow]
    advice: list[Recommendation]  # the compile.* recommendations that hold


def _is_region(name: str) -> bool:
    return name.startswith(REGION_PREFIX) or name in REGION_NAMES


def compiled_regions(trace: Trace) -> CompiledRegions | None:
    """``{"regions", "triton_kernels", "steps", "advice"}`` (see the module docstring), or None when the
    trace has no compiled region."""
    ev = trace.events
    region_rows = np.flatnonzero(operator_mask(trace) & trace.name_mask(_is_region))
    if len(region_rows) == 0:
        return None
    names = np.unique(ev.name[region_rows])
    kernel = ev.kind == Kind.KERNEL
    triton = kernel & trace.name_mask(lambda s: s.startswith("triton_"))
    regions: list[RegionRow] = []
    for name in names.tolist():  # a few distinct region names
        rows = region_rows[ev.name[region_rows] == name]
        mask = np.zeros(len(ev), dtype=bool)
        mask[rows] = True
        inside = device_work_inside(trace, mask)
        regions.append(
            {
                "name": trace.strings[name],
                "calls": int(len(rows)),
                "host_us": float(ev.dur[rows].sum()),
                "device_us": float(ev.dur[inside].sum()),
                "kernels": int((inside & kernel).sum()),
                "kernel_us": float(ev.dur[inside & kernel].sum()),
                "triton_kernels": int((inside & triton).sum()),
                "triton_us": float(ev.dur[inside & triton].sum()),
            }
        )
    regions.sort(key=lambda r: (-r["host_us"], r["name"]))
    steps = _per_step(trace, region_rows)
    return {
        "regions": regions,
        "triton_kernels": _triton_rows(trace, triton, region_rows),
        "steps": steps,
        "advice": _advice(steps),
    }


def _innermost_region(trace: Trace, region_rows: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Per device event row: the name id of the innermost region operator around its launch (-1: none),
    by walking the operator parents of the launch (rounds = nesting depth, all rows at once)."""
    parent = op_tree(trace).op_parent
    is_region = np.zeros(len(trace.events), dtype=bool)
    is_region[region_rows] = True
    launcher = launch_of(trace)[rows]
    cur = np.where(launcher >= 0, parent[np.maximum(launcher, 0)], -1)
    found = np.full(len(rows), -1, dtype=np.int64)
    todo = cur >= 0
    while todo.any():
        hit = todo & is_region[np.maximum(cur, 0)]
        found[hit] = cur[hit]
        todo &= ~hit
        cur = np.where(todo, parent[np.maximum(cur, 0)], -1)
        todo &= cur >= 0
    return np.where(found >= 0, trace.events.name[np.maximum(found, 0)], -1)


def _triton_rows(trace: Trace, triton: np.ndarray, region_rows: np.ndarray) -> list[TritonKernelRow]:
    ev = trace.events
    rows = np.flatnonzero(triton)
    if len(rows) == 0:
        return []
    region = _innermost_region(trace, region_rows, rows)
    provenance = trace.meta.get("inductor_kernels") or {}
    keys = ev.name[rows].astype(np.int64) << 32 | (region + 1)  # name ids and region ids are int32
    uniq, inverse = np.unique(keys, return_inverse=True)
    calls = np.bincount(inverse, minlength=len(uniq))
    total = np.bincount(inverse, weights=ev.dur[rows], minlength=len(uniq))
    out: list[TritonKernelRow] = []
    for g, key in enumerate(uniq.tolist()):
        name_id, region_id = key >> 32, (key & 0xFFFFFFFF) - 1
        name = trace.strings[name_id]
        m = _TRITON.match(name)
        kind = _KINDS.get(m.group(1), m.group(1)) if m else None
        known = provenance.get(name, {})
        out.append(
            {
                "name": name,
                "kind": kind,
                "fused": (m.group(2) or None) if m else None,
                "region": trace.strings[region_id] if region_id >= 0 else None,
                "calls": int(calls[g]),
                "total_us": float(total[g]),
                "source_nodes": known.get("pre_grad_nodes") or known.get("post_grad_nodes") or None,
                "source_lines": known.get("stack_traces") or None,
            }
        )
    out.sort(key=lambda r: (-r["total_us"], r["name"]))
    return out


def _per_step(trace: Trace, region_rows: np.ndarray) -> list[CompiledStepRow]:
    ev = trace.events
    steps = compute_steps(trace)
    uniq, which = np.unique(ev.name[region_rows], return_inverse=True)  # parse each distinct name once
    names = [trace.strings[i] for i in uniq.tolist()]
    version = [_VERSION.match(s) for s in names]
    framed = np.array([v is not None or s == REGION_PREFIX for v, s in zip(version, names)], dtype=bool)[which]
    frame = np.array([int(v.group(1)) if v else -1 for v in version], dtype=np.int64)[which]
    ver = np.array([int(v.group(2)) if v else -1 for v in version], dtype=np.int64)[which]
    lookup = np.array([s == "TorchDynamo Cache Lookup" for s in names], dtype=bool)[which]
    seen: set = set()
    out: list[CompiledStepRow] = []
    for k, step in enumerate(steps.names):
        lo, hi = float(steps.host_start[k]), float(steps.host_end[k])
        here = (ev.ts[region_rows] >= lo) & (ev.ts[region_rows] < hi)
        fr = here & framed
        versions = sorted(set(zip(frame[fr & (frame >= 0)].tolist(), ver[fr & (frame >= 0)].tolist())))
        new = [v for v in versions if v not in seen and v[1] > 0]
        seen.update(versions)
        out.append(
            {
                "step": step,
                "step_us": float(steps.end[k] - steps.start[k]),
                "regions": int(fr.sum()),
                "frames": len({v[0] for v in versions}) or (1 if fr.any() else 0),
                "versions": [f"{a}/{b}" for a, b in versions],
                "recompilations": len(new),
                "cache_lookup_us": float(ev.dur[region_rows[here & lookup]].sum()),
                "between_us": _between(trace, region_rows[fr]),
            }
        )
    return out


def _between(trace: Trace, rows: np.ndarray) -> float:
    """Σ, per thread, the gaps from one region's end to the next region's start (µs)."""
    if len(rows) < 2:
        return 0.0
    ev = trace.events
    thread = ev.pid[rows].astype(np.int64) << 32 | ev.tid[rows].astype(np.int64)
    order = np.lexsort((ev.ts[rows], thread))
    rows, thread = rows[order], thread[order]
    end = np.maximum.accumulate(ev.ts[rows] + ev.dur[rows])  # nested regions: the furthest end so far
    same = thread[1:] == thread[:-1]
    gap = ev.ts[rows][1:] - end[:-1]
    return float(np.maximum(gap[same], 0.0).sum())


def _share_of_step(rule: str, us: float, mean_step_us: float, threshold_pct: float, text: str) -> Recommendation:
    """``rule``'s recommendation for ``us`` of the average step (µs); ``text``'s ``{pct}`` is that share (%)."""
    share_pct = 100.0 * us / mean_step_us
    return recommendation(
        rule,
        us,
        threshold_us(rule, mean_step_us),
        "average_step",
        text.format(pct=fixed(share_pct, 1)),
        threshold_pct=threshold_pct,
        share_pct=share_pct,
    )


def _advice(steps: list[CompiledStepRow]) -> list[Recommendation]:
    """The compile rules of the one recommendation list (:mod:`.recommendations`), each only at or above
    its threshold (:data:`~.recommendations.THRESHOLDS`)."""
    if not steps:
        return []
    step_us = np.array([s["step_us"] for s in steps])
    mean = float(step_us.mean())
    out: list[Recommendation] = []
    if mean <= 0:
        return out
    between = float(np.mean([s["between_us"] for s in steps]))
    if max(s["frames"] for s in steps) >= 2 and between >= threshold_us("compile.graph_breaks", mean):
        out.append(
            _share_of_step(
                "compile.graph_breaks",
                between,
                mean,
                BETWEEN_PCT,
                "Eager code between compiled regions takes {pct}% of the average step: find the graph breaks "
                "(TORCH_LOGS=graph_breaks) and remove them, or compile a larger function.",
            )
        )
    lookup = float(np.mean([s["cache_lookup_us"] for s in steps]))
    if lookup >= threshold_us("compile.cache_lookup", mean) and lookup > 0:
        out.append(
            _share_of_step(
                "compile.cache_lookup",
                lookup,
                mean,
                LOOKUP_PCT,
                "TorchDynamo cache lookups (guard checks) take {pct}% of the average step: fewer compiled frames or "
                "simpler guards (mark_static / dynamic=False) cut them.",
            )
        )
    median = float(np.median(step_us))
    recompiled = [k for k, s in enumerate(steps) if s["recompilations"]]
    excess = sum(max(float(step_us[k]) - median, 0.0) for k in recompiled)
    limit = threshold_us("compile.recompilation", median * len(recompiled))
    if recompiled and median > 0 and excess >= limit:
        out.append(
            recommendation(
                "compile.recompilation",
                excess,
                limit,
                "median_step",
                f"torch.compile recompiled during the profiled steps, which took {duration(excess)} more than the median step: see "
                "why with TORCH_LOGS=recompiles (changing shapes, dtypes or Python values in guards).",
                threshold_pct=RECOMPILE_PCT,
                steps=[steps[k]["step"] for k in recompiled],
            )
        )
    return out
