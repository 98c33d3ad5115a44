"""Which GPU vendor a device is, and what its ``computeMajor``/``computeMinor`` mean.

The one place that knows ROCm's and CUDA's spellings in a trace: the top-level version keys Kineto
writes (``roctracer_version``, ``hip_runtime_version``… vs. ``cuda_runtime_version``, ``cupti_version``),
the launch calls' names (``hip*`` vs. ``cuda*``/``cu*``), and the device names.

On ROCm, ``computeMajor.computeMinor`` is the GPU's architecture (gfx *major minor* x: 9.0 is the
gfx90x family — gfx906, gfx908 MI100, gfx90a MI200 —, 9.4 is gfx94x MI300, 9.5 gfx950 MI350,
11.x/12.x RDNA3/4), not a CUDA compute capability.
"""

from __future__ import annotations

import re

import numpy as np

from .categories import DEVICE_KINDS, LAUNCH_KINDS
from .model import DeviceInfo, Trace
from .uniques import unique_values

AMD, NVIDIA = "AMD", "NVIDIA"

_AMD_META_KEYS = ("roctracer_version", "rocprof_version", "hip_runtime_version")
_CUDA_META_KEYS = ("cuda_runtime_version", "cuda_driver_version", "cupti_version")
_AMD_NAME = re.compile(r"\bAMD\b|Instinct|Radeon|\bMI\d{2,3}[A-Z]?\b|\bgfx\d", re.IGNORECASE)
_NVIDIA_NAME = re.compile(r"NVIDIA|Tesla|GeForce|Quadro|TITAN", re.IGNORECASE)
#: AMD Instinct boards (CDNA) by name: every one has matrix cores (MFMA).
_AMD_INSTINCT = re.compile(r"Instinct|\bMI(?:1\d\d|2\d\d|3\d\d|4\d\d)[A-Z]?\b", re.IGNORECASE)


def runtime_vendor(trace: Trace) -> str | None:
    """``"AMD"`` for a ROCm trace (ROCm version keys, or ``hip*`` launch calls), ``"NVIDIA"`` for a
    CUDA one, None when the trace does not say."""
    meta = trace.meta
    if any(k in meta for k in _AMD_META_KEYS):
        return AMD
    if any(k in meta for k in _CUDA_META_KEYS):
        return NVIDIA
    return trace.memo("runtime_vendor", lambda: _launch_vendor(trace))


def _launch_vendor(trace: Trace) -> str | None:
    """``"AMD"`` when a launch call is a ``hip*`` one, ``"NVIDIA"`` for ``cuda*``/``cu*``, else None."""
    ev = trace.events
    names = np.unique(ev.name[np.isin(ev.kind, LAUNCH_KINDS)])
    texts = [trace.strings[i] for i in names.tolist() if i >= 0]
    if any(t.startswith("hip") for t in texts):
        return AMD
    if any(t.startswith(("cuda", "cu")) for t in texts):
        return NVIDIA
    return None


def device_vendor(trace: Trace, info: DeviceInfo | None) -> str | None:
    """The vendor of one device: by its name (``AMD Instinct MI300X``, ``NVIDIA H100``, ``Tesla V100``),
    else by the runtime that wrote the trace."""
    name = info.name if info else None
    if name and _AMD_NAME.search(name):
        return AMD
    if name and _NVIDIA_NAME.search(name):
        return NVIDIA
    return runtime_vendor(trace)


def amd_architecture(info: DeviceInfo | None) -> str | None:
    """The AMD GPU architecture: ``gcnArchName`` without its feature flags (``gfx942``) when the trace
    has it, else the family from ``computeMajor.computeMinor`` (9.4 → ``gfx94x``); None without either."""
    if info is None:
        return None
    if info.arch_name:
        return info.arch_name.split(":")[0]
    if info.compute_major is None:
        return None
    return f"gfx{info.compute_major}{info.compute_minor or 0}x"


def has_matrix_units(vendor: str | None, info: DeviceInfo | None) -> bool | None:
    """Whether the GPU has tensor cores (NVIDIA, compute capability ≥ 7.0) or matrix cores (AMD: MFMA on
    CDNA — gfx908, gfx90a, gfx94x, gfx95x —, WMMA on RDNA3/4 — gfx11, gfx12). None when unknown, for
    example an AMD 9.0 device (gfx906 has none, gfx908/gfx90a have MFMA) whose name does not say."""
    if info is None or info.compute_major is None:
        return None
    major, minor = info.compute_major, info.compute_minor or 0
    if vendor == AMD:
        arch = amd_architecture(info) or ""
        if arch in ("gfx908", "gfx90a") or (info.name and _AMD_INSTINCT.search(info.name)):
            return True
        if major == 9:
            return (
                True
                if minor >= 4
                else (False if arch in ("gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c") else None)
            )
        return major >= 11
    return major >= 7


def accelerator_name(trace: Trace) -> str:
    """What the trace's device work runs on, for the Overview's "Device type": ``"MTIA"`` when it is
    MTIA's (``mtia_*`` categories), else ``"GPU"`` (CUDA and ROCm)."""
    ev = trace.events
    cats = unique_values(ev.cat[np.isin(ev.kind, DEVICE_KINDS) & (ev.cat >= 0)])
    if any(trace.strings[c].lower().startswith("mtia") for c in cats.tolist()):
        return "MTIA"
    return "GPU"
