"""Load benchmark: the JSON floor vs. Kinetoscope cold and warm, each in its own subprocess.

    python benchmarks/bench_load.py TRACE [--repeat N]

- floor:  read the file (+ gunzip) and ``orjson.loads`` the whole document: the least any loader
          that builds Python objects must do;
- cold:   Kinetoscope from an empty parse cache to the file shown ready with its Overview (parse +
          Overview analysis): the moment the Overview route answers ``ready``;
- warm:   the same with the cache filled by the cold run.

What follows ready in the same load (the parse-cache write, the timeline index) is shown apart as
"load done". CPU seconds (this process and its decode workers; the floor's one process) are shown
too: on a shared machine they vary far less than wall times. Times are wall seconds of the work itself (imports excluded); peak RSS is the cold run's
(``ru_maxrss``). The machine is noisy: read the ratios, which are measured side by side in one run.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks._common import REPO, print_figures, run_child

CPU = r"""
import resource
def cpu_s():
    # CPU seconds of this process and of its (exited) children: the decode workers
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))
"""

FLOOR = (
    CPU
    + r"""
import gzip, json, resource, sys, time, orjson
path = sys.argv[1]
c = cpu_s()
t = time.perf_counter()
with open(path, "rb") as f:
    data = f.read()
if data[:2] == b"\x1f\x8b":
    data = gzip.decompress(data)
doc = orjson.loads(data)
seconds = time.perf_counter() - t
print(json.dumps({"seconds": seconds, "cpu_s": cpu_s() - c,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""
)

OURS = (
    CPU
    + r"""
import json, os, resource, sys, threading, time
sys.path.insert(0, sys.argv[2])
from tb_plugin.registry.runs import RunRegistry
from tb_plugin.registry.cache import ParseCache
path = sys.argv[1]
c = cpu_s()
t = time.perf_counter()
reg = RunRegistry(os.path.dirname(path), cache=ParseCache())
reg.scan()
(state,) = [s for s in reg.files() if s.entry.name == os.path.basename(path)]
before = time.perf_counter() - t
ready_cpu = []

def watch():  # the CPU spent when the file turns ready (the workers have exited by then)
    while state.state != "ready" and state.error is None:
        time.sleep(0.005)
    ready_cpu.append(cpu_s() - c)

watcher = threading.Thread(target=watch, daemon=True)
watcher.start()
reg.load(state)
done = time.perf_counter() - t
watcher.join()
assert state.state == "ready", state.error
ready_s = getattr(state, "ready_seconds", None)  # None: code (--repo) that is ready only when the load ends
print(json.dumps({"seconds": before + ready_s if ready_s is not None else done, "done_s": done, "cpu_s": ready_cpu[0], "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "from_cache": state.from_cache, "steps": len(state.overview["steps"]),
                  "avg_step_us": state.overview["average"]["total_us"]}))
"""
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each figure; the best is kept")
    parser.add_argument(
        "--repo",
        default=REPO,
        help="the Kinetoscope checkout to measure (default: this one), "
        "e.g. an older commit's worktree, for a before/after in one run",
    )
    args = parser.parse_args()
    trace = os.path.abspath(args.trace)
    best: dict[str, dict] = {}
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="kinetoscope-bench-") as cache_dir:
            env = dict(os.environ, KINETOSCOPE_CACHE_DIR=cache_dir)
            figures = {
                "floor": run_child(FLOOR, [trace], env),
                "cold": run_child(OURS, [trace, args.repo], env),
                "warm": run_child(OURS, [trace, args.repo], env),
            }
        assert not figures["cold"]["from_cache"] and figures["warm"]["from_cache"]
        for key, fig in figures.items():
            if key not in best or fig["seconds"] < best[key]["seconds"]:
                best[key] = fig
    size_mb = os.path.getsize(trace) / 2**20
    floor, cold, warm = (best[k]["seconds"] for k in ("floor", "cold", "warm"))
    print(
        f"trace: {trace} ({size_mb:.1f} MB), {best['cold']['steps']} steps, "
        f"average step {best['cold']['avg_step_us'] / 1000:.3f} ms"
    )
    cpu = {k: best[k]["cpu_s"] for k in ("floor", "cold", "warm")}
    print(
        f"floor (gunzip + orjson.loads): {floor:8.2f} s   peak RSS {best['floor']['peak_rss_mb']:7.0f} MB"
        f"   CPU {cpu['floor']:6.2f} s"
    )
    print(
        f"kinetoscope cold:              {cold:8.2f} s   peak RSS {best['cold']['peak_rss_mb']:7.0f} MB"
        f"   CPU {cpu['cold']:6.2f} s (all processes, until ready)"
        f"   (load done, cache written and timeline index built: {best['cold']['done_s']:.2f} s)"
    )
    print(
        f"kinetoscope warm:              {warm:8.2f} s   peak RSS {best['warm']['peak_rss_mb']:7.0f} MB"
        f"   CPU {cpu['warm']:6.2f} s"
    )
    print(
        f"cpu: floor_cpu_s={cpu['floor']:.2f} cold_cpu_s={cpu['cold']:.2f} "
        f"cold_cpu_over_floor_cpu={cpu['cold'] / cpu['floor']:.3f}"
    )
    print_figures(
        floor_s=floor,
        cold_s=cold,
        warm_s=warm,
        cold_over_floor=cold / floor,
        warm_over_cold=warm / cold,
        peak_rss_mb=(best["cold"]["peak_rss_mb"], 0),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
