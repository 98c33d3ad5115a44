"""Load benchmark: many concurrent clients hit every route of a real TensorBoard ("Load").

    python benchmarks/bench_concurrency.py [--clients 50] [--seconds 60] [--samples ../shared/samples]

Starts ``tensorboard`` on a free loopback port with a logdir holding the resnet50 sample and the H100
bert sample, waits until both files are analysed, then runs ``--clients`` threads (urllib) that pick a
random file and a random route (every route of the plugin: runs, overview, operators and kernels (+csv),
operator_stacks, modules, timeline_meta, timeline at random windows, timeline_search, timeline_event,
trace_file, memory, memory_events/memory_stats (+csv), insights, distributed, diff, the five snapshot
routes, memory_timeline_export, memprofiler_stats/log, index.js; the artifacts sit in the resnet50 run)
in a bounded loop for ``--seconds``. An error is a non-200 answer,
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
import time
import urllib.parse
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))  # the synthesizers

from benchmarks._common import get, hammer, percentile  # noqa: E402  (get and percentile: used from here too)
from tests.e2e.conftest import tensorboard  # noqa: E402  (a real TensorBoard on a free loopback port)

DEFAULT_SAMPLES = Path(os.environ.get("KINETOSCOPE_SAMPLES", REPO.parent / "shared" / "samples"))
FILES = [
    (
        "resnet50",
        "kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
        "worker0.1623143089861.pt.trace.json.gz",
    ),
    ("h100", "tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz", "bert.1.pt.trace.json.gz"),
]
# every route of the plugin (plugin.py), with the artifacts of ARTIFACT_RUN for the artifact routes
ROUTES = [
    "runs",
    "overview",
    "operators",
    "operators.csv",
    "operator_stacks",
    "kernels",
    "kernels.csv",
    "modules",
    "timeline_meta",
    "timeline",
    "timeline_search",
    "timeline_event",
    "trace_file",
    "memory",
    "memory_events",
    "memory_events.csv",
    "memory_stats",
    "memory_stats.csv",
    "insights",
    "distributed",
    "diff",
    "snapshot",
    "snapshot_timeline",
    "snapshot_segments",
    "snapshot_allocations",
    "snapshot_stack",
    "memory_timeline_export",
    "memprofiler_stats",
    "memprofiler_log",
    "index.js",
]
ARTIFACT_RUN = "resnet50"
ARTIFACTS = {
    "snapshot": "resnet50/mem_snapshot.pickle",
    "memory_timeline_export": "resnet50/memory_timeline.raw.gz",
    "memprofiler_stats": "resnet50/memprofiler/rank_0_memory_stats.yaml",
    "memprofiler_log": "resnet50/memprofiler/fsdp_mem_rank_0_training_step_2.log",
}


def build_logdir(root: Path, samples: Path) -> Path:
    from synth.fts import write_memprofiler

    for run, rel, name in FILES:
        (root / run).mkdir(parents=True, exist_ok=True)
        shutil.copy(samples / rel, root / run / name)
    shutil.copy(samples / "memory_snapshots" / "mem_snapshot.pickle", root / ARTIFACTS["snapshot"])
    shutil.copy(
        samples / "hta" / "memory_analysis" / "memory_timeline.raw.gz", root / ARTIFACTS["memory_timeline_export"]
    )
    write_memprofiler(root / ARTIFACT_RUN, ranks=1, iterations=(2,), snapshots=False)
    return root


def wait_ready(base: str, expected: int, timeout: float = 300.0) -> list[dict]:
    """The (run, worker, span) of every file once all ``expected`` files are ready."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        _, body = get(base + "/runs")
        doc = json.loads(body)
        files = [
            {"run": r["name"], "worker": w["worker"], "span": s["span"], "state": s["state"]}
            for r in doc["runs"]
            for w in r["workers"]
            for s in w["spans"]
        ]
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
        self.others = [key]  # the files a diff may pair this one with (set by targets())

    def url(self, route: str, rnd: random.Random) -> str:
        b, qs = self.base, self.qs
        if route == "runs":
            return f"{b}/runs"
        if route in ("index.js", "trace_file"):
            return f"{b}/{route}" + ("" if route == "index.js" else f"?{qs}")
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
        if route in ("memory_stats", "memory_stats.csv", "memory_events.csv"):
            return f"{b}/{route}?{qs}&device={self.device}&limit=100"
        if route == "kernels.csv":
            return f"{b}/kernels.csv?{qs}&group_by=" + rnd.choice(["kernel", "kernel_op_config"])
        if route == "distributed":
            return f"{b}/distributed?" + urllib.parse.urlencode({"run": self.key["run"], "span": self.key["span"]})
        if route == "diff":  # this file against a random one (itself included)
            other = rnd.choice(self.others)
            q = {f"base_{k}": v for k, v in self.key.items()} | {f"exp_{k}": v for k, v in other.items()}
            return f"{b}/diff?" + urllib.parse.urlencode(q)
        if route.startswith("snapshot"):
            q = {"run": ARTIFACT_RUN, "path": ARTIFACTS["snapshot"]}
            if route == "snapshot_timeline":
                q["width_px"] = rnd.choice(["500", "2000"])
            elif route == "snapshot_allocations":
                q["limit"] = "100"
            elif route == "snapshot_stack":
                q["stack"] = str(rnd.randrange(0, 3))
            return f"{b}/{route}?" + urllib.parse.urlencode(q)
        if route in ARTIFACTS:
            return f"{b}/{route}?" + urllib.parse.urlencode({"run": ARTIFACT_RUN, "path": ARTIFACTS[route]})
        return f"{b}/{route}?{qs}"


def targets(base: str, keys: list[dict]) -> list[Target]:
    """One :class:`Target` per loaded file; each may be diffed against any of them."""
    out = [Target(base, k) for k in keys]
    for t in out:
        t.others = keys
    return out


def check(route: str, status: int, body: bytes) -> str | None:
    """Why this answer is an error, or None."""
    if status != 200:
        return f"HTTP {status}: {body[:200]!r}"
    if route.endswith((".csv", ".js")) or route == "trace_file":
        return None if body else "empty body"
    doc = json.loads(body)
    if route != "runs" and isinstance(doc, dict) and doc.get("state", "ready") != "ready":
        return f"state {doc.get('state')}: {doc.get('error')}"
    return None


def load(base: str, targets: list[Target], clients: int, seconds: float, seed: int = 0) -> dict:
    """Run the client threads; returns {"latencies": {route: [s]}, "errors": [..], "requests": n}."""

    def pick(i: int, rnd: random.Random, n: int) -> tuple[str, str]:
        route = ROUTES[(i + n) % len(ROUTES)] if n < len(ROUTES) else rnd.choice(ROUTES)  # every route early
        return route, rnd.choice(targets).url(route, rnd)

    result = hammer(clients, seconds, ROUTES, pick, check, seed=lambda i: seed * 1000 + i, together=True)
    result["requests"] = sum(len(v) for v in result["latencies"].values())
    return result


def report(result: dict, seconds: float) -> str:
    lines = [f"{'route':24} {'n':>7} {'p50_ms':>9} {'p95_ms':>9} {'p99_ms':>9}"]
    every = []
    for route, v in result["latencies"].items():
        every.extend(v)
        lines.append(
            f"{route:24} {len(v):7d} {percentile(v, 50) * 1e3:9.1f} {percentile(v, 95) * 1e3:9.1f} "
            f"{percentile(v, 99) * 1e3:9.1f}"
        )
    lines.append(
        f"{'overall':24} {len(every):7d} {percentile(every, 50) * 1e3:9.1f} "
        f"{percentile(every, 95) * 1e3:9.1f} {percentile(every, 99) * 1e3:9.1f}"
    )
    for e in result["errors"][:20]:
        lines.append("error: " + e)
    lines.append(f"throughput {len(every) / seconds:.1f} req/s")
    lines.append(
        f"requests={result['requests']} errors={len(result['errors'])} p95_ms={percentile(every, 95) * 1e3:.1f}"
    )
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
            print(
                f"{len(keys)} files analysed in {time.perf_counter() - t:.1f} s; "
                f"{args.clients} clients for {args.seconds:.0f} s",
                flush=True,
            )
            result = load(base, targets(base, keys), args.clients, args.seconds, args.seed)
    print(report(result, args.seconds))
    return 1 if result["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
