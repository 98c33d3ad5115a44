"""Peak allocated memory per GPU from ``[memory]`` events (bytes).

GPUs are CUDA and HIP (ROCm) devices (:data:`tb_plugin.trace.devices.GPU_DEVICE_TYPES`).
Peak = the largest ``Total Allocated`` seen for the device; when a trace lacks the totals, the
largest running sum of ``Bytes`` over that device's events instead.
"""

from __future__ import annotations

import numpy as np

from ..trace.devices import GPU_DEVICE_TYPES
from ..trace.model import Trace



def peak_allocated_by_gpu(trace: Trace) -> dict[int, int]:
    mem = trace.memory
    out: dict[int, int] = {}
    if len(mem) == 0:
        return out
    gpu = np.isin(mem.device_type, GPU_DEVICE_TYPES)  # CUDA, and HIP on ROCm
    for dev in np.unique(mem.device_id[gpu]):
        rows = gpu & (mem.device_id == dev)
        totals = mem.total_allocated[rows]
        if (totals >= 0).any():
            out[int(dev)] = int(totals.max())
        else:
            out[int(dev)] = int(max(np.cumsum(mem.bytes[rows]).max(), 0))
    return out
