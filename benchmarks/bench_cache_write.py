"""The parse cache's write and read of one entry in isolation, this tree against a baseline tree, in turns.

    python benchmarks/bench_cache_write.py ENTRY --before-repo DIR [--rounds 5] [--out DIR]

``ENTRY``: a parse-cache entry of any format that ``np.load`` reads (an ``.npz`` of a warm cache, e.g.
the 0.9 GB trace's 350 MB entry): its arrays (the JSON header included) are what a parse hands the
cache (the events' and memory events' constant columns made stride-0 views, as the parse's finish
makes them: ``Table.compact``). Each round runs one fresh process per tree (the baseline first, then this one): it loads the
arrays (not timed), then times that tree's ``ParseCache._write`` of them (fsynced, as a parse's entry)
and its entry reader on the file written (``compact=True``, as :meth:`ParseCache.get`): CPU seconds
(``time.process_time``), of which user (``os.times``: the rest is the kernel's, mostly the page cache's
copy and its page allocation, which varies with what else the machine caches), and wall seconds. Printed per round with the load averages; last, the medians
and their ratios (this tree over the baseline).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import json, os, sys, time
repo, entry, out = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, repo)
import numpy as np
from tb_plugin.registry import cache
from tb_plugin.trace.model import compact_column
with np.load(entry, allow_pickle=False) as data:  # the events' and memory's columns as finish leaves them
    arrays = {k: compact_column(data[k]) if k[:2] in ("e.", "m.") else data[k] for k in data.files}
target = os.path.join(out, "entry")
c, w, u = time.process_time(), time.perf_counter(), os.times().user
cache.ParseCache._write(target, arrays)
write_cpu, write_wall, write_user = time.process_time() - c, time.perf_counter() - w, os.times().user - u
size = os.path.getsize(target)
del arrays
read = getattr(cache, "_read_entry", None) or getattr(cache, "_read_npz")
c, w, u = time.process_time(), time.perf_counter(), os.times().user
header, got = read(target, compact=True)
read_cpu, read_wall, read_user = time.process_time() - c, time.perf_counter() - w, os.times().user - u
print(json.dumps({"write_cpu": write_cpu, "write_user": write_user, "write_wall": write_wall,
                  "read_cpu": read_cpu, "read_user": read_user, "read_wall": read_wall,
                  "bytes": size, "arrays": len(got) + 1}))
"""

FIELDS = ("write_cpu", "write_user", "write_wall", "read_cpu", "read_user", "read_wall")


def _load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def _one(repo: str, entry: str, out: str) -> dict:
    os.makedirs(out, exist_ok=True)
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, repo, entry, out], check=True, capture_output=True, text=True
        )
        return json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("entry")
    ap.add_argument("--before-repo", required=True, help="the baseline tree (e.g. a checkout of main)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", help="where the entries are written (default: a temp folder)")
    args = ap.parse_args(argv)
    root = tempfile.mkdtemp(prefix="bench-cache-write-", dir=args.out)
    got: dict[str, list[dict]] = {"before": [], "after": []}
    try:
        for r in range(args.rounds):
            for name, repo in (("before", args.before_repo), ("after", REPO)):
                m = _one(repo, args.entry, os.path.join(root, name))
                got[name].append(m)
                figures = " ".join(f"{k}={m[k]:.3f}" for k in FIELDS)
                print(f"round {r + 1} {name}: {figures} bytes={m['bytes']} arrays={m['arrays']} load={_load()}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    med = {n: {k: statistics.median(m[k] for m in ms) for k in FIELDS} for n, ms in got.items()}
    for k in FIELDS:
        b, a = med["before"][k], med["after"][k]
        print(f"median {k}: before {b:.3f} s, after {a:.3f} s, after/before {a / b:.2f}")
    print(f"rounds={args.rounds} load={_load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
