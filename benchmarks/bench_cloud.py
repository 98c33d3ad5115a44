"""Load one trace from a local S3 emulator (moto server on loopback) vs local disk, cold, each in a
subprocess of its own with an empty parse cache, in one run: ``BENCH_REPEAT`` (default 2) alternated
pairs, the best time of each side reported.

    python benchmarks/bench_cloud.py TRACE

"Cold" is the same path as ``bench_load.py``'s: a ``RunRegistry`` on the trace's folder (or on the
bucket prefix holding it) with an empty parse cache, scan, then load to a finished Overview (read,
parse, cache write, analysis); a remote object is downloaded into the parse-cache directory first.
Both sides must give the same steps and average step time.

Also measures the emulator's raw throughput in the same run (a plain s3fs ``cat_file`` of the whole
object). Prints both timings, the ratio and the peak RSS of each child; the last line is
``moto_raw_s=… moto_raw_mb_s=… local_cold_s=… s3_cold_s=… s3_over_local=… peak_rss_mb=… loadavg=…``
(peak_rss_mb: the larger of the two children's; loadavg: 1/5/15-minute load average at the end, since
the machine may be shared).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPEAT = int(os.environ.get("BENCH_REPEAT", "2"))  # local/S3 pairs, alternated; the best of each counts
REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

CHILD = r"""
import json, resource, sys, time
from tb_plugin.registry.runs import RunRegistry
from tb_plugin.registry.cache import ParseCache
logdir, name = sys.argv[1], sys.argv[2]
t = time.perf_counter()
reg = RunRegistry(logdir, cache=ParseCache())
reg.scan()
(state,) = [s for s in reg.files() if s.entry.name == name]
reg.load(state)
elapsed = time.perf_counter() - t
assert state.state == "ready" and not state.from_cache, state.error
print(json.dumps({"seconds": elapsed, "steps": len(state.overview["steps"]),
                  "avg_step_us": state.overview["average"]["total_us"],
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


UPLOAD_AND_RAW = r"""
import json, sys, time
import s3fs
fs = s3fs.S3FileSystem(skip_instance_cache=True)  # endpoint and keys from the AWS_* variables
t = time.perf_counter()
fs.put_file(sys.argv[1], sys.argv[2])
upload_s = time.perf_counter() - t
t = time.perf_counter()
size = len(fs.cat_file(sys.argv[2]))
print(json.dumps({"upload_s": upload_s, "raw_s": time.perf_counter() - t, "bytes": size}))
"""


def child(logdir: str, name: str, env: dict) -> dict:
    with tempfile.TemporaryDirectory(prefix="kinetoscope-bench-") as cache_dir:  # cold: an empty cache
        out = subprocess.run(
            [sys.executable, "-c", CHILD, logdir, name],
            env=dict(env, KINETOSCOPE_CACHE_DIR=cache_dir),
            cwd=str(REPO),
            capture_output=True,
            text=True,
        )
    if out.returncode:
        raise SystemExit(f"child failed on {logdir}/{name}:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    trace = Path(sys.argv[1]).resolve()
    from emulators import Emulator

    alone = None
    emu = Emulator("s3").start()
    try:
        env = dict(os.environ, **emu.env)
        emu.make_bucket()
        # in a child: Linux children inherit the parent's peak RSS in ru_maxrss, so this process
        # must never hold the object (an earlier version reported the 2.2 GB of its cat_file here)
        raw = subprocess.run(
            [sys.executable, "-c", UPLOAD_AND_RAW, str(trace), f"{emu.bucket}/bench/{trace.name}"],
            env=env,
            cwd=str(REPO),
            capture_output=True,
            text=True,
        )
        if raw.returncode:
            raise SystemExit(f"upload failed:\n{raw.stderr[-3000:]}")
        raw = json.loads(raw.stdout.strip().splitlines()[-1])
        raw_s, raw_bytes = raw["raw_s"], raw["bytes"]
        print(f"uploaded {raw_bytes / 1e9:.2f} GB to moto in {raw['upload_s']:.1f} s", flush=True)
        print(f"moto raw cat_file: {raw_s:.2f} s ({raw_bytes / 1e6 / raw_s:.0f} MB/s)", flush=True)
        local = s3 = None
        alone = tempfile.mkdtemp(prefix="kinetoscope-bench-local-")
        try:  # a folder holding only this trace (its own folder may hold others)
            os.link(trace, os.path.join(alone, trace.name))
        except OSError:
            shutil.copyfile(trace, os.path.join(alone, trace.name))
        for _ in range(REPEAT):  # alternated, best of each: load from other processes evens out
            run = child(alone, trace.name, env)
            print(
                f"local cold: {run['seconds']:.2f} s, {run['steps']} steps, peak RSS {run['peak_rss_mb']:.0f} MB",
                flush=True,
            )
            local = run if local is None or run["seconds"] < local["seconds"] else local
            run = child(emu.url("bench"), trace.name, env)
            print(
                f"s3 (moto) cold: {run['seconds']:.2f} s, {run['steps']} steps, peak RSS {run['peak_rss_mb']:.0f} MB",
                flush=True,
            )
            s3 = run if s3 is None or run["seconds"] < s3["seconds"] else s3
    finally:
        emu.kill()
        if alone:
            shutil.rmtree(alone, ignore_errors=True)
    assert (s3["steps"], s3["avg_step_us"]) == (local["steps"], local["avg_step_us"])
    ratio = s3["seconds"] / local["seconds"]
    peak = max(local["peak_rss_mb"], s3["peak_rss_mb"])
    print(
        f"moto_raw_s={raw_s:.2f} moto_raw_mb_s={raw_bytes / 1e6 / raw_s:.0f} local_cold_s={local['seconds']:.2f} s3_cold_s={s3['seconds']:.2f} s3_over_local={ratio:.2f} "
        f"peak_rss_mb={peak:.0f} loadavg={'/'.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
