"""GPU summary, one entry per GPU device seen in the trace.

Definitions, all over the **steps window** ``[first step start, last step end]`` (µs):

- **GPU Utilization** (%) = |union of the device's kernel intervals ∩ window| ÷ |window|.
  Memcpy and memset do not count.
- **Est. SM Efficiency** (%) = the time-average over the window of min(1, S(t)), where S(t) is the
  sum of ``blocks per SM`` of the device's kernels running at time t. Idle time counts as 0.
  ``blocks per SM`` is the kernel arg, or else gridX·gridY·gridZ ÷ the device's SM count
  (``numSms``); non-positive values are skipped. ``null`` when no kernel has either.
- **Est. Achieved Occupancy** (%) = Σ(occupancy × duration clipped to the window) ÷ Σ(clipped
  duration) over the kernels that carry ``est. achieved occupancy %`` (negative values skipped).
- **Kernel time using Tensor Cores** (%) = time of tensor-core kernels ÷ time of all kernels, over
  the device's kernels launched from inside an operator. ``null`` when there are none.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..trace.categories import Kind
from ..trace.model import Trace
from .intervals import covered_length
from .tensor_cores import uses_tensor_cores
from .steps import Steps


@dataclasses.dataclass
class GpuSummary:
    id: int
    name: str | None
    memory_bytes: int | None
    compute_capability: str | None
    utilization_pct: float
    sm_efficiency_pct: float | None
    achieved_occupancy_pct: float | None
    tensor_core_pct: float | None
    kernel_us: float  # kernel time inside the window


def gpu_devices(trace: Trace) -> list[int]:
    """Device indices of every kernel, memcpy or memset in the trace, ascending."""
    ev = trace.events
    dev = ev.device[np.isin(ev.kind, (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET)) & (ev.device >= 0)]
    return [int(d) for d in np.unique(dev)]


def compute_gpu_summary(trace: Trace, steps: Steps, op_launched: np.ndarray) -> list[GpuSummary]:
    """One :class:`GpuSummary` per GPU device. ``op_launched`` marks kernels launched inside ops."""
    ev = trace.events
    lo, hi = steps.window
    span = hi - lo
    is_tc = trace.name_mask(uses_tensor_cores)
    out = []
    for dev in gpu_devices(trace):
        rows = np.flatnonzero((ev.kind == Kind.KERNEL) & (ev.device == dev))
        ts, te = ev.ts[rows], ev.ts[rows] + ev.dur[rows]
        busy = covered_length(ts, te, lo, hi)
        info = trace.device_info(dev)
        clipped = np.clip(te, lo, hi) - np.clip(ts, lo, hi)
        out.append(
            GpuSummary(
                id=dev,
                name=info.name if info else None,
                memory_bytes=info.memory_bytes if info else None,
                compute_capability=info.compute_capability if info else None,
                utilization_pct=100.0 * busy / span if span > 0 else 0.0,
                sm_efficiency_pct=_sm_efficiency(trace, rows, ts, te, lo, hi, info.num_sms if info else None),
                achieved_occupancy_pct=_occupancy(ev.occupancy_pct[rows], clipped),
                tensor_core_pct=_tensor_core_pct(ev.dur[rows], is_tc[rows], op_launched[rows]),
                kernel_us=float(clipped.sum()),
            )
        )
    return out


def blocks_per_sm(trace: Trace, rows: np.ndarray, num_sms: int | None) -> np.ndarray:
    """The ``blocks per SM`` arg, else grid size ÷ SM count; NaN when neither is known."""
    ev = trace.events
    bps = ev.blocks_per_sm[rows].copy()
    missing = np.isnan(bps) & (ev.grid_size[rows] > 0)
    if num_sms and missing.any():
        bps[missing] = ev.grid_size[rows][missing] / num_sms
    return bps


def _sm_efficiency(trace, rows, ts, te, lo, hi, num_sms) -> float | None:
    span = hi - lo
    bps = blocks_per_sm(trace, rows, num_sms)
    ok = bps > 0  # NaN compares False
    if not ok.any() or span <= 0:
        return None
    times = np.concatenate([ts[ok], te[ok]])
    delta = np.concatenate([bps[ok], -bps[ok]])
    order = np.argsort(times, kind="stable")
    times, level = times[order], np.cumsum(delta[order])
    value = np.clip(level[:-1], 0.0, 1.0)
    seg_lo = np.clip(times[:-1], lo, hi)
    seg_hi = np.clip(times[1:], lo, hi)
    return float(100.0 * np.sum(value * (seg_hi - seg_lo)) / span)


def _occupancy(occ: np.ndarray, clipped: np.ndarray) -> float | None:
    ok = occ >= 0  # NaN compares False
    weight = clipped[ok].sum()
    if not ok.any() or weight <= 0:
        return None
    # a weighted mean stays inside the values' range (float rounding of 100 % values must not exceed 100 %)
    return float(np.clip(np.sum(occ[ok] * clipped[ok]) / weight, occ[ok].min(), occ[ok].max()))


def _tensor_core_pct(dur: np.ndarray, is_tc: np.ndarray, from_op: np.ndarray) -> float | None:
    total = dur[from_op].sum()
    if total <= 0:
        return None
    return float(100.0 * dur[from_op & is_tc].sum() / total)
