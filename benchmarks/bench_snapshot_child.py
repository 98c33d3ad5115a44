"""The snapshot reader child alone against CPython's C unpickler alone, paired runs in turns.

    python benchmarks/bench_snapshot_child.py [--entries 200000] [--frames 8] [--protocol 4]
                                              [--shared-frames] [--repeat 5] [--before-repo DIR]

Writes a PyTorch-shaped snapshot (``benchmarks/snapshot_input.py``) in a fresh temporary folder, then
runs, in turns, ``--repeat`` times each: the bare C unpickler (``python -S``, the collector off, the
object never freed: ``os._exit``), the reader child of this checkout (``python -m
tb_plugin.artifacts.snapshot_child SIZE LIMIT 600 < file``: the whole read from the pipe, the drain, the
answer), and with ``--before-repo`` the child of that checkout. Each process's CPU (user + system, from
``wait4``), wall and peak RSS; the table gives the median and the best of each, and the child's CPU
beyond the unpickler's (its own work: interpreter, imports, drain, answer). Both checkouts are
byte-compiled first. Last line: ``name=value`` figures.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks._common import REPO, print_figures
from benchmarks.snapshot_input import build

UNPICKLE = "import gc, os, pickle, sys; gc.disable(); pickle.load(sys.stdin.buffer); os._exit(0)"


def _run(argv: list[str], path: str, env: dict, cwd: str) -> tuple[float, float, float]:
    """(CPU s, wall s, peak RSS MB) of ``argv`` run in ``cwd``, reading ``path`` on its stdin (its output
    discarded)."""
    with open(path, "rb") as stdin, open(os.devnull, "wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdin=stdin, stdout=out, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{argv[2:4]} exited with {proc.returncode}")
    return usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024


def _child(repo: str, size: int) -> tuple[list[str], dict, str]:
    """The reader child of the checkout ``repo`` (run there: ``-m`` puts the working folder first)."""
    env = dict(os.environ, PYTHONPATH=repo, OMP_NUM_THREADS="1")
    return [sys.executable, "-m", "tb_plugin.artifacts.snapshot_child", str(size), str(1 << 34), "600"], env, repo


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=200_000)
    parser.add_argument("--frames", type=int, default=8)
    parser.add_argument("--protocol", type=int, default=4, choices=(4, 5))
    parser.add_argument("--shared-frames", action="store_true")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--before-repo", help="also run the reader child of this checkout (older code)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "snapshot.pickle")
        size = build(path, args.entries, args.frames, args.protocol, args.shared_frames)
        layout = "shared frame lists" if args.shared_frames else "a frame list per entry"
        print(f"snapshot: {args.entries} entries, {layout}, protocol {args.protocol}, {size / 1e6:.1f} MB")
        runs = {"C unpickler": ([sys.executable, "-S", "-c", UNPICKLE], dict(os.environ), tmp)}
        if args.before_repo:
            runs["before: reader child"] = _child(os.path.abspath(args.before_repo), size)
        runs["reader child"] = _child(REPO, size)
        for repo in {REPO, os.path.abspath(args.before_repo or REPO)}:
            compileall.compile_dir(os.path.join(repo, "tb_plugin"), quiet=1)
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        got: dict[str, list[tuple[float, float, float]]] = {name: [] for name in runs}
        for _ in range(args.repeat):  # (in turns: the load moves all of them alike)
            for name, (cmd, env, cwd) in runs.items():
                got[name].append(_run(cmd, path, env, cwd))
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    base = statistics.median(c for c, _, _ in got["C unpickler"])
    print(f"{'':22s} {'CPU median':>10s} {'best':>6s} {'beyond':>7s} {'x':>5s} {'wall med':>8s} {'RSS MB':>7s}")
    figures: dict[str, float | tuple[float, int]] = {}
    for name, rows in got.items():
        cpu = statistics.median(c for c, _, _ in rows)
        print(
            f"{name:22s} {cpu:10.3f} {min(c for c, _, _ in rows):6.3f} {cpu - base:7.3f} {cpu / base:5.2f} "
            f"{statistics.median(w for _, w, _ in rows):8.3f} {max(r for _, _, r in rows):7.0f}"
        )
        key = name.replace("before: ", "before_").replace(" ", "_").lower()
        figures[f"{key}_cpu_s"], figures[f"{key}_rss_mb"] = cpu, (max(r for _, _, r in rows), 0)
    print(f"(beyond: the median CPU above the C unpickler's, in seconds; x: the ratio) load average after: {load}")
    print_figures(**figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
