"""The per-rank critical path (``analysis.critical_path.rank_chains``) on one large trace, timed (s).

Run once per source tree to compare before/after in one run (the trace is parsed once per tree, not
timed; the chains are built ``--repeat`` times on a fresh graph, the minimum kept)::

    python benchmarks/bench_critical_path.py BIG.pt.trace.json --before /path/to/old/tree

prints one JSON line per tree: events, steps, segments walked, seconds (each repeat and the minimum).
Say the machine's load (``uptime``) next to any figure you quote.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

_CHILD = r"""
import json, sys, time
import numpy as np
from tb_plugin.registry.parse import load_trace_file
from tb_plugin.analysis.critical_path import rank_chains
from tb_plugin.analysis.distributed import comm_kernels
path, repeat = sys.argv[1], int(sys.argv[2])
t0 = time.perf_counter()
trace = load_trace_file(path)
parse_s = time.perf_counter() - t0
comm = np.asarray(comm_kernels(trace)["rows"], dtype=np.int64)
runs = []
for _ in range(repeat):
    trace.derived.pop("blocking_calls", None)  # the classifier is part of the path's cost
    t0 = time.perf_counter()
    out = rank_chains(trace, comm)
    runs.append(round(time.perf_counter() - t0, 2))
print(json.dumps({"events": len(trace.events), "steps": len(out["steps"]), "parse_s": round(parse_s, 1),
                  "chains_s": runs, "chains_min_s": min(runs)}))
"""


def run_tree(tree: str, trace: str, repeat: int) -> dict:
    env = dict(os.environ, PYTHONPATH=tree)
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, trace, str(repeat)], env=env, capture_output=True, text=True, check=True
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]), tree=tree)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--before", help="another source tree (its tb_plugin) to time first")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for tree in ([args.before] if args.before else []) + [here]:
        print(json.dumps(run_tree(tree, args.trace, args.repeat)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
