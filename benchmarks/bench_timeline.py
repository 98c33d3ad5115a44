"""Timeline benchmark: response time and size of the level-of-detail timeline on one trace.

    python benchmarks/bench_timeline.py TRACE [--width 2000] [--zooms 60]

Loads the trace (parse cache allowed), builds the timeline index (reported, not part of the response
times), then times through the HTTP API functions: the first full-range request, and a sequence of
zoom and pan requests (random windows from the full range down to 1 µs). Sizes are the serialized
JSON bodies. Then the wall time of a search with a catastrophic regex, which the regex engine's CPU-time
bound (1 s) stops with a 400. Last line: ``first_ms=<n> zoom_p95_ms=<n> max_response_bytes=<n>
regex_bound_s=<n>``.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

import numpy as np
import orjson

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tb_plugin import api
from tb_plugin.registry.cache import ParseCache
from tb_plugin.registry.runs import RunRegistry


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("trace")
    parser.add_argument("--width", type=int, default=2000)
    parser.add_argument("--zooms", type=int, default=60)
    args = parser.parse_args()
    path = os.path.abspath(args.trace)
    reg = RunRegistry(os.path.dirname(path), cache=ParseCache())
    reg.scan()
    (state,) = [s for s in reg.files() if s.entry.name == os.path.basename(path)]
    t = time.perf_counter()
    reg.load(state)
    load_s = time.perf_counter() - t
    t = time.perf_counter()
    views = reg.views(state)
    meta = views.timeline_meta()
    index_s = time.perf_counter() - t
    q = {"run": state.run, "worker": state.worker, "span": state.span, "width_px": str(args.width)}

    def request(t0: float, t1: float) -> tuple[float, int]:
        start = time.perf_counter()
        code, doc = api.timeline(reg, dict(q, start_us=repr(t0), end_us=repr(t1)))
        body = orjson.dumps(doc)
        assert code == 200, doc
        return (time.perf_counter() - start) * 1000, len(body)

    end = meta["end_us"]
    first_ms, first_bytes = request(0.0, end)
    rng = random.Random(0)
    times, sizes = [], [first_bytes]
    center = end / 2
    span = end
    for i in range(args.zooms):
        if i % 3 == 2:  # pan
            center = min(max(center + rng.uniform(-1, 1) * span, 0), end)
        else:  # zoom in or out
            span = min(max(span * (0.25 if rng.random() < 0.7 else 4.0), 1.0), end)
        ms, size = request(center - span / 2, center + span / 2)
        times.append(ms)
        sizes.append(size)
    p95 = float(np.percentile(times, 95))
    start = time.perf_counter()  # exponential backtracking on op names: stopped by the 1 s bound
    code, doc = api.timeline_search(
        reg, {"run": state.run, "worker": state.worker, "span": state.span, "q": r"(\w|\w\w)+$", "regex": "1"}
    )
    regex_s = time.perf_counter() - start
    assert code == 400, doc
    print(f"trace: {path}")
    print(f"load (parse or cache) {load_s:.2f} s; timeline index {index_s:.2f} s; {len(meta['tracks'])} tracks")
    print(f"first full-range response: {first_ms:.1f} ms, {first_bytes / 1e6:.2f} MB")
    print(
        f"zoom/pan: median {np.median(times):.1f} ms, p95 {p95:.1f} ms, max {max(times):.1f} ms over {len(times)} requests"
    )
    print(f"catastrophic regex search: {regex_s:.2f} s to its 400 ({doc['error']})")
    print(f"first_ms={first_ms:.1f} zoom_p95_ms={p95:.1f} max_response_bytes={max(sizes)} regex_bound_s={regex_s:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
