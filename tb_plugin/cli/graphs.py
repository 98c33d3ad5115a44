"""The text report's CUDA graph and torch.compile lines for one worker, from the report's ``graphs``
section (:func:`tb_plugin.registry.graph_siblings.graphs_report`); nothing is computed here."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from ..analysis.numfmt import fixed

if TYPE_CHECKING:
    from ..registry.records import GraphsReport

MAX_KERNELS = 5  # kernels printed per graph
MAX_TRITON = 5  # Triton kernels printed


def print_graphs(graphs: GraphsReport | None, out: TextIO) -> None:
    """Replays, graphs and their status, the kernel-time account; compiled regions, Triton kernels,
    recompilations and graph breaks per step; the advice of both."""
    if not graphs:
        return
    cuda = graphs["cuda_graphs"]
    if cuda["replays"]:
        out.write(
            f"   CUDA graphs: {cuda['replays']} replays of {cuda['graphs']} graphs, "
            f"{fixed(cuda['graph_kernel_pct'], 2)}% of GPU kernel time in graphs\n"
        )
        for g in cuda["graph_list"]:
            out.write(
                f"     graph {g['graph']}: {g['replays']} replays × {g['events_per_replay']} device events, "
                f"kernels {fixed(g['kernel_us'], 1)} µs, gaps {fixed(g['gap_us'], 1)} µs, "
                f"host launch {fixed(g['launch_us'], 1)} µs, streams {g['streams']}: {g['status']}\n"
            )
            out.write(f"       {g['note']}\n")
            for k in g["kernels"][:MAX_KERNELS]:
                where = f"  ← {k['op']}" + (f" ({k['frame']})" if k["frame"] else "") if k["op"] else ""
                out.write(f"       {fixed(k['total_us'], 1):>10} µs  {k['calls']:>5}×  {k['name'][:80]}{where}\n")
        acc = cuda["accounting"]
        out.write(
            f"   kernel time: {fixed(acc['attributed_us'], 1)} µs in operators "
            f"({fixed(acc['from_graph_replay_us'], 1)} µs from graph replay), "
            f"{fixed(acc['unattributed_us'], 1)} µs unattributed\n"
        )
    compiled = graphs["compiled"]
    if compiled:
        out.write("   compiled regions:\n")
        for r in compiled["regions"]:
            out.write(
                f"     {r['name']}: {r['calls']} calls, host {fixed(r['host_us'], 1)} µs, device "
                f"{fixed(r['device_us'], 1)} µs, {r['triton_kernels']} Triton kernels "
                f"({fixed(r['triton_us'], 1)} µs)\n"
            )
        for t in compiled["triton_kernels"][:MAX_TRITON]:
            out.write(f"     {fixed(t['total_us'], 1):>10} µs  {t['calls']:>5}×  {t['name'][:80]}  in {t['region']}\n")
        for s in compiled["steps"]:
            out.write(
                f"     step {s['step']}: {s['regions']} regions, frames {s['frames']}, versions "
                f"{' '.join(s['versions']) or '–'}, recompilations {s['recompilations']}, between regions "
                f"{fixed(s['between_us'], 1)} µs, cache lookup {fixed(s['cache_lookup_us'], 1)} µs\n"
            )
    for advice in cuda["advice"] + (compiled["advice"] if compiled else []):
        out.write(f"   * {advice['text']}\n")
