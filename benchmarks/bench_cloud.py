"""Read one trace from a local S3 emulator (moto server on loopback) vs local disk, cold (no parse
cache), each in a subprocess of its own, one run.

    python benchmarks/bench_cloud.py TRACE

Prints both timings, the ratio and the peak RSS of each child; the last line is
``local_cold_s=… s3_cold_s=… s3_over_local=… peak_rss_mb=…`` (peak_rss_mb: the larger of the two).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

CHILD = r"""
import json, resource, sys, time
from tb_plugin.trace.load import load_trace_file
t = time.perf_counter()
trace = load_trace_file(sys.argv[1])
elapsed = time.perf_counter() - t
print(json.dumps({"seconds": elapsed, "events": int(len(trace.events)),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def child(target: str, env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, target], env=env, cwd=str(REPO), check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    trace = Path(sys.argv[1]).resolve()
    from emulators import Emulator

    emu = Emulator("s3").start()
    try:
        env = dict(os.environ, **emu.env)
        os.environ.update(emu.env)
        emu.make_bucket()
        t = time.perf_counter()
        emu.fs().put_file(str(trace), f"{emu.bucket}/bench/{trace.name}")
        print(f"uploaded {trace.stat().st_size / 1e9:.2f} GB to moto in {time.perf_counter() - t:.1f} s", flush=True)
        local = child(str(trace), env)
        print(f"local cold: {local['seconds']:.2f} s, {local['events']} events, peak RSS {local['peak_rss_mb']:.0f} MB",
              flush=True)
        s3 = child(emu.url(f"bench/{trace.name}"), env)
        print(f"s3 (moto) cold: {s3['seconds']:.2f} s, {s3['events']} events, peak RSS {s3['peak_rss_mb']:.0f} MB",
              flush=True)
    finally:
        emu.kill()
    assert s3["events"] == local["events"]
    ratio = s3["seconds"] / local["seconds"]
    peak = max(local["peak_rss_mb"], s3["peak_rss_mb"])
    print(f"local_cold_s={local['seconds']:.2f} s3_cold_s={s3['seconds']:.2f} s3_over_local={ratio:.2f} "
          f"peak_rss_mb={peak:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
