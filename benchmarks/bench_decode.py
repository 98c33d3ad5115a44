"""Parse one trace file three ways, each in its own process: the whole-document decoder (the
reference), the streamed decoder serially, and the streamed decoder on N worker processes; print the
wall time and the peak memory (VmHWM of the parsing process; the workers' largest VmHWM beside it).

    python benchmarks/bench_decode.py TRACE [--workers N] [--modes whole,stream1,streamN] [--check]

``--check`` also asserts that the streamed parse equals the whole-document one (holds both).
Ends with one line ``whole_s= stream1_s= streamN_s= whole_mb= stream1_mb= streamN_mb= workers_mb=``.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import HWM, REPO, print_figures, run_child

CHILD = (
    HWM
    + r"""
import json, os, resource, sys, time
sys.path.insert(0, sys.argv[2])
import fsspec
from tb_plugin.storage.read import Blocks, read_trace_bytes
from tb_plugin.trace.decode import decode_trace
from tb_plugin.trace.decode_stream import decode_stream
path, mode, workers, check = sys.argv[1], sys.argv[3], int(sys.argv[4]), sys.argv[5] == "1"
fs = fsspec.filesystem("file")
t0 = time.perf_counter()
if mode == "whole":
    trace = decode_trace(read_trace_bytes(fs, path))
else:
    trace = decode_stream(Blocks(fs, path, os.path.getsize(path)), workers=1 if mode == "stream1" else workers)
seconds = time.perf_counter() - t0
if check and mode != "whole":
    ref = decode_trace(read_trace_bytes(fs, path))
    assert ref.strings == trace.strings and ref.meta == trace.meta and ref.warnings == trace.warnings
    for t in ("events", "memory", "flows", "counters"):
        a, b = getattr(ref, t).columns, getattr(trace, t).columns
        assert all(a[k].tobytes() == b[k].tobytes() for k in a), t
children_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps({"s": seconds, "mb": hwm_mb(), "children_mb": children_mb, "events": len(trace.events)}))
"""
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--modes", default="whole,stream1,streamN")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    size = os.path.getsize(args.trace)
    print(f"{args.trace}: {size / 1e9:.2f} GB, {args.workers} workers, {os.cpu_count()} cores")
    figures = {}
    for mode in args.modes.split(","):
        out = run_child(CHILD, [args.trace, REPO, mode, str(args.workers), "1" if args.check else "0"])
        print(
            f"{mode:8s} {out['s']:8.1f} s  peak {out['mb']:8.0f} MB  workers' peak {out['children_mb']:6.0f} MB"
            f"  {out['events']} events",
            flush=True,
        )
        figures[f"{mode}_s"] = (out["s"], 1)
        figures[f"{mode}_mb"] = (out["mb"], 0)
        if mode == "streamN":
            figures["workers_mb"] = (out["children_mb"], 0)
    print_figures(**figures)


if __name__ == "__main__":
    main()
