"""Where a cold report's wall time goes on pinned cores: the phases of every process, as a timeline.

    python benchmarks/bench_phases.py TRACE_OR_FOLDER [--cores 2] [--repo DIR] [--timeline] [--baseline TRACE]

Runs one cold ``kinetoscope report --json`` of the folder pinned to cores ``0..cores-1`` (``taskset``,
an empty ``KINETOSCOPE_CACHE_DIR``, the trace read into the page cache first where it is not all there:
``page_cache.py``), with the phases wrapped from outside (nothing in ``tb_plugin``
changes): each process (the main one, the decode workers, the section child; forks inherit the
wrappers) appends ``pid, time.monotonic(), time.process_time(), phase`` to a file at the start and end
of: the decode workers' start, the ranged parse's two passes (``_scan``, ``_decode``) and each
worker's ``scan_range`` / ``decode_span``, every merge of an answer, the columns' finish, the section
fork, each report section, the parse cache's write, the output. Printed: per process, each phase's
count, wall and CPU seconds, the seconds it slept (neither running nor runnable, from
``/proc/self/schedstat``: waiting on a pipe, a child, the disk; an idle core on a quiet box, however
loaded this one is) and its span, and the same from the process's first mark to its last; ``--timeline``: every mark in time order (merges folded).

Last lines: the CPU of each phase on the critical path and their sum, the wall time a machine whose
cores do nothing else would take (``idle_estimate_s``): the main process's start, the larger worker's
first pass, the second pass (the larger worker's, or all workers' and the main process's CPU shared
over the cores, whichever is larger), the finish, the longest side of the sections (the main process's,
or a section child's, each with the cache write where it makes it; or all sides' CPU shared over the cores,
whichever is larger), the rest. On a loaded box wall times
stretch with the load; the CPU per process does much less, which is why the estimate is built from it.
With ``--cores 1`` the estimate is the process's CPU.

``--baseline TRACE``: the baseline's cold report first, then this one's, and the CPU of each phase of
this one over the baseline's (the workers summed; the traces' bytes ratio beside it), each phase
above 1.1× the bytes ratio marked ``<`` : which phase grows faster than the input.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
from benchmarks.page_cache import ensure_all_resident  # noqa: E402

CHILD = r"""
import io, os, sys, time
repo, logdir, out = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, repo)
fd = os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
def mark(what):
    try:
        with open("/proc/self/schedstat") as f:
            queued = int(f.read().split()[1]) / 1e9  # seconds runnable but not running
    except (OSError, IndexError, ValueError):
        queued = 0.0
    os.write(fd, f"{os.getpid()} {time.monotonic():.4f} {time.process_time():.4f} {queued:.4f} {what}\n".encode())
mark("start")
def timed(label, real):
    def call(*a, **k):
        mark("> " + label)
        try:
            return real(*a, **k)
        finally:
            mark("< " + label)
    return call
def wrap(obj, name, label=None):
    if hasattr(obj, name):
        setattr(obj, name, timed(label or name, getattr(obj, name)))
from tb_plugin.cli import main
from tb_plugin.trace import decode_stream, decode_ranges, decode_workers
from tb_plugin.registry.executors import sections
from tb_plugin.registry import report, cache
wrap(decode_workers.Workers, "__init__", "workers started")
wrap(decode_ranges.RangedEvents, "_scan", "first pass")
wrap(decode_ranges.RangedEvents, "_decode", "second pass")
wrap(decode_ranges.RangedEvents, "_parse", "second pass")  # (both passes in one, the second begun early)
for name in ("scan_range", "decode_span"):
    if name in decode_workers._CALLS:
        decode_workers._CALLS[name] = timed(name, decode_workers._CALLS[name])
wrap(decode_stream, "merge")
wrap(decode_stream, "_finish", "finish")
wrap(cache.ParseCache, "write_prepared", "cache write")
wrap(sections.SectionFork, "__init__", "section fork")
real_run = report.run_sections
def run_sections(secs, items, *memos, **named):
    return timed("sections", real_run)([(k, timed("section " + k, make)) for k, make in secs], items, *memos, **named)
report.run_sections = run_sections
if hasattr(sections, "run_sections"):
    sections.run_sections = run_sections
text = io.StringIO()
stdout, sys.stdout = sys.stdout, text
try:
    main(["report", logdir, "--json"])
finally:
    sys.stdout = stdout
mark("output")
"""


def run(path: str, cores: int, repo: str) -> list[tuple[str, float, float, str]]:
    """The marks of one pinned cold report: (pid, monotonic s, process CPU s, run-queue wait s, phase)."""
    logdir = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    work = tempfile.mkdtemp(prefix="kinetoscope-bench-phases-")
    marks = os.path.join(work, "marks")
    env = {k: v for k, v in os.environ.items() if k != "KINETOSCOPE_DECODE_WORKERS"}
    env["KINETOSCOPE_CACHE_DIR"] = os.path.join(work, "cache")
    cpus = "0" if cores == 1 else f"0-{cores - 1}"
    try:
        subprocess.run(
            ["taskset", "-c", cpus, sys.executable, "-c", CHILD, repo, logdir, marks],
            env=env,
            check=True,
            capture_output=True,
        )
        with open(marks) as f:
            rows = [line.split(" ", 4) for line in f.read().splitlines()]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return [(pid, float(t), float(c), float(q), what) for pid, t, c, q, what in rows]


# asleep: wall seconds neither running nor runnable (waiting on a pipe, a child, the disk): an idle
# core on a quiet box, whatever the load (the run queue's wait, the other jobs' share, is left out)
Phase = collections.namedtuple("Phase", "count wall cpu first last asleep", defaults=(0.0,))


def phases(marks: list) -> tuple[dict[str, dict[str, Phase]], dict[str, float], float]:
    """Per process (named by role), each phase's totals; each process's CPU at its last mark; the
    first mark's time."""
    t0 = min(t for _, t, _, _, _ in marks)
    by_pid: dict[str, list] = collections.defaultdict(list)
    for pid, t, cpu, queued, what in marks:
        by_pid[pid].append((t - t0, cpu, queued, what))
    out: dict[str, dict[str, Phase]] = {}
    last_cpu: dict[str, float] = {}
    workers = children = 0
    for rows in by_pid.values():
        names = {w[2:] for _, _, _, w in rows}
        if any(w == "start" for _, _, _, w in rows):
            role = "main"
        elif names & {"scan_range", "decode_span"}:
            workers += 1
            role = f"worker {workers}"
        else:  # (numbered from the second: a tree with one section child names it as before)
            children += 1
            role = "section child" + (f" {children}" if children > 1 else "")
        open_at: dict[str, tuple[float, float, float]] = {}
        got: dict[str, list] = {}
        for t, cpu, queued, what in rows:
            name = what[2:]
            if what.startswith("> "):
                open_at[name] = (t, cpu, queued)
            elif what.startswith("< ") and name in open_at:
                t1, c1, q1 = open_at.pop(name)
                g = got.setdefault(name, [0, 0.0, 0.0, t1, t, 0.0])
                g[0] += 1
                g[1] += t - t1
                g[2] += cpu - c1
                g[4] = t
                g[5] += max(0.0, (t - t1) - (cpu - c1) - (queued - q1))
        (t1, c1, q1, _), (t2, c2, q2, _) = rows[0], rows[-1]
        got["(first to last mark)"] = [1, t2 - t1, c2 - c1, t1, t2, max(0.0, (t2 - t1) - (c2 - c1) - (q2 - q1))]
        out[role] = {k: Phase(*v) for k, v in got.items()}
        last_cpu[role] = rows[-1][1]
    return out, last_cpu, t0


def estimate(
    found: dict[str, dict[str, Phase]], last_cpu: dict[str, float], started_cpu: float, cores: int
) -> dict[str, float]:
    """The critical path's CPU per phase (see the module docstring); ``started_cpu``: the main
    process's CPU when it started the workers."""
    main = found.get("main", {})
    workers = [v for k, v in found.items() if k.startswith("worker")]
    children = [v for k, v in found.items() if k.startswith("section child")]

    def cpu(phases: dict[str, Phase], name: str) -> float:
        return phases[name].cpu if name in phases else 0.0

    if cores == 1 or not workers:
        return {"one process": last_cpu.get("main", 0.0)}
    second = [cpu(w, "decode_span") for w in workers]
    sides = [cpu(p, "sections") + cpu(p, "cache write") for p in (main, *children)]
    parts = {
        "start": started_cpu,
        "first pass": max(cpu(w, "scan_range") for w in workers),
        "second pass": max(max(second), (sum(second) + cpu(main, "second pass")) / cores),
        "finish": cpu(main, "finish"),
        # (the cache write is made by whichever side the tree under test gives it; with more sides than
        # cores, the sides' CPU shared over the cores where that is longer than the longest side)
        "sections": max(max(sides), sum(sides) / cores),
    }
    counted = started_cpu + sum(
        cpu(main, k) for k in ("first pass", "second pass", "finish", "sections", "cache write")
    )
    parts["rest"] = max(0.0, last_cpu.get("main", 0.0) - counted)
    return parts


def ratios(base: dict[str, dict[str, Phase]], this: dict[str, dict[str, Phase]]) -> list[tuple[str, float, float]]:
    """(process: phase, baseline CPU s, this CPU s) of every phase both runs have, the workers' phases
    summed over the workers (their split between workers is the scheduler's)."""

    def summed(found: dict[str, dict[str, Phase]]) -> dict[str, float]:
        out: dict[str, float] = collections.defaultdict(float)
        for role, got in found.items():
            for name, p in got.items():
                out[("workers" if role.startswith("worker") else role) + ": " + name] += p.cpu
        return out

    a, b = summed(base), summed(this)
    return [(key, a[key], b[key]) for key in a if key in b]


def _size(path: str) -> int:
    """The bytes of a trace, or of every file in a folder."""
    if not os.path.isdir(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(path, name)) for name in os.listdir(path))


def report(path: str, cores: int, repo: str, timeline: bool) -> tuple[dict[str, dict[str, Phase]], float]:
    """One pinned cold report of ``path``, printed; its phases and its processes' CPU seconds."""
    for line in ensure_all_resident(path):  # (an empty parse cache, the trace in the page cache: page_cache.py)
        print(line, flush=True)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    marks = run(path, cores, repo)
    after = " ".join(f"{x:.2f}" for x in os.getloadavg())
    found, last_cpu, t0 = phases(marks)
    started_cpu = next((cpu for _, _, cpu, _, what in marks if what == "> workers started"), 0.0)
    if timeline:
        pids = list(dict.fromkeys(pid for pid, *_ in marks))
        for pid, t, cpu, _, what in marks:
            if what not in ("> merge", "< merge"):
                print(f"{t - t0:8.3f} s  cpu {cpu:7.3f}  process {pids.index(pid)}  {what}")
    wall = max(t for _, t, _, _, _ in marks) - t0
    print(f"{path}, cores {cores}: wall {wall:.2f} s (load {load} -> {after})")
    for role, got in found.items():
        print(f"{role}: CPU {last_cpu[role]:.3f} s")
        for name, p in got.items():
            print(
                f"    {name:22s} x{p.count:<4d} wall {p.wall:7.3f} s  CPU {p.cpu:7.3f} s  asleep {p.asleep:6.3f} s"
                f"  {p.first:7.3f}-{p.last:7.3f} s"
            )
    parts = estimate(found, last_cpu, started_cpu, cores)
    print("critical path (CPU s): " + ", ".join(f"{k} {v:.3f}" for k, v in parts.items()))
    total_cpu = sum(last_cpu.values())
    print(f"cores={cores} wall_s={wall:.3f} cpu_s={total_cpu:.3f} idle_estimate_s={sum(parts.values()):.3f}")
    return found, total_cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--repo", default=REPO)
    ap.add_argument("--timeline", action="store_true")
    ap.add_argument("--baseline", help="a smaller trace or folder: print each phase's CPU ratio to it")
    args = ap.parse_args()
    if args.baseline is None:
        report(args.trace, args.cores, args.repo, args.timeline)
        return 0
    base, base_cpu = report(args.baseline, args.cores, args.repo, args.timeline)
    this, this_cpu = report(args.trace, args.cores, args.repo, args.timeline)
    size_ratio = _size(args.trace) / _size(args.baseline)
    print(f"CPU s, this over baseline (bytes {size_ratio:.2f}x; '<': above 1.1x that):")
    for key, a, b in ratios(base, this):
        ratio = b / a if a > 0 else float("inf")
        print(f"    {key:36s} {a:8.3f} -> {b:8.3f} s  {ratio:6.2f}x{'  <' if ratio > 1.1 * size_ratio else ''}")
    print(f"cpu_ratio={this_cpu / base_cpu:.3f} bytes_ratio={size_ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
