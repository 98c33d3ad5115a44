"""Per-step values of a kernel metric, for the regression gate (:mod:`.regression`).

Definitions (µs):

- A kernel **matches** ``NAME`` when ``NAME`` is a substring of its name (case-sensitive), so
  ``kernel:gemm`` covers every GEMM kernel and a full name covers exactly that kernel.
- A kernel **belongs to** the kept step (:func:`.steps.compute_steps`) whose ``[start, end)`` holds
  its start; kernels starting outside every kept step count in none.
- **Kernel time of a step**: the summed durations of the matching kernels that belong to it (0 when
  none does). Every kept step gives one value.
"""

from __future__ import annotations

import numpy as np

from ..trace.categories import Kind
from ..trace.model import Trace
from .steps import compute_steps


def matching_kernel_names(trace: Trace, name: str) -> list[str]:
    """The distinct kernel names of ``trace`` that contain ``name``, sorted."""
    ev = trace.events
    ids = np.unique(ev.name[ev.kind == Kind.KERNEL])
    return sorted(s for s in (trace.strings[i] for i in ids.tolist()) if name in s)


def kernel_step_times(trace: Trace, name: str) -> np.ndarray:
    """The kernel time (µs) of the kernels matching ``name`` in each kept step, in step order."""
    steps = compute_steps(trace)
    n = len(steps)
    if n == 0:
        return np.zeros(0)
    ev = trace.events
    wanted = trace.name_mask(lambda s: name in s) & (ev.kind == Kind.KERNEL)
    rows = np.flatnonzero(wanted)
    ts = ev.ts[rows]
    idx = np.searchsorted(steps.start, ts, side="right") - 1
    inside = (idx >= 0) & (ts < steps.end[np.maximum(idx, 0)])
    return np.bincount(idx[inside], weights=ev.dur[rows][inside], minlength=n).astype(np.float64)
