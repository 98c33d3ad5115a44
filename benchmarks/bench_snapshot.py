"""Allocator-snapshot benchmark: first open vs. the bare restricted unpickle, cache reopen, timeline.

    python benchmarks/bench_snapshot.py [--entries 1000000] [--frames 0]

Generates a snapshot with the synthesizer (``tests/synth/snapshot.py``), then measures, each in
its own subprocess: the bare restricted unpickle; Kinetoscope's first open (unpickle + columns +
cache write + summary); the reopen from the parse cache; and timeline requests afterwards. Last line:
``unpickle_s=… first_open_s=… first_over_unpickle=… reopen_s=… timeline_p95_ms=…``.
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks._common import CHILD_REGISTRY, REPO, print_figures, run_child  # noqa: E402

UNPICKLE = r"""
import json, sys, time
sys.path.insert(0, sys.argv[2])
from tb_plugin.artifacts.unpickle import restricted_loads
data = open(sys.argv[1], "rb").read()
t = time.perf_counter()
restricted_loads(data)
print(json.dumps({"seconds": time.perf_counter() - t}))
"""

OPEN = CHILD_REGISTRY + r"""
(art,) = [a for a in reg.artifacts() if a.entry.rel == os.path.basename(path)]
t = time.perf_counter()
reg.load_artifact(art)
seconds = time.perf_counter() - t
assert art.state == "ready", art.error
q = {"run": art.run, "path": art.entry.rel, "width_px": "2000"}
times = []
for lo, hi in [(None, None), (0.1, 0.6), (0.4, 0.45), (0.0, 0.01), (0.5, 0.9)] * 4:
    args = dict(q)
    if lo is not None:
        end = art.views.summary()["devices"][0]["peak_time"] or 1.0
        args.update(start=str(lo * end * 2), end=str(hi * end * 2))
    t1 = time.perf_counter()
    code, doc = api.snapshot_timeline(reg, args)
    assert code == 200, doc
    times.append((time.perf_counter() - t1) * 1000)
times.sort()
print(json.dumps({"seconds": seconds, "timeline_p95_ms": times[int(0.95 * (len(times) - 1))]}))
"""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--frames", type=int, default=0)
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(REPO, "tests"))  # the synthesizers
    from synth.snapshot import synthesize_snapshot

    with tempfile.TemporaryDirectory(prefix="kinetoscope-snap-") as tmp:
        path = os.path.join(tmp, "snapshot.pickle")
        with open(path, "wb") as f:
            pickle.dump(synthesize_snapshot("current", entries=args.entries, frames=args.frames, with_oom=True), f,
                        protocol=4)
        env = dict(os.environ, KINETOSCOPE_CACHE_DIR=os.path.join(tmp, "cache"))
        bare = run_child(UNPICKLE, [path, REPO], env)
        first = run_child(OPEN, [path, REPO], env)
        again = run_child(OPEN, [path, REPO], env)
        size_mb = os.path.getsize(path) / 2**20
    ratio = first["seconds"] / bare["seconds"]
    print(f"snapshot: {args.entries} history entries, {args.frames} frames each, {size_mb:.0f} MB pickle")
    print(f"bare restricted unpickle: {bare['seconds']:.2f} s")
    print(f"first open:               {first['seconds']:.2f} s ({ratio:.2f}x)")
    print(f"reopen from cache:        {again['seconds']:.2f} s")
    print(f"timeline request p95:     {again['timeline_p95_ms']:.1f} ms")
    print_figures(unpickle_s=bare["seconds"], first_open_s=first["seconds"], first_over_unpickle=ratio,
                  reopen_s=again["seconds"], timeline_p95_ms=(again["timeline_p95_ms"], 1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
