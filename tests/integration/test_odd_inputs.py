"""Valid but odd inputs: integers beyond 64 bits, nesting hundreds of levels deep,
lone surrogates, thousands of nested modules and allocator snapshots with a wrong type in every field
are values or per-file errors: every route answers JSON with nosniff, never a 500 page, and
``kinetoscope report --json`` prints a document, never a traceback."""

from __future__ import annotations

import copy
import io
import json
import logging
import pickle

import pytest
from conftest import loaded_registry, write_json
from werkzeug.test import Client

from tb_plugin import api, plugin
from tb_plugin.analysis.numfmt import fixed
from tb_plugin.cli.report import run_report
from tb_plugin.errors import InvalidArgumentError
from tb_plugin.registry.cache import ParseCache
from tb_plugin.registry.runs import READY, RunRegistry
from tb_plugin.trace import jsonsafe

BIG = 2**70 + 1  # beyond 64 bits: orjson refuses it
BIG_TEXT = "1180591620717411303425"


def _deep(levels: int, leaf=7):
    value = leaf
    for _ in range(levels):
        value = [value]
    return value


def _x(name, ts, dur, cat="cpu_op", **args):
    ev = {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur}
    if args:
        ev["args"] = args
    return ev


def _registry(logdir) -> RunRegistry:
    return loaded_registry(logdir, cache=ParseCache())


def _app(registry):
    """The plugin's routes around ``registry`` (loaded by the test, no background threads)."""
    p = plugin.KinetoscopePlugin.__new__(plugin.KinetoscopePlugin)
    p._registry, p._static = registry, set()
    return p.get_plugin_apps()


def _get(apps, route: str, **query):
    """``(status, JSON body)``; asserts the answer is JSON with nosniff (never an HTML page)."""
    response = Client(apps[route]).get(route, query_string=query)
    assert response.headers["Content-Type"].startswith("application/json"), response.get_data()[:200]
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    return response.status_code, json.loads(response.get_data())


def _file(run):
    return {"run": run, "worker": "w", "span": "1"}


# -- the sanitizer ------------------------------------------------------------------------------------


def test_jsonable_turns_refused_values_into_values():
    doc = {
        "big": BIG,
        "neg": -BIG,
        "u64": 2**64 - 1,
        BIG: "key",
        "s": "a\ud800b",
        "pair": "\ud83d\ude00",
        "deep": _deep(300),
        "t": (1, BIG),
    }
    out = json.loads(jsonsafe.dumps(doc))
    assert out["big"] == BIG_TEXT and out["neg"] == "-" + BIG_TEXT and out["u64"] == 2**64 - 1
    assert out[BIG_TEXT] == "key"
    assert out["s"] == "a\ufffdb" and out["pair"] == "\U0001f600"
    assert out["t"] == [1, BIG_TEXT]
    level, node = 0, out["deep"]
    while isinstance(node, list):
        level, node = level + 1, node[0]
    assert node == jsonsafe.DEEP_MARKER and 1 + level == jsonsafe.MAX_DEPTH  # the root dict and 199 lists
    # what the parse cache reads back, for values a parse keeps
    assert jsonsafe.clean({"a": (1, float("nan")), 2: BIG, None: 1}) == {"a": [1, None], "2": BIG_TEXT, "null": 1}


# -- the route layer ----------------------------------------------------------------------------------


@pytest.fixture
def small(tmp_path):
    write_json(tmp_path / "r" / "w.1.pt.trace.json", {"traceEvents": [_x("aten::mm", 0, 10)]})
    return _registry(tmp_path)


def test_an_unexpected_exception_is_a_json_500_logged_once(small, monkeypatch, caplog):
    def broken(registry, args):
        raise RuntimeError("boom \ud800")

    monkeypatch.setattr(api, "modules", broken)
    monkeypatch.setattr(small, "runs_document", lambda: (_ for _ in ()).throw(KeyError("runs")))
    apps = _app(small)
    with caplog.at_level(logging.ERROR, logger="tb_plugin.plugin"):
        status, doc = _get(apps, "/modules", **_file("r"))
    assert status == 500
    assert doc == {"error": "internal error computing this view: RuntimeError: boom \ufffd"}
    records = [r for r in caplog.records if r.name == "tb_plugin.plugin"]
    assert len(records) == 1 and records[0].exc_info is not None
    status, doc = _get(apps, "/runs")  # a route outside the table routes is guarded too
    assert status == 500 and doc["error"] == "internal error computing this view: KeyError: 'runs'"


def test_a_bad_parameter_that_escapes_a_route_is_a_400(small, monkeypatch):
    def strict(registry, args):
        raise InvalidArgumentError("parameter 'x' is odd")

    monkeypatch.setattr(api, "insights", strict)
    assert _get(_app(small), "/insights", **_file("r")) == (400, {"error": "parameter 'x' is odd"})


# -- trace files --------------------------------------------------------------------------------------


def test_timeline_event_with_a_big_integer_and_deep_nesting_in_args(tmp_path):
    write_json(
        tmp_path / "a" / "w.1.pt.trace.json",
        {"traceEvents": [_x("big", 0, 10, Big=BIG, Neg=-BIG), _x("deep", 20, 10, Deep=_deep(300))]},
    )
    apps = _app(_registry(tmp_path))
    status, doc = _get(apps, "/timeline_event", row=0, **_file("a"))
    assert status == 200 and doc["name"] == "big"
    assert doc["args"]["Big"] == BIG_TEXT and doc["args"]["Neg"] == "-" + BIG_TEXT
    status, doc = _get(apps, "/timeline_event", row=1, **_file("a"))
    assert status == 200 and doc["name"] == "deep"
    level, node = 0, doc["args"]["Deep"]
    while isinstance(node, list):
        level, node = level + 1, node[0]
    assert node == jsonsafe.DEEP_MARKER and level > 150  # shown truncated, not refused


@pytest.mark.parametrize(
    "top",
    [
        {"distributedInfo": {"backend": "nccl", "rank": 0, "world_size": BIG}},
        {"deviceProperties": [{"id": 0, "name": "GPU-X", "totalGlobalMem": BIG, "numSms": 132}]},
        {"baseTimeNanoseconds": BIG},
        {"M": {"ph": "M", "name": "clock_sync_timestamp_us", "pid": 1, "args": {"value": BIG}}},
    ],
    ids=["distributedInfo", "deviceProperties", "baseTimeNanoseconds", "M"],
)
def test_big_integers_at_the_top_of_a_trace_are_values(tmp_path, top):
    events = [_x("aten::mm", 0, 10)] + ([top.pop("M")] if "M" in top else [])
    write_json(tmp_path / "t" / "w.1.pt.trace.json", dict(top, traceEvents=events))
    for attempt in ("parsed", "from the cache"):
        reg = _registry(tmp_path)
        st = reg.files()[0]
        assert st.state == READY, (attempt, st.error)
        assert st.from_cache == (attempt == "from the cache")
        apps = _app(reg)
        status, overview = _get(apps, "/overview", **_file("t"))
        status_meta, meta = _get(apps, "/timeline_meta", **_file("t"))
        assert status == status_meta == 200
        trace = reg.views(st).trace
        if "distributedInfo" in top:
            assert overview["configuration"]["distributed"] == {"backend": "nccl", "rank": 0, "world_size": BIG_TEXT}
        if "deviceProperties" in top:
            (device,) = trace.devices
            assert (device.name, device.num_sms, device.memory_bytes) == ("GPU-X", 132, None)  # no such memory size
        if "baseTimeNanoseconds" in top:
            assert meta["base_time_ns"] == BIG_TEXT and meta["clock"] == "raw"
        if "ph" in str(events[-1]) and events[-1]["ph"] == "M":
            assert trace.meta["metadata_values"] == {"clock_sync_timestamp_us": BIG_TEXT}
            assert meta["clock"] == "raw"


def test_modules_on_3000_nested_module_calls(tmp_path, caplog):
    from tb_plugin.analysis.modules import MAX_DEPTH

    n = 3000
    modules = [_x(f"nn.Module: M_{i}", i, 10_000 - 2 * i, cat="python_function") for i in range(n)]
    write_json(tmp_path / "m" / "w.1.pt.trace.json", {"traceEvents": modules + [_x("aten::mm", 2_999.5, 1)]})
    reg = _registry(tmp_path)
    status, doc = _get(_app(reg), "/modules", **_file("m"))
    assert status == 200
    node, depth = doc["modules"][0], 1
    assert node["name"] == "M_0" and node["host_total_us"] == 10_000
    while node["children"]:
        (node,) = node["children"]
        depth += 1
    assert depth == MAX_DEPTH and node["name"] == f"M_{MAX_DEPTH - 1}"
    assert node["folded_calls"] == n - MAX_DEPTH  # every deeper call, counted on its depth-100 ancestor
    assert node["occurrences"] == 1 and node["host_total_us"] == 10_000 - 2 * (MAX_DEPTH - 1)
    assert node["host_self_us"] == node["host_total_us"] and node["operators"] == 1  # aten::mm is inside M_2999
    out, err = io.StringIO(), io.StringIO()
    assert run_report(str(tmp_path), None, True, True, out, err) == 0
    report = json.loads(out.getvalue())
    assert report["runs"][0]["workers"][0]["modules"][0]["name"] == "M_0"
    assert "Traceback" not in err.getvalue() and not [r for r in caplog.records if r.exc_info]  # nor logged


def test_diff_with_odd_paths(tmp_path):
    write_json(tmp_path / "d" / "w.1.pt.trace.json", {"traceEvents": [_x("aten::mm", 0, 10)]})
    apps = _app(_registry(tmp_path))
    sides = {f"{side}_{k}": v for side in ("base", "exp") for k, v in _file("d").items()}
    assert _get(apps, "/diff", path='["\\ud800"]', **sides) == (
        400,
        {"error": "parameter 'path' holds a lone surrogate (not text)"},
    )
    bad = (400, {"error": "parameter 'path' must be a JSON list of operator names"})
    assert _get(apps, "/diff", path="[" * 5000 + "]" * 5000, **sides) == bad
    assert _get(apps, "/diff", path=json.dumps([[[]]]), **sides) == bad
    status, doc = _get(apps, "/diff", path='["aten::mm"]', **sides)
    assert status == 200 and doc["path"] == ["aten::mm"]


# -- memory artifacts ---------------------------------------------------------------------------------


def test_memprofiler_yaml_with_a_big_integer(tmp_path, caplog):
    (tmp_path / "mp").mkdir()
    (tmp_path / "mp" / "rank_0_memory_stats.yaml").write_text(
        f"0.training_step.2.start:\n  allocated_bytes.all.peak: {BIG}\n  rss: 5\n  vms: {10**400}\n"
        f"0.training_step.{'9' * 30}.end:\n  rss: 6\n"
    )
    reg = RunRegistry(str(tmp_path), cache=ParseCache())
    reg.scan()
    status, doc = _get(_app(reg), "/memprofiler_stats", run="mp", path="mp/rank_0_memory_stats.yaml")
    assert status == 200, doc
    first, second = doc["snapshots"]
    assert first["values"] == {"allocated_bytes.all.peak": float(BIG), "rss": 5}  # a number, for the charts
    assert second["iteration"] == "9" * 30 and second["values"] == {"rss": 6}
    assert doc["warnings"] == ["skipped 1 values that are not numbers"]  # 10**400 is beyond a float
    out, err = io.StringIO(), io.StringIO()
    assert run_report(str(tmp_path), None, True, True, out, err) == 0
    (item,) = json.loads(out.getvalue())["runs"][0]["memprofiler"]
    assert item["error"] is None and item["snapshots"][0]["values"]["allocated_bytes.all.peak"] == float(BIG)
    text = io.StringIO()
    assert run_report(str(tmp_path), None, False, True, text, io.StringIO()) == 0
    assert f"peak allocated {fixed(float(BIG) / 2**30, 2)} GiB" in text.getvalue()
    assert not [r for r in caplog.records if r.exc_info]


FRAME = {"filename": "model.py", "line": 3, "name": "forward"}
BASE_SNAPSHOT = {
    "segments": [
        {
            "device": 0,
            "address": 4096,
            "total_size": 2048,
            "stream": 0,
            "segment_type": "large",
            "blocks": [
                {"address": 4096, "size": 512, "requested_size": 500, "state": "active_allocated", "frames": [FRAME]},
                {"size": 1536, "state": "inactive", "frames": []},
            ],
        }
    ],
    "device_traces": [
        [
            {"action": "segment_alloc", "addr": 4096, "size": 2048, "time_us": 1, "frames": [FRAME]},
            {"action": "alloc", "addr": 4096, "size": 512, "time_us": 2, "frames": [FRAME]},
            {"action": "free_completed", "addr": 4096, "size": 512, "time_us": 3, "frames": []},
            {"action": "oom", "addr": 0, "size": 99, "time_us": 4, "frames": []},
        ]
    ],
    "external_annotations": [{"stage": "forward", "time_us": 1}],
}
HOSTILE = ["text", [], {}, BIG, -BIG, None, 1.5, float("nan"), True, [1, "y"], {"a": BIG}, _deep(40)]


def hostile_snapshots():
    """``(name, object)``: the valid snapshot above with one field replaced by one hostile value, for
    every field at every level (top, segment, block, frame, history entry) and every value of HOSTILE."""

    def variant(edit):
        snap = copy.deepcopy(BASE_SNAPSHOT)
        edit(snap)
        return snap

    segment = lambda s: s["segments"][0]
    entries = lambda s: s["device_traces"][0]
    for i, v in enumerate(HOSTILE):
        for key in ("segments", "device_traces", "external_annotations", "user_metadata"):
            yield f"{i}.{key}", variant(lambda s: s.__setitem__(key, v))
        for key in ("device", "address", "total_size", "stream", "segment_type", "blocks"):
            yield f"{i}.segment.{key}", variant(lambda s: segment(s).__setitem__(key, v))
        yield f"{i}.segment", variant(lambda s: s["segments"].__setitem__(0, v))
        for b in (0, 1):
            for key in ("address", "size", "requested_size", "state", "frames"):
                yield f"{i}.block{b}.{key}", variant(lambda s: segment(s)["blocks"][b].__setitem__(key, v))
            yield f"{i}.block{b}", variant(lambda s: segment(s)["blocks"].__setitem__(b, v))
        for key in ("filename", "line", "name"):
            yield (
                f"{i}.block_frame.{key}",
                variant(lambda s: segment(s)["blocks"][0].__setitem__("frames", [dict(FRAME, **{key: v})])),
            )
            yield (
                f"{i}.entry_frame.{key}",
                variant(lambda s: entries(s)[1].__setitem__("frames", [dict(FRAME, **{key: v})])),
            )
        yield f"{i}.entry_frame", variant(lambda s: entries(s)[1].__setitem__("frames", [v]))
        for e in range(4):
            for key in ("action", "addr", "size", "time_us", "frames"):
                yield f"{i}.entry{e}.{key}", variant(lambda s: entries(s)[e].__setitem__(key, v))
            yield f"{i}.entry{e}", variant(lambda s: entries(s).__setitem__(e, v))
        yield f"{i}.device_trace", variant(lambda s: s["device_traces"].__setitem__(0, v))
        yield f"{i}.every_entry", variant(lambda s: s["device_traces"].__setitem__(0, [v, v, v]))
        yield f"{i}.whole", v
        yield f"{i}.segments_only", [v]


SNAPSHOT_ROUTES = (
    "/snapshot",
    "/snapshot_timeline",
    "/snapshot_segments",
    "/snapshot_allocations",
    "/snapshot_stack",
    "/snapshot_oom",
    "/snapshot_ranks",
    "/snapshot_attribution",
)


def test_hostile_snapshots_are_values_or_per_file_errors(tmp_path, caplog):
    run = tmp_path / "snaps"
    run.mkdir()
    names = {}
    for n, (name, obj) in enumerate(hostile_snapshots()):
        (run / f"s{n:04d}.pickle").write_bytes(pickle.dumps(obj))
        names[f"snaps/s{n:04d}.pickle"] = name
    assert len(names) > 600
    answers = {}
    for attempt in ("parsed", "from the cache"):
        reg = RunRegistry(str(tmp_path), cache=ParseCache())
        reg.scan()
        apps = _app(reg)
        for path, name in names.items():
            for route in SNAPSHOT_ROUTES:
                status, doc = _get(apps, route, run="snaps", path=path)
                assert status in (200, 400, 404), (name, route, status, doc)
                assert "internal error" not in str(doc.get("error")), (name, route, doc)
                if attempt == "parsed":
                    answers[path, route] = (status, doc)
                else:
                    assert answers[path, route] == (status, doc), (name, route)
    errors = {names[p] for (p, route), (_, doc) in answers.items() if doc.get("state") == "error"}
    assert errors and all(name.endswith((".whole", ".segments", ".device_traces")) for name in errors)
    out, err = io.StringIO(), io.StringIO()
    assert run_report(str(tmp_path), None, True, True, out, err) == 1  # the not-a-snapshot files fail
    assert "Traceback" not in err.getvalue() and not [r for r in caplog.records if r.exc_info]  # nor logged
    items = json.loads(out.getvalue())["runs"][0]["snapshots"]
    assert len(items) == len(names)
    assert {names[i["path"]] for i in items if i["error"]} == errors
    assert all("internal error" not in (i["error"] or "") for i in items)


def _snapshot_app(tmp_path, edit):
    snap = copy.deepcopy(BASE_SNAPSHOT)
    edit(snap)
    (tmp_path / "s").mkdir(exist_ok=True)
    (tmp_path / "s" / "one.pickle").write_bytes(pickle.dumps(snap))
    reg = RunRegistry(str(tmp_path), cache=ParseCache())
    reg.scan()
    return _app(reg), {"run": "s", "path": "s/one.pickle"}


def test_snapshot_values_of_the_wrong_type(tmp_path):
    def edit(s):
        seg = s["segments"][0]
        seg["stream"], seg["segment_type"], seg["total_size"] = BIG, ["large"], "2048"
        seg["blocks"][0]["size"] = BIG  # no block is that large: read as 0
        seg["blocks"][0]["frames"] = [dict(FRAME, line=BIG, name=["f"])]
        s["device_traces"][0][1]["size"] = "lots"

    apps, where = _snapshot_app(tmp_path, edit)
    status, doc = _get(apps, "/snapshot_segments", **where)
    assert status == 200
    (seg,) = doc["segments"]
    assert (seg["stream"], seg["segment_type"], seg["total_size"]) == (BIG_TEXT, None, 2048)
    assert [b["size"] for b in seg["blocks"]] == [0, 1536]
    assert seg["blocks"][1]["address"] == 4096  # follows the block before it (size 0)
    status, doc = _get(apps, "/snapshot_stack", stack=seg["blocks"][0]["stack"], **where)
    assert status == 200 and doc["frames"] == [{"filename": "model.py", "line": BIG_TEXT, "name": "['f']"}]


def test_snapshot_timeline_with_non_dict_entries(tmp_path):
    def edit(s):
        s["device_traces"][0][2:2] = [1, "free", None, ["alloc"]]
        s["device_traces"].append(["x", 2, None])  # device 1: nothing but non-dict entries: no history

    apps, where = _snapshot_app(tmp_path, edit)
    status, doc = _get(apps, "/snapshot_timeline", width_px=4, **where)
    assert status == 200 and doc["device"] == "GPU0"
    # the dict entries alone (times from the first, 1 µs): the block live before the history (500 requested
    # bytes), plus the alloc of 512 at 1 µs freed at 2 µs
    assert doc["active_bytes"] == [500, 1012, 1012, 500] and doc["reserved_bytes"] == [2048] * 4
    assert _get(apps, "/snapshot_timeline", device="1", **where) == (
        400,
        {"error": "no history for device 1; recorded: [0]"},
    )


def test_report_json_turns_a_failing_artifact_into_its_error(tmp_path, monkeypatch):
    """An exception while summarising one MemProfiler file is that file's error in ``report --json``."""
    from tb_plugin.registry import artifact_views

    (tmp_path / "mp").mkdir()
    for rank in (0, 1):
        (tmp_path / "mp" / f"rank_{rank}_memory_stats.yaml").write_text("0.training_step.2.start:\n  rss: 5\n")
    real = artifact_views.MemProfilerStatsViews.stats

    def stats(self):
        if self.data["rank"] == 1:
            raise ValueError("odd")
        return real(self)

    monkeypatch.setattr(artifact_views.MemProfilerStatsViews, "stats", stats)
    out, err = io.StringIO(), io.StringIO()
    assert run_report(str(tmp_path), None, True, True, out, err) == 1
    good, bad = json.loads(out.getvalue())["runs"][0]["memprofiler"]
    assert good["error"] is None and good["snapshots"][0]["values"] == {"rss": 5}
    assert bad == {
        "path": "mp/rank_1_memory_stats.yaml",
        "kind": "memprofiler_stats",
        "error": "internal error while reporting this file: ValueError: odd",
    }
    assert "mp/rank_1_memory_stats.yaml: internal error while reporting this file" in err.getvalue()
