"""Concurrent ``distributed`` requests on a multi-rank run: one parse per rank however many ask.

    python benchmarks/bench_concurrent_distributed.py LOGDIR RUN [--clients 6]

Each case runs in its own subprocess with no parse cache (cold, as after a restart): ``1`` client,
then ``--clients`` clients at once (threads calling the route handler, as TensorBoard's request
threads do). Prints per case the wall time, the peak RSS, how many parses ran, and whether every
answer equals the single client's. Last line: ``one_s= many_s= one_rss_mb= many_rss_mb= parses_one=
parses_many= equal=`` (6 requests on two 110 MB ranks took 2.43 GB and 68 s against
668 MB and 15 s for one, because each request parsed every rank).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from benchmarks._common import HWM  # noqa: E402

_CHILD = (
    HWM
    + r"""
import json, sys, threading, time
sys.path.insert(0, sys.argv[4])
from tb_plugin import api
from tb_plugin.registry import parse as runs_mod
from tb_plugin.registry.runs import RunRegistry
logdir, run, clients = sys.argv[1], sys.argv[2], int(sys.argv[3])
parses = [0]
real = runs_mod.load_trace_file
def counted(*a, **k):
    parses[0] += 1
    return real(*a, **k)
runs_mod.load_trace_file = counted
reg = RunRegistry(logdir, cache=None)
reg.scan()
answers = [None] * clients
def ask(i):
    answers[i] = api.distributed(reg, {"run": run})
started = time.perf_counter()
threads = [threading.Thread(target=ask, args=(i,)) for i in range(clients)]
for t in threads: t.start()
for t in threads: t.join()
wall = time.perf_counter() - started
docs = [json.dumps(a, sort_keys=True, default=str) for a in answers]
print(json.dumps({"wall_s": wall, "rss_mb": hwm_mb(),
                  "parses": parses[0], "equal": len(set(docs)) == 1, "status": answers[0][0], "doc": docs[0]}))
"""
)


def _case(logdir: str, run: str, clients: int) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, logdir, run, str(clients), str(REPO)], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("logdir")
    parser.add_argument("run")
    parser.add_argument("--clients", type=int, default=6)
    args = parser.parse_args(argv)
    one = _case(args.logdir, args.run, 1)
    many = _case(args.logdir, args.run, args.clients)
    for name, r in (("1 client", one), (f"{args.clients} clients", many)):
        print(
            f"{name}: {r['wall_s']:.1f} s, peak RSS {r['rss_mb']:.0f} MB, {r['parses']} parses, "
            f"answers equal: {r['equal']}, status {r['status']}"
        )
    same = one["doc"] == many["doc"]
    print(
        f"one_s={one['wall_s']:.2f} many_s={many['wall_s']:.2f} one_rss_mb={one['rss_mb']:.0f} "
        f"many_rss_mb={many['rss_mb']:.0f} parses_one={one['parses']} parses_many={many['parses']} "
        f"equal={many['equal'] and same}"
    )
    return 0 if many["equal"] and same else 1


if __name__ == "__main__":
    sys.exit(main())
