"""Multi-rank benchmarks.

    python benchmarks/bench_ranks.py [--ranks 512] [--copies 1] [--out DIR] [--executors local,dask]
    python benchmarks/bench_ranks.py --parse [--ranks 16] [--mb 50] [--out DIR]

**Scale (default)**: an N-rank job of small ranks (benchmarks/rank_job.py with process groups: DLRM rank
``r % 8`` through ``benchmarks/rank_job.py`` (``write_repeated``), ~0.7 MB and 8 NCCL kernels a rank, all-reduces on
the world group, all-to-alls on 8-rank groups) goes through the distributed analysis — per-rank summaries
on the executor, then groups, matching, stragglers and the cross-rank critical path in the parent — once
on the local process pool and once on a 2-worker Dask ``LocalCluster`` (processes, loopback). Each run
is its own child process: its wall time (executor start to the combined view), its peak RSS (VmHWM, the
parent only: the pool's or cluster's workers are other processes), the pickled per-rank summary
(mean, max bytes) and the SHA-256 of the view's JSON; the two documents must be equal byte for byte.
``--executors`` also takes ``local:N`` and ``registry`` (TensorBoard's path: ``RunRegistry.distributed``
with a parse cache and no executor named, which sends the ranks to a local pool when they are enough
for one, else parses them in the parent).
Target: parent peak RSS < 1 GB at 512 ranks. Last line: ``ranks=… local_s=… local_parent_mb=… dask_s=…
dask_parent_mb=… summary_bytes_mean=… summary_bytes_max=… identical=…`` (one ``_s``/``_parent_mb`` pair
per executor). The job is kept in ``--out`` (default ``$TMPDIR/kinetoscope-ranks{N}x{copies}``) for the
next run.

**Parse (``--parse``)**: a 16-rank job of ~50 MB files (each DLRM rank scaled, used twice), parsed in a
memory-sized pool: the serial parse of one file, then the load of the whole run, each in its own
subprocess. Target: whole-run time ≤ 1.5 × (one file × ranks ÷ cores). Last line: ``serial_one_s=…
run_s=… target_s=… run_over_target=… workers=… peak_rss_parent_mb=… peak_rss_worker_mb=…``.
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
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(REPO), "shared")
sys.path.insert(0, REPO)  # before an installed kinetoscope: the cluster's workers inherit this path
sys.path.insert(0, os.path.join(REPO, "benchmarks"))

from _common import HWM  # noqa: E402

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

# argv: logdir, repo, executor spec ("local" or dask://…), where the view's JSON goes
SCALE = (
    HWM
    + r"""
import hashlib, json, pickle, sys, time
sys.path.insert(0, sys.argv[2])
from tb_plugin.registry.executors import open_executor
from tb_plugin.registry.interface import RankRun
from tb_plugin.registry.runs import RunRegistry
from tb_plugin.registry.cache import ParseCache
start_mb = hwm_mb()
tensorboard = sys.argv[3] == "registry"  # TensorBoard's path: the registry picks where ranks go
reg = RunRegistry(sys.argv[1], cache=ParseCache() if tensorboard else None)
reg.scan()
files = reg.files()
warnings, failed = [], {}
t = time.perf_counter()
if not tensorboard:
    executor = open_executor(sys.argv[3], warnings.append)
    reg.analyse(files, executor, RankRun(tables=False, failed=failed, warn=warnings.append))
    executor.close()
reduced_s = time.perf_counter() - t
view = reg.distributed(files[0].run, files[0].span)
seconds = time.perf_counter() - t
reduced_s = reduced_s if not tensorboard else seconds
sizes = sorted(len(pickle.dumps(st.aggregate, protocol=pickle.HIGHEST_PROTOCOL)) for st in files if st.aggregate)
where = executor.description if not tensorboard else (
    f"the registry ({sum(st.state == 'ready' for st in files)} ranks parsed in this process)")
warnings += view["messages"]
text = json.dumps(view, sort_keys=False)
with open(sys.argv[4], "w") as f:
    f.write(text)
v = view["view"] or {}
print(json.dumps({"seconds": seconds, "reduce_s": reduced_s, "combine_s": seconds - reduced_s,
                  "parent_mb": hwm_mb(), "start_mb": start_mb, "files": len(files),
                  "ranks": view["ranks_loaded"], "failed": failed, "warnings": warnings, "where": where,
                  "summary_mean": sum(sizes) / max(len(sizes), 1), "summary_max": max(sizes, default=0),
                  "sha256": hashlib.sha256(text.encode()).hexdigest(), "json_bytes": len(text),
                  "groups": len(v.get("groups") or []), "steps": len(v.get("critical_path") or []),
                  "matched": (v.get("instances") or {}).get("matched"),
                  "path_collectives": sum(len(s["collectives"]) for s in v.get("critical_path") or [])}))
"""
)


def build_job(out: str, ranks: int, mb: int) -> list[str]:
    from rank_job import write_repeated

    sources = sorted(glob.glob(os.path.join(SHARED, "samples", "dlrm_8ranks", "*.json")))
    os.makedirs(out, exist_ok=True)
    made = sorted(glob.glob(os.path.join(out, "*.pt.trace.json")))
    if len(made) == ranks:
        return made
    copies = max(1, int(mb * 2**20 / os.path.getsize(sources[0])))
    base = []
    for i, src in enumerate(sources):
        dst = os.path.join(out, f"rank{i}.1.pt.trace.json")
        write_repeated(src, dst, copies)
        base.append(dst)
    for i in range(len(sources), ranks):
        shutil.copy(base[i % len(base)], os.path.join(out, f"rank{i}.1.pt.trace.json"))
    return sorted(glob.glob(os.path.join(out, "*.pt.trace.json")))


def parse_bench(args) -> int:
    out = args.out or os.path.join(tempfile.gettempdir(), "kinetoscope-ranks")
    files = build_job(out, args.ranks or 16, args.mb)
    with tempfile.TemporaryDirectory(prefix="kinetoscope-cache-") as cache:
        env = dict(os.environ, KINETOSCOPE_CACHE_DIR=cache)
        one = json.loads(
            subprocess.run(
                [sys.executable, "-c", ONE, files[0], REPO], env=env, check=True, capture_output=True, text=True
            ).stdout.splitlines()[-1]
        )
        run = json.loads(
            subprocess.run(
                [sys.executable, "-c", RUN, out, REPO], env=env, check=True, capture_output=True, text=True
            ).stdout.splitlines()[-1]
        )
    cores = os.cpu_count() or 1
    target = one["seconds"] * len(files) / cores
    size_mb = os.path.getsize(files[0]) / 2**20
    print(f"job: {len(files)} ranks of {size_mb:.0f} MB in {out}; {cores} cores")
    print(f"serial parse + Overview of one file: {one['seconds']:.2f} s")
    print(
        f"whole run ({run['workers']} workers): {run['seconds']:.2f} s; target {target:.2f} s "
        f"(ratio {run['seconds'] / target:.2f})"
    )
    print(f"peak RSS: parent {run['parent_mb']:.0f} MB, largest worker {run['worker_mb']:.0f} MB")
    print(
        f"serial_one_s={one['seconds']:.3f} run_s={run['seconds']:.3f} target_s={target:.3f} "
        f"run_over_target={run['seconds'] / target:.3f} workers={run['workers']} "
        f"peak_rss_parent_mb={run['parent_mb']:.0f} peak_rss_worker_mb={run['worker_mb']:.0f}"
    )
    return 0


def scale_run(logdir: str, spec: str, doc: str) -> dict:
    """One measured run of the distributed analysis in a child process (see the module docstring)."""
    env = dict(os.environ, KINETOSCOPE_CACHE_DIR=tempfile.mkdtemp(prefix="kinetoscope-cache-"))
    try:
        out = subprocess.run(
            [sys.executable, "-c", SCALE, logdir, REPO, spec, doc], env=env, capture_output=True, text=True
        )
    finally:
        shutil.rmtree(env["KINETOSCOPE_CACHE_DIR"], ignore_errors=True)
    if out.returncode != 0:
        raise RuntimeError(f"{spec}: exit {out.returncode}\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def check_workers_code(cluster) -> None:
    """Raise unless the cluster's workers import this checkout's ``tb_plugin`` (not an installed one)."""
    from distributed import Client

    with Client(cluster, set_as_default=False) as client:
        where = client.run(lambda: __import__("tb_plugin").__file__)
    mine = os.path.join(REPO, "tb_plugin", "__init__.py")
    if set(where.values()) != {mine}:
        raise RuntimeError(f"the Dask workers import {sorted(set(where.values()))}, not {mine}")


def scale_bench(args) -> int:
    from rank_job import build_rank_job

    ranks = args.ranks or 512
    out = args.out or os.path.join(tempfile.gettempdir(), f"kinetoscope-ranks{ranks}x{args.copies}")
    t = time.perf_counter()
    made = sorted(glob.glob(os.path.join(out, "*.pt.trace.json")))
    paths = made if len(made) == ranks else build_rank_job(out, ranks, args.copies, groups=True)
    total = sum(os.path.getsize(p) for p in paths)
    print(
        f"job: {len(paths)} ranks, {total / 2**20:.0f} MB in {out} (ready in {time.perf_counter() - t:.1f} s); "
        f"{os.cpu_count()} cores",
        flush=True,
    )
    results: dict[str, dict] = {}
    docs: dict[str, str] = {}
    wanted = args.executors.split(",")
    with tempfile.TemporaryDirectory(prefix="kinetoscope-views-") as tmp:
        for name in wanted:
            docs[name] = os.path.join(tmp, f"{name}.json")
            if name == "dask":
                from distributed import LocalCluster

                with LocalCluster(
                    n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=":0"
                ) as cluster:
                    spec = cluster.scheduler_address.replace("tcp://", "dask://")
                    check_workers_code(cluster)
                    results[name] = scale_run(out, spec, docs[name])
            else:
                results[name] = scale_run(out, name, docs[name])
            r = results[name]
            print(
                f"  {name:<6} {r['seconds']:7.2f} s (per-rank {r['reduce_s']:.2f} s, combine {r['combine_s']:.2f} s) "
                f"on {r['where']}; parent peak RSS {r['parent_mb']:.0f} MB (at start {r['start_mb']:.0f} MB); "
                f"{r['ranks']} ranks, {r['groups']} groups, {r['matched']} matched instances, {r['steps']} steps "
                f"on the critical path; view {r['json_bytes'] / 1024:.0f} KB",
                flush=True,
            )
            if r["failed"] or r["warnings"]:
                print(f"    failed: {r['failed']}; warnings: {r['warnings']}")
        texts = [open(docs[n], encoding="utf-8").read() for n in wanted]
    identical = all(t == texts[0] for t in texts)
    first = results[wanted[0]]
    print(
        f"per-rank summary (pickled): mean {first['summary_mean']:.0f} B, max {first['summary_max']} B; "
        f"trace file mean {total / len(paths) / 1024:.0f} KB"
    )
    print(f"views identical across executors ({', '.join(wanted)}): {'yes' if identical else 'NO'}")
    figures = " ".join(f"{n}_s={results[n]['seconds']:.2f} {n}_parent_mb={results[n]['parent_mb']:.0f}" for n in wanted)
    print(
        f"ranks={ranks} {figures} summary_bytes_mean={first['summary_mean']:.0f} "
        f"summary_bytes_max={first['summary_max']} identical={int(identical)}"
    )
    return 0 if identical else 1


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--parse", action="store_true", help="the 16-rank parse benchmark of large ranks")
    parser.add_argument("--out", default=None)
    parser.add_argument("--ranks", type=int, default=None, help="512 (scale) or 16 (--parse)")
    parser.add_argument("--mb", type=int, default=50, help="--parse: MB per rank")
    parser.add_argument(
        "--copies", type=int, default=1, help="scale: copies of each DLRM rank's window per rank (steps)"
    )
    parser.add_argument(
        "--executors",
        default="local,dask",
        help="scale: comma-separated, of local, local:N, dask and registry (TensorBoard's path: "
        "RunRegistry.distributed with a parse cache, no executor named)",
    )
    args = parser.parse_args()
    return parse_bench(args) if args.parse else scale_bench(args)


if __name__ == "__main__":
    sys.exit(main())
