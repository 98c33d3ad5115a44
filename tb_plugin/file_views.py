"""The detail views of one loaded trace, computed once and kept (rows are small; the trace is not)."""

from __future__ import annotations

import threading

import numpy as np

from .analysis.kernels import kernel_rows, tensor_core_split
from .analysis.modules import module_tree
from .analysis.operators import group_members, op_times, operator_rows
from .analysis.call_stacks import stack_ids
from .trace.links import device_mask
from .trace.model import Trace


class FileViews:
    """Operator, Kernel and Module views of one trace, memoized per grouping. Thread-safe."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.has_device = bool(device_mask(trace).any())
        self._memo: dict[str, object] = {}
        self._lock = threading.Lock()

    def _get(self, key: str, make):
        with self._lock:
            if key not in self._memo:
                self._memo[key] = make()
            return self._memo[key]

    def operators(self, group_by: str = "operator") -> list[dict]:
        return self._get("ops:" + group_by, lambda: operator_rows(self.trace, group_by))

    def kernels(self, group_by: str = "kernel") -> list[dict]:
        return self._get("kernels:" + group_by, lambda: kernel_rows(self.trace, group_by))

    def modules(self) -> list[dict] | None:
        return self._get("modules", lambda: module_tree(self.trace))

    def tensor_core_split(self) -> dict[str, float]:
        return self._get("tc", lambda: tensor_core_split(self.trace))

    def compute_all(self) -> None:
        """Warm the default views (the loader calls this, so table requests only page and sort)."""
        self.operators("operator")
        self.kernels("kernel")
        self.modules()
        self.tensor_core_split()

    def stacks(self, group_by: str, key: int) -> list[dict] | None:
        """Distinct call stacks of one operator row, most device time first (µs)."""
        rows = self.operators(group_by)
        if key >= len(rows):
            return None
        with self._lock:
            members = group_members(self.trace, group_by, key)
        t = op_times(self.trace)
        sid = stack_ids(self.trace)[members]
        out = []
        for stack in np.unique(sid):
            m = members[sid == stack]
            out.append({
                "text": self.trace.strings[stack] if stack else "",
                "calls": int(len(m)),
                "host_self_us": float(t.host_self[m].sum()),
                "host_total_us": float(self.trace.events.dur[m].sum()),
                "device_self_us": float(t.device_self[m].sum()),
                "device_total_us": float(t.device_total[m].sum()),
            })
        out.sort(key=lambda s: (-s["device_total_us"], -s["host_total_us"]))
        return out
