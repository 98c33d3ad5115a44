"""Scale-out benchmark: the report of a 64-rank job on a 2-worker Dask ``LocalCluster`` (loopback)
against the local process pool, measured side by side in one run.

    python benchmarks/bench_executor.py [--ranks 64] [--copies 1] [--repeat 2] [--out DIR]

The job is built by benchmarks/rank_job.py (``write_repeated`` with C copies of each DLRM rank, rank r
= DLRM rank r % 8 with ``distributedInfo.rank = r``). Each executor runs the whole report
(``kinetoscope report --json --no-cache``) ``--repeat`` times, alternated; the best wall time counts.
Executors: ``local`` (the default: a pool sized to the cores, or this process for jobs under
``PARALLEL_MIN_BYTES``), ``local:2`` (2 processes, like the cluster) and the cluster. The JSON
documents must be identical. Then every rank is reduced once on the cluster and what each worker
sends back is measured: the pickled distributed + insights aggregate, and the whole result (report
tables included, compressed). Last line: ``dask_s=… local_s=… local2_s=… ratio_dask_over_local=…
aggregate_bytes_mean=… aggregate_bytes_max=… result_bytes_mean=… result_bytes_max=…``.
"""

from __future__ import annotations

import argparse
import io
import os
import pickle
import shutil
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "benchmarks"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--copies", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    out = a.out or tempfile.mkdtemp(prefix="kinetoscope-executor-")
    try:
        run(a, out)
    finally:
        if a.out is None:
            shutil.rmtree(out, ignore_errors=True)


def run(a, out: str) -> None:
    from distributed import Client, LocalCluster
    from rank_job import build_rank_job

    from tb_plugin.cli.report import run_report
    from tb_plugin.registry.executors import dask_address
    from tb_plugin.registry.runs import RunRegistry

    t = time.perf_counter()
    paths = build_rank_job(out, a.ranks, a.copies)
    total = sum(os.path.getsize(p) for p in paths)
    print(
        f"job: {len(paths)} ranks, {total / 2**20:.1f} MB in {out} (built in {time.perf_counter() - t:.1f} s); "
        f"{os.cpu_count()} cores here"
    )

    t = time.perf_counter()
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=":0"
    ) as cluster:
        spec = cluster.scheduler_address.replace("tcp://", "dask://")
        print(
            f"cluster: 2 workers x 1 thread at {cluster.scheduler_address}, started in {time.perf_counter() - t:.2f} s"
        )
        best: dict[str, float] = {}
        docs: dict[str, str] = {}
        for _ in range(a.repeat):
            for name in (spec, "local", "local:2"):
                o, e = io.StringIO(), io.StringIO()
                t = time.perf_counter()
                code = run_report(out, None, True, False, o, e, executor=name)
                seconds = time.perf_counter() - t
                assert code == 0, e.getvalue()[-2000:]
                best[name] = min(best.get(name, float("inf")), seconds)
                docs.setdefault(name, o.getvalue())
                assert docs[name] == o.getvalue()
                print(f"  {name:<28} {seconds:7.2f} s   ({e.getvalue().splitlines()[-1]})")
        assert docs[spec] == docs["local"] == docs["local:2"], "reports differ between executors"
        print("reports identical across executors: yes")

        from tb_plugin.registry.executors import reduce_rank

        reg = RunRegistry(out)
        reg.scan()
        jobs = [reg.rank_job(st, tables=True) for st in reg.files()]
        client = Client(dask_address(spec), set_as_default=False)
        try:
            results = client.gather(
                client.map(reduce_rank, [j.__class__(**{**j.__dict__, "cache_dir": None}) for j in jobs], pure=False)
            )
        finally:
            client.close()
    core = [len(pickle.dumps({k: r.aggregate[k] for k in ("distributed", "insights")})) for r in results]
    whole = [len(pickle.dumps(r)) for r in results]
    d, l1, l2 = best[spec], best["local"], best["local:2"]
    print(
        f"per rank sent back: distributed+insights aggregate mean {sum(core) / len(core):.0f} B, max {max(core)} B; "
        f"whole result (with compressed report tables) mean {sum(whole) / len(whole):.0f} B, max {max(whole)} B; "
        f"trace file mean {total / len(paths) / 1024:.0f} KB"
    )
    print(
        f"dask_s={d:.2f} local_s={l1:.2f} local2_s={l2:.2f} ratio_dask_over_local={d / l1:.2f} "
        f"ratio_dask_over_local2={d / l2:.2f} aggregate_bytes_mean={sum(core) / len(core):.0f} "
        f"aggregate_bytes_max={max(core)} result_bytes_mean={sum(whole) / len(whole):.0f} result_bytes_max={max(whole)}"
    )


if __name__ == "__main__":
    main()
