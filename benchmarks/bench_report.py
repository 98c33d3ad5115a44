"""The full report against its floor, cold and warm, on one trace.

    python benchmarks/bench_report.py TRACE [--repeat 1]

Each measurement runs in its own process (peak RSS is that process's ``VmHWM``; a cold report's line
also gives the largest peak of the processes it forked, its section child's, which may be higher, and
the peak of the memory the whole process tree held at once: the summed anonymous PSS sampled every 50 ms
from this process (``benchmarks/tree_memory.py``; a forked child's RSS counts the pages it shares with
its parent, this counts each page once), in one more cold run of its own: each sample walks every
process's page tables in its stead, which lengthened the cold report by ~6 % on the 0.9 GB trace and
8-13 % on the 4.5 GB one, so the timed runs are not sampled; ``--no-tree-memory`` leaves that run out):

- ``floor``: read the file (gunzip if needed) and ``orjson.loads`` it: what any JSON reader pays;
- ``cold``: ``kinetoscope report --json`` on the trace's folder with an empty parse cache;
- ``warm``: the same command again on the cache the cold run filled.

Last line: ``floor_s= cold_s= warm_s= cold_over_floor= warm_over_cold= peak_rss_mb=`` (the cold
run's peak; the targets are ratios, measured in one run).

``--no-floor`` skips the floor (``orjson.loads`` of a 4.5 GB trace needs ~30 GB of memory): the
ratios to it are then left out. ``--baseline TRACE09`` also measures the cold report of a smaller
trace in the same run (in turns with the trace's runs, first in each round) and prints ``cold_over_baseline`` (the 4.5 GB trace's cold time
≤ 5.0× the 0.9 GB trace's) and ``cpu_over_baseline`` (the same ratio of CPU seconds, this process and its
decode workers: a loaded machine disturbs it less). Every line ends with the load averages.

"Cold" is an empty parse cache with the trace in the page cache: before each floor and cold run the
trace is read once, untimed, unless all of it is resident (``benchmarks/page_cache.py``; a line per run
says what was found). On a box whose reclaim drops a file's pages a minute after its last read (DAMON's
``pageout`` here) a cold report would otherwise also time the disk, by how much depending on when the
file was last read.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks._common import HWM, REPO, run_child
from benchmarks.page_cache import ensure_resident

FLOOR = (
    HWM
    + r"""
import gzip, json, sys, time
import orjson
t = time.perf_counter()
with open(sys.argv[1], "rb") as f:
    data = f.read()
if data[:2] == b"\x1f\x8b":
    data = gzip.decompress(data)
orjson.loads(data)
print(json.dumps({"seconds": time.perf_counter() - t, "rss_mb": hwm_mb()}))
"""
)

REPORT = (
    HWM
    + r"""
import io, json, os, sys, time
sys.path.insert(0, sys.argv[2])
from tb_plugin.cli import main
out = io.StringIO()
t = time.perf_counter()
stdout, sys.stdout = sys.stdout, out
try:
    code = main(["report", os.path.dirname(os.path.abspath(sys.argv[1])), "--json"])
finally:
    sys.stdout = stdout
# the children left to exit (their answers read: trace/forked_worker.leave_to_exit) reaped as the command
# line's exit reaps them, so that their exit and CPU are counted
from tb_plugin.trace.forked_worker import reap_exited
reap_exited(True)
import resource
cpu = sum(getattr(resource.getrusage(w), f) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN) for f in ("ru_utime", "ru_stime"))
child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KB: its forked children's largest peak
print(json.dumps({"seconds": time.perf_counter() - t, "cpu_s": cpu, "rss_mb": hwm_mb(), "child_rss_mb": child, "code": code, "bytes": len(out.getvalue())}))
"""
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("trace")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each case; the fastest counts")
    parser.add_argument("--no-floor", action="store_true", help="skip the floor (it holds the whole document)")
    parser.add_argument("--baseline", help="a smaller trace whose cold report is measured in this run, in turns")
    parser.add_argument("--repo", default=REPO, help="the checkout whose tb_plugin is measured (default: this one)")
    parser.add_argument(
        "--no-tree-memory", action="store_true", help="do not sample the cold report's process tree's memory"
    )
    args = parser.parse_args(argv)
    cases = ("cold", "warm") if args.no_floor else ("floor", "cold", "warm")
    traces = {"trace": (args.trace, cases)}
    if args.baseline:  # measured in turns with the trace, first in each round: fastest vs fastest
        traces = {"baseline": (args.baseline, ("cold",)), **traces}
    measured = _measure(traces, args.repeat, args.repo, not args.no_tree_memory)
    base = measured["baseline"]["cold"] if args.baseline else None
    if base is not None:
        print(
            f"baseline cold: {base['seconds']:.2f} s, CPU {base['cpu_s']:.2f} s, peak RSS {base['rss_mb']:.0f} MB"
            f" ({args.baseline}; load {_load()})"
        )
    best = measured["trace"]
    for name in cases:
        r = best[name]
        print(
            f"{name}: {r['seconds']:.2f} s"
            + (f", CPU {r['cpu_s']:.2f} s" if "cpu_s" in r else "")
            + f", peak RSS {r['rss_mb']:.0f} MB"
            + (f" (its largest child {r['child_rss_mb']:.0f} MB)" if "child_rss_mb" in r else "")
            + (f", the process tree's memory {r['tree_pss_mb']:.0f} MB" if "tree_pss_mb" in r else "")
            + (f", exit {r['code']}, {r['bytes']} bytes of JSON" if "code" in r else "")
        )
    c, w = best["cold"]["seconds"], best["warm"]["seconds"]
    line = ""
    if "floor" in best:
        f = best["floor"]["seconds"]
        line += f"floor_s={f:.2f} "
    line += f"cold_s={c:.2f} warm_s={w:.2f} "
    if "floor" in best:
        line += f"cold_over_floor={c / f:.2f} "
    line += f"warm_over_cold={w / c:.3f} peak_rss_mb={best['cold']['rss_mb']:.0f}"
    line += f" child_peak_rss_mb={best['cold']['child_rss_mb']:.0f}"
    if "tree_pss_mb" in best["cold"]:
        line += f" tree_peak_mb={best['cold']['tree_pss_mb']:.0f}"
    if base is not None:
        line += f" baseline_cold_s={base['seconds']:.2f} cold_over_baseline={c / base['seconds']:.2f}"
        line += f" cold_cpu_s={best['cold']['cpu_s']:.2f} baseline_cold_cpu_s={base['cpu_s']:.2f}"
        line += f" cpu_over_baseline={best['cold']['cpu_s'] / base['cpu_s']:.2f}"
    line += f" load={_load()}"
    print(line)
    return 0


def _load() -> str:
    """The 1, 5 and 15 minute load averages now (the figures of a shared machine need them beside)."""
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def _measure(traces: dict[str, tuple[str, tuple]], repeat: int, repo: str = REPO, tree: bool = True) -> dict:
    """Per label of ``traces`` (``label -> (trace path, cases)``), the fastest of ``repeat`` runs of each
    case, each trace hard-linked into a fresh folder, with ``repo``'s tb_plugin; the traces in turns,
    round by round. Before each floor and cold run the trace is made resident in the page cache
    (:func:`~benchmarks.page_cache.ensure_resident`: this box's reclaim drops a file's pages a minute after
    its last read, and a report read from the disk measures the disk). With ``tree``, one more cold run of
    each samples its process tree's memory (``tree_pss_mb``; the sampling slows the run it samples: its
    time is not counted)."""
    with tempfile.TemporaryDirectory(prefix="kinetoscope-bench-report-") as tmp:
        linked = {}
        for label, (trace_path, _) in traces.items():
            run_dir = os.path.join(tmp, label)
            os.mkdir(run_dir)
            linked[label] = os.path.join(run_dir, os.path.basename(trace_path))
            try:  # a hard link (a symlink out of the logdir would not be listed); a copy across filesystems
                os.link(os.path.abspath(trace_path), linked[label])
            except OSError:
                import shutil

                shutil.copyfile(trace_path, linked[label])
        best: dict[str, dict[str, dict]] = {label: {} for label in traces}
        for _ in range(max(1, repeat)):
            for label, (_, cases) in traces.items():
                trace = linked[label]
                env = dict(os.environ, KINETOSCOPE_CACHE_DIR=tempfile.mkdtemp(dir=tmp))
                for name, script in (("floor", FLOOR), ("cold", REPORT), ("warm", REPORT)):
                    if name not in cases:
                        continue
                    if name != "warm":
                        print(f"{label} {name}: {ensure_resident(trace)}", flush=True)
                    got = run_child(script, [trace, os.path.abspath(repo)], env=env)
                    if name not in best[label] or got["seconds"] < best[label][name]["seconds"]:
                        best[label][name] = got
        if tree:
            for label in traces:
                env = dict(os.environ, KINETOSCOPE_CACHE_DIR=tempfile.mkdtemp(dir=tmp))
                ensure_resident(linked[label])
                sampled = run_child(REPORT, [linked[label], os.path.abspath(repo)], env=env, tree_memory=True)
                best[label]["cold"]["tree_pss_mb"] = sampled["tree_pss_mb"]
    return best


if __name__ == "__main__":
    sys.exit(main())
