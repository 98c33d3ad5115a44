"""The report's per-rank sections one by one on one parsed trace: wall and CPU seconds and peak RSS each.

    python benchmarks/bench_sections.py TRACE CACHE_DIR [--only distributed,memory] [--stacks] [--memos]

The trace is parsed into ``CACHE_DIR`` (kept: a second run reads it back, so the sections are measured
without the parse; the cache key holds the file's inode change time, so a hard link made to the file,
as ``bench_report.py`` makes, spoils it: give this script a copy of its own). Each section runs as
``registry.report.rank_aggregate`` runs it, in the same order, without the analysis cache, and is
followed by the same heap trim; each section's VmHWM is its own peak (reset before it by writing 5 to
``/proc/self/clear_refs``). ``--stacks``: a thread samples RSS every 20 ms and prints the main
thread's innermost frames at every new maximum over 20 MB (where the peak is). ``--memos``: the bytes
of the arrays each per-trace memo holds after the last section (without it, each section is followed by
dropping the memos no later section reads, as the report does). Figures, not assertions.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import traceback
from typing import TextIO

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _status() -> dict[str, int]:
    """VmRSS and VmHWM of this process, MB."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1]) // 1024
    return out


def _reset_peak() -> bool:
    """Reset this process's VmHWM to its current RSS (Linux ``clear_refs`` 5), so that each section's
    VmHWM is its own peak; False where that is not allowed (then VmHWM is the peak so far)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


def _sample_stacks(main_id: int, stop: threading.Event, out: TextIO | None = None) -> None:
    """Print (to ``out``, default stdout) the main thread's innermost frames at every new RSS maximum
    (20 MB steps) until ``stop`` is set."""
    best = 0
    while not stop.is_set():
        rss = _status()["VmRSS"]
        if rss > best + 20:
            best = rss
            frame = sys._current_frames().get(main_id)
            where = traceback.format_stack(frame)[-2:] if frame is not None else []
            del frame  # a held frame keeps its locals (and their buffers) alive
            print(f"  rss {rss} MB at {''.join(where).strip()}", file=out or sys.stdout, flush=True)
        time.sleep(0.02)


def _array_bytes(value: object, seen: set[int]) -> int:
    """Bytes of the numpy arrays (not views) ``value`` holds, each counted once."""
    import numpy as np

    if isinstance(value, np.ndarray):
        if id(value) in seen or value.base is not None:
            return 0
        seen.add(id(value))
        return value.nbytes
    if isinstance(value, dict):
        return sum(_array_bytes(v, seen) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(_array_bytes(v, seen) for v in value[:100_000])
    if hasattr(value, "__dict__"):
        return _array_bytes(vars(value), seen)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("trace")
    parser.add_argument("cache_dir")
    parser.add_argument("--only", help="comma-separated section names")
    parser.add_argument("--stacks", action="store_true")
    parser.add_argument("--memos", action="store_true")
    args = parser.parse_args(argv)
    from tb_plugin.registry import graph_siblings, report
    from tb_plugin.registry.cache import ParseCache
    from tb_plugin.registry.parse import parse_entry
    from tb_plugin.registry.runs import RunRegistry
    from tb_plugin.registry.views import FileViews
    from tb_plugin.storage.fs import open_logdir
    from tb_plugin.trace import heap

    heap.tune_allocator()  # as the CLI does
    reg = RunRegistry(os.path.dirname(os.path.abspath(args.trace)), cache=ParseCache(args.cache_dir))
    reg.scan()
    state = next(st for st in reg.files() if os.path.basename(st.entry.path) == os.path.basename(args.trace))
    job = reg.rank_job(state)
    fs, root = open_logdir(os.path.dirname(job.url))
    started = time.perf_counter()
    trace, hit = parse_entry(
        fs, os.path.join(root, os.path.basename(job.url)), job.url, job.version, job.size, ParseCache(args.cache_dir)
    )
    print(
        f"parse ({'cache' if hit else 'cold'}): {time.perf_counter() - started:.2f} s, {_status()}, load {os.getloadavg()[0]:.1f}"
    )
    views = FileViews(trace)
    sections = [  # registry.report.rank_aggregate's, in its order
        ("distributed", views.rank_reduce),
        ("insights", lambda: report.report_insights(views.insights())),
        ("overview", views.overview),
        ("operators", lambda: report.operator_table(views)),
        ("kernels", lambda: report.kernel_table(views)),
        ("modules", views.modules),
        ("graphs", lambda: graph_siblings.graphs_report(views)),
        ("memory", views.memory_summary),
    ]
    only = set(args.only.split(",")) if args.only else None
    stop = threading.Event()
    if args.stacks:
        threading.Thread(target=_sample_stacks, args=(threading.get_ident(), stop), daemon=True).start()
    items = len(trace.events) + len(trace.memory)
    total_wall = total_cpu = 0.0
    peaks: dict[str, int] = {}  # VmHWM per section (reset before each where the kernel allows)
    for name, make in sections:
        if only is not None and name not in only:
            continue
        _reset_peak()
        wall, cpu = time.perf_counter(), time.process_time()
        make()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        if not args.memos:  # the memos no later section of the report reads, dropped as the report drops them
            report.drop_unread(trace.derived, [key for key, _ in sections[sections.index((name, make)) + 1 :]])
        heap.release_after(items)
        total_wall, total_cpu = total_wall + wall, total_cpu + cpu
        print(f"{name:12s} {wall:8.2f} s  CPU {cpu:7.2f} s  {_status()}  load {os.getloadavg()[0]:.1f}", flush=True)
        peaks[name] = _status()["VmHWM"]
    peaks["all"] = max(peaks.values(), default=0)
    stop.set()
    if args.memos:
        seen: set[int] = set()
        sizes = sorted(((_array_bytes(v, seen), k) for k, v in trace.derived.items()), reverse=True)
        for size, key in sizes:
            if size >= 1 << 20:
                print(f"  memo {key}: {size / 1e6:.1f} MB")
    print(f"sections_wall_s={total_wall:.2f} sections_cpu_s={total_cpu:.2f} peak_rss_mb={peaks.get('all', 0)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
