"""Multi-rank load benchmark: a 16-rank job of ~50 MB files, parsed in parallel.

    python benchmarks/bench_ranks.py [--out /tmp/kinetoscope-ranks] [--ranks 16] [--mb 50]

Builds the job with ``../shared/tools/scale_trace.py`` from the 8 DLRM ranks (each rank used twice),
then measures, each in its own subprocess: the serial parse of one file, and the load of the whole
run (parallel parse into the cache + Overviews). Target: whole-run time ≤ 1.5 × (one file × ranks ÷
cores). Peak RSS is the parent's and the largest worker's (``ru_maxrss``); the bound is the pool
size × :data:`tb_plugin.registry.executors.local.PARSE_MEMORY_FACTOR` × the file size. Last line:
``serial_one_s=… run_s=… target_s=… run_over_target=… workers=… peak_rss_parent_mb=… peak_rss_worker_mb=…``.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(REPO), "shared")

ONE = r"""
import json, sys, time
sys.path.insert(0, sys.argv[2])
from tb_plugin.registry.parse import load_trace_file
from tb_plugin.analysis.overview import compute_overview
t = time.perf_counter()
compute_overview(load_trace_file(sys.argv[1]))
print(json.dumps({"seconds": time.perf_counter() - t}))
"""

RUN = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[2])
from tb_plugin.registry.runs import RunRegistry
from tb_plugin.registry.cache import ParseCache
reg = RunRegistry(sys.argv[1], cache=ParseCache())
reg.scan()
files = reg.files()
t = time.perf_counter()
workers = reg.parse_in_parallel(files)
for st in files:
    reg.load(st)
seconds = time.perf_counter() - t
assert all(st.state == "ready" for st in files), [st.error for st in files]
print(json.dumps({"seconds": seconds, "workers": workers, "files": len(files),
                  "parent_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "worker_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def build_job(out: str, ranks: int, mb: int) -> list[str]:
    sources = sorted(glob.glob(os.path.join(SHARED, "samples", "dlrm_8ranks", "*.json")))
    os.makedirs(out, exist_ok=True)
    made = sorted(glob.glob(os.path.join(out, "*.pt.trace.json")))
    if len(made) == ranks:
        return made
    copies = max(1, int(mb * 2**20 / os.path.getsize(sources[0])))
    base = []
    for i, src in enumerate(sources):
        dst = os.path.join(out, f"rank{i}.1.pt.trace.json")
        subprocess.run([sys.executable, os.path.join(SHARED, "tools", "scale_trace.py"), src, dst, "--copies",
                        str(copies)], check=True, capture_output=True)
        base.append(dst)
    for i in range(len(sources), ranks):
        shutil.copy(base[i % len(base)], os.path.join(out, f"rank{i}.1.pt.trace.json"))
    return sorted(glob.glob(os.path.join(out, "*.pt.trace.json")))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "kinetoscope-ranks"))
    parser.add_argument("--ranks", type=int, default=16)
    parser.add_argument("--mb", type=int, default=50)
    args = parser.parse_args()
    files = build_job(args.out, args.ranks, args.mb)
    with tempfile.TemporaryDirectory(prefix="kinetoscope-cache-") as cache:
        env = dict(os.environ, KINETOSCOPE_CACHE_DIR=cache)
        one = json.loads(subprocess.run([sys.executable, "-c", ONE, files[0], REPO], env=env, check=True,
                                        capture_output=True, text=True).stdout.splitlines()[-1])
        run = json.loads(subprocess.run([sys.executable, "-c", RUN, args.out, REPO], env=env, check=True,
                                        capture_output=True, text=True).stdout.splitlines()[-1])
    cores = os.cpu_count() or 1
    target = one["seconds"] * len(files) / cores
    size_mb = os.path.getsize(files[0]) / 2**20
    print(f"job: {len(files)} ranks of {size_mb:.0f} MB in {args.out}; {cores} cores")
    print(f"serial parse + Overview of one file: {one['seconds']:.2f} s")
    print(f"whole run ({run['workers']} workers): {run['seconds']:.2f} s; target {target:.2f} s "
          f"(ratio {run['seconds'] / target:.2f})")
    print(f"peak RSS: parent {run['parent_mb']:.0f} MB, largest worker {run['worker_mb']:.0f} MB")
    print(f"serial_one_s={one['seconds']:.3f} run_s={run['seconds']:.3f} target_s={target:.3f} "
          f"run_over_target={run['seconds'] / target:.3f} workers={run['workers']} "
          f"peak_rss_parent_mb={run['parent_mb']:.0f} peak_rss_worker_mb={run['worker_mb']:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
