"""Timeline: exactness at full zoom, bounded merged answers, counters with known answers, hostile input."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from conftest import sample
from synth.traces import SynthSpec, expected_overview, synthesize

from tb_plugin import api
from tb_plugin.analysis import timeline_query as tq
from tb_plugin.analysis.counters import counters
from tb_plugin.analysis.steps import compute_steps
from tb_plugin.analysis.timeline import timeline_index, track_of_events
from tb_plugin.registry.cache import ParseCache
from tb_plugin.registry.parse import load_trace_file
from tb_plugin.registry.runs import RunRegistry
from tb_plugin.trace.decode import decode_trace

RESNET = "kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"


@pytest.fixture(scope="module")
def resnet():
    return load_trace_file(str(sample(RESNET)))


def _direct(trace, track_id, a0, a1):
    ev = trace.events
    rows = np.flatnonzero(track_of_events(trace) == track_id)
    end = ev.ts[rows] + np.maximum(ev.dur[rows], 0)
    return set(rows[(ev.ts[rows] <= a1) & (end >= a0)].tolist())


@pytest.mark.corpus
@pytest.mark.parametrize("offset_us, span_us", [(72_000, 300), (400_000, 900), (10, 50)])
def test_full_zoom_returns_exactly_the_events_of_the_window(resnet, offset_us, span_us):
    doc = tq.window(resnet, offset_us, offset_us + span_us, width_px=2 * span_us)  # 0.5 µs per pixel
    base = tq.origin(resnet)
    assert doc["tracks"]
    for track in doc["tracks"]:
        assert track["level"] == 0 and track["hidden_events"] == 0
        got = set(track["items"]["row"])
        assert got == _direct(resnet, track["id"], base + offset_us, base + offset_us + span_us)


@pytest.mark.corpus
def test_full_range_is_bounded_and_hides_nothing(resnet):
    lo, hi = tq.extent(resnet)
    doc = tq.window(resnet, lo, hi, width_px=2000)
    total_events = 0
    for track, meta in zip(doc["tracks"], timeline_index(resnet)):
        items = track["items"]
        assert len(items["start"]) <= 4 * 2000 * (meta.max_depth + 1)
        assert sum(items["count"]) == len(meta.levels[0].start)  # every event is behind some item
        total_events += sum(items["count"])
        # merged items never overlap each other at the same depth
        for d in set(items["depth"]):
            at = [(s, s + w) for s, w, dd in zip(items["start"], items["dur"], items["depth"]) if dd == d]
            at.sort()
            assert all(a[1] <= b[0] + 1e-6 for a, b in zip(at, at[1:])), d
    assert total_events == len(resnet.events)
    assert len(json.dumps(doc)) < 2_000_000


def test_counters_match_known_utilization():
    spec = SynthSpec(steps=4)
    trace = decode_trace(json.dumps(synthesize(spec)).encode())
    expected = expected_overview(spec)
    lo, hi = compute_steps(trace).window
    series = {c["name"]: c["values"] for c in counters(trace, lo, hi, 1)}
    gpu = expected["gpus"][0]
    assert series[f"GPU {gpu['id']} Utilization"][0] == pytest.approx(gpu["utilization_pct"] / 100, abs=1e-4)
    assert series[f"GPU {gpu['id']} Est. SM Efficiency"][0] == pytest.approx(gpu["sm_efficiency_pct"] / 100, abs=1e-4)
    # the per-bin series integrates to the same thing
    fine = {c["name"]: c["values"] for c in counters(trace, lo, hi, 500)}
    assert np.mean(fine[f"GPU {gpu['id']} Utilization"]) == pytest.approx(gpu["utilization_pct"] / 100, abs=2e-3)


def test_hostile_slices_render():
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
        {"ph": "X", "cat": "cpu_op", "name": "crossing", "pid": 1, "tid": 1, "ts": 5, "dur": 10},
        {"ph": "X", "cat": "cpu_op", "name": "after", "pid": 1, "tid": 1, "ts": 12, "dur": 1},
        {"ph": "X", "cat": "cpu_op", "name": "zero", "pid": 1, "tid": 1, "ts": 20, "dur": 0},
        {"ph": "X", "cat": "cpu_op", "name": "negative", "pid": 1, "tid": 1, "ts": 30, "dur": -5},
        {"ph": "X", "cat": "cpu_op", "name": "far", "pid": 1, "tid": 1, "ts": 1e9, "dur": 3},
    ]
    trace = decode_trace(json.dumps({"traceEvents": events}).encode())
    doc = tq.window(trace, 0, 40, 400)
    (track,) = doc["tracks"]
    names = [doc["names"][str(n)] for n in track["items"]["name"]]
    assert sorted(names) == ["a", "after", "crossing", "negative", "zero"]
    depth = dict(zip(names, track["items"]["depth"]))
    assert depth["a"] == 0 and depth["crossing"] == 1  # the crossing slice goes one level down
    spans = {n: (s, s + max(d, 0)) for n, s, d in zip(names, track["items"]["start"], track["items"]["dur"])}
    for x in names:  # no two slices drawn at one depth overlap
        for y in names:
            if x < y and depth[x] == depth[y]:
                assert spans[x][1] <= spans[y][0] or spans[y][1] <= spans[x][0], (x, y)
    assert spans["negative"] == (30, 30)  # a negative duration is drawn as a point
    assert tq.window(trace, -100, 1e10, 100)["tracks"][0]["items"]["count"]  # a huge window works
    assert tq.window(trace, 5e9, 6e9, 100)["tracks"][0]["items"]["row"] == []  # outside everything


@pytest.mark.corpus
def test_search_parents_and_flows(resnet):
    found = tq.search(resnet, "aten::conv2d")
    assert found["total"] == int(resnet.name_mask(lambda s: "aten::conv2d" in s.lower()).sum()) > 0
    assert all(n == "aten::conv2d" for n in found["name"])
    assert tq.search(resnet, r"^aten::(conv2d|linear)$", regex=True)["total"] > found["total"]
    with pytest.raises(ValueError):
        tq.search(resnet, "(", regex=True)
    row = found["rows"][0]
    chain = [p["name"] for p in tq.parents(resnet, row)]
    assert chain[0].startswith("ProfilerStep#")


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    root = tmp_path_factory.mktemp("logdir")
    (root / "resnet").mkdir()
    shutil.copy(sample(RESNET), root / "resnet")
    cache = ParseCache(str(tmp_path_factory.mktemp("cache")))
    reg = RunRegistry(str(root), cache=cache)
    reg.scan()
    reg.load(reg.files()[0])
    return reg, cache


Q = {"run": "resnet", "worker": "worker0", "span": "1"}


@pytest.mark.corpus
def test_timeline_routes(registry):
    reg, _ = registry
    code, meta = api.timeline_meta(reg, Q)
    assert code == 200 and len(meta["tracks"]) == 6 and meta["steps"][0]["step"] == "5"
    code, doc = api.timeline(reg, dict(Q, width_px="2000"))
    assert code == 200 and {c["name"] for c in doc["counters"]} >= {"GPU 0 Utilization", "GPU 0 Memory Allocated"}
    kernel_row = next(r for t in doc["tracks"] if t["id"] == 3 for r in t["items"]["row"] if r >= 0)
    code, event = api.timeline_event(reg, dict(Q, row=str(kernel_row)))
    assert code == 200 and "grid" in event["args"] and "warps per SM" in event["args"]  # all args, not just ours
    assert event["flows"][0]["type"] == "launch" and event["flows"][0]["name"] == "cudaLaunchKernel"
    for bad in (
        dict(Q, start_us="nan"),
        dict(Q, start_us="5", end_us="1"),
        dict(Q, width_px="0"),
        dict(Q, tracks="a,b"),
    ):
        assert api.timeline(reg, bad)[0] == 400
    assert api.timeline_search(reg, dict(Q, q="(", regex="1"))[0] == 400
    assert api.timeline_event(reg, dict(Q, row="99999999"))[0] == 404


# exponential backtracking on real op names ("aten::add_", kernel names): each run of word characters
# splits in Fibonacci-many ways before "$" fails
CATASTROPHIC = r"(\w|\w\w)+$"


@pytest.mark.corpus
def test_regex_search_is_bounded_in_time_and_size(registry):
    """A catastrophic regex is a clear 400 after the 1 s bound (the regex engine's timeout; its wall time:
    benchmarks/bench_timeline.py prints it); a pattern whose counted repeats
    would unroll to gigabytes is refused before compiling; ordinary regexes, nested quantifiers and
    backreferences included, still work."""
    reg, _ = registry
    code, doc = api.timeline_search(reg, dict(Q, q=CATASTROPHIC, regex="1"))
    assert code == 400 and "took longer than 1 s" in doc["error"], doc
    code, doc = api.timeline_search(reg, dict(Q, q="(?:(?:(?:a{100}){100}){100}){100}", regex="1"))
    assert code == 400 and "too large" in doc["error"] and "100,000,000" in doc["error"], doc
    assert "too large" in api.timeline_search(reg, dict(Q, q="x{4294967295}", regex="1"))[1]["error"]
    for pattern in (r"^aten::(conv2d|linear)$", r"(a+)+$", r"(conv)\w*\1?"):
        code, doc = api.timeline_search(reg, dict(Q, q=pattern, regex="1"))
        assert code == 200 and doc["total"] > 0, (pattern, doc)
    # the same answer as the standard library's engine on every distinct name
    import re

    trace = reg.views(reg.files()[0]).trace
    code, doc = api.timeline_search(reg, dict(Q, q=r"^aten::(conv2d|linear)$", regex="1"))
    expected = int(trace.name_mask(lambda s: re.search(r"^aten::(conv2d|linear)$", s, re.I) is not None).sum())
    assert doc["total"] == expected > 0
    code, doc = api.timeline_search(reg, dict(Q, q="CONV2D"))  # substring, case-insensitive
    assert doc["total"] == int(trace.name_mask(lambda s: "conv2d" in s.lower()).sum()) > 0


@pytest.mark.corpus
def test_index_is_stored_with_the_parse_cache(registry, monkeypatch):
    reg, _ = registry
    state = reg.files()[0]
    reg.views(state).timeline_meta()  # built once and stored
    reg._loader.view_cache.clear()
    import tb_plugin.analysis.timeline as timeline

    monkeypatch.setattr(timeline, "_build", lambda trace: pytest.fail("index rebuilt instead of read from cache"))
    assert len(reg.views(state).timeline_meta()["tracks"]) == 6


@pytest.mark.corpus
def test_index_is_built_before_the_file_is_ready(tmp_path):
    """A freshly parsed file is READY only with its timeline index built and stored: the Trace view,
    opened the moment the Overview shows, never waits for it."""
    (tmp_path / "logdir" / "resnet").mkdir(parents=True)
    shutil.copy(sample(RESNET), tmp_path / "logdir" / "resnet")
    cache = ParseCache(str(tmp_path / "cache"))
    reg = RunRegistry(str(tmp_path / "logdir"), cache=cache)
    reg.scan()
    state = reg.load(reg.files()[0])
    url = reg.fs.unstrip_protocol(state.entry.path)
    assert state.state == "ready" and not state.from_cache
    assert cache.has_blob(url, state.entry.version, "timeline")
    assert "timeline_index" in reg.views(state).trace.derived


@pytest.mark.corpus
def test_a_view_being_built_does_not_block_built_ones(resnet):
    """Views are memoized under one lock per key: while the operator table is being built (seconds on
    a large trace), a request for the already built timeline metadata answers at once."""
    import threading

    from tb_plugin.registry.views import FileViews

    views = FileViews(resnet)
    meta = views.timeline_meta()
    started, release = threading.Event(), threading.Event()

    def slow_rows():
        started.set()
        assert release.wait(10)
        return []

    builder = threading.Thread(target=views._get, args=("ops:slow", slow_rows))
    builder.start()
    assert started.wait(10)
    answered = []
    reader = threading.Thread(target=lambda: answered.append(views.timeline_meta()))
    reader.start()
    reader.join(2)
    release.set()
    builder.join(10)
    assert answered and answered[0] is meta
