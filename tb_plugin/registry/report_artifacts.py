"""The memory-artifact and hang sections of ``kinetoscope report``: per run its allocator snapshots
(peaks, largest allocations, bytes alive at the peak, the OOM), per-rank snapshot groups, MemProfiler
files and the flight-recorder verdict. Numbers come from the artifacts' views (bytes); this module
selects and nests them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, TypeVar

from ..logs import module_logger
from ..storage.naming import names_oom
from .artifacts import MEMPROFILER_KINDS
from .interface import Registry

if TYPE_CHECKING:
    from .records import MemProfilerItem, ReportDocument, SnapshotItem, SnapshotRankGroup
    from .states import ArtifactState

logger = module_logger(__name__)
Item = TypeVar("Item")


def add_hang(registry: Registry, doc: ReportDocument) -> None:
    """Each run with flight-recorder dumps gains ``hang``: its verdict, findings and unreadable dumps
    (:meth:`~.hang.HangDumps.document`; the full document is ``kinetoscope hang``'s)."""
    runs = {r["name"]: r for r in doc["runs"]}
    for name in sorted({a.run for a in registry.artifacts() if a.entry.kind == "flight_recorder"}):
        entry = runs.get(name)
        if entry is None:  # a run of dumps only
            entry = runs[name] = {"name": name, "workers": [], "snapshots": [], "snapshot_ranks": []}
            doc["runs"].append(entry)
        got = registry.hang(name)
        entry["hang"] = (
            None
            if got is None
            else {
                "dumps": got["dumps"],
                "verdict": got["verdict"],
                "findings": got["findings"],
                "unreadable": got["unreadable"],
            }
        )
    doc["runs"].sort(key=lambda r: (r["name"] != ".", r["name"]))


def add_artifacts(registry: Registry, doc: ReportDocument, run: str | None) -> list[ArtifactState]:
    """Each run gains ``snapshots`` (allocator snapshots: peaks and the largest live allocations) and,
    when it has finetuning-scheduler MemProfiler files, ``memprofiler`` (see :func:`memprofiler_item`)."""
    failed = []
    runs = {r["name"]: r for r in doc["runs"]}
    for art in registry.artifacts(run):
        if art.entry.kind != "snapshot" and art.entry.kind not in MEMPROFILER_KINDS:
            continue
        registry.load_artifact(art)
        entry = runs.get(art.run)
        if entry is None:
            entry = runs[art.run] = {"name": art.run, "workers": []}
            doc["runs"].append(entry)
        if art.entry.kind == "snapshot":
            snapshot = _reported(art, lambda: snapshot_item(art, registry))
            entry.setdefault("snapshots", []).append(
                snapshot or {"path": art.entry.rel, "error": art.error, "devices": []}
            )
        else:
            memprofiler = _reported(art, lambda: memprofiler_item(art))
            entry.setdefault("memprofiler", []).append(
                memprofiler or {"path": art.entry.rel, "error": art.error, "kind": art.entry.kind}
            )
        if art.error:
            failed.append(art)
    for entry in doc["runs"]:
        entry.setdefault("snapshots", [])
        entry["snapshot_ranks"] = rank_groups(registry, entry["name"])
    doc["runs"].sort(key=lambda r: (r["name"] != ".", r["name"]))
    return failed


def _reported(art: ArtifactState, make: Callable[[], Item]) -> Item | None:
    """``make()``, or None when it raised: an analysis bug on one odd file is that file's error
    (``art.error``), not a traceback."""
    try:
        return make()
    except Exception as exc:
        logger.debug("reporting %s failed", art.entry.rel, exc_info=True)
        art.error = f"internal error while reporting this file: {type(exc).__name__}: {exc}"[:500]
        return None


def snapshot_item(art: ArtifactState, registry: Registry | None = None) -> SnapshotItem:
    """An allocator snapshot in the report: per device its peak active bytes, largest allocations and
    (with ``registry``) the bytes alive at the peak by operator/step/module/frame (:func:`alive_item`)."""
    item: SnapshotItem = {"path": art.entry.rel, "error": art.error, "devices": []}
    if not art.error:
        item["devices"] = [
            {
                "device": d["device"],
                "peak_active_bytes": d["peak_active_bytes"],
                "allocated_at_dump_bytes": d.get("allocated_at_dump_bytes"),
                "largest": [{"bytes": x["bytes"], "frame": x["frame"]} for x in d["largest"]],
            }
            for d in art.views.summary()["devices"]
        ]
        if registry is not None:
            for d, dev in zip(item["devices"], art.views.devices()):
                d["alive_at_peak"] = alive_item(registry, art, dev)
        item["oom"] = oom_item(art)
    return item


def alive_item(registry: Registry, art: ArtifactState, device: int, top: int = 5) -> dict[str, Any]:
    """The ``top`` rows of each ``snapshot_attribution`` table of ``device`` and the matched trace's path."""
    link, trace, _ = registry.snapshot_trace(art, device)
    doc = art.views.attribution(device, trace, None if link is None else (link["path"], link["version"]))
    tables = {
        k: None if doc[k] is None else [{"name": r["name"], "bytes": r["bytes"]} for r in doc[k][:top]]
        for k in ("by_operator", "by_step", "by_module", "by_frame")
    }
    return dict(tables, trace=None if link is None else link["path"])


def oom_item(art: ArtifactState) -> dict[str, Any] | None:
    """An allocator snapshot's OOM in the report (``analysis/snapshot_oom.py``), None without one."""
    doc = art.views.oom(None, names_oom(art.entry.name), 1000, 5)
    if doc["detected_by"] is None:
        return None
    oom = doc["oom"] or {}
    stream = next((r for r in doc["streams"] if r["is_oom_stream"]), None)
    return {
        "device": doc["device"],
        "detected_by": doc["detected_by"],
        "state_at": doc["state_at"],
        "requested_bytes": oom.get("requested_bytes"),
        "device_free_bytes": oom.get("device_free_bytes"),
        "stream_largest_free_block_bytes": stream["largest_free_block_bytes"] if stream else None,
        "fragmentation_pct": doc["totals"]["fragmentation_pct"] if doc["totals"] else None,
        "largest_live": [{"bytes": r["bytes"], "frame": r["frame"]} for r in doc["largest_live"]],
        "growth_net_bytes": doc["growth"]["net_bytes"] if doc["growth"] else None,
    }


def rank_groups(registry: Registry, run: str) -> list[SnapshotRankGroup]:
    """Per-rank snapshot groups of two ranks or more whose lowest rank lies in ``run`` (a group of
    ``rank_<N>/`` runs is reported once): peaks per rank and the outlier."""
    out: list[SnapshotRankGroup] = []
    seen: set[Any] = set()
    for art in registry.artifacts(run):
        if art.entry.kind != "snapshot" or art.entry.rel in seen:
            continue
        group = registry.rank_group(art)
        seen.update(a.entry.rel for _, a in group)
        if len(group) >= 2 and group[0][1].run == run:
            doc = registry.snapshot_ranks(art)
            out.append(
                {
                    "ranks": [
                        {"rank": r["rank"], "path": r["path"], "peak_active_bytes": r["peak_active_bytes"]}
                        for r in doc["ranks"]
                    ],
                    "median_peak_bytes": doc["median_peak_bytes"],
                    "outlier_rank": doc["outlier_rank"],
                    "outlier_peak_to_median": doc["outlier_peak_to_median"],
                    "outlier_vs_median_pct": doc["outlier_vs_median_pct"],
                }
            )
    return out


def memprofiler_item(art: ArtifactState) -> MemProfilerItem:
    """A MemProfiler file in the report: stats files list each snapshot with its headline values
    (bytes or counts), text reports their size."""
    item: MemProfilerItem = {"path": art.entry.rel, "kind": art.entry.kind, "error": art.error}
    if art.error:
        return item
    if art.entry.kind == "memprofiler_log":
        text = art.views.text()
        item["size_bytes"], item["truncated"] = text["size_bytes"], text["truncated"]
        return item
    doc = art.views.stats()
    keys = [m["key"] for m in doc["metrics"]]
    item["rank"], item["warnings"] = doc["rank"], doc["warnings"]
    item["snapshots"] = [
        {
            "key": s["key"],
            "function": s["function"],
            "iteration": s["iteration"],
            "phase": s["phase"],
            "values": {k: s["values"][k] for k in keys if k in s["values"]},
        }
        for s in doc["snapshots"]
    ]
    return item
