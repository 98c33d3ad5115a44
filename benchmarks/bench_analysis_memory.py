"""What a full report's analyses add to memory above the parsed trace, per event: the figure behind
``registry/parse.py``'s ``ANALYSIS_BYTES_PER_EVENT`` (the per-file budget check made before the
analyses start).

    python benchmarks/bench_analysis_memory.py [TRACE_DIR ...] [--work DIR]

Without arguments, five real samples of ``../shared/samples`` (V100 ResNet-50, H100 Qwen, CPU-only
torch 2.13, MI300 BERT, DLRM rank 0) are first scaled to 0.1-0.2 GB with
``benchmarks/rank_job.py`` (``write_repeated``) (small traces are all fixed cost). Each folder is then reported
(``kinetoscope report --json``, cold, one decode process) in its own process: right after the parse,
at the budget check, the RSS is noted and the peak is reset (``/proc/self/clear_refs``); at the end
``(VmHWM - RSS after the parse) / (events + memory events)`` is the bytes per event the analyses added.

Last line: ``max_added_per_event= planned_per_event= margin=`` (planned ÷ the largest measured).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks._common import REPO, print_figures, run_child
from benchmarks.rank_job import write_repeated

SAMPLES = os.path.join(os.path.dirname(REPO), "shared", "samples")
# (name, sample, copies): each scaled to 0.1-0.2 GB
DEFAULT = (
    ("v100", "kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz", 5),
    ("h100_qwen", "tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", 30),
    ("cpu_torch213", "torch213_cpu/worker0.1795324943899052487.pt.trace.json", 300),
    ("mi300_bert", "tracelens/mi300/gaunernst_bert-small-uncased__1016001.json.gz", 300),
    ("dlrm_rank0", "dlrm_8ranks/worker0_step_12.1694128201545.pt.trace.json", 150),
)

CHILD = r"""
import io, json, os, sys
sys.path.insert(0, sys.argv[2])
os.environ["KINETOSCOPE_DECODE_WORKERS"] = "1"
from tb_plugin import cli
from tb_plugin.registry import parse
def status(key):
    return next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith(key))
seen = {}
real = parse.check_analysis_budget
def at_budget_check(trace):
    seen["rss"] = status("VmRSS:")
    seen["events"] = len(trace.events) + len(trace.memory)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM := VmRSS
    return real(trace)
for module in list(sys.modules.values()):  # wherever it was imported by name
    if getattr(module, "check_analysis_budget", None) is real:
        module.check_analysis_budget = at_budget_check
sys.stdout = io.StringIO()
cli.main(["report", sys.argv[1], "--json"])
sys.stdout = sys.__stdout__
hwm = status("VmHWM:")
print(json.dumps({"events": seen["events"], "rss_mb": seen["rss"] / 2**20, "hwm_mb": hwm / 2**20,
                  "per_event": (hwm - seen["rss"]) / seen["events"]}))
"""


def scaled_dirs(work: str) -> list[tuple[str, str]]:
    """``(name, folder)`` of each default sample scaled into ``work``."""
    out = []
    for name, sample, copies in DEFAULT:
        folder = os.path.join(work, name)
        target = os.path.join(folder, f"{name}.pt.trace.json")
        if not os.path.exists(target):
            os.makedirs(folder, exist_ok=True)
            write_repeated(os.path.join(SAMPLES, sample), target, copies)
        out.append((name, folder))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="*", help="folders holding one trace each (default: the scaled samples)")
    ap.add_argument("--work", help="where to scale the samples (default: a temporary folder, removed)")
    args = ap.parse_args()
    from tb_plugin.registry.parse import ANALYSIS_BYTES_PER_EVENT

    work = args.work or tempfile.mkdtemp(prefix="bench-analysis-memory-")
    try:
        dirs = [(os.path.basename(d.rstrip("/")), d) for d in args.dirs] or scaled_dirs(work)
        worst = 0.0
        for name, folder in dirs:
            cache = tempfile.mkdtemp(dir=work, prefix="cache-")
            got = run_child(CHILD, [folder, REPO], env={**os.environ, "KINETOSCOPE_CACHE_DIR": cache})
            shutil.rmtree(cache, ignore_errors=True)
            worst = max(worst, got["per_event"])
            print(
                f"{name}: {got['events']} events, RSS after the parse {got['rss_mb']:.0f} MB, peak "
                f"{got['hwm_mb']:.0f} MB: the analyses added {got['per_event']:.0f} bytes per event"
            )
        print_figures(
            max_added_per_event=(worst, 1),
            planned_per_event=(ANALYSIS_BYTES_PER_EVENT, 0),
            margin=ANALYSIS_BYTES_PER_EVENT / worst,
        )
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
