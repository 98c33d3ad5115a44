"""GPU summary, one entry per GPU device seen in the trace.

Definitions, all over the **steps window** ``[first step start, last step end]`` (µs):

- **Vendor** (``"NVIDIA"``/``"AMD"``/None) and **architecture**: see :mod:`..trace.platform`. For AMD
  devices ``computeMajor.computeMinor`` is the gfx architecture (9.4 → ``gfx94x``), reported as
  ``architecture`` with ``compute_capability`` None; for others ``compute_capability`` is CUDA's.
- **GPU Utilization** (%) = |union of the device's kernel intervals ∩ window| ÷ |window|.
  Memcpy and memset do not count.
- **Est. SM Efficiency** (%) = the time-average, over the part of the window during which no kernel
  without launch geometry runs, of min(1, S(t)), where S(t) is the sum of ``blocks per SM`` of the
  device's kernels running at time t. Idle time counts as 0. ``blocks per SM`` is the kernel arg, or
  else blocks ÷ the device's SM (CU) count ``numSms``, blocks from :func:`..trace.geometry.kernel_blocks`
  (ROCm work-item grids converted); non-positive values count as 0. ``null`` when no kernel has
  either. We differ: the incumbent counts a kernel without geometry as 0 blocks, which reads its
  time as idle SMs; we leave that time out and report it as ``kernel_us_without_geometry`` (µs of
  kernel time inside the window). With every kernel's geometry known both rules agree.
- **Est. Achieved Occupancy** (%) = Σ(occupancy × duration clipped to the window) ÷ Σ(clipped
  duration) over the kernels whose occupancy is known (:func:`kernel_occupancy`): Kineto writes
  ``est. achieved occupancy %`` = 0 when CUDA's occupancy calculator fails (Hopper ``nvjet_*`` GEMMs and
  cuDNN ``*_sm90_flash_*wgmma*`` attention with over 48 KiB of shared memory, on the H200 samples), which
  is "not computed", not 0 %. Those kernels are left out and their time is ``kernel_us_without_occupancy``
  (µs inside the window), as ``kernel_us_without_geometry`` for SM efficiency.
- **Not a GPU** (an MTIA trace, :func:`..trace.platform.accelerator_name`): ``device_type`` names the
  accelerator and SM efficiency, occupancy and the tensor-core share are None: GPU measures that do
  not apply there (never 0 %). Utilization is the same union of its device work.
- **Kernel time using Tensor Cores** (%) = time of tensor-core kernels ÷ time of all kernels, over
  the device's kernels launched from inside a host operator or a record_function range
  (``ProfilerStep#N`` included: in practice every kernel launched inside a step). ``null`` when there
  are none. On AMD these
  are matrix-core (MFMA/WMMA) kernels. Kernel families: :mod:`.tensor_cores`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..trace.categories import Kind
from ..trace.geometry import block_threads, kernel_blocks
from ..trace.model import DeviceInfo, Trace
from ..trace.platform import AMD, accelerator_name, amd_architecture, device_vendor, has_matrix_units
from ..trace.sparse import SparseColumn
from ..trace.uniques import unique_values
from .intervals import covered_length
from .steps import Steps
from .tensor_cores import uses_tensor_cores

#: GpuSummary fields that other analyses use but the Overview JSON does not carry.
INTERNAL_FIELDS = ("kernel_us", "tensor_core_us", "matrix_units")


@dataclasses.dataclass
class GpuSummary:
    id: int
    name: str | None
    memory_bytes: int | None
    vendor: str | None  # "NVIDIA" | "AMD" | None
    compute_capability: str | None  # CUDA compute capability; None on AMD
    architecture: str | None  # AMD gfx architecture ("gfx94x", "gfx942"); None on NVIDIA
    utilization_pct: float
    sm_efficiency_pct: float | None
    kernel_us_without_geometry: float  # kernel time in the window with no launch geometry (left out of SM efficiency)
    achieved_occupancy_pct: float | None
    tensor_core_pct: float | None
    kernel_us: float  # kernel time inside the window
    tensor_core_us: float = 0.0  # time of the device's tensor/matrix-core kernels, all of them (µs)
    matrix_units: bool | None = None  # tensor cores (NVIDIA) / matrix cores (AMD); None: unknown
    kernel_us_without_occupancy: float = 0.0  # kernel time in the window with unknown occupancy (left out of it)
    device_type: str = "GPU"  # "GPU" (CUDA, ROCm) or the accelerator's name ("MTIA"): GPU-only metrics are None there


def gpu_devices(trace: Trace) -> list[int]:
    """Device indices of every kernel, memcpy or memset in the trace, ascending."""
    ev = trace.events
    dev = ev.device[np.isin(ev.kind, (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET)) & (ev.device >= 0)]
    return [int(d) for d in unique_values(dev)]


def device_properties(trace: Trace, dev: int) -> DeviceInfo | None:
    """The ``deviceProperties`` entry of a device: the one with its id, else, when the trace lists a
    single device and shows activity on a single device, that one (ROCm traces number the visible GPU
    0 in ``deviceProperties`` and by its physical index, e.g. 2, on kernels)."""
    info = trace.device_info(dev)
    if info is None and len(trace.devices) == 1 and gpu_devices(trace) == [dev]:
        info = trace.devices[0]
    return info


def compute_gpu_summary(trace: Trace, steps: Steps, op_launched: np.ndarray) -> list[GpuSummary]:
    """One :class:`GpuSummary` per GPU device. ``op_launched`` marks kernels launched inside ops."""
    ev = trace.events
    lo, hi = steps.window
    span = hi - lo
    is_tc = trace.name_mask(uses_tensor_cores)
    occupancy = kernel_occupancy(trace)
    accelerator = accelerator_name(trace)
    out = []
    for dev in gpu_devices(trace):
        rows = np.flatnonzero((ev.kind == Kind.KERNEL) & (ev.device == dev))
        ts, te = ev.ts[rows], ev.ts[rows] + ev.dur[rows]
        busy = covered_length(ts, te, lo, hi)
        info = device_properties(trace, dev)
        vendor = device_vendor(trace, info)
        amd = vendor == AMD
        clipped = np.clip(te, lo, hi) - np.clip(ts, lo, hi)
        num_sms = info.num_sms if info else None
        out.append(
            GpuSummary(
                id=dev,
                name=info.name if info else None,
                memory_bytes=info.memory_bytes if info else None,
                vendor=vendor,
                compute_capability=None if amd else (info.compute_capability if info else None),
                architecture=amd_architecture(info) if amd else None,
                utilization_pct=100.0 * busy / span if span > 0 else 0.0,
                sm_efficiency_pct=_sm_efficiency(trace, rows, lo, hi, num_sms),
                kernel_us_without_geometry=float(clipped[~has_geometry(trace, rows)].sum()),
                achieved_occupancy_pct=_occupancy(occupancy[rows], clipped),
                tensor_core_pct=_tensor_core_pct(ev.dur[rows], is_tc[rows], op_launched[rows]),
                kernel_us=float(clipped.sum()),
                tensor_core_us=float(ev.dur[rows][is_tc[rows]].sum()),
                matrix_units=has_matrix_units(vendor, info),
                kernel_us_without_occupancy=float(clipped[np.isnan(occupancy[rows])].sum()),
            )
        )
        if accelerator != "GPU":
            out[-1] = _not_a_gpu(out[-1], accelerator)
    return out


def _not_a_gpu(summary: GpuSummary, accelerator: str) -> GpuSummary:
    """An accelerator that is not a GPU (MTIA): SM efficiency, occupancy and tensor cores do not apply
    (None, never 0 %), nor do what they leave out; utilization and kernel time do."""
    return dataclasses.replace(
        summary,
        device_type=accelerator,
        sm_efficiency_pct=None,
        kernel_us_without_geometry=0.0,
        achieved_occupancy_pct=None,
        kernel_us_without_occupancy=0.0,
        tensor_core_pct=None,
        tensor_core_us=0.0,
        matrix_units=None,
    )


#: Threads an SM can hold at most on any NVIDIA GPU (sm_70…sm_90: 2048; others fewer): the bound below
#: divides by it, so it is never too high.
MAX_THREADS_PER_SM = 2048


def kernel_occupancy(trace: Trace) -> SparseColumn:
    """Per event, its kernel's ``est. achieved occupancy %``; NaN where unknown: no arg, a negative
    value, or a 0 that cannot be a result. Kineto writes min(blocks per SM, blocks the occupancy
    calculator allows) × threads per block ÷ the SM's threads × 100, rounded; an SM holds at least one
    block of a kernel that ran, so a computed value is at least min(blocks per SM, 1) × threads per
    block ÷ :data:`MAX_THREADS_PER_SM` × 100. A 0 where that bound is ≥ 1 % is Kineto's "calculation
    failed" (CUDA's calculator refuses over 48 KiB of shared memory without the kernel's opt-in, as on
    every Hopper ``nvjet_*``/``*wgmma*`` kernel: 168 registers × 384 threads, 213 KB of shared memory, 1
    block per SM, 18.75 %). A 0 on a tiny grid (1 block of 128 threads on 132 SMs: 0.05 %) stays 0.
    Held for the events whose value is known (:class:`..trace.sparse.SparseColumn`)."""
    return trace.memo("kernel_occupancy", lambda: _kernel_occupancy(trace))


def _kernel_occupancy(trace: Trace) -> SparseColumn:
    """:func:`kernel_occupancy` made on the rows that can hold a value (``est. achieved occupancy %`` ≥ 0)
    alone: the column :meth:`SparseColumn.of` would keep of the dense one, without the dense one's two
    full-length temporaries (a 4.5 GB trace: 6.7 M events, ~0.1 GB at the kernels section's peak)."""
    ev = trace.events
    rows = np.flatnonzero(ev.occupancy_pct >= 0)  # NaN compares False
    occ = ev.occupancy_pct[rows].astype(np.float64, copy=False)
    zero = np.flatnonzero(occ == 0)
    if len(zero):
        at = rows[zero]
        floor = np.minimum(ev.blocks_per_sm[at], 1.0) * block_threads(trace)[at] / MAX_THREADS_PER_SM * 100
        occ[zero[floor >= 1.0]] = np.nan  # NaN bounds (unknown geometry) keep the 0
    return SparseColumn.at(rows, occ, np.nan, len(ev))


def has_geometry(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """Kernels whose size is known: the ``blocks per SM`` arg or a launch grid (:func:`kernel_blocks`)."""
    return ~np.isnan(trace.events.blocks_per_sm[rows]) | ~np.isnan(kernel_blocks(trace)[rows])


def blocks_per_sm(trace: Trace, rows: np.ndarray, num_sms: int | None) -> np.ndarray:
    """The ``blocks per SM`` arg, else blocks ÷ SM count; NaN when neither is known."""
    bps = trace.events.blocks_per_sm[rows].copy()
    missing = np.isnan(bps)
    if num_sms and missing.any():
        bps[missing] = kernel_blocks(trace)[rows][missing] / num_sms
    return bps


def sm_level(trace: Trace, rows: np.ndarray, num_sms: int | None):
    """The SM-efficiency estimate of a device as a step function over its kernels' endpoints.

    Returns ``(times, value, known)``: on ``[times[i], times[i+1])`` the estimate is ``value[i]`` =
    min(1, Σ blocks per SM of the running kernels), and ``known[i]`` is False while a kernel whose
    blocks per SM is unknown runs (that time is left out of every average). Arrays are empty when no
    kernel has a positive blocks per SM; ``value``/``known`` have ``len(times) - 1`` entries.
    """
    ev = trace.events
    bps = blocks_per_sm(trace, rows, num_sms)
    known_bps = ~np.isnan(bps)
    if not (known_bps & (bps > 0)).any():
        return np.zeros(0), np.zeros(0), np.zeros(0, dtype=bool)
    ts, te = ev.ts[rows], ev.ts[rows] + ev.dur[rows]
    level = np.where(known_bps & (bps > 0), bps, 0.0)
    unknown = (~known_bps).astype(np.int64)
    times = np.concatenate([ts, te])
    order = np.argsort(times, kind="stable")
    times = times[order]
    value = np.clip(np.cumsum(np.concatenate([level, -level])[order]), 0.0, 1.0)[:-1]
    known = np.cumsum(np.concatenate([unknown, -unknown])[order])[:-1] == 0
    return times, value, known


def _sm_efficiency(trace, rows, lo, hi, num_sms) -> float | None:
    span = hi - lo
    times, value, known = sm_level(trace, rows, num_sms)
    if len(times) == 0 or span <= 0:
        return None
    length = np.clip(times[1:], lo, hi) - np.clip(times[:-1], lo, hi)
    known_span = span - float(length[~known].sum())
    if known_span <= 0:
        return None
    return float(100.0 * np.sum((value * length)[known]) / known_span)


def _occupancy(occ: np.ndarray, clipped: np.ndarray) -> float | None:
    ok = occ >= 0  # NaN (unknown, :func:`kernel_occupancy`) compares False
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
