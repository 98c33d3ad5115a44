"""Views of memory artifacts other than traces, computed once per loaded file."""

from __future__ import annotations

import threading

import numpy as np

from .analysis import snapshot as snap_analysis
from .analysis.series import reduce_to
from .artifacts.memprofiler import HEADLINE, MAX_LOG_BYTES, MAX_STATS_BYTES, load_log, load_stats
from .artifacts.snapshot import Snapshot
from .artifacts.timeline_export import CATEGORIES

MAX_EXPORT_POINTS = 4000


class SnapshotViews:
    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self._memo: dict = {}
        self._lock = threading.Lock()

    def _get(self, key, make):
        with self._lock:
            if key not in self._memo:
                self._memo[key] = make()
            return self._memo[key]

    def devices(self) -> list[int]:
        return sorted(self.snapshot.devices)

    def summary(self) -> dict:
        def build():
            snap = self.snapshot
            return {
                "layout": snap.layout, "time_unit": "us" if snap.has_time else "entry",
                "devices": [snap_analysis.device_summary(snap, d) for d in self.devices()],
                "segment_devices": sorted({s["device"] for s in snap.segments}),
                "history_recorded": bool(snap.devices),
                "annotations": snap.annotations[:1000],
                "markers": {f"GPU{d}": snap_analysis.markers(snap, d) for d in self.devices()},
            }

        return self._get("summary", build)

    def timeline(self, device: int, start, end, width_px: int) -> dict:
        arrays = self._get(("timeline_arrays", device), dict)
        with self._lock:
            return snap_analysis.timeline(self.snapshot, device, start, end, width_px, cache=arrays)

    def segments(self, device: int) -> list[dict]:
        """The segments of one device; memoized only for devices that have segments (any index is a
        valid request, so the memo would otherwise grow with the requests)."""
        if device not in self.summary()["segment_devices"]:
            return []
        return self._get(("segments", device), lambda: snap_analysis.segments_state(self.snapshot, device))

    def allocations(self, device: int, limit: int) -> list[dict]:
        return snap_analysis.top_allocations(self.snapshot, device, limit)

    def stack(self, index: int) -> list[dict] | None:
        return self.snapshot.stack_frames(index)


class TimelineExportViews:
    def __init__(self, data: dict) -> None:
        self.data = data

    def series(self) -> dict:
        t = self.data["times_us"]
        b = self.data["bytes"]
        if len(t) > MAX_EXPORT_POINTS:  # per bin the largest and the last total (analysis/series.py)
            keep = reduce_to(t, b.sum(axis=0), MAX_EXPORT_POINTS)
            t, b = t[keep], b[:, keep]
        total = b.sum(axis=0) if b.size else np.zeros(0)
        peak = int(np.argmax(total)) if len(total) else 0
        return {"form": self.data["form"], "categories": self.data["categories"] or list(CATEGORIES),
                "times_us": t.tolist(), "bytes": b.astype(np.int64).tolist(),
                "peak_bytes": int(total[peak]) if len(total) else 0,
                "peak_time_us": float(t[peak]) if len(t) else None}


class MemProfilerStatsViews:
    """One ``rank_<r>_memory_stats.yaml`` (parsed by :func:`~.artifacts.memprofiler.load_stats`)."""

    def __init__(self, data: dict) -> None:
        self.data = data

    def stats(self) -> dict:
        """The snapshots with every value, and the headline metrics present in any of them."""
        present = {k for s in self.data["snapshots"] for k in s["values"]}
        return {"rank": self.data["rank"], "warnings": self.data["warnings"],
                "metrics": [{"key": k, "label": label, "unit": unit} for k, label, unit in HEADLINE if k in present],
                "snapshots": self.data["snapshots"]}


class TextReportViews:
    """A MemProfiler ``fsdp_mem_*.log`` text report (the first bytes of it)."""

    def __init__(self, data: dict) -> None:
        self.data = data

    def text(self) -> dict:
        return dict(self.data)


MEMPROFILER_KINDS = ("memprofiler_stats", "memprofiler_log")


def load_memprofiler_views(fs, entry):
    """Read a MemProfiler file of ``entry.kind`` (bounded reads) into its views; raises
    :class:`~.artifacts.memprofiler.MemProfilerError` for a file that is not one."""
    limit = MAX_STATS_BYTES if entry.kind == "memprofiler_stats" else MAX_LOG_BYTES
    with fs.open(entry.path, "rb") as f:
        data = f.read(limit + 1)
    if entry.kind == "memprofiler_stats":
        return MemProfilerStatsViews(load_stats(entry.name, data))
    return TextReportViews(load_log(data, max(entry.size, len(data))))
