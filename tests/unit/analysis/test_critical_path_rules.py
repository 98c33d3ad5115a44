"""The critical path's rules, one known-answer synthetic trace each (tests/synth/critical_rules.py):
annotation around the step, autograd engine thread, event polling, blocking D2H copy, back-to-back
kernels with a far-ahead host, a sleeping background thread, a tie at the end."""

from __future__ import annotations

import json

import numpy as np
import pytest
from synth.critical_rules import RULES, SLEEPER

from tb_plugin.analysis.critical_path import RankGraph
from tb_plugin.analysis.critical_path_combine import critical_paths
from tb_plugin.analysis.distributed import comm_kernels, rank_reduce
from tb_plugin.analysis.steps import compute_steps
from tb_plugin.trace.decode import decode_trace


def _every_segment(trace) -> list[tuple]:
    """Every segment of the one step's path, in time order (the overlay's full walk)."""
    g = RankGraph(trace, np.asarray(comm_kernels(trace)["rows"], dtype=np.int64))
    steps = compute_steps(trace)
    w = g.from_end(float(steps.start[0]), float(steps.end[0]))
    return sorted(w.segs)


@pytest.mark.parametrize("rule", sorted(RULES))
def test_rule_known_answer(rule):
    doc, want = RULES[rule]()
    trace = decode_trace(json.dumps(doc).encode())
    (path,) = critical_paths([(0, rank_reduce(trace)["critical_path"])])
    assert path["by_category"] == pytest.approx(want["by_category"])
    assert sum(path["by_category"].values()) == pytest.approx(path["length_us"])
    assert path["host_blocked_us"] == pytest.approx(want["host_blocked_us"])
    segs = _every_segment(trace)
    cats = ("kernel", "cpu", "communication", "waiting")
    assert [(cats[c], n, a, b - a) for a, b, c, n, *_ in segs] == [
        (c, n, float(a), float(d)) for c, n, a, d in want["segments"]
    ]
    # no segment on the sleeping thread, none is an annotation range
    ev = trace.events
    for a, b, c, n, row, _ in segs:
        if row >= 0 and cats[c] == "cpu" and n != "untraced host work":
            assert int(ev.kind[row]) != 2, n  # Kind.USER_ANNOTATION
        if row >= 0:
            assert trace.strings[ev.tid[row]] != str(SLEEPER), n


def test_items_and_context():
    """``top_items`` groups work by name with its segment count; host segments carry their annotation."""
    doc, _ = RULES["annotation"]()
    trace = decode_trace(json.dumps(doc).encode())
    (path,) = critical_paths([(0, rank_reduce(trace)["critical_path"])])
    items = {(i["category"], i["name"]): (i["us"], i["segments"]) for i in path["top_items"]}
    assert items[("cpu", "untraced host work")] == (150.0, 2)
    assert items[("kernel", "gemm")] == (590.0, 1)
    untraced = [s for s in path["segments"] if s["name"] == "untraced host work"]
    assert untraced and all(s["annotation"] == "## forward ##" for s in untraced)
    (mm,) = [s for s in path["segments"] if s["name"] == "aten::mm"]
    assert mm["annotation"] == "## forward ##" and mm["python"] is None


def test_linked_thread_without_leaf_work():
    """A ``fwdbwd`` flow to a thread that runs annotations only (no leaf work): no join, no failure."""
    doc, want = RULES["autograd"]()
    doc["traceEvents"] = [e for e in doc["traceEvents"] if not (e.get("tid") == 2 and e["ph"] == "X")]
    doc["traceEvents"].append(
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "## engine ##",
            "pid": 1,
            "tid": 2,
            "ts": 120,
            "dur": 680,
            "args": {},
        }
    )
    trace = decode_trace(json.dumps(doc).encode())
    (path,) = critical_paths([(0, rank_reduce(trace)["critical_path"])])
    assert sum(path["by_category"].values()) == pytest.approx(path["length_us"]) == 1000.0
