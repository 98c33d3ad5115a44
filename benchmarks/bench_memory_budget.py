"""Memory-budget benchmark: many large runs browsed one after another under a budget.

    python benchmarks/bench_memory_budget.py [--runs 20] [--budget-mb 4096] [--trace /tmp/big/worker0.1.pt.trace.json]

Makes ``--runs`` run directories, each holding a hard link to the same large trace (created with
``benchmarks/rank_job.py``'s ``write_repeated`` when missing), starts a real TensorBoard on loopback with
``KINETOSCOPE_MEMORY_BUDGET_MB=--budget-mb``, and browses the runs in order (overview, operators,
timeline_meta and a timeline window per run), then browses them all again: the second pass finds the
early runs evicted and reloads them from the parse cache. Samples the server's VmRSS/VmHWM (and
the RSS of its parse-pool children) from /proc every 0.25 s and prints per-run latencies and the peaks.

A file with several hard links is keyed in the parse cache by device + inode + size + mtime, not by
path, so the 20 links are parsed once and the other 19 runs load from the cache (cold parse once,
then cache reloads; evictions reload from it too). ``--cache-dir`` keeps the parse cache between
invocations: a second invocation then measures cache reloads only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.bench_concurrency import get  # noqa: E402
from benchmarks.rank_job import write_repeated  # noqa: E402
from tests.e2e.conftest import tensorboard  # noqa: E402

SEED = "/work/shared/samples/kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"


def proc_kb(pid: int, key: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def children(pid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    return out


def server_pid(logdir: Path) -> int:
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                cmd = open(f"/proc/{d}/cmdline", "rb").read().split(b"\0")
            except OSError:
                continue
            if b"tensorboard.main" in cmd and str(logdir).encode() in cmd:
                return int(d)
    raise RuntimeError("tensorboard process not found")


class Sampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.stop, self.peak_rss_kb, self.hwm_kb, self.peak_children_kb = pid, threading.Event(), 0, 0, 0

    def run(self) -> None:
        while not self.stop.is_set():
            self.peak_rss_kb = max(self.peak_rss_kb, proc_kb(self.pid, "VmRSS"))
            self.hwm_kb = max(self.hwm_kb, proc_kb(self.pid, "VmHWM"))
            self.peak_children_kb = max(self.peak_children_kb, sum(proc_kb(c, "VmRSS") for c in children(self.pid)))
            self.stop.wait(0.25)


def browse(base: str, run: str, timeout: float) -> dict:
    """Open one run as the UI does; returns the seconds until its overview was ready and to browse it."""
    qs = urllib.parse.urlencode({"run": run, "worker": "worker0", "span": "1"})
    t0 = time.perf_counter()
    while True:
        status, body = get(f"{base}/overview?{qs}", timeout=timeout)
        doc = json.loads(body)
        if status != 200 or doc.get("state") == "error":
            raise RuntimeError(f"{run}: overview answered {status}: {body[:300]!r}")
        if doc.get("state") == "ready":
            break
        if time.perf_counter() - t0 > timeout:
            raise TimeoutError(f"{run} was not analysed within {timeout} s")
        time.sleep(0.25)
    ready = time.perf_counter() - t0
    t1 = time.perf_counter()
    for route in ("operators", "kernels", "timeline_meta"):
        status, body = get(f"{base}/{route}?{qs}", timeout=timeout)
        if status != 200 or json.loads(body).get("state") != "ready":
            raise RuntimeError(f"{run}: {route} answered {status}: {body[:300]!r}")
        if route == "timeline_meta":
            end = json.loads(body)["end_us"]
    status, body = get(
        f"{base}/timeline?{qs}&start_us={end * 0.4:.1f}&end_us={end * 0.45:.1f}&width_px=2000", timeout=timeout
    )
    if status != 200:
        raise RuntimeError(f"{run}: timeline answered {status}: {body[:300]!r}")
    return {"overview_ready_s": ready, "browse_s": time.perf_counter() - t1}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--budget-mb", type=int, default=4096)
    ap.add_argument("--trace", type=Path, default=Path("/tmp/big/worker0.1.pt.trace.json"))
    ap.add_argument("--workdir", type=Path, default=None, help="where the logdir goes (same filesystem as --trace)")
    ap.add_argument("--cache-dir", type=Path, default=None, help="keep the parse cache here between invocations")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds one run may take to be analysed")
    args = ap.parse_args()
    if not args.trace.exists():
        args.trace.parent.mkdir(parents=True, exist_ok=True)
        print(f"creating {args.trace} ...", flush=True)
        write_repeated(str(SEED), str(args.trace), 30)
    if args.cache_dir is not None:  # the cache keys files by path: keep the paths for the next invocation
        work = args.cache_dir.parent / f"{args.cache_dir.name}-logdir"
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    else:
        work = Path(tempfile.mkdtemp(prefix="kinetoscope-mem-", dir=args.workdir or args.trace.parent))
    logdir = work / "logdir"
    for i in range(args.runs):
        (logdir / f"run{i:02d}").mkdir(parents=True)
        os.link(args.trace, logdir / f"run{i:02d}" / "worker0.1.pt.trace.json")
    cache = args.cache_dir or work / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    os.environ["KINETOSCOPE_MEMORY_BUDGET_MB"] = str(args.budget_mb)
    size_mb = args.trace.stat().st_size / 2**20
    print(f"{args.runs} runs × {size_mb:.0f} MB (hard links), budget {args.budget_mb} MB, cache {cache}", flush=True)
    rows = []
    started = time.perf_counter()
    try:
        with tensorboard(logdir, cache) as base:
            base += "/data/plugin/kinetoscope"
            sampler = Sampler(server_pid(logdir))
            sampler.start()
            for pass_ in (1, 2):
                for i in range(args.runs):
                    r = browse(base, f"run{i:02d}", args.timeout)
                    rows.append(dict(r, run=f"run{i:02d}", pass_=pass_))
                    print(
                        f"pass {pass_} run{i:02d}: overview ready after {r['overview_ready_s']:7.2f} s, "
                        f"operators+kernels+timeline {r['browse_s']:6.2f} s; server VmRSS "
                        f"{proc_kb(sampler.pid, 'VmRSS') / 1024:6.0f} MB (peak {sampler.peak_rss_kb / 1024:.0f})",
                        flush=True,
                    )
            sampler.stop.set()
            sampler.join()
    finally:
        import shutil

        shutil.rmtree(logdir, ignore_errors=True)
        if args.cache_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    second = [r["overview_ready_s"] + r["browse_s"] for r in rows if r["pass_"] == 2]
    print(
        f"total {time.perf_counter() - started:.0f} s; pass 2 (reloads from the parse cache): "
        f"mean {sum(second) / len(second):.2f} s, max {max(second):.2f} s per run"
    )
    print(
        f"peak server VmHWM={sampler.hwm_kb / 1024:.0f} MB VmRSS={sampler.peak_rss_kb / 1024:.0f} MB; "
        f"parse-pool children peak {sampler.peak_children_kb / 1024:.0f} MB; budget {args.budget_mb} MB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
