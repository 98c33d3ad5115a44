"""Allocator-snapshot benchmark: first open, first timeline and the whole ``kinetoscope report`` vs a bare
``pickle.load``, peak memory (each process, and the main process and reader child together),
cache reopen, timeline requests.

    python benchmarks/bench_snapshot.py [--entries 1000000 | --size 2GB] [--frames 8] [--protocol 4]
                                        [--shared-frames | --shared-dicts | --from-recording [PICKLE]]
                                        [--before-repo /path/to/an/older/checkout]
                                        [--no-bare] [--no-report]

Writes a PyTorch-shaped snapshot (``benchmarks/snapshot_input.py``: a frame list per entry, or with
``--shared-frames`` one list per stack, ``--shared-dicts`` a list per entry of shared frame dicts as
PyTorch 2.x dumps hold them; streamed: any size; ``--from-recording`` a real PyTorch recording's history
repeated, its frees sharing their allocation's list of ~40 shared frame dicts) in a fresh
folder under ``--dir`` (default: the system's temporary folder, ``/tmp``) and deletes it at the end.
Then (tb_plugin byte-compiled first, as an installed package is) measures, each in its own process: a bare ``pickle.load`` of the file (seconds, peak RSS);
Kinetoscope's first open (read, parse in the reader child, cache write, summary: what ``report``
does) and its first timeline, in a registry held as a live server, MCP server or notebook holds it (its
spare reader child started while it waits for the first request), with the peak RSS of this process
and of the reader child;
``--before-repo``: the same first open and whole report by another checkout (the code before a change),
in the same run; the reopen from the parse cache; timeline requests; the whole ``kinetoscope report DIR --json``
process (wall, CPU, the main process's and the reader child's peak RSS, and their sum sampled together) run by
``--python`` (default: a venv of setup.py's requirements when there is one, as a user's ``pip install .``: the
development venv's editable-install finder adds ~15 ms to each start), beside a bare ``pickle.load`` as a
whole process of the same python (``python -c``: the interpreter's start in both). A bare ``pickle.load`` needs ~12× the
file's size in memory: it is skipped (and said so) when that exceeds 80 % of the available memory.
With ``--repeat N`` every measurement runs N times, interleaved, and
each figure is its best run. CPU times (this process and its reader child; for ``pickle.load`` its own) are given beside: on a
busy machine they vary less than wall time. Last line: ``name=value`` figures.
"""

from __future__ import annotations

import argparse
import compileall
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks._common import CHILD_REGISTRY, HWM, REPO, kinetoscope_python, print_figures, run_child
from benchmarks.snapshot_input import RECORDING

BARE = (
    HWM
    + r"""
import json, pickle, sys, time
t, cpu = time.perf_counter(), time.process_time()
with open(sys.argv[1], "rb") as f:
    pickle.load(f)
print(json.dumps({"seconds": time.perf_counter() - t, "cpu_s": time.process_time() - cpu, "hwm_mb": hwm_mb()}))
"""
)

# The registry as a live server, MCP server or notebook holds it: ``keep_spare_reader`` (where the checkout
# has it) before the listing, then ``idle()`` until the spare reader child has started (its CPU time
# steady; at most 10 s) or 0.5 s without one: the time a server waits for its first request.
LIVE_REGISTRY = CHILD_REGISTRY.replace(
    "reg.scan()",
    r"""
if hasattr(reg, "keep_spare_reader"):
    reg.keep_spare_reader()
reg.scan()
def idle():  # the CPU seconds the spare reader child took to start (0 without one)
    try:
        from tb_plugin.artifacts.spare import spare_pid
    except ImportError:
        spare_pid = lambda: None
    pid, last, end = spare_pid(), -1.0, time.monotonic() + 10
    time.sleep(0.5)
    while pid is not None and time.monotonic() < end:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        used = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        if used == last:
            return used
        last = used
        time.sleep(0.2)
    return max(last, 0.0)
""",
)


# The reader child's peak (VmHWM), polled: ru_maxrss would carry this process's peak across exec.
OPEN = (
    HWM
    + r"""
import threading
child_peak = [0.0]
sum_peak = [0.0]  # this process's RSS + the reader child's, sampled together (MB)
stop = threading.Event()
def _kb(pid, key):
    status = open(f"/proc/{pid}/status").read()
    return int(next(l for l in status.splitlines() if l.startswith(key)).split()[1])
def poll():
    import psutil
    me = psutil.Process()
    while not stop.is_set():
        for c in me.children(recursive=True):
            try:
                if "tb_plugin.artifacts.snapshot" in " ".join(c.cmdline()):
                    child_peak[0] = max(child_peak[0], _kb(c.pid, "VmHWM:") / 1024)
                    sum_peak[0] = max(sum_peak[0], (_kb(c.pid, "VmRSS:") + _kb(me.pid, "VmRSS:")) / 1024)
            except Exception:
                pass
        stop.wait(0.02)
threading.Thread(target=poll, daemon=True).start()
"""
    + LIVE_REGISTRY
    + r"""
(art,) = [a for a in reg.artifacts() if a.entry.rel == os.path.basename(path)]
import resource
def cpu_now():  # this process's CPU time and its waited-for children's (the reader child), s
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime
spare_cpu = idle()  # a live server waits for its first request: its spare reader child starts meanwhile
t, cpu = time.perf_counter(), cpu_now() + spare_cpu  # (the spare's start is not the request's: reaped in it)
reg.load_artifact(art)
seconds = time.perf_counter() - t
assert art.state == "ready", art.error
q = {"run": art.run, "path": art.entry.rel, "width_px": "2000"}
t1 = time.perf_counter()
code, doc = api.snapshot_timeline(reg, q)
assert code == 200, doc
first_timeline = seconds + time.perf_counter() - t1
for th in threading.enumerate():  # a reader child that said its status is reaped beside: its CPU counted once it is
    if th.name == "kinetoscope-reap-reader":
        th.join(60)
cpu_s = cpu_now() - cpu
stop.set()
times = []
for lo, hi in [(None, None), (0.1, 0.6), (0.4, 0.45), (0.0, 0.01), (0.5, 0.9)] * 4:
    args = dict(q)
    if lo is not None:
        end = art.views.summary()["devices"][0]["peak_time"] or 1.0
        args.update(start=str(lo * end * 2), end=str(hi * end * 2))
    t1 = time.perf_counter()
    code, doc = api.snapshot_timeline(reg, args)
    assert code == 200, doc
    times.append((time.perf_counter() - t1) * 1000)
times.sort()
peak = art.views.summary()["devices"][0]["peak_active_bytes"]
print(json.dumps({"seconds": seconds, "first_timeline_s": first_timeline, "cpu_s": cpu_s, "spare_cpu_s": spare_cpu,
                  "hwm_mb": hwm_mb(),
                  "child_hwm_mb": child_peak[0], "sum_mb": sum_peak[0], "peak_bytes": peak,
                  "timeline_p95_ms": times[int(0.95 * (len(times) - 1))]}))
"""
)


def bare_process(path: str, python: str) -> dict:
    """A bare ``pickle.load`` of ``path`` as a whole process of ``python`` (``python -c``), to its exit: its
    wall seconds, the interpreter's start included as in :func:`report_process`."""
    t = time.perf_counter()
    subprocess.run([python, "-c", BARE_PROCESS, path], check=True)
    return {"seconds": time.perf_counter() - t}


BARE_PROCESS = "import pickle, sys\nwith open(sys.argv[1], 'rb') as f:\n    pickle.load(f)"


def report_process(folder: str, env: dict, repo: str = REPO, python: str = sys.executable) -> dict:
    """``kinetoscope report FOLDER --json`` in a fresh process of ``python`` (``repo``'s checkout), to its exit:
    wall and CPU seconds (its own and its reaped children's), the peak RSS of the main process and of its
    largest child (the reader child), and the largest sum of their RSS sampled together (MB; every 20 ms)."""
    import psutil

    def kb(pid: int, key: str) -> int:
        with open(f"/proc/{pid}/status") as f:
            return int(next(line for line in f if line.startswith(key)).split()[1])

    t = time.perf_counter()
    proc = subprocess.Popen(
        [python, "-m", "tb_plugin.cli", "report", folder, "--json"],
        cwd=repo,
        env=dict(env, PYTHONPATH=repo),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    main, main_peak, child_peak, sum_peak = psutil.Process(proc.pid), 0, 0, 0
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)  # ru: the process's and its reaped children's
        if pid:
            break
        try:
            main_peak = max(main_peak, kb(proc.pid, "VmHWM:"))  # sampled: ru_maxrss would count the children
            total = kb(proc.pid, "VmRSS:")
            for c in main.children(recursive=True):
                try:
                    total += kb(c.pid, "VmRSS:")
                    child_peak = max(child_peak, kb(c.pid, "VmHWM:"))
                except (OSError, StopIteration):
                    pass
            sum_peak = max(sum_peak, total)
        except (OSError, StopIteration, psutil.Error):
            pass
        time.sleep(0.02)
    seconds = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode("utf-8", "replace")
    if proc.returncode != 0:
        raise RuntimeError(f"report exited with {proc.returncode}: {err[-500:]}")
    return {
        "seconds": seconds,
        "cpu_s": ru.ru_utime + ru.ru_stime,
        "hwm_mb": main_peak / 1024,
        "child_hwm_mb": child_peak / 1024,
        "sum_mb": sum_peak / 1024,
    }


def _size(text: str) -> int:
    """``2GB``, ``500MB``, ``123456`` → bytes."""
    text = text.strip().upper()
    for unit, mult in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3), ("B", 1)):
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * mult)
    return int(text)


def _available_mb() -> float:
    with open("/proc/meminfo") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("MemAvailable:")) / 1024


BYTES_PER_ENTRY = {0: 30, 8: 104}  # the synthesized history's pickle, per entry (protocol 4), roughly
RECORDING_BYTES_PER_ENTRY = 199  # the PyTorch recording's history repeated (--from-recording), per entry
BARE_RSS_PER_FILE_BYTE = 12.5  # pickle.load's peak RSS over the file's size, measured on these files


def _over_unpickle(bare: dict | None, **figures: tuple[float, str]) -> dict:
    """Each figure over the bare unpickle's figure it is measured against, ``name=(value, bare's key)``;
    none without a bare unpickle."""
    return {name: value / bare[key] for name, (value, key) in figures.items()} if bare else {}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--size", help="the pickle's size instead of --entries, e.g. 2GB (approximate)")
    parser.add_argument("--frames", type=int, default=8)
    parser.add_argument("--protocol", type=int, default=4, choices=(2, 3, 4, 5))
    parser.add_argument("--before-repo", help="also time the first open and the report by this checkout (older code)")
    parser.add_argument("--no-bare", action="store_true", help="skip the bare pickle.load")
    parser.add_argument("--dir", default=None, help="where the snapshot is written (default: /tmp)")
    parser.add_argument("--repeat", type=int, default=1, help="run each measurement this many times; keep the best")
    layout = parser.add_mutually_exclusive_group()
    layout.add_argument(
        "--shared-frames",
        action="store_true",
        help="entries with one stack share its frame list (default: a list per entry, its own frame dicts)",
    )
    layout.add_argument(
        "--shared-dicts",
        action="store_true",
        help="a list per entry whose frame dicts are shared (the PyTorch 2.x dumps' layout)",
    )
    layout.add_argument(
        "--from-recording",
        nargs="?",
        const=RECORDING,
        metavar="PICKLE",
        help="a real recording's history repeated to --entries (default: the PyTorch 2.x sample of ../shared)",
    )
    parser.add_argument("--no-report", action="store_true", help="skip the whole-process kinetoscope report")
    parser.add_argument(
        "--python",
        default=kinetoscope_python(),
        help="the python of the whole-process report and bare load (default: a venv of setup.py's requirements "
        "when there is one, as a user's install; else this one)",
    )
    args = parser.parse_args(argv)
    entries = args.entries
    if args.size:
        per_entry = BYTES_PER_ENTRY.get(args.frames, 30 + 10 * args.frames)
        entries = max(1, _size(args.size) // (RECORDING_BYTES_PER_ENTRY if args.from_recording else per_entry))
    from benchmarks.snapshot_input import build, build_from_recording, layout_name

    # byte-compiled first, as an installed package is (this machine sets PYTHONDONTWRITEBYTECODE: without
    # it every process compiled tb_plugin from source, ~1 s of the report's CPU that a bare pickle.load never pays)
    compileall.compile_dir(os.path.join(REPO, "tb_plugin"), quiet=1)
    figures: dict = {}
    with open("/proc/loadavg") as f:
        print(f"load average before: {' '.join(f.read().split()[:3])}", flush=True)
    with tempfile.TemporaryDirectory(prefix="kinetoscope-snap-", dir=args.dir) as tmp:
        logdir = os.path.join(tmp, "logdir")  # the snapshot alone (the caches are beside it)
        os.mkdir(logdir)
        path = os.path.join(logdir, "snapshot.pickle")
        t = time.perf_counter()
        if args.from_recording:
            size = build_from_recording(path, entries, args.from_recording, args.protocol)
            kind = f"{os.path.basename(args.from_recording)}'s history repeated"
        else:
            size = build(path, entries, args.frames, args.protocol, args.shared_frames, args.shared_dicts)
            kind = f"{args.frames} frames each ({layout_name(args.shared_frames, args.shared_dicts)})"
        print(
            f"snapshot: {entries} history entries, {kind}, protocol {args.protocol}, "
            f"{size / 1e6:.0f} MB pickle (written in {time.perf_counter() - t:.0f} s)",
            flush=True,
        )
        need_mb = BARE_RSS_PER_FILE_BYTE * size / 2**20
        run_bare = not args.no_bare and need_mb <= 0.8 * _available_mb()
        if args.no_bare:
            print("bare pickle.load: skipped (--no-bare)")
        elif not run_bare:
            print(
                f"bare pickle.load: skipped: it needs ~{need_mb / 1024:.1f} GB, {_available_mb() / 1024:.1f} GB "
                "available"
            )
        before_repo = os.path.abspath(args.before_repo) if args.before_repo else None
        if before_repo and not run_bare and not args.no_bare:  # the old reader needs as much as pickle.load
            print("before: skipped: the whole-object reader needs as much memory as pickle.load")
            before_repo = None
        runs: dict[str, list[dict]] = {}
        for r in range(args.repeat):  # interleaved, so that a busy spell of the machine hits all alike
            if run_bare:
                runs.setdefault("bare", []).append(run_child(BARE, [path]))
                if not args.no_report:
                    runs.setdefault("bare process", []).append(bare_process(path, args.python))
            if before_repo:
                env = dict(os.environ, KINETOSCOPE_CACHE_DIR=os.path.join(tmp, f"cache-before-{r}"))
                runs.setdefault("before: first open", []).append(
                    run_child(OPEN, [path, before_repo], env, cwd=before_repo)
                )
            env = dict(os.environ, KINETOSCOPE_CACHE_DIR=os.path.join(tmp, f"cache-{r}"))
            runs.setdefault("first open", []).append(run_child(OPEN, [path, REPO], env))
            runs.setdefault("reopen from cache", []).append(run_child(OPEN, [path, REPO], env))
            if not args.no_report:
                if before_repo:  # the old checkout's whole report, same run (before this one's)
                    env = dict(os.environ, KINETOSCOPE_CACHE_DIR=os.path.join(tmp, f"cache-report-before-{r}"))
                    runs.setdefault("before: report", []).append(report_process(logdir, env, before_repo, args.python))
                env = dict(os.environ, KINETOSCOPE_CACHE_DIR=os.path.join(tmp, f"cache-report-{r}"))
                runs.setdefault("report", []).append(report_process(logdir, env, python=args.python))
    # per figure, its best run (the least disturbed by other work on the machine)
    best = {name: {k: min(r[k] for r in rs) for k in rs[0]} for name, rs in runs.items()}
    bare = best.get("bare")
    rows = [
        (name, best[name])
        for name in ("before: first open", "first open", "reopen from cache", "before: report", "report")
        if name in best
    ]
    first, again = best["first open"], best["reopen from cache"]
    mb = size / 2**20
    head = f"{'':34s}{'seconds':>9s}{'x bare':>8s}{'peak RSS MB':>13s}{'x bare':>8s}{'x file':>8s}"
    print(head)
    if bare:
        print(
            f"{'bare pickle.load':34s}{bare['seconds']:9.2f}{1:8.2f}{bare['hwm_mb']:13.0f}{1:8.2f}"
            f"{bare['hwm_mb'] / mb:8.2f}"
        )
        print(f"{'bare pickle.load: CPU time':34s}{bare['cpu_s']:9.2f}{1:8.2f}")
        if "bare process" in best:  # (python -c: the interpreter's start too, as the report's whole process)
            secs = best["bare process"]["seconds"]
            print(f"{'bare pickle.load: whole process':34s}{secs:9.2f}{secs / bare['seconds']:8.2f}")
    for name, r in rows:
        whole = name.endswith("report")  # the kinetoscope command, start to exit; the others: in-process registry
        for label, secs, hwm in (
            (f"{name}: whole process" if whole else f"{name} (load)", r["seconds"], r["hwm_mb"]),
            (f"{name}: first timeline", r.get("first_timeline_s"), None),
            (f"{name}: CPU time{'' if whole else ' to it'}", r["cpu_s"], None),
            (f"{name}: reader child", None, r["child_hwm_mb"]),
            (f"{name}: main + child together", None, r.get("sum_mb")),
        ):
            if secs is None and not hwm:
                continue
            cols = f"{secs:9.2f}" if secs is not None else f"{'':9s}"
            ref = bare and (bare["cpu_s"] if "CPU" in label else bare["seconds"])
            cols += f"{secs / ref:8.2f}" if ref and secs is not None else f"{'':8s}"
            cols += f"{hwm:13.0f}" if hwm else f"{'':13s}"
            cols += (f"{hwm / bare['hwm_mb']:8.2f}" if bare and hwm else f"{'':8s}") + (
                f"{hwm / mb:8.2f}" if hwm else ""
            )
            print(f"{label:34s}{cols}")
    print(
        "(the timeline route, the MCP server and the notebook open a snapshot through the registry's load,\n"
        " the 'first open' rows; in this tree neither MCP nor the notebook has a snapshot tool of its own)"
    )
    print(f"timeline request p95: {again['timeline_p95_ms']:.1f} ms; peak active bytes {first['peak_bytes']}")
    if bare:
        figures.update(unpickle_s=bare["seconds"], unpickle_rss_mb=(bare["hwm_mb"], 0))
    figures.update(
        size_mb=(mb, 0),
        first_open_s=first["seconds"],
        first_timeline_s=first["first_timeline_s"],
        open_rss_mb=(first["hwm_mb"], 0),
        reader_rss_mb=(first["child_hwm_mb"], 0),
    )
    figures.update(
        _over_unpickle(
            bare,
            first_over_unpickle=(first["first_timeline_s"], "seconds"),
            first_cpu_over_unpickle_cpu=(first["cpu_s"], "cpu_s"),
            reader_rss_over_unpickle=(first["child_hwm_mb"], "hwm_mb"),
        )
    )
    if "before: first open" in best:
        before = best["before: first open"]
        figures.update(before_first_open_s=before["seconds"], before_reader_rss_mb=(before["child_hwm_mb"], 0))
    if "before: report" in best:
        figures.update(_over_unpickle(bare, before_report_over_unpickle=(best["before: report"]["seconds"], "seconds")))
    if "report" in best:
        rep = best["report"]
        figures.update(
            report_s=rep["seconds"],
            report_rss_mb=(rep["hwm_mb"], 0),
            report_child_rss_mb=(rep["child_hwm_mb"], 0),
            report_sum_rss_mb=(rep["sum_mb"], 0),
        )
        peak = max(rep["hwm_mb"], rep["child_hwm_mb"])
        figures.update(
            _over_unpickle(
                bare,
                report_over_unpickle=(rep["seconds"], "seconds"),
                report_cpu_over_unpickle_cpu=(rep["cpu_s"], "cpu_s"),
                report_peak_over_unpickle=(peak, "hwm_mb"),
                report_sum_over_unpickle=(rep["sum_mb"], "hwm_mb"),
            )
        )
        if "bare process" in best:  # whole process against whole process (python -c, the same python)
            figures.update(report_over_unpickle_process=rep["seconds"] / best["bare process"]["seconds"])
    figures.update(
        sum_rss_mb=(first["sum_mb"], 0),
        reopen_s=again["seconds"],
        reopen_timeline_s=again["first_timeline_s"],
        timeline_p95_ms=(again["timeline_p95_ms"], 1),
    )
    figures.update(_over_unpickle(bare, sum_rss_over_unpickle=(first["sum_mb"], "hwm_mb")))
    with open("/proc/loadavg") as f:
        load_after = " ".join(f.read().split()[:3])
    for name in ("before: report", "report") if bare else ():  # the target, side by side: against a bare pickle.load
        if name not in best:
            continue
        rep = best[name]
        print(
            f"{name} vs bare pickle.load: wall {rep['seconds']:.2f} s vs {bare['seconds']:.2f} s "
            f"({rep['seconds'] / bare['seconds']:.2f}x), CPU {rep['cpu_s']:.2f} s vs {bare['cpu_s']:.2f} s "
            f"({rep['cpu_s'] / bare['cpu_s']:.2f}x), peak (largest process) "
            f"{max(rep['hwm_mb'], rep['child_hwm_mb']):.0f} MB vs {bare['hwm_mb']:.0f} MB "
            f"({max(rep['hwm_mb'], rep['child_hwm_mb']) / bare['hwm_mb']:.2f}x), main + child "
            f"{rep['sum_mb']:.0f} MB ({rep['sum_mb'] / bare['hwm_mb']:.2f}x); load average {load_after}"
        )
        if "bare process" in best:
            whole = best["bare process"]["seconds"]
            print(
                f"{name} vs a bare pickle.load's whole process (python -c, the interpreter's start in both): "
                f"{rep['seconds']:.2f} s vs {whole:.2f} s ({rep['seconds'] / whole:.2f}x)"
            )
    if bare:  # the timeline route's first answer (what MCP and the notebook also open through), side by side
        print(
            f"first timeline vs bare pickle.load: wall {first['first_timeline_s']:.2f} s vs {bare['seconds']:.2f} s "
            f"({first['first_timeline_s'] / bare['seconds']:.2f}x), CPU (with the benchmark's poller) "
            f"{first['cpu_s']:.2f} s vs {bare['cpu_s']:.2f} s ({first['cpu_s'] / bare['cpu_s']:.2f}x), peak (reader "
            f"child) {first['child_hwm_mb']:.0f} MB vs {bare['hwm_mb']:.0f} MB "
            f"({first['child_hwm_mb'] / bare['hwm_mb']:.2f}x), this process {first['hwm_mb']:.0f} MB, both together "
            f"{first['sum_mb']:.0f} MB ({first['sum_mb'] / bare['hwm_mb']:.2f}x); the spare reader child's start "
            f"before the request {first['spare_cpu_s']:.2f} s of CPU (not counted); load average {load_after}"
        )
    print(f"load average after: {load_after}")
    print_figures(**figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
