"""Large-logdir benchmark: 1000 runs × 10 small trace files.

    python benchmarks/bench_large_logdir.py [--runs 1000] [--files-per-run 10] [--seconds 20] [--clients 8]

Writes ``--runs`` run directories of tiny valid traces (one template, so generating 10 000 files
takes a second or two), then measures

- the listing: one ``RunRegistry.scan()`` in this process (target < 2 s), and the first ``runs``
  answer of a real TensorBoard on loopback (its first scan included);
- responsiveness while the background loader works through the files: ``--clients`` threads request
  ``runs`` and the ``overview`` of random files (a "queued"/"loading" answer is a success) for
  ``--seconds``; p50/p95 per route, and how many files the loader finished meanwhile.

The last line is ``files=… listing_s=… first_runs_s=… runs_p95_ms=… overview_p95_ms=… errors=…``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks._common import get, hammer, percentile  # noqa: E402
from tests.e2e.conftest import tensorboard  # noqa: E402


def tiny_trace(seed: int) -> bytes:
    """A small valid trace: two profiler steps, operators, a launch and its kernel."""
    events = []
    for step in range(2):
        t = 1000 + step * 500
        events += [
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": f"ProfilerStep#{step}",
                "pid": 1,
                "tid": 1,
                "ts": t,
                "dur": 400,
            },
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "aten::mm",
                "pid": 1,
                "tid": 1,
                "ts": t + 10,
                "dur": 100 + seed % 50,
                "args": {"Input Dims": [[64, 64], [64, 64]]},
            },
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": 1,
                "tid": 1,
                "ts": t + 20,
                "dur": 5,
                "args": {"correlation": step + 1},
            },
            {
                "ph": "X",
                "cat": "kernel",
                "name": "volta_sgemm_64x64_nn",
                "pid": 0,
                "tid": 7,
                "ts": t + 30,
                "dur": 50,
                "args": {"correlation": step + 1, "device": 0, "stream": 7, "grid": [4, 1, 1], "block": [256, 1, 1]},
            },
        ]
    return json.dumps({"schemaVersion": 1, "traceEvents": events}).encode()


def make_logdir(root: Path, runs: int, files_per_run: int) -> int:
    blobs = [tiny_trace(i) for i in range(16)]
    n = 0
    for r in range(runs):
        d = root / f"run{r:04d}"
        d.mkdir(parents=True)
        for j in range(files_per_run):  # two workers, files_per_run / 2 spans each
            (d / f"worker{j % 2}.{1000 + j}.pt.trace.json").write_bytes(blobs[n % len(blobs)])
            n += 1
    return n


def hammer_registry(base: str, keys: list[dict], clients: int, seconds: float) -> dict:
    """Clients asking for ``runs`` or a random file's ``overview``, half and half; a queued/loading
    overview is a success."""

    def pick(i: int, rnd: random.Random, n: int) -> tuple[str, str]:
        if rnd.random() < 0.5:
            return "runs", f"{base}/runs"
        return "overview", f"{base}/overview?{urllib.parse.urlencode(rnd.choice(keys))}"

    def judge(route: str, status: int, body: bytes) -> str | None:
        doc = json.loads(body)
        if status != 200 or (route == "overview" and doc.get("state") not in ("queued", "loading", "ready")):
            return f"{status} {body[:200]!r}"
        return None

    return hammer(clients, seconds, ["runs", "overview"], pick, judge)


def run(runs: int, files_per_run: int, seconds: float, clients: int, verbose: bool = True) -> dict:
    from tb_plugin.registry.cache import ParseCache
    from tb_plugin.registry.runs import RunRegistry

    say = print if verbose else (lambda *a, **k: None)
    with tempfile.TemporaryDirectory(prefix="kinetoscope-large-") as tmp:
        logdir = Path(tmp) / "logdir"
        t = time.perf_counter()
        n = make_logdir(logdir, runs, files_per_run)
        say(f"wrote {n} files in {runs} runs in {time.perf_counter() - t:.1f} s", flush=True)

        reg = RunRegistry(str(logdir), cache=ParseCache(str(Path(tmp) / "cache0")))
        t = time.perf_counter()
        reg.scan()
        listing = time.perf_counter() - t
        t = time.perf_counter()
        doc = reg.runs_document()
        snapshot_s = time.perf_counter() - t
        assert doc["loading"]["files_total"] == n, doc["loading"]
        say(f"in-process listing (scan) {listing:.3f} s, runs snapshot {snapshot_s * 1e3:.1f} ms", flush=True)

        cache = Path(tmp) / "cache"
        cache.mkdir()
        with tensorboard(logdir, cache) as base:
            base += "/data/plugin/kinetoscope"
            t = time.perf_counter()
            status, body = get(base + "/runs")
            first_runs = time.perf_counter() - t
            doc = json.loads(body)
            assert status == 200 and doc["loading"]["files_total"] == n, doc.get("loading")
            say(
                f"first runs answer {first_runs:.3f} s ({len(body) / 2**20:.1f} MB, {len(doc['runs'])} runs)",
                flush=True,
            )
            keys = [
                {"run": r["name"], "worker": w["worker"], "span": s["span"]}
                for r in doc["runs"]
                for w in r["workers"]
                for s in w["spans"]
            ]
            done0 = doc["loading"]["files_done"]
            result = hammer_registry(base, keys, clients, seconds)
            done1 = json.loads(get(base + "/runs")[1])["loading"]["files_done"]
    out = {
        "files": n,
        "listing_s": listing,
        "first_runs_s": first_runs,
        "errors": result["errors"],
        "files_done_during": done1 - done0,
        "latencies": result["latencies"],
    }
    for route, v in result["latencies"].items():
        out[f"{route}_p50_ms"] = percentile(v, 50) * 1e3
        out[f"{route}_p95_ms"] = percentile(v, 95) * 1e3
        say(f"{route:9} n={len(v):6d} p50={out[f'{route}_p50_ms']:8.1f} ms p95={out[f'{route}_p95_ms']:8.1f} ms")
    say(f"the loader finished {done1 - done0} files during the {seconds:.0f} s of requests")
    for e in result["errors"][:10]:
        say("error:", e)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--files-per-run", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--clients", type=int, default=8)
    args = ap.parse_args()
    out = run(args.runs, args.files_per_run, args.seconds, args.clients)
    print(
        f"files={out['files']} listing_s={out['listing_s']:.3f} first_runs_s={out['first_runs_s']:.3f} "
        f"runs_p95_ms={out['runs_p95_ms']:.1f} overview_p95_ms={out['overview_p95_ms']:.1f} "
        f"errors={len(out['errors'])}"
    )
    return 1 if out["errors"] or out["listing_s"] > 2.0 else 0


if __name__ == "__main__":
    sys.exit(main())
