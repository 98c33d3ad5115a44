"""Hang-forensics benchmark: a job of ``--ranks`` flight-recorder dumps of ``--entries`` entries each,
read and analysed by ``kinetoscope hang``'s code (find by content, read on the executor, analyse, rank).

    python benchmarks/bench_hang.py [--ranks 1024] [--entries 2000] [--tp 8] [--protocol 2] [--dir /tmp]

Writes the dumps (pickles, the layout of PyTorch 2.10: a world group and tensor-parallel groups of
``--tp`` ranks, collectives alternating between them; rank ``ranks // 2`` never enters its group's last
all_reduce) into a fresh folder under ``--dir`` and deletes it at the end. Then measures, in a child
process, the wall and CPU time of :func:`tb_plugin.registry.hang.folder_document` (CPU: that process
and its reader children) and its peak RSS, and checks the verdict names the rank; then the peak RSS of
one reader child reading one batch from a fresh process.
Last line: ``name=value`` figures. Say the machine's load (``uptime``) beside any figure quoted.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[2])
from tb_plugin.registry import hang
analysis = {"cpu_s": 0.0}
build = hang.job_document
def timed(*args, **kw):  # the analysis alone: everything after the dumps are read
    start = time.process_time()
    try:
        return build(*args, **kw)
    finally:
        analysis["cpu_s"] += time.process_time() - start
hang.job_document = timed
t, cpu = time.perf_counter(), time.process_time()
doc = hang.folder_document(sys.argv[1])
wall, cpu = time.perf_counter() - t, time.process_time() - cpu
children = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"seconds": wall, "cpu_s": cpu, "analysis_cpu_s": analysis["cpu_s"], "children_cpu_s": children.ru_utime + children.ru_stime,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "child_peak_rss_mb": children.ru_maxrss / 1024, "verdict": doc["verdict"][:2],
                  "ranks": len(doc["ranks"]), "unreadable": len(doc["unreadable"])}))
"""


BATCH = r"""
import json, os, resource, sys, time
sys.path.insert(0, sys.argv[2])
from tb_plugin.artifacts import flight_recorder as fr
names = sorted(os.listdir(sys.argv[1]))[:int(sys.argv[3])]
files = [(n, open(os.path.join(sys.argv[1], n), "rb").read()) for n in names]
t = time.perf_counter()
fr.read_pickles(files)
print(json.dumps({"files": len(files), "seconds": time.perf_counter() - t,
                  "child_peak_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def rank_dump(rank: int, entries: int, tp: int, ranks: int, stuck: int, t0: int) -> dict:
    """One rank's dump: ``entries`` collectives alternating world / its tp group; ``stuck`` skips the
    last tp all_reduce."""
    tp_name = str(1 + rank // tp)
    members = list(range((rank // tp) * tp, (rank // tp) * tp + tp))
    world_seq = tp_seq = 0
    out = []
    for i in range(entries - (1 if rank == stuck else 0)):
        world = i % 2 == 0
        if world:
            world_seq += 1
        else:
            tp_seq += 1
        out.append(
            {
                "frames": [],
                "record_id": i,
                "pg_id": 0 if world else 1,
                "process_group": ("0", "default_pg") if world else (tp_name, "tp"),
                "thread_id": "1",
                "thread_name": "python",
                "collective_seq_id": world_seq if world else tp_seq,
                "p2p_seq_id": 0,
                "op_id": i,
                "profiling_name": "nccl:all_reduce" if world else "nccl:all_gather",
                "time_created_ns": t0 + i * 1000,
                "input_sizes": [[4096]],
                "input_dtypes": ["BFloat16"],
                "output_sizes": [[4096]] if world else [[tp, 4096]],
                "output_dtypes": ["BFloat16"],
                "state": "completed",
                "time_discovered_started_ns": t0 + i * 1000 + 10,
                "time_discovered_completed_ns": t0 + i * 1000 + 500,
                "retired": True,
                "timeout_ms": 600000,
                "is_p2p": False,
            }
        )
    waiting = rank != stuck and rank // tp == stuck // tp  # the stuck rank's group peers wait in its last op
    if waiting:
        out[-1].update(state="started", time_discovered_completed_ns=None, retired=False)
    return {
        "version": "2.10",
        "comm_lib_version": "2.21.5",
        "pg_config": {
            "0": {"name": "0", "desc": "default_pg", "ranks": str(list(range(ranks)))},
            tp_name: {"name": tp_name, "desc": "tp", "ranks": str(members)},
        },
        "pg_status": {
            "0": {
                "last_enqueued_collective": world_seq,
                "last_started_collective": world_seq,
                "last_completed_collective": world_seq,
            },
            "1": {
                "last_enqueued_collective": tp_seq,
                "last_started_collective": tp_seq,
                "last_completed_collective": tp_seq - (1 if waiting else 0),
            },
        },
        "entries": out,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=1024)
    parser.add_argument("--entries", type=int, default=2000)
    parser.add_argument("--tp", type=int, default=8)
    parser.add_argument("--protocol", type=int, default=2)
    parser.add_argument("--dir", default=tempfile.gettempdir())
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="bench_hang_", dir=args.dir)
    try:
        stuck, t0, made = args.ranks // 2, 1_795_000_000_000_000_000, time.perf_counter()
        total = 0
        for r in range(args.ranks):
            data = pickle.dumps(rank_dump(r, args.entries, args.tp, args.ranks, stuck, t0), protocol=args.protocol)
            total += len(data)
            with open(os.path.join(folder, f"nccl_trace_rank_{r}"), "wb") as f:
                f.write(data)
        print(
            f"wrote {args.ranks} dumps of {args.entries} entries, {total / 1e6:.0f} MB, in "
            f"{time.perf_counter() - made:.1f} s"
        )
        done = subprocess.run([sys.executable, "-c", CHILD, folder, REPO], capture_output=True, text=True, check=True)
        got = json.loads(done.stdout.strip().splitlines()[-1])
        print(
            f"hang analysis: {got['seconds']:.2f} s wall, {got['cpu_s']:.2f} s CPU here "
            f"(of which {got['analysis_cpu_s']:.2f} s after reading) + "
            f"{got['children_cpu_s']:.2f} s in the reader children; peak RSS {got['peak_rss_mb']:.0f} MB; "
            f"{got['ranks']} ranks read"
        )
        for line in got["verdict"]:
            print(f"  {line}")
        # a reader child's own peak: ru_maxrss of the children above carries the parent's RSS at fork
        # (before exec), so one batch is read again from a fresh small process
        alone = subprocess.run(
            [sys.executable, "-c", BATCH, folder, REPO, str(min(args.ranks, 128))],
            capture_output=True,
            text=True,
            check=True,
        )
        batch = json.loads(alone.stdout.strip().splitlines()[-1])
        print(
            f"one batch of {batch['files']} dumps alone: reader child peak RSS {batch['child_peak_rss_mb']:.0f} MB, "
            f"{batch['seconds']:.2f} s"
        )
        got["child_peak_rss_mb"] = batch["child_peak_rss_mb"]
        load = os.getloadavg()[0]
        print(
            f"seconds={got['seconds']:.2f} cpu_s={got['cpu_s']:.2f} analysis_cpu_s={got['analysis_cpu_s']:.2f} "
            f"children_cpu_s={got['children_cpu_s']:.2f} "
            f"peak_rss_mb={got['peak_rss_mb']:.0f} child_peak_rss_mb={got['child_peak_rss_mb']:.0f} "
            f"ranks={args.ranks} entries={args.entries} load1={load:.2f}"
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
