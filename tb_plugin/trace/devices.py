"""Device types of ``[memory]`` events: the one place that knows PyTorch's ``Device Type`` numbers.

``Device Type`` is c10's ``DeviceType`` (``c10/core/DeviceType.h``). A memory event is placed on a
device labelled by its type and ``Device Id``: ``CPU``, ``GPU<id>`` for CUDA (1) *and* HIP (6, what
ROCm builds of PyTorch report), ``XPU<id>``, ``MTIA<id>``… Types outside :data:`DEVICE_TYPE_NAMES`, and
events without a type, cannot be placed: they are left out and the file gets a warning naming them.
"""

from __future__ import annotations

import numpy as np

CPU_DEVICE_TYPE = 0
#: Types whose memory is a GPU's (CUDA, and HIP on ROCm): labelled ``GPU<id>`` like CUDA.
GPU_DEVICE_TYPES = (1, 6)
#: c10 DeviceType number → label prefix, for every type that holds memory of its own.
DEVICE_TYPE_NAMES: dict[int, str] = {
    0: "CPU",
    1: "GPU",
    2: "MKLDNN",
    3: "OpenGL",
    4: "OpenCL",
    5: "IDEEP",
    6: "GPU",
    7: "FPGA",
    8: "MAIA",
    9: "XLA",
    10: "Vulkan",
    11: "Metal",
    12: "XPU",
    13: "MPS",
    15: "HPU",
    16: "VE",
    18: "IPU",
    19: "MTIA",
    20: "PrivateUse1_",
}


def device_name(label: str) -> str:
    """A device label as every view names the device (the GPU summary, timeline tracks, advice):
    ``"GPU0"`` → ``"GPU 0"``, ``"XPU1"`` → ``"XPU 1"``; ``"CPU"`` and other labels unchanged."""
    head = label.rstrip("0123456789")
    return f"{head.rstrip()} {label[len(head) :]}" if head and len(head) < len(label) else label


def memory_device_label(device_type: int, device_id: int, sep: str = "") -> str | None:
    """``"CPU"``, ``"GPU0"`` (CUDA or HIP), ``"XPU1"``…; ``None`` when the type cannot be placed.
    ``sep`` goes between the prefix and the index (``"GPU 0"`` for counter tracks)."""
    if device_type == CPU_DEVICE_TYPE:
        return "CPU"
    prefix = DEVICE_TYPE_NAMES.get(device_type)
    if prefix is None:
        return None
    return f"{prefix}{sep}{max(device_id, 0)}"


def unplaceable_warning(device_types: np.ndarray) -> str | None:
    """A warning naming the memory events whose device type is missing or unknown (else ``None``)."""
    known = np.isin(device_types, list(DEVICE_TYPE_NAMES))
    if known.all():
        return None
    values, counts = np.unique(device_types[~known], return_counts=True)
    listed = ", ".join(
        f"{'no Device Type' if v < 0 else f'Device Type {int(v)}'} ×{int(c)}"
        for v, c in zip(values.tolist(), counts.tolist())
    )
    return (
        f"{int(counts.sum())} memory events on devices the tool cannot place ({listed}); "
        "they are left out of the Memory view"
    )
