"""Kinetoscope's cold full report against its peers loading the same trace, whole processes, side by side.

    python benchmarks/bench_peers.py [TRACE ...] [--repeat 5]
        [--incumbent-python /work/venv-incumbent/bin/python] [--hta-python /work/venv-hta/bin/python]

Default TRACE: the 35 MB (gunzipped) V100 ResNet-50 sample of ``../shared/samples`` (the target:
Kinetoscope <= 0.10x torch-tb-profiler 0.4.3 and <= 0.20x HolisticTraceAnalysis 0.5, parse and temporal
breakdown). The peers live in their own virtualenvs outside the repo (benchmarks/INCUMBENT.md; ``pip install
HolisticTraceAnalysis==0.5.0``).

Each measurement is one fresh process, timed from start to exit by this process (interpreter start,
imports, read, parse, analyses, output):

- ``kinetoscope``: ``python -m tb_plugin.cli report DIR --json`` (this checkout's code; the python of a
  venv holding only ``setup.py``'s requirements, like the peers', when ``/work/venv-kinetoscope`` exists:
  the shared environment's ``.pth`` files add ~60 ms to every start) (stdout to a file) on a folder holding
  only the trace, with ``KINETOSCOPE_CACHE_DIR`` an empty folder (no parse or analysis cache to read;
  the cache writes are counted);
- ``incumbent``: torch-tb-profiler's whole load of the folder as its plugin makes it when a run appears,
  ``benchmarks/incumbent_reference.py --run-loader DIR``: the plugin's file cache (``io.Cache``: a
  ``multiprocessing`` manager process) and ``RunLoader.load()`` (a *spawned* process per worker file that
  parses it, generates the views and the distributed data and sends them back through a queue; then the
  spans' distributed profiles). On the V100 file (2 cores, 2026-11-30): imports 0.25 s, the cache 0.27 s,
  ``load()`` 2.75 s, the rest exit;
- ``incumbent_files``: only the two calls that ``RunLoader._process_data`` makes on one file, in one
  process (``incumbent_reference.py --child``: ``RunProfileData.parse``, ``RunGenerator.generate_run_profile``;
  no spawned process, queue, distributed data or cache): the incumbent's parse and views alone, a lower
  bound of what its users wait for (about 0.6x ``incumbent``);
- ``hta``: ``TraceAnalysis(trace_dir=DIR)`` and ``get_temporal_breakdown()`` (HTA reads every trace of a
  folder as one rank each; the breakdown is its nearest answer to the report's Overview).

Before timing, tb_plugin is byte-compiled (as ``pip install`` does for the peers; this machine sets
PYTHONDONTWRITEBYTECODE) and each tool runs once untimed (warm OS file cache). The runs then take turns
(the order rotates each round) so that another job's load hits all three alike. Reported per tool: best
and median wall seconds, CPU seconds (user + system, less sensitive to a shared machine) and peak RSS
(``wait4`` ``ru_maxrss``: the child's, which on Linux starts no lower than this small parent's).

``--baseline COMMIT`` times this repo's tb_plugin at COMMIT too (tool ``baseline``), in the same turns.

Last line: ``kinetoscope_s= incumbent_s= incumbent_files_s= hta_s= over_incumbent= over_incumbent_files=
over_hta= over_incumbent_median= over_incumbent_files_median= over_hta_median=`` (best wall times and their
ratios, then the medians' ratios; with ``--baseline``, also ``baseline_s=`` and the baseline's ratios).
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
from benchmarks._common import kinetoscope_python  # noqa: E402
from benchmarks.page_cache import ensure_all_resident  # noqa: E402

SAMPLES = os.path.join(os.path.dirname(REPO), "shared", "samples")
DEFAULT_TRACE = os.path.join(SAMPLES, "kineto", "resnet50_num_workers_0", "worker0.1623143089861.pt.trace.json.gz")
TOOLS = ("kinetoscope", "incumbent", "incumbent_files", "hta", "baseline")
HTA_LOAD = (
    "import sys\nfrom hta.trace_analysis import TraceAnalysis\n"
    "TraceAnalysis(trace_dir=sys.argv[1]).get_temporal_breakdown(visualize=False)\n"
)


def measure(cmd: list[str], env: dict, cwd: str, out_path: str) -> dict:
    """Run ``cmd`` to its exit: wall seconds, CPU seconds, peak RSS MB and exit status."""
    with open(out_path, "wb") as out, open(out_path + ".err", "wb") as err:
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=cwd)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        with open(out_path + ".err", "rb") as f:
            tail = f.read().decode("utf-8", "replace").strip().splitlines()[-5:]
        raise RuntimeError(f"{cmd[:3]} exited with {code}: " + " | ".join(tail))
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss_mb": ru.ru_maxrss / 1024}


def commands(tool: str, folder: str, trace: str, args, tmp: str) -> tuple[list[str], dict, str]:
    """The command line, environment and working directory of one measured run of ``tool``."""
    env = dict(os.environ)
    if tool in ("kinetoscope", "baseline"):
        env["KINETOSCOPE_CACHE_DIR"] = tempfile.mkdtemp(dir=tmp, prefix="cache-")  # empty: cold
        cwd = REPO if tool == "kinetoscope" else args.baseline_dir  # python -m imports tb_plugin from there
        return [args.kinetoscope_python, "-m", "tb_plugin.cli", "report", folder, "--json"], env, cwd
    script = os.path.join(REPO, "benchmarks", "incumbent_reference.py")
    if tool == "incumbent":
        return [args.incumbent_python, script, "--run-loader", folder], env, REPO
    if tool == "incumbent_files":
        return [args.incumbent_python, script, "--child", trace, os.path.join(tmp, "incumbent.json")], env, REPO
    return [args.hta_python, "-c", HTA_LOAD, folder], env, REPO


def bench_file(path: str, args, tmp: str) -> dict[str, list[dict]]:
    """Every tool's runs on one trace: {tool: [measurement, ...]} (the untimed warm-up left out)."""
    folder = tempfile.mkdtemp(dir=tmp, prefix="run-")
    trace = os.path.join(folder, os.path.basename(path))
    try:  # a hard link: a symlink out of the folder would not be listed by every tool
        os.link(path, trace)
    except OSError:
        shutil.copyfile(path, trace)
    runs: dict[str, list[dict]] = {tool: [] for tool in args.tools}
    for rnd in range(args.repeat + 1):
        k = rnd % len(args.tools)
        for tool in args.tools[k:] + args.tools[:k]:
            cmd, env, cwd = commands(tool, folder, trace, args, tmp)
            for line in ensure_all_resident(trace, only_read=True):  # (this box drops a file a minute after its read)
                print(f"  {line}", file=sys.stderr, flush=True)
            got = measure(cmd, env, cwd, os.path.join(tmp, f"{tool}.out"))
            if tool in ("kinetoscope", "baseline") and os.path.getsize(os.path.join(tmp, f"{tool}.out")) < 1000:
                raise RuntimeError("kinetoscope printed no report")
            if rnd:  # round 0 warms the file cache and the byte-code
                runs[tool].append(got)
        if rnd:
            print(
                f"  round {rnd}: " + ", ".join(f"{t} {runs[t][-1]['wall']:.2f} s" for t in args.tools),
                file=sys.stderr,
                flush=True,
            )
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("traces", nargs="*", default=[DEFAULT_TRACE])
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of each tool per trace")
    parser.add_argument(
        "--kinetoscope-python",
        default=kinetoscope_python(),
        help="a python with Kinetoscope's requirements (default: its own venv "
        "when there is one, else this one); it runs this checkout's tb_plugin",
    )
    parser.add_argument("--incumbent-python", default="/work/venv-incumbent/bin/python")
    parser.add_argument("--hta-python", default="/work/venv-hta/bin/python")
    parser.add_argument("--tools", default=",".join(TOOLS[:4]), help="comma-separated subset of " + ",".join(TOOLS[:4]))
    parser.add_argument(
        "--baseline",
        metavar="COMMIT",
        help="also time Kinetoscope's tb_plugin at this commit "
        "of this repo (tool 'baseline': before/after in the same run)",
    )
    args = parser.parse_args(argv)
    args.tools = [t for t in args.tools.split(",") if t]
    if set(args.tools) - set(TOOLS[:4]) or "kinetoscope" not in args.tools:
        parser.error(f"--tools: kinetoscope and any of {', '.join(TOOLS[1:4])}")
    compileall.compile_dir(os.path.join(REPO, "tb_plugin"), quiet=1)
    base_tmp = tempfile.TemporaryDirectory(prefix="kinetoscope-bench-base-")
    if args.baseline:
        args.baseline_dir = base_tmp.name
        archive = subprocess.run(
            ["git", "-C", REPO, "archive", args.baseline, "tb_plugin"], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", base_tmp.name], input=archive, check=True)
        compileall.compile_dir(os.path.join(base_tmp.name, "tb_plugin"), quiet=1)
        args.tools.append("baseline")
    with open("/proc/loadavg") as f:
        print(
            f"load average before: {' '.join(f.read().split()[:3])}; kinetoscope runs on {args.kinetoscope_python}",
            flush=True,
        )
    best: dict[str, list[float]] = {t: [] for t in args.tools}
    med: dict[str, list[float]] = {t: [] for t in args.tools}
    with tempfile.TemporaryDirectory(prefix="kinetoscope-bench-peers-") as tmp:
        for path in args.traces:
            print(f"{path} ({os.path.getsize(path) / 1e6:.1f} MB on disk)", flush=True)
            runs = bench_file(os.path.abspath(path), args, tmp)
            for tool in args.tools:
                walls = [r["wall"] for r in runs[tool]]
                cpus = [r["cpu"] for r in runs[tool]]
                rss = max(r["rss_mb"] for r in runs[tool])
                best[tool].append(min(walls))
                med[tool].append(statistics.median(walls))
                print(
                    f"  {tool:<15} wall best {min(walls):6.2f} s  median {statistics.median(walls):6.2f} s"
                    f"   cpu best {min(cpus):6.2f} s  median {statistics.median(cpus):6.2f} s"
                    f"   peak RSS {rss:5.0f} MB   ({len(walls)} runs)",
                    flush=True,
                )
    with open("/proc/loadavg") as f:
        print(f"load average after: {' '.join(f.read().split()[:3])}")
    total = {t: sum(best[t]) for t in args.tools}
    parts = [f"{t}_s={total[t]:.2f}" for t in args.tools]
    for t in args.tools[1:]:
        parts.append(f"over_{t}={total['kinetoscope'] / total[t]:.3f}")
    for t in args.tools[1:]:
        parts.append(f"over_{t}_median={sum(med['kinetoscope']) / sum(med[t]):.3f}")
    if args.baseline:
        for t in args.tools[1:-1]:
            parts.append(f"baseline_over_{t}={total['baseline'] / total[t]:.3f}")
    base_tmp.cleanup()
    print(" ".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
