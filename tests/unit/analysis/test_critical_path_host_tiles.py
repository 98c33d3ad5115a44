"""The critical path's host segments on ``with_stack`` traces (analysis/host_tiles.py): a host segment is
named by the outermost operator / launch on the path, else the innermost Python frame, never by the
script's ``<module>`` frame that spans the whole step (as on every real GPU trace in samples/gpu_*)."""

from __future__ import annotations

import json

import numpy as np

from conftest import x
from tb_plugin.analysis.host_tiles import host_tiles
from tb_plugin.analysis.op_tree import op_tree
from tb_plugin.trace.decode import decode_trace

PY = "python_function"


def _doc() -> dict:
    """One step [100, 1000) on thread 1, all host (no device work), by construction:

    <module> [0, 2000) > main [10, 1990) > step [100, 1000) > {forward [150, 500) > aten::mm [200, 400)
    > cudaLaunchKernel [250, 260)}, {opt [600, 900)}, a launch outside any op [950, 960), and
    ``aten::add`` [920, 940) directly in ``step``."""
    ev = [x("ProfilerStep#1", "user_annotation", 100, 900),
          x("<module>", PY, 0, 2000), x("main", PY, 10, 1980), x("step", PY, 100, 900),
          x("forward", PY, 150, 350), x("aten::mm", "cpu_op", 200, 200),
          x("cudaLaunchKernel", "cuda_runtime", 250, 10), x("opt", PY, 600, 300),
          x("aten::add", "cpu_op", 920, 20), x("cudaDeviceSynchronize", "cuda_runtime", 950, 10)]
    return {"traceEvents": ev}


EXPECTED = [  # (name, start, end): outermost operator / launch, else innermost Python frame
    ("<module>", 0, 10), ("main", 10, 100), ("step", 100, 150), ("forward", 150, 200), ("aten::mm", 200, 400),
    ("forward", 400, 500), ("step", 500, 600), ("opt", 600, 900), ("step", 900, 920), ("aten::add", 920, 940),
    ("step", 940, 950), ("cudaDeviceSynchronize", 950, 960), ("step", 960, 1000), ("main", 1000, 1990),
    ("<module>", 1990, 2000)]


def test_tiles_known_by_construction():
    trace = decode_trace(json.dumps(_doc()).encode())
    ev = trace.events
    rows = np.flatnonzero(ev.name != trace.strings.index("ProfilerStep#1"))
    rows = rows[np.lexsort((-ev.dur[rows], ev.ts[rows]))]
    r, s, e = host_tiles(trace, rows, op_tree(trace).py_parent)
    got = [(trace.strings[ev.name[i]], a, b) for i, a, b in zip(r.tolist(), s.tolist(), e.tolist())]
    assert got == EXPECTED
    # the tiles cover the union of the host events exactly: [0, 2000), no overlap
    assert np.all(s[1:] >= e[:-1]) and float((e - s).sum()) == 2000.0


def test_tiles_without_python_frames_are_top_level_events():
    """No ``python_function``: the tiles are the top-level events, as the critical path always had."""
    doc = {"traceEvents": [e for e in _doc()["traceEvents"] if e["cat"] != PY]}
    trace = decode_trace(json.dumps(doc).encode())
    ev = trace.events
    rows = np.flatnonzero(ev.name != trace.strings.index("ProfilerStep#1"))
    rows = rows[np.lexsort((-ev.dur[rows], ev.ts[rows]))]
    r, s, e = host_tiles(trace, rows, op_tree(trace).py_parent)
    assert [trace.strings[ev.name[i]] for i in r.tolist()] == ["aten::mm", "aten::add", "cudaDeviceSynchronize"]
    assert list(zip(s.tolist(), e.tolist())) == [(200, 400), (920, 940), (950, 960)]


def test_step_path_names_operators_and_frames_not_module():
    """The whole step is host time on the path: its segments are the tiles inside the step, the
    longest ``opt`` (300 µs), and no segment is named ``<module>`` or ``main``."""
    from tb_plugin.analysis.critical_path_combine import critical_paths
    from tb_plugin.analysis.distributed import rank_reduce

    trace = decode_trace(json.dumps(_doc()).encode())
    path, = critical_paths([(0, rank_reduce(trace)["critical_path"])])
    assert path["length_us"] == 900.0
    assert path["by_category"] == {"kernel": 0.0, "cpu": 900.0, "communication": 0.0, "waiting": 0.0}
    names = [(s["name"], s["dur_us"]) for s in path["segments"]]
    assert names[0] == ("opt", 300.0) and names[1] == ("aten::mm", 200.0)
    assert not {"<module>", "main"} & {n for n, _ in names}
