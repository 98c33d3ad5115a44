"""The views of loaded memory artifacts (allocator snapshots, memory-timeline exports, MemProfiler
output), computed once per loaded file. Imported by :mod:`.artifacts` only when an artifact is loaded:
their analysis and reader modules (pickle streaming, a reader child process) cost a report of
traces only ~8 ms of imports."""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any, Callable, TypeVar, cast

import numpy as np

from ..analysis import snapshot as snap_analysis
from ..analysis import snapshot_attribution, snapshot_oom
from ..analysis.series import reduce_to
from ..artifacts.memory_html import CONTENT_TYPE
from ..artifacts.memprofiler import HEADLINE, MAX_LOG_BYTES, MAX_STATS_BYTES, load_log, load_stats
from ..artifacts.snapshot import Snapshot
from ..artifacts.timeline_export import CATEGORIES

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

    from ..storage.fs import FileEntry
    from ..trace.model import Trace

T = TypeVar("T")

MAX_EXPORT_POINTS = 4000


class SnapshotViews:
    def __init__(self, snapshot: Snapshot, summary: dict[str, Any] | None = None) -> None:
        """``summary``: :meth:`summary`'s answer kept in the parse cache (as JSON), if any."""
        self.snapshot = snapshot
        self._memo: dict[Hashable, object] = {} if summary is None else {"summary": summary}
        self._lock = threading.Lock()

    def _get(self, key: Hashable, make: Callable[[], T]) -> T:
        with self._lock:
            if key not in self._memo:
                self._memo[key] = make()
            return cast(T, self._memo[key])  # the value ``make`` built for this key

    def devices(self) -> list[int]:
        return sorted(self.snapshot.devices)

    def summary(self) -> dict[str, Any]:
        def build() -> dict[str, Any]:
            snap = self.snapshot
            return {
                "layout": snap.layout,
                "time_unit": "us" if snap.has_time else "entry",
                "devices": [snap_analysis.device_summary(snap, d) for d in self.devices()],
                "segment_devices": sorted({s["device"] for s in snap.segments}),
                "history_recorded": bool(snap.devices),
                "annotations": snap.annotations[:1000],
                "markers": {f"GPU{d}": snap_analysis.markers(snap, d) for d in self.devices()},
            }

        return self._get("summary", build)

    def timeline(self, device: int, start: float | None, end: float | None, width_px: int) -> dict[str, Any]:
        arrays: dict[str, Any] = self._get(("timeline_arrays", device), dict)
        with self._lock:
            return snap_analysis.timeline(self.snapshot, device, start, end, width_px, cache=arrays)

    def segments(self, device: int) -> list[dict[str, Any]]:
        """The segments of one device; memoized only for devices that have segments (any index is a
        valid request, so the memo would otherwise grow with the requests)."""
        if device not in self.summary()["segment_devices"]:
            return []
        return self._get(("segments", device), lambda: snap_analysis.segments_state(self.snapshot, device))

    def allocations(self, device: int, limit: int) -> list[dict[str, Any]]:
        return snap_analysis.top_allocations(self.snapshot, device, limit)

    def stack(self, index: int) -> list[dict[str, Any]] | None:
        return self.snapshot.stack_frames(index)

    def attribution(self, device: int, trace: Trace | None, trace_key: tuple[str, str] | None) -> dict[str, Any]:
        """Bytes alive at ``device``'s peak by frame and, with ``trace`` (a match; ``trace_key`` names
        its file and version), by operator, step and module (:mod:`~.analysis.snapshot_attribution`)."""
        return self._get(
            ("attribution", device, trace_key), lambda: snapshot_attribution.attribute(self.snapshot, device, trace)
        )

    def wall_active(self, device: int) -> tuple[np.ndarray, np.ndarray]:
        """:func:`~.analysis.snapshot_attribution.wall_active` of ``device``, kept."""
        return self._get(("wall_active", device), lambda: snapshot_attribution.wall_active(self.snapshot, device))

    def oom(self, device: int | None, taken_on_oom: bool, last_n: int, top: int) -> dict[str, Any]:
        """OOM forensics (:func:`~.analysis.snapshot_oom.oom_report`) of ``device`` (None: the device
        of the last OOM, else the first with history or segments); small, not memoized."""
        with self._lock:
            return snapshot_oom.oom_report(self.snapshot, device, taken_on_oom, last_n, top)


class MemoryHtmlViews:
    """The PNG of an ``export_memory_timeline`` HTML file (:mod:`~.artifacts.memory_html`)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def meta(self) -> dict[str, Any]:
        return {
            "content_type": CONTENT_TYPE,
            "width_px": self.data["width_px"],
            "height_px": self.data["height_px"],
            "image_bytes": len(self.data["png"]),
            "html_bytes": self.data["html_bytes"],
        }

    def image(self) -> bytes:
        png: bytes = self.data["png"]  # extract_png's decoded image
        return png


class TimelineExportViews:
    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def series(self) -> dict[str, Any]:
        t = self.data["times_us"]
        b = self.data["bytes"]
        if len(t) > MAX_EXPORT_POINTS:  # per bin the largest and the last total (analysis/series.py)
            keep = reduce_to(t, b.sum(axis=0), MAX_EXPORT_POINTS)
            t, b = t[keep], b[:, keep]
        total = b.sum(axis=0) if b.size else np.zeros(0)
        peak = int(np.argmax(total)) if len(total) else 0
        return {
            "form": self.data["form"],
            "categories": self.data["categories"] or list(CATEGORIES),
            "times_us": t.tolist(),
            "bytes": b.astype(np.int64).tolist(),
            "peak_bytes": int(total[peak]) if len(total) else 0,
            "peak_time_us": float(t[peak]) if len(t) else None,
        }


class MemProfilerStatsViews:
    """One ``rank_<r>_memory_stats.yaml`` (parsed by :func:`~.artifacts.memprofiler.load_stats`)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def stats(self) -> dict[str, Any]:
        """The snapshots with every value, and the headline metrics present in any of them."""
        present = {k for s in self.data["snapshots"] for k in s["values"]}
        return {
            "rank": self.data["rank"],
            "warnings": self.data["warnings"],
            "metrics": [{"key": k, "label": label, "unit": unit} for k, label, unit in HEADLINE if k in present],
            "snapshots": self.data["snapshots"],
        }


class TextReportViews:
    """A MemProfiler ``fsdp_mem_*.log`` text report (the first bytes of it)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def text(self) -> dict[str, Any]:
        return dict(self.data)


def load_memprofiler_views(fs: AbstractFileSystem, entry: FileEntry) -> MemProfilerStatsViews | TextReportViews:
    """Read a MemProfiler file of ``entry.kind`` (bounded reads) into its views; raises
    :class:`~.artifacts.memprofiler.MemProfilerError` for a file that is not one."""
    limit = MAX_STATS_BYTES if entry.kind == "memprofiler_stats" else MAX_LOG_BYTES
    with fs.open(entry.path, "rb") as f:
        data = f.read(limit + 1)
    if entry.kind == "memprofiler_stats":
        return MemProfilerStatsViews(load_stats(entry.name, data))
    return TextReportViews(load_log(data, max(entry.size, len(data))))
