"""Load benchmark: many concurrent clients hit every route of a real TensorBoard (issue 9, "Load").

    python benchmarks/bench_concurrency.py [--clients 50] [--seconds 60] [--samples ../shared/samples]

Starts ``tensorboard`` on a free loopback port with a logdir holding the resnet50 sample and the H100
bert sample, waits until both files are analysed, then runs ``--clients`` threads (urllib) that pick a
random file and a random route (runs, overview, operators (+csv), operator_stacks, kernels, modules,
timeline_meta, timeline at random windows, timeline_search, timeline_event, memory, memory_events,
memory_stats, insights, index.js) in a bounded loop for ``--seconds``. An error is a non-200 answer,
a JSON document with ``state`` other than ``ready``, or a failed connection. Prints per-route and
overall p50/p95/p99 latency; the last line is ``requests=… errors=… p95_ms=…``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.e2e.conftest import tensorboard  # noqa: E402  (a real TensorBoard on a free loopback port)

DEFAULT_SAMPLES = Path(os.environ.get("KINETOSCOPE_SAMPLES", REPO.parent / "shared" / "samples"))
FILES = [("resnet50", "kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
          "worker0.1623143089861.pt.trace.json.gz"),
         ("h100", "tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz", "bert.1.pt.trace.json.gz")]
ROUTES = ["runs", "overview", "operators", "operators.csv", "operator_stacks", "kernels", "modules",
          "timeline_meta", "timeline", "timeline_search", "timeline_event", "memory", "memory_events",
          "memory_stats", "insights", "index.js"]


def build_logdir(root: Path, samples: Path) -> Path:
    for run, rel, name in FILES:
        (root / run).mkdir(parents=True, exist_ok=True)
        shutil.copy(samples / rel, root / run / name)
    return root


def get(url: str, timeout: float = 60.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def wait_ready(base: str, expected: int, timeout: float = 300.0) -> list[dict]:
    """The (run, worker, span) of every file once all ``expected`` files are ready."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        _, body = get(base + "/runs")
        doc = json.loads(body)
        files = [{"run": r["name"], "worker": w["worker"], "span": s["span"], "state": s["state"]}
                 for r in doc["runs"] for w in r["workers"] for s in w["spans"]]
        if len(files) >= expected and all(f["state"] == "ready" for f in files):
            return [{k: f[k] for k in ("run", "worker", "span")} for f in files]
        bad = [f for f in files if f["state"] == "error"]
        if bad:
            raise RuntimeError(f"files failed to load: {bad}")
        time.sleep(0.5)
    raise TimeoutError("files were not analysed in time")


class Target:
    """One loaded file and what its routes need (extent, event rows, a memory device)."""

    def __init__(self, base: str, key: dict) -> None:
        self.base, self.key = base, key
        self.qs = urllib.parse.urlencode(key)
        meta = json.loads(get(f"{base}/timeline_meta?{self.qs}")[1])
        self.end_us = float(meta["end_us"]) or 1.0
        found = json.loads(get(f"{base}/timeline_search?{self.qs}&q=a")[1])
        self.rows = found["rows"][:500] or [0]
        self.names = ["aten", "conv", "gemm", "Memcpy", "cuda", "step", "xyz-no-match"]
        mem = json.loads(get(f"{base}/memory?{self.qs}&width_px=10")[1])
        self.device = mem["devices"][0]["device"] if mem.get("devices") else "GPU0"

    def url(self, route: str, rnd: random.Random) -> str:
        b, qs = self.base, self.qs
        if route == "runs":
            return f"{b}/runs"
        if route == "index.js":
            return f"{b}/index.js"
        if route in ("operators", "kernels"):
            order = rnd.choice(["asc", "desc"])
            extra = f"&order={order}&offset={rnd.randrange(0, 50)}&limit=50"
            if route == "operators":
                extra += "&group_by=" + rnd.choice(["operator", "input_shape", "call_stack"])
            else:
                extra += "&group_by=" + rnd.choice(["kernel", "kernel_op_config"])
            return f"{b}/{route}?{qs}{extra}"
        if route == "operators.csv":
            return f"{b}/operators.csv?{qs}&group_by=" + rnd.choice(["operator", "input_shape"])
        if route == "operator_stacks":
            return f"{b}/operator_stacks?{qs}&key={rnd.randrange(0, 5)}"
        if route == "timeline":
            span = self.end_us * rnd.choice([1.0, 0.1, 0.01, 0.001])
            t0 = rnd.uniform(0, max(self.end_us - span, 0.0))
            return f"{b}/timeline?{qs}&start_us={t0:.3f}&end_us={t0 + span:.3f}&width_px={rnd.choice([800, 2000])}"
        if route == "timeline_search":
            return f"{b}/timeline_search?{qs}&q={urllib.parse.quote(rnd.choice(self.names))}"
        if route == "timeline_event":
            return f"{b}/timeline_event?{qs}&row={rnd.choice(self.rows)}"
        if route == "memory":
            span = self.end_us * rnd.choice([1.0, 0.1])
            t0 = rnd.uniform(0, max(self.end_us - span, 0.0))
            return f"{b}/memory?{qs}&start_us={t0:.3f}&end_us={t0 + span:.3f}&width_px=1000"
        if route == "memory_events":
            return f"{b}/memory_events?{qs}&device={self.device}&limit=100&offset={rnd.randrange(0, 100)}"
        if route == "memory_stats":
            return f"{b}/memory_stats?{qs}&device={self.device}&limit=100"
        return f"{b}/{route}?{qs}"


def check(route: str, status: int, body: bytes) -> str | None:
    """Why this answer is an error, or None."""
    if status != 200:
        return f"HTTP {status}: {body[:200]!r}"
    if route.endswith((".csv", ".js")):
        return None if body else "empty body"
    doc = json.loads(body)
    if route != "runs" and isinstance(doc, dict) and doc.get("state", "ready") != "ready":
        return f"state {doc.get('state')}: {doc.get('error')}"
    return None


def load(base: str, targets: list[Target], clients: int, seconds: float, seed: int = 0) -> dict:
    """Run the client threads; returns {"latencies": {route: [s]}, "errors": [..], "requests": n}."""
    latencies: dict[str, list[float]] = {r: [] for r in ROUTES}
    errors: list[str] = []
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds
    start = threading.Barrier(clients)

    def client(i: int) -> None:
        rnd = random.Random(seed * 1000 + i)
        mine: dict[str, list[float]] = {r: [] for r in ROUTES}
        bad: list[str] = []
        start.wait()
        n = 0
        while time.perf_counter() < deadline:
            route = ROUTES[(i + n) % len(ROUTES)] if n < len(ROUTES) else rnd.choice(ROUTES)  # every route early
            n += 1
            url = rnd.choice(targets).url(route, rnd)
            t = time.perf_counter()
            try:
                status, body = get(url)
                why = check(route, status, body)
            except Exception as exc:  # a reset connection or a timeout is an error, not a crash
                why = f"{type(exc).__name__}: {exc}"
            mine[route].append(time.perf_counter() - t)
            if why:
                bad.append(f"{route} {url}: {why}")
        with lock:
            for r, v in mine.items():
                latencies[r].extend(v)
            errors.extend(bad)

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 120)
    return {"latencies": latencies, "errors": errors, "requests": sum(len(v) for v in latencies.values())}


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q / 100 * (len(s) - 1))))]


def report(result: dict, seconds: float) -> str:
    lines = [f"{'route':18} {'n':>7} {'p50_ms':>9} {'p95_ms':>9} {'p99_ms':>9}"]
    every = []
    for route, v in result["latencies"].items():
        every.extend(v)
        lines.append(f"{route:18} {len(v):7d} {percentile(v, 50) * 1e3:9.1f} {percentile(v, 95) * 1e3:9.1f} "
                     f"{percentile(v, 99) * 1e3:9.1f}")
    lines.append(f"{'overall':18} {len(every):7d} {percentile(every, 50) * 1e3:9.1f} "
                 f"{percentile(every, 95) * 1e3:9.1f} {percentile(every, 99) * 1e3:9.1f}")
    for e in result["errors"][:20]:
        lines.append("error: " + e)
    lines.append(f"throughput {len(every) / seconds:.1f} req/s")
    lines.append(f"requests={result['requests']} errors={len(result['errors'])} "
                 f"p95_ms={percentile(every, 95) * 1e3:.1f}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--samples", type=Path, default=DEFAULT_SAMPLES)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kinetoscope-load-") as tmp:
        logdir = build_logdir(Path(tmp) / "logdir", args.samples)
        cache = Path(tmp) / "cache"
        cache.mkdir()
        with tensorboard(logdir, cache) as base:
            base += "/data/plugin/kinetoscope"
            t = time.perf_counter()
            keys = wait_ready(base, len(FILES))
            print(f"{len(keys)} files analysed in {time.perf_counter() - t:.1f} s; "
                  f"{args.clients} clients for {args.seconds:.0f} s", flush=True)
            targets = [Target(base, k) for k in keys]
            result = load(base, targets, args.clients, args.seconds, args.seed)
    print(report(result, args.seconds))
    return 1 if result["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
