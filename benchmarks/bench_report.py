"""The full report against its floor, cold and warm, on one trace.

    python benchmarks/bench_report.py TRACE [--repeat 1]

Each measurement runs in its own process (peak RSS is that process's ``VmHWM``):

- ``floor``: read the file (gunzip if needed) and ``orjson.loads`` it: what any JSON reader pays;
- ``cold``: ``kinetoscope report --json`` on the trace's folder with an empty parse cache;
- ``warm``: the same command again on the cache the cold run filled.

Last line: ``floor_s= cold_s= warm_s= cold_over_floor= warm_over_cold= peak_rss_mb=`` (the cold
run's peak; issue 17's targets are ratios, measured in one run).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks._common import HWM, REPO, run_child  # noqa: E402

FLOOR = HWM + r"""
import gzip, json, sys, time
import orjson
t = time.perf_counter()
with open(sys.argv[1], "rb") as f:
    data = f.read()
if data[:2] == b"\x1f\x8b":
    data = gzip.decompress(data)
orjson.loads(data)
print(json.dumps({"seconds": time.perf_counter() - t, "rss_mb": hwm_mb()}))
"""

REPORT = HWM + r"""
import io, json, os, sys, time
sys.path.insert(0, sys.argv[2])
from tb_plugin.cli import main
out = io.StringIO()
t = time.perf_counter()
stdout, sys.stdout = sys.stdout, out
try:
    code = main(["report", os.path.dirname(os.path.abspath(sys.argv[1])), "--json"])
finally:
    sys.stdout = stdout
print(json.dumps({"seconds": time.perf_counter() - t, "rss_mb": hwm_mb(), "code": code, "bytes": len(out.getvalue())}))
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("trace")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each case; the fastest counts")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kinetoscope-bench-report-") as tmp:
        run_dir = os.path.join(tmp, "run")
        os.mkdir(run_dir)
        trace = os.path.join(run_dir, os.path.basename(args.trace))
        try:  # a hard link (a symlink out of the logdir would not be listed); a copy across filesystems
            os.link(os.path.abspath(args.trace), trace)
        except OSError:
            import shutil

            shutil.copyfile(args.trace, trace)
        best: dict[str, dict] = {}
        for _ in range(max(1, args.repeat)):
            cache = tempfile.mkdtemp(dir=tmp)
            env = dict(os.environ, KINETOSCOPE_CACHE_DIR=cache)
            for name, script in (("floor", FLOOR), ("cold", REPORT), ("warm", REPORT)):
                got = run_child(script, [trace, REPO], env=env)
                if name not in best or got["seconds"] < best[name]["seconds"]:
                    best[name] = got
        for name in ("floor", "cold", "warm"):
            r = best[name]
            print(f"{name}: {r['seconds']:.2f} s, peak RSS {r['rss_mb']:.0f} MB"
                  + (f", exit {r['code']}, {r['bytes']} bytes of JSON" if "code" in r else ""))
        f, c, w = (best[k]["seconds"] for k in ("floor", "cold", "warm"))
        print(f"floor_s={f:.2f} cold_s={c:.2f} warm_s={w:.2f} cold_over_floor={c / f:.2f} "
              f"warm_over_cold={w / c:.3f} peak_rss_mb={best['cold']['rss_mb']:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
