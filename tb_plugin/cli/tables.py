"""``kinetoscope report``'s text tables (without ``--json``): the report document (registry/report.py)
printed per run and worker, and each run's memory artifacts. Every number is the document's; this
module only rounds (analysis/numfmt.py) and lays out."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from ..analysis.breakdown import CATEGORY_LABELS
from ..analysis.numfmt import fixed
from ..analysis.overview import CATEGORY_KEYS, GpuRow
from .advice import bytes_text as _bytes
from .advice import print_advice, print_run_advice
from .graphs import print_graphs
from .hang import print_report_hang
from .path import print_collectives, print_critical_path

if TYPE_CHECKING:
    from ..registry.records import ReportDocument, RunReport


def labels() -> list[str]:
    """The breakdown's category labels in the Overview's order (analysis/breakdown.py: the one table)."""
    return [CATEGORY_LABELS[k] for k in CATEGORY_KEYS]


def print_tables(doc: ReportDocument, out: TextIO) -> None:
    for run in doc["runs"]:
        for w in run["workers"]:
            out.write(f"\n== run {run['name']}  worker {w['worker']}  span {w['span']}  ({w['path']})\n")
            ov = w["overview"]
            if w["error"] or ov is None:  # a file that is not loaded has no Overview
                out.write(f"   ERROR: {w['error'] or 'not analysed'}\n")
                continue
            for warning in w["warnings"]:
                out.write(f"   warning: {warning}\n")
            for note in w["notes"]:
                out.write(f"   note: {note}\n")
            avg = ov["average"]
            out.write(f"   steps: {len(ov['steps'])}   average step: {fixed(avg['total_us'] / 1000, 3)} ms\n")
            out.write(f"   {'Category':<15}{'avg µs':>14}{'% of step':>11}\n")
            for key, label in zip(CATEGORY_KEYS, labels()):
                # the share the Overview shows (analysis/overview.py: average_pct), rounded by the same rule
                pct = ov["average_pct"][key]
                out.write(f"   {label:<15}{fixed(avg[key], 1):>14}{'–' if pct is None else fixed(pct, 2):>10}%\n")
            for g in ov["gpus"]:  # an accelerator that is no GPU (MTIA): the GPU-only measures do not apply
                gpu_only = (
                    ""
                    if g["device_type"] != "GPU"
                    else (
                        f", SM efficiency {_pct(g['sm_efficiency_pct'])}{_left_out(g, 'geometry')}, "
                        f"occupancy {_pct(g['achieved_occupancy_pct'])}{_left_out(g, 'occupancy')}, "
                        f"{'matrix cores' if g['vendor'] == 'AMD' else 'tensor cores'} {_pct(g['tensor_core_pct'])}"
                    )
                )
                out.write(
                    f"   {g['device_type']} {g['id']} {g['name'] or '(unknown device)'}{_gpu_kind(g)}: "
                    f"utilization {_pct(g['utilization_pct'])}{gpu_only}\n"
                )
            print_advice(ov, out, run.get("recommendations"))
            print_graphs(w["graphs"], out)
            print_critical_path(w.get("critical_path") or [], out, across=False)
        print_run_advice(run, out)
        print_critical_path(run.get("critical_path") or [], out, across=True)
        print_collectives(run.get("distributed"), out)
        _print_artifacts(run, out)
        print_report_hang(run, out)


def _gpu_kind(g: GpuRow) -> str:
    """`` (AMD, architecture gfx94x)`` / `` (NVIDIA, compute capability 9.0)``; AMD's computeMajor/Minor
    is an architecture, never called a compute capability."""
    parts = [g["vendor"]] if g["vendor"] else []
    if g["architecture"]:
        parts.append(f"architecture {g['architecture']}")
    elif g["compute_capability"]:
        parts.append(f"compute capability {g['compute_capability']}")
    return f" ({', '.join(parts)})" if parts else ""


def _left_out(g: GpuRow, what: str) -> str:
    """Kernel time a GPU metric leaves out (``kernel_us_without_<what>``: geometry, occupancy)."""
    us = g["kernel_us_without_geometry"] if what == "geometry" else g["kernel_us_without_occupancy"]
    why = "without launch geometry" if what == "geometry" else f"with unknown {what}"
    return f" (leaves out {fixed(us / 1000, 3)} ms of kernel time {why})" if us > 0 else ""


# MemProfiler stats keys whose largest value over a file's snapshots the text report shows (bytes).
_MEMPROFILER_PEAKS = (("allocated_bytes.all.peak", "peak allocated"), ("reserved_bytes.all.peak", "peak reserved"))


def _print_artifacts(run: RunReport, out: TextIO) -> None:
    """A run's memory artifacts: each allocator snapshot's peak active bytes per device, each
    MemProfiler stats file's snapshot count and largest peaks, each MemProfiler log's size."""
    snapshots, memprofiler = run.get("snapshots") or [], run.get("memprofiler") or []
    if not snapshots and not memprofiler:
        return
    only = " (no trace files)" if not run["workers"] else ""
    out.write(f"\n== run {run['name']}  memory artifacts{only}\n")
    if snapshots:
        out.write(f"   allocator snapshots: {len(snapshots)}\n")
        for snap in snapshots:
            if snap["error"]:
                out.write(f"     {snap['path']}: ERROR: {snap['error']}\n")
                continue
            peaks = ", ".join(
                f"{d['device']} peak active {_bytes(d['peak_active_bytes'])} (requested bytes; allocated at "
                f"dump {_bytes(d.get('allocated_at_dump_bytes') or 0)})"
                for d in snap["devices"]
            )
            out.write(f"     {snap['path']}: {peaks or 'no devices'}\n")
            for d in snap["devices"]:
                alive = d.get("alive_at_peak") or {}
                top = [
                    (k[3:], alive[k][0]) for k in ("by_operator", "by_step", "by_module", "by_frame") if alive.get(k)
                ]
                if top:
                    out.write(
                        f"       {d['device']} alive at the peak: "
                        + "; ".join(f"top {k} {r['name']} {_bytes(r['bytes'])}" for k, r in top)
                        + "\n"
                    )
            oom = snap.get("oom")
            if oom:
                asked = _bytes(oom["requested_bytes"]) if oom["requested_bytes"] is not None else "unknown size"
                free = oom["stream_largest_free_block_bytes"]
                out.write(
                    f"       OOM on {oom['device']}: requested {asked}"
                    + (f", largest free block on its stream {_bytes(free)}" if free is not None else "")
                    + (
                        f", fragmentation {fixed(oom['fragmentation_pct'], 1)} %"
                        if oom["fragmentation_pct"] is not None
                        else ""
                    )
                    + "\n"
                )
    for group in run.get("snapshot_ranks") or []:
        peaks = ", ".join(
            f"rank {r['rank']} {_bytes(r['peak_active_bytes'])}"
            for r in group["ranks"]
            if r["peak_active_bytes"] is not None
        )
        dev = group["outlier_vs_median_pct"]  # analysis/snapshot_ranks.py: the one percentage
        outlier = (
            "; no outlier"
            if dev is None
            else (f"; outlier: rank {group['outlier_rank']} ({'+' if dev >= 0 else ''}{fixed(dev, 1)} % vs the median)")
        )
        out.write(f"   peak per rank: {peaks}{outlier}\n")
    for item in memprofiler:
        what = "MemProfiler stats" if item["kind"] == "memprofiler_stats" else "MemProfiler log"
        if item["error"]:
            out.write(f"   {what} {item['path']}: ERROR: {item['error']}\n")
        elif item["kind"] == "memprofiler_log":
            cut = " (shown truncated)" if item["truncated"] else ""
            out.write(f"   {what} {item['path']}: {item['size_bytes']} bytes{cut}\n")
        else:
            parts = [f"rank {item['rank']}", f"{len(item['snapshots'])} snapshots"]
            for key, label in _MEMPROFILER_PEAKS:
                values = [s["values"][key] for s in item["snapshots"] if s["values"].get(key) is not None]
                if values:
                    parts.append(f"{label} {_bytes(max(values))}")
            out.write(f"   {what} {item['path']}: {', '.join(parts)}\n")


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{fixed(value, 2)}%"
