"""The critical path's host segments (analysis/host_tiles.py): a host segment is leaf work, the innermost
operator / launch over its self time, else the innermost Python frame's own time, never the script's
``<module>`` frame that spans the whole step (as on every real GPU trace in samples/gpu_*) and never
an annotation (untraced time inside one is ``untraced host work``, the annotation its context)."""

from __future__ import annotations

import json

import numpy as np
from conftest import x

from tb_plugin.analysis.host_tiles import ANNOTATION, LEAF, PYTHON, UNTRACED, context, host_tiles
from tb_plugin.trace.decode import decode_trace

PY = "python_function"


def _doc() -> dict:
    """One step [100, 1000) on thread 1, all host (no device work), by construction:

    <module> [0, 2000) > main [10, 1990) > step [100, 1000) > {forward [150, 500) > aten::mm [200, 400)
    > cudaLaunchKernel [250, 260)}, {opt [600, 900)}, a launch outside any op [950, 960), and
    ``aten::add`` [920, 940) directly in ``step``."""
    ev = [
        x("ProfilerStep#1", "user_annotation", 100, 900),
        x("<module>", PY, 0, 2000),
        x("main", PY, 10, 1980),
        x("step", PY, 100, 900),
        x("forward", PY, 150, 350),
        x("aten::mm", "cpu_op", 200, 200),
        x("cudaLaunchKernel", "cuda_runtime", 250, 10),
        x("opt", PY, 600, 300),
        x("aten::add", "cpu_op", 920, 20),
        x("cudaDeviceSynchronize", "cuda_runtime", 950, 10),
    ]
    return {"traceEvents": ev}


EXPECTED = [  # (name, start, end): innermost operator / launch, else innermost Python frame
    ("<module>", 0, 10),
    ("main", 10, 100),
    ("step", 100, 150),
    ("forward", 150, 200),
    ("aten::mm", 200, 250),
    ("cudaLaunchKernel", 250, 260),
    ("aten::mm", 260, 400),
    ("forward", 400, 500),
    ("step", 500, 600),
    ("opt", 600, 900),
    ("step", 900, 920),
    ("aten::add", 920, 940),
    ("step", 940, 950),
    ("cudaDeviceSynchronize", 950, 960),
    ("step", 960, 1000),
    ("main", 1000, 1990),
    ("<module>", 1990, 2000),
]


def test_tiles_known_by_construction():
    trace = decode_trace(json.dumps(_doc()).encode())
    ev = trace.events
    rows = np.flatnonzero(ev.name != trace.strings.index("ProfilerStep#1"))
    t = host_tiles(trace, rows)
    r, s, e = t.row, t.start, t.end
    got = [(trace.strings[ev.name[i]], a, b) for i, a, b in zip(r.tolist(), s.tolist(), e.tolist())]
    assert got == EXPECTED
    # the tiles cover the union of the host events exactly: [0, 2000), no overlap
    assert np.all(s[1:] >= e[:-1]) and float((e - s).sum()) == 2000.0


def test_tiles_without_python_frames_are_leaf_events():
    """No ``python_function``: the tiles are the leaf operators and launches over their self time."""
    doc = {"traceEvents": [e for e in _doc()["traceEvents"] if e["cat"] != PY]}
    trace = decode_trace(json.dumps(doc).encode())
    ev = trace.events
    rows = np.flatnonzero(ev.name != trace.strings.index("ProfilerStep#1"))
    t = host_tiles(trace, rows)
    assert [trace.strings[ev.name[i]] for i in t.row.tolist()] == [
        "aten::mm",
        "cudaLaunchKernel",
        "aten::mm",
        "aten::add",
        "cudaDeviceSynchronize",
    ]
    assert list(zip(t.start.tolist(), t.end.tolist())) == [(200, 250), (250, 260), (260, 400), (920, 940), (950, 960)]
    assert t.what.tolist() == [LEAF] * 5


def test_step_path_names_operators_and_frames_not_module():
    """The whole step is host time on the path: its segments are the tiles inside the step, the
    longest ``opt`` (300 µs), and no segment is named ``<module>`` or ``main``."""
    from tb_plugin.analysis.critical_path_combine import critical_paths
    from tb_plugin.analysis.distributed import rank_reduce

    trace = decode_trace(json.dumps(_doc()).encode())
    (path,) = critical_paths([(0, rank_reduce(trace)["critical_path"])])
    assert path["length_us"] == 900.0
    assert path["by_category"] == {"kernel": 0.0, "cpu": 900.0, "communication": 0.0, "waiting": 0.0}
    names = [(s["name"], s["dur_us"]) for s in path["segments"]]
    assert names[0] == ("opt", 300.0) and names[1] == ("aten::mm", 140.0)
    assert not {"<module>", "main"} & {n for n, _ in names}


def test_annotation_is_context_not_identity():
    """An annotation around the step: the time with no operator inside is ``untraced host work``
    (the annotation its context), an operator inside is itself; a thread of annotations only keeps them."""
    doc = {
        "traceEvents": [
            x("## forward ##", "user_annotation", 0, 100),
            x("aten::mm", "cpu_op", 20, 30),
            x("event/batch", "", 0, 50, tid=2),
            x("event/forward", "", 10, 20, tid=2),
        ]
    }
    trace = decode_trace(json.dumps(doc).encode())
    t = host_tiles(trace, np.arange(len(trace.events)))
    got = [
        (trace.strings[trace.events.name[r]], int(w), a, b)
        for r, w, a, b in zip(t.row.tolist(), t.what.tolist(), t.start.tolist(), t.end.tolist())
    ]
    assert got == [
        ("## forward ##", UNTRACED, 0, 20),
        ("aten::mm", LEAF, 20, 50),
        ("## forward ##", UNTRACED, 50, 100),
        ("event/batch", ANNOTATION, 0, 10),
        ("event/forward", ANNOTATION, 10, 30),
        ("event/batch", ANNOTATION, 30, 50),
    ]
    mm = int(t.row[1])
    assert context(trace, mm, t.parent) == {"annotation": "## forward ##", "python": None}
    assert PYTHON not in t.what.tolist()


def _nested(rng: np.random.Generator, lo: int, hi: int, depth: int, tid: int, out: list) -> None:
    """Random properly nested events inside [lo, hi) of thread ``tid``: children on a coarse integer
    grid (shared boundaries, zero-length events, a child as long as its parent)."""
    t = lo
    while depth and t < hi and len(out) < 400:
        a = int(rng.integers(t, hi + 1))
        b = int(rng.integers(a, hi + 1)) if rng.random() < 0.8 else a
        cat = ("cpu_op", PY, "user_annotation", "cuda_runtime")[int(rng.integers(4))]
        out.append(x(f"e{len(out)}", cat, a, b - a, tid=tid))
        if b > a:
            _nested(rng, a, b, depth - 1, tid, out)
        t = b if b > a else a + 1


def _reference_tiles(trace) -> list[tuple[int, int, float, float]]:
    """``(tid, row, start, end)`` per tile, piece by piece: the innermost event of non-zero length over
    each piece between consecutive boundaries (the last in (start, −end, row) order of those covering
    it), adjacent pieces of one event joined."""
    ev = trace.events
    out: list[tuple[int, int, float, float]] = []
    for tid in sorted(set(ev.tid.tolist())):
        mine = [i for i in range(len(ev)) if ev.tid[i] == tid]
        bounds = sorted({float(ev.ts[i]) for i in mine} | {float(ev.ts[i] + ev.dur[i]) for i in mine})
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            over = [i for i in mine if ev.ts[i] <= lo and ev.ts[i] + ev.dur[i] >= hi]
            if not over:
                continue
            row = max(over, key=lambda i: (float(ev.ts[i]), -float(ev.ts[i] + ev.dur[i]), i))
            if out and out[-1][:2] == (int(ev.tid[row]), row) and out[-1][3] == lo:
                out[-1] = (out[-1][0], row, out[-1][2], hi)
            else:
                out.append((int(ev.tid[row]), row, lo, hi))
    return out


def test_tiles_equal_piece_by_piece_reference_on_random_nesting():
    """The merged-boundary pass (one sort of the starts and ends, the latest start met so far) finds the
    same innermost event over every piece as a piece-by-piece search, ties and zero lengths included."""
    for seed in range(12):
        rng = np.random.default_rng(seed)
        events: list = []
        for tid in (3, 1, 2):
            _nested(rng, 0, 60, 4, tid, events)
        order = rng.permutation(len(events))
        trace = decode_trace(json.dumps({"traceEvents": [events[i] for i in order]}).encode())
        t = host_tiles(trace, np.arange(len(trace.events)))
        got = [(int(trace.events.tid[r]), r, a, b) for r, a, b in zip(t.row.tolist(), t.start.tolist(), t.end.tolist())]
        assert got == _reference_tiles(trace), seed


def test_nesting_and_boundary_orders_equal_the_sorts_they_replace():
    """The two orders without a multi-key sort equal ``np.lexsort``'s: starts strictly increasing (the
    decode's order), ascending with ties, or in any order (the sort itself), few or many threads,
    equal ends, zero lengths and ends equal to another event's start."""
    from tb_plugin.analysis import host_tiles as ht

    rng = np.random.default_rng(3)
    for case in range(200):
        n = int(rng.integers(1, 300))
        threads = rng.choice([2, 5, 100])
        thread = rng.integers(0, threads, n).astype(np.int64) * (1 << 32) + rng.integers(0, 3, n)
        if case % 3 == 0:
            s = np.cumsum(rng.integers(1, 4, n)).astype(np.float64)  # strictly increasing
        elif case % 3 == 1:
            s = np.sort(rng.integers(0, 40, n)).astype(np.float64)  # ascending, with ties
        else:
            s = rng.integers(0, 40, n).astype(np.float64)  # ties, any order
        e = s + rng.choice([0.0, 1.0, 2.0, 7.0], n)
        order = ht.by_thread_and_start(thread, s, (-e,))
        assert np.array_equal(order, np.lexsort((-e, s, thread)))
        s, e, thread = s[order], e[order], thread[order]
        tix = np.r_[0, np.cumsum(thread[1:] != thread[:-1])].astype(np.int32)
        got = ht._boundary_order(tix, s, e, np.int32)
        assert got.dtype == np.int32
        assert np.array_equal(got, np.lexsort((np.concatenate([s, e]), np.concatenate([tix, tix]))))
