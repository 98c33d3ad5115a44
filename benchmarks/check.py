"""The performance guard: rerun the cheap benchmarks and compare them with the last accepted figures.

    python benchmarks/check.py            # run, print each figure beside its accepted value
    python benchmarks/check.py --check    # the same; exit 1 when a figure is more than 25 % worse
    python benchmarks/check.py --accept   # run and write the figures into benchmarks/accepted.json

The test suite holds no timings, so this is the guard against a slower change: run ``--check`` before
each stop. The benchmarks (each prints ``name=value`` figures on its last line):

- ``bench_startup.py --repeat 7``: ``kinetoscope report`` on a missing logdir over ``python -c pass``, the
  modules it imports, and a cold report of the 35 MB V100 sample over ``orjson.loads`` of it (wall and
  CPU), its peak RSS;
- ``bench_snapshot.py --entries 200000 --repeat 2``: a PyTorch-shaped snapshot (a frame list per entry), the first
  timeline and the whole ``kinetoscope report`` over a bare ``pickle.load``, their peak RSS over its; the same
  (figures named ``recording_…``) on a PyTorch recording's history repeated (``--from-recording``: skipped
  where ``../shared`` is missing).

Every judged figure is lower-is-better and is a same-run ratio of CPU seconds, a count or a peak RSS:
on a shared machine the wall times, and even their ratios, move with the load (a run at load 11 and one
at load 6 gave wall ratios 2.5x apart while the CPU ratios stayed within 25 %), so they are printed
beside, with the load average, but not judged. ``accepted.json`` keeps the figures, when and at what load
they were taken, and the commit; re-accept (``--accept``) after a change that is meant to move them.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
from benchmarks.snapshot_input import RECORDING  # noqa: E402 - the PyTorch recording the benchmark repeats

ACCEPTED = os.path.join(REPO, "benchmarks", "accepted.json")
TOLERANCE = 1.25  # a figure more than 25 % above its accepted value is a regression

_SNAPSHOT_JUDGED = (
    "first_cpu_over_unpickle_cpu",
    "report_cpu_over_unpickle_cpu",
    "report_peak_over_unpickle",
    "report_sum_over_unpickle",
)
_SNAPSHOT_SHOWN = ("first_over_unpickle", "report_over_unpickle", "unpickle_s", "first_timeline_s", "report_s")

# (benchmark, its arguments, the figures judged, the figures shown only, their names' prefix here)
BENCHES = (
    (
        "bench_startup.py",
        ["--repeat", "7"],  # medians of 7: a 0.05 s process's CPU ratio moved 0.8-1.3x over medians of 3
        ("missing_cpu_over_python", "missing_modules", "one_file_cpu_over_orjson", "one_file_rss_mb"),
        ("missing_over_python", "one_file_over_orjson", "python_s", "missing_s", "one_file_s", "orjson_s"),
        "",
    ),
    (
        "bench_snapshot.py",
        ["--entries", "200000", "--protocol", "4", "--repeat", "2"],
        _SNAPSHOT_JUDGED,
        (*_SNAPSHOT_SHOWN, "unpickle_rss_mb"),
        "",
    ),
    (  # PyTorch's own layout (shared frame dicts, ~40 a stack, frees sharing their allocation's list)
        "bench_snapshot.py",
        ["--entries", "200000", "--from-recording", RECORDING, "--repeat", "2"],
        _SNAPSHOT_JUDGED,
        _SNAPSHOT_SHOWN,
        "recording_",
    ),
)


def load_average() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def run_bench(script: str, args: list[str]) -> dict[str, float]:
    """Run one benchmark script to its end; the figures of its last line."""
    got = subprocess.run(
        [sys.executable, os.path.join(REPO, "benchmarks", script), *args], cwd=REPO, capture_output=True, text=True
    )
    if got.returncode != 0:
        raise RuntimeError(f"{script} exited with {got.returncode}: {got.stderr[-1000:]}")
    last = got.stdout.strip().splitlines()[-1]
    return {k: float(v) for k, v in (part.split("=", 1) for part in last.split())}


def judge(current: dict[str, float], accepted: dict[str, dict]) -> list[str]:
    """The judged figures more than :data:`TOLERANCE` times their accepted value: one line each."""
    worse = []
    for name, value in current.items():
        ref = accepted.get(name, {}).get("value")
        if ref and value > ref * TOLERANCE:
            worse.append(f"{name}: {value:.3f} against {ref:.3f} accepted ({value / ref:.2f}x)")
    return worse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 on a regression of more than 25 %%")
    mode.add_argument("--accept", action="store_true", help="write the figures into benchmarks/accepted.json")
    args = parser.parse_args(argv)
    before = load_average()
    accepted = {}
    if os.path.exists(ACCEPTED):
        with open(ACCEPTED) as f:
            accepted = json.load(f)
    figures: dict[str, float] = {}
    print(
        f"load average before: {before}; accepted {accepted.get('measured', {}).get('date', 'never')} at load "
        f"{accepted.get('measured', {}).get('load', '-')}",
        flush=True,
    )
    print(f"{'figure':<40}{'now':>10}{'accepted':>10}{'ratio':>8}")
    for script, bench_args, judged, shown, prefix in BENCHES:
        if RECORDING in bench_args and not os.path.exists(RECORDING):
            print(f"{prefix}*: skipped (no {os.path.relpath(RECORDING, REPO)})")
            continue
        got = {prefix + name: value for name, value in run_bench(script, bench_args).items()}
        for name in (prefix + n for n in judged + shown):
            value = got[name]
            ref = accepted.get("figures", {}).get(name, {}).get("value")
            mark = "" if name[len(prefix) :] in judged else "   (shown, not judged)"
            ratio = f"{value / ref:8.2f}" if ref else f"{'':8s}"
            print(f"{name:<40}{value:10.3f}{ref if ref is not None else float('nan'):10.3f}{ratio}{mark}", flush=True)
            if name[len(prefix) :] in judged:
                figures[name] = value
    after = load_average()
    print(f"load average after: {after}")
    if args.accept:
        commit = subprocess.run(
            ["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        doc = {
            "measured": {
                "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                "load": f"{before} / {after}",
                "commit": commit,
                "cpus": os.cpu_count(),
            },
            "tolerance": TOLERANCE,
            "figures": {name: {"value": round(value, 3)} for name, value in figures.items()},
        }
        with open(ACCEPTED, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        print(f"wrote {os.path.relpath(ACCEPTED, REPO)}")
        return 0
    worse = judge(figures, accepted.get("figures", {}))
    for line in worse:
        print(f"REGRESSION {line}")
    if not accepted:
        print("no accepted figures yet: run with --accept")
    return 1 if args.check and worse else 0


if __name__ == "__main__":
    sys.exit(main())
