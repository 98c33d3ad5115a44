"""How the cold report of one big trace scales with cores: whole processes pinned with ``taskset``.

    python benchmarks/bench_scaling.py TRACE [--cores 1,2,4,8,16] [--repeat 3] [--repo DIR]

For each core count ``c`` (default: 1, 2, 4, 8, 16, those the machine has) the cold
``kinetoscope report --json`` of TRACE's folder runs in a fresh process pinned to cores ``0..c-1``
(the decode workers default to the usable cores, so ``c`` cores means ``c`` workers; 1 core decodes
inline), with an empty ``KINETOSCOPE_CACHE_DIR``. The core counts take turns within each repeat
(1, 2, 4, …, then again), so a change of the machine's load hits every count alike; the reports
must be byte-identical across counts (a hash of each is printed and compared). Printed per count:
the median wall time, the median CPU seconds (the process and its workers; and the main process's own:
the part more workers do not share), the speed-up over 1 core
and the efficiency of each doubling (time at ``c/2`` over twice the time at ``c``: 100 % when doubling
the cores halves the time), with the load average before and after.

``--repo`` measures another checkout (its ``tb_plugin``) instead of this one; ``--baseline DIR`` also
measures the checkout DIR, in turn with this one at each count (paired runs: the same load for both;
the baseline first in odd rounds, this one first in even ones, so a load that rises or falls favours neither),
and prints its table first. Last line (this checkout's): ``cores1_s= cores1_cpu_s= cores2_s= …
speedup2= … eff2= …``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import REPO, print_figures
from page_cache import ensure_all_resident

REPORT = r"""
import hashlib, io, json, os, resource, sys, time
sys.path.insert(0, sys.argv[2])
from tb_plugin.cli import main
out = io.StringIO()
t = time.perf_counter()
stdout, sys.stdout = sys.stdout, out
try:
    code = main(["report", sys.argv[1], "--json"])
finally:
    sys.stdout = stdout
text = out.getvalue().encode()
own = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"seconds": time.perf_counter() - t, "code": code, "bytes": len(text), "sha": hashlib.sha256(text).hexdigest()[:12], "main_cpu": own.ru_utime + own.ru_stime}))
"""


def load() -> str:
    """The load averages (1, 5, 15 min) as text."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run_pinned(cores: int, logdir: str, repo: str) -> dict:
    """One cold report pinned to cores ``0..cores-1``: wall seconds (the whole process), CPU seconds
    (it and every worker it waited for), and the report's size."""
    cache = tempfile.mkdtemp(prefix="kinetoscope-bench-scaling-cache-")
    env = {k: v for k, v in os.environ.items() if k != "KINETOSCOPE_DECODE_WORKERS"}
    env["KINETOSCOPE_CACHE_DIR"] = cache
    cpu_list = "0" if cores == 1 else f"0-{cores - 1}"
    for line in ensure_all_resident(logdir, only_read=True):  # the trace in the page cache (page_cache.py)
        print(f"  {line}", flush=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    try:
        out = subprocess.run(
            ["taskset", "-c", cpu_list, sys.executable, "-c", REPORT, logdir, repo],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    return {
        "wall": wall,
        "cpu": cpu,
        "inner": got["seconds"],
        "code": got["code"],
        "bytes": got["bytes"],
        "sha": got["sha"],
        "main_cpu": got["main_cpu"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("trace")
    parser.add_argument("--cores", help="comma-separated core counts (default: 1, 2, 4, 8, 16 up to the machine's)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; each count's median is printed")
    parser.add_argument("--repo", default=REPO, help="the checkout whose tb_plugin is measured")
    parser.add_argument("--baseline", help="another checkout measured in turn with --repo (paired runs)")
    args = parser.parse_args(argv)
    have = os.cpu_count() or 1
    if args.cores:
        counts = [int(c) for c in args.cores.split(",")]
    else:
        counts = [c for c in (1, 2, 4, 8, 16, 32, 64) if c <= have]
    counts = [c for c in counts if 1 <= c <= have]
    if shutil.which("taskset") is None:
        print("taskset is missing (util-linux)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="kinetoscope-bench-scaling-") as tmp:
        logdir = os.path.join(tmp, "run")
        os.mkdir(logdir)
        target = os.path.join(logdir, os.path.basename(args.trace))
        try:  # a hard link (a symlink out of the logdir would not be listed); a copy across filesystems
            os.link(os.path.abspath(args.trace), target)
        except OSError:
            shutil.copyfile(args.trace, target)
        size = os.path.getsize(target)
        print(
            f"{args.trace}: {size / 1e9:.2f} GB; {have} cores; counts {counts}; {args.repeat} rounds; repo {args.repo}"
        )
        print(f"load before: {load()}", flush=True)
        repos = ([("baseline", args.baseline)] if args.baseline else []) + [("this", args.repo)]
        runs: dict[str, dict[int, list[dict]]] = {name: {c: [] for c in counts} for name, _ in repos}
        for r in range(max(1, args.repeat)):
            for c in counts:
                for name, repo in repos if r % 2 == 0 else repos[::-1]:  # (a load that drifts hits both alike)
                    got = run_pinned(c, tmp, repo)
                    runs[name][c].append(got)
                    print(
                        f"  round {r + 1} {name:8s} cores {c:2d}: {got['wall']:7.2f} s wall, {got['cpu']:7.2f} s CPU"
                        f" ({got['main_cpu']:.2f} s in the main process),"
                        f" exit {got['code']}, {got['bytes']} bytes sha {got['sha']} (load {load()})",
                        flush=True,
                    )
    print(f"load after: {load()}")
    shas = {g["sha"] for by_count in runs.values() for got in by_count.values() for g in got}
    print("reports: byte-identical across every run" if len(shas) == 1 else f"reports DIFFER: {sorted(shas)}")
    figures: dict[str, float | tuple[float, int]] = {}
    for name, repo in repos:
        print(f"{name} ({repo}):")
        figures = _table(runs[name], counts)
    print_figures(**figures)
    return 0


def _table(runs: dict[int, list[dict]], counts: list[int]) -> dict[str, float | tuple[float, int]]:
    """Print the medians per core count, the speed-up over the first count and the efficiency of each
    doubling; return them as figures."""
    wall = {c: statistics.median(g["wall"] for g in runs[c]) for c in counts}
    cpu = {c: statistics.median(g["cpu"] for g in runs[c]) for c in counts}
    main_cpu = {c: statistics.median(g["main_cpu"] for g in runs[c]) for c in counts}
    figures: dict[str, float | tuple[float, int]] = {}
    print(
        f"{'cores':>5} {'wall (median)':>14} {'CPU (median)':>13} {'main process':>13} {'speed-up':>9}"
        f" {'eff. of doubling':>17}"
    )
    base = wall[counts[0]]
    for i, c in enumerate(counts):
        half = c // 2
        eff = wall[half] / (2 * wall[c]) if half in wall else None
        print(
            f"{c:5d} {wall[c]:12.2f} s {cpu[c]:11.2f} s {main_cpu[c]:11.2f} s {base / wall[c]:8.2f}x"
            + (f" {100 * eff:15.0f} %" if eff is not None else "")
        )
        figures[f"cores{c}_s"] = (wall[c], 2)
        figures[f"cores{c}_cpu_s"] = (cpu[c], 2)
        figures[f"cores{c}_main_cpu_s"] = (main_cpu[c], 2)
        if i:
            figures[f"speedup{c}"] = base / wall[c]
        if eff is not None:
            figures[f"eff{c}"] = eff
    return figures


if __name__ == "__main__":
    sys.exit(main())
