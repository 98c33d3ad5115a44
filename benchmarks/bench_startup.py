"""Start-up and one small file, whole processes, this checkout beside a baseline commit in the same run.

    python benchmarks/bench_startup.py [--baseline COMMIT] [--repeat 5] [--trace FILE]

Each measurement is one fresh process timed from start to exit (``wait4``: wall, CPU, peak RSS):

- ``python``: ``python -c pass`` (the interpreter's own start: the floor of every command);
- ``missing``: ``python -m tb_plugin.cli report /nonexistent`` (start-up and imports before any trace
  byte is read; exits 2);
- ``one_file``: ``python -m tb_plugin.cli report DIR --json`` on a folder holding only ``--trace`` (default:
  the 35 MB gunzipped V100 ResNet-50 sample), an empty ``KINETOSCOPE_CACHE_DIR`` (cold);
- ``orjson``: ``orjson.loads`` of the gunzipped trace in a fresh process (the parse floor);

and, with ``--baseline``, ``missing`` and ``one_file`` by tb_plugin at that commit (``git archive``), in the
same rounds. The order rotates each round so that other work on the machine hits all alike; medians are
reported (and best). Before timing, both trees are byte-compiled and every command runs once untimed.
Also the imports of ``report /nonexistent`` (``-X importtime``: the sum of its top-level imports, ms, and
how many modules), per tree. The load average is printed before and after: on a loaded machine the
ratios (same-run pairs) are the figures to read, not the seconds.

Last line: ``name=value`` figures (``missing_s``, ``one_file_s``, their ratios over ``python`` and
``orjson``, with ``--baseline`` the baseline's and ``*_over_baseline``; ``*_cpu_*``: the same from CPU
seconds, which a loaded machine disturbs less than wall time).
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

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks._common import REPO, print_figures

SAMPLES = os.environ.get("KINETOSCOPE_SAMPLES", os.path.join(os.path.dirname(REPO), "shared", "samples"))
if not os.path.isdir(SAMPLES):
    SAMPLES = "/work/shared/samples"
DEFAULT_TRACE = os.path.join(SAMPLES, "kineto", "resnet50_num_workers_0", "worker0.1623143089861.pt.trace.json.gz")
ORJSON_FLOOR = (
    "import gzip, sys, orjson\n"
    "raw = open(sys.argv[1], 'rb').read()\n"
    "orjson.loads(gzip.decompress(raw) if raw[:2] == b'\\x1f\\x8b' else raw)\n"
)


def measure(cmd: list[str], env: dict, cwd: str, out_path: str) -> tuple[dict, int]:
    """Run ``cmd`` to its exit: ({wall, cpu seconds, peak RSS MB}, exit status)."""
    with open(out_path, "wb") as out, open(out_path + ".err", "wb") as err:
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=cwd)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss_mb": ru.ru_maxrss / 1024}, os.waitstatus_to_exitcode(
        status
    )


def load_average() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def import_ms(tree: str) -> tuple[float, int]:
    """``report /nonexistent`` under ``-X importtime`` from ``tree``: the summed cumulative time of its
    top-level imports (ms) and the number of modules imported."""
    got = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "tb_plugin.cli", "report", "/nonexistent"],
        cwd=tree,
        capture_output=True,
        text=True,
    )
    top, count = 0, 0
    for line in got.stderr.splitlines():
        if not line.startswith("import time:") or "imported package" in line:
            continue
        count += 1
        _, cumulative, name = line.split("|")
        if not name[1:].startswith(" "):  # depth 0: a top-level import (its children are in its cumulative)
            top += int(cumulative)
    return top / 1000, count


def run(repeat: int = 5, baseline: str | None = None, trace: str = DEFAULT_TRACE, log=sys.stderr) -> dict:
    """The measurements: {label: [{"wall", "cpu", "rss_mb"}, ...]} plus ``"imports"``: {tree: (ms, modules)}."""
    with tempfile.TemporaryDirectory(prefix="kinetoscope-bench-startup-") as tmp:
        trees = {"": REPO}
        if baseline:
            base = os.path.join(tmp, "baseline")
            os.mkdir(base)
            archive = subprocess.run(
                ["git", "-C", REPO, "archive", baseline, "tb_plugin"], check=True, capture_output=True
            ).stdout
            subprocess.run(["tar", "-x", "-C", base], input=archive, check=True)
            trees["baseline_"] = base
        for tree in trees.values():
            compileall.compile_dir(os.path.join(tree, "tb_plugin"), quiet=1)
        folder = os.path.join(tmp, "run")
        os.mkdir(folder)
        shutil.copyfile(trace, os.path.join(folder, os.path.basename(trace)))
        jobs: dict[str, tuple[list[str], str, bool]] = {  # label: (command, cwd, cold cache)
            "python": ([sys.executable, "-c", "pass"], REPO, False),
            "orjson": ([sys.executable, "-c", ORJSON_FLOOR, trace], REPO, False),
        }
        for prefix, tree in trees.items():
            jobs[prefix + "missing"] = ([sys.executable, "-m", "tb_plugin.cli", "report", "/nonexistent"], tree, False)
            jobs[prefix + "one_file"] = (
                [sys.executable, "-m", "tb_plugin.cli", "report", folder, "--json"],
                tree,
                True,
            )
        labels = list(jobs)
        runs: dict = {label: [] for label in labels}
        for rnd in range(repeat + 1):
            k = rnd % len(labels)
            for label in labels[k:] + labels[:k]:
                cmd, cwd, cold = jobs[label]
                env = dict(os.environ)
                if cold:
                    env["KINETOSCOPE_CACHE_DIR"] = tempfile.mkdtemp(dir=tmp, prefix="cache-")
                got, code = measure(cmd, env, cwd, os.path.join(tmp, "out"))
                if code != (2 if label.endswith("missing") else 0):  # report /nonexistent exits 2
                    raise RuntimeError(f"{label}: exit status {code}")
                if rnd:
                    runs[label].append(got)
            if rnd:
                log.write(f"  round {rnd}: " + ", ".join(f"{lb} {runs[lb][-1]['wall']:.3f} s" for lb in labels) + "\n")
        runs["imports"] = {prefix or "this": import_ms(tree) for prefix, tree in trees.items()}
    return runs


def figures(runs: dict) -> dict:
    """Medians (seconds) and same-run ratios."""
    med = {label: statistics.median(r["wall"] for r in rs) for label, rs in runs.items() if label != "imports"}
    cpu = {label: statistics.median(r["cpu"] for r in rs) for label, rs in runs.items() if label != "imports"}
    out = {
        "python_s": med["python"],
        "orjson_s": med["orjson"],
        "missing_s": med["missing"],
        "one_file_s": med["one_file"],
        "missing_over_python": med["missing"] / med["python"],
        "one_file_over_orjson": med["one_file"] / med["orjson"],
        "one_file_rss_mb": max(r["rss_mb"] for r in runs["one_file"]),
        "missing_imports_ms": runs["imports"]["this"][0],
        "missing_modules": (runs["imports"]["this"][1], 0),
        "missing_cpu_s": cpu["missing"],
        "one_file_cpu_s": cpu["one_file"],
        "missing_cpu_over_python": cpu["missing"] / cpu["python"],
        "one_file_cpu_over_orjson": cpu["one_file"] / cpu["orjson"],
    }
    if "baseline_missing" in med:
        out.update(
            baseline_missing_s=med["baseline_missing"],
            baseline_one_file_s=med["baseline_one_file"],
            missing_over_baseline=med["missing"] / med["baseline_missing"],
            one_file_over_baseline=med["one_file"] / med["baseline_one_file"],
            baseline_missing_imports_ms=runs["imports"]["baseline_"][0],
            missing_cpu_over_baseline=cpu["missing"] / cpu["baseline_missing"],
            one_file_cpu_over_baseline=cpu["one_file"] / cpu["baseline_one_file"],
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", metavar="COMMIT", help="also time tb_plugin at this commit, in the same rounds")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--trace", default=DEFAULT_TRACE)
    args = parser.parse_args(argv)
    print(f"load average before: {load_average()}", flush=True)
    runs = run(args.repeat, args.baseline, args.trace)
    print(f"load average after: {load_average()}")
    for label, rs in runs.items():
        if label == "imports":
            continue
        walls = [r["wall"] for r in rs]
        print(
            f"  {label:<20} wall median {statistics.median(walls):7.3f} s  best {min(walls):7.3f} s   "
            f"cpu median {statistics.median(r['cpu'] for r in rs):7.3f} s   peak RSS "
            f"{max(r['rss_mb'] for r in rs):5.0f} MB"
        )
    for tree, (ms, n) in runs["imports"].items():
        print(f"  imports of report /nonexistent ({tree}): {ms:.0f} ms, {n} modules")
    print_figures(**figures(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
