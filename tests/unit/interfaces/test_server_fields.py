"""Fields that make the server the only source of what the UI shows: exact range statistics
of the timeline, has_memory / has_modules in ``runs``, diff thresholds, the distributed reason code and
per-rank devices in ``distributed``."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from conftest import REPO, diff_query, loaded_registry, sample

from tb_plugin import api
from tb_plugin.analysis import timeline_query as tq
from tb_plugin.analysis.diff import CHANGE_PCT, CHANGE_US
from tb_plugin.analysis.timeline_range import range_stats
from tb_plugin.registry.parse import load_trace_file
from tb_plugin.registry.runs import RunRegistry
from tb_plugin.trace.decode import decode_trace

RESNET = "kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"


def _ev(name, ts, dur, tid=1):
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur}


def test_range_statistics_known_answer():
    events = [_ev("a", 0, 10), _ev("b", 5, 10), _ev("a", 20, 4), _ev("c", 40, 2, tid=2), _ev("a", 100, 1)]
    trace = decode_trace(json.dumps({"traceEvents": events}).encode())
    got = range_stats(trace, 8, 22)  # a [0,10] 2 µs, b [5,15] 7 µs, a [20,24] 2 µs; c and the last a outside
    assert (got["count"], got["total_us"], got["names"], got["duration_us"]) == (3, 11.0, 2, 14)
    assert got["top"] == [{"name": "b", "count": 1, "total_us": 7.0}, {"name": "a", "count": 2, "total_us": 4.0}]
    assert range_stats(trace, 22, 8) == got  # the order of the ends does not matter
    assert range_stats(trace, 10, 10)["count"] == 2  # touching counts: a ends at 10, b covers it
    track_of_c = {t["name"]: t["id"] for t in tq.tracks_meta(trace)}
    only_c = range_stats(trace, 0, 200, {max(track_of_c.values())})
    assert only_c["top"] == [{"name": "c", "count": 1, "total_us": 2.0}]
    assert range_stats(trace, 0, 200, top=1)["top"] == [{"name": "a", "count": 3, "total_us": 15.0}]


@pytest.fixture(scope="module")
def resnet():
    return load_trace_file(str(sample(RESNET)))


@pytest.mark.corpus
@pytest.mark.parametrize("t0, t1", [(72_000, 72_300), (0, 5_000_000), (400_000, 400_900)])
def test_range_statistics_equal_a_direct_computation_on_the_events(resnet, t0, t1):
    ev = resnet.events
    start = ev.ts - tq.origin(resnet)
    end = start + np.maximum(ev.dur, 0)
    rows = np.flatnonzero((end >= t0) & (start <= t1))
    clipped = np.minimum(end[rows], t1) - np.maximum(start[rows], t0)
    by_name: dict[str, list] = {}
    for r, c in zip(rows.tolist(), clipped.tolist()):  # the slow obvious way, event by event
        entry = by_name.setdefault(resnet.strings[ev.name[r]], [0, 0.0])
        entry[0] += 1
        entry[1] += c
    got = range_stats(resnet, t0, t1, top=1000)
    assert got["count"] == len(rows) > 0 and got["names"] == len(by_name)
    assert got["total_us"] == pytest.approx(float(clipped.sum()), rel=1e-12)
    for row in got["top"]:
        assert (row["count"], row["total_us"]) == (by_name[row["name"]][0], pytest.approx(by_name[row["name"]][1]))


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    root = tmp_path_factory.mktemp("logdir")
    (root / "resnet").mkdir()
    shutil.copy(sample(RESNET), root / "resnet")
    (root / "bert").mkdir()
    shutil.copy(
        sample("tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz"), root / "bert" / "w.1.pt.trace.json.gz"
    )
    (root / "cpu").mkdir()
    (root / "cpu" / "w.pt.trace.json").write_text(json.dumps({"traceEvents": [_ev("aten::add", 0, 5)]}))
    reg = RunRegistry(str(root))
    reg.scan()
    return reg


@pytest.mark.corpus
def test_timeline_range_route(registry):
    q = {"run": "resnet", "worker": "worker0", "span": "1"}
    registry.load(registry.find("resnet", "worker0", "1"))
    code, doc = api.timeline_range(registry, dict(q, start_us="72000", end_us="72300", top="5"))
    assert code == 200 and doc["state"] == "ready" and len(doc["top"]) == 5
    trace = registry.views(registry.find("resnet", "worker0", "1")).trace
    assert {k: v for k, v in doc.items() if k != "state"} == range_stats(trace, 72000, 72300, None, 5)
    code, tracks = api.timeline_range(registry, dict(q, start_us="0", end_us="1e7", tracks="3"))
    assert code == 200 and tracks["count"] > 0
    assert {k: v for k, v in tracks.items() if k != "state"} == range_stats(trace, 0, 1e7, {3}, 10)
    assert tracks["count"] < range_stats(trace, 0, 1e7, None, 10)["count"]  # one track is fewer events
    for bad in (
        dict(q, start_us="0"),
        dict(q, start_us="x", end_us="1"),
        dict(q, start_us="0", end_us="1", top="-1"),
        dict(q, start_us="0", end_us="1", tracks="a"),
    ):
        assert api.timeline_range(registry, bad)[0] == 400


@pytest.mark.corpus
def test_runs_say_which_files_have_memory_and_modules(registry):
    for st in registry.files():
        registry.load(st)
    spans = {r["name"]: r["workers"][0]["spans"][0] for r in api.runs(registry)[1]["runs"]}
    assert (spans["resnet"]["has_memory"], spans["resnet"]["has_modules"]) == (True, False)
    assert (spans["bert"]["has_memory"], spans["bert"]["has_modules"]) == (True, True)
    assert (spans["cpu"]["has_memory"], spans["cpu"]["has_modules"]) == (False, False)
    for run, span in spans.items():  # each flag agrees with the route it stands for
        q = {"run": run, "worker": "w" if run != "resnet" else "worker0", "span": "1"}
        assert (len(api.memory(registry, q)[1]["devices"]) > 0) == span["has_memory"], run
        assert (api.modules(registry, q)[1]["modules"] is not None) == span["has_modules"], run


def test_runs_flags_are_null_before_loading(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "w.pt.trace.json").write_text(json.dumps({"traceEvents": [_ev("x", 0, 1)]}))
    reg = RunRegistry(str(tmp_path))
    reg.scan()
    span = reg.runs_document()["runs"][0]["workers"][0]["spans"][0]
    assert span["state"] in ("queued", "loading") and (span["has_memory"], span["has_modules"]) == (None, None)


@pytest.mark.corpus
def test_diff_sends_its_thresholds_and_what_each_verdict_compared(tmp_path):
    nw0 = "kineto/resnet50_num_workers_0"
    shutil.copytree(sample(nw0), tmp_path / "a")
    shutil.copytree(sample("kineto/resnet50_num_workers_4"), tmp_path / "b")
    reg = loaded_registry(tmp_path)
    q = diff_query("a", "b")
    code, doc = api.diff(reg, q)
    assert code == 200 and doc["thresholds"] == {"change_pct": CHANGE_PCT, "change_us": CHANGE_US} == {
        "change_pct": 5.0,
        "change_us": 10.0,
    }
    for op in doc["operators"]:  # one quantity (host total) decides every verdict
        assert op["compared"] == "host_total_us" and op["change_us"] == op["delta"]["host_total_us"]
        if op["status"] in ("faster", "slower"):
            d = op["change_us"]
            assert abs(d) > CHANGE_US and abs(op["change_pct"]) > CHANGE_PCT and (d > 0) == (op["status"] == "slower")


@pytest.mark.corpus
def test_distributed_reason_codes_and_rank_devices(tmp_path):
    shutil.copytree(sample("dlrm_8ranks"), tmp_path / "job")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "empty.pt.trace.json").write_bytes(b"")
    (tmp_path / "bad" / "junk.pt.trace.json").write_bytes(b"<html>")
    (tmp_path / "one").mkdir()
    shutil.copy(sample("dlrm_8ranks/worker0_step_12.1694128201545.pt.trace.json"), tmp_path / "one")
    reg = RunRegistry(str(tmp_path))
    reg.scan()
    assert api.distributed(reg, {"run": "bad"})[1]["reason_code"] == "ranks_failed"
    assert api.distributed(reg, {"run": "bad", "span": "2"})[1]["reason_code"] == "no_file"
    assert api.distributed(reg, {"run": "one"})[1]["reason_code"] == "one_file"
    code, doc = api.distributed(reg, {"run": "job"})
    assert code == 200 and doc["reason_code"] is None and len(doc["view"]["ranks"]) == 8
    for rank in doc["view"]["ranks"]:
        code, overview = api.overview(reg, {"run": "job", "worker": rank["worker"], "span": "1"})
        assert code == 200 and overview["state"] == "ready"
        assert rank["gpus"] == overview["gpus"] and rank["gpus"]  # one definition: the Overview's rows
        assert rank["distributed"] == overview["configuration"]["distributed"]
        assert rank["distributed"]["rank"] == rank["rank"]


def test_single_rank_without_distributed_info_is_a_note(tmp_path):
    """One rank is compared with nothing: how its rank was read is a note, not a warning; with two
    ranks the same text is a warning again."""
    (tmp_path / "one").mkdir()
    shutil.copy(str(next((REPO / "samples" / "synthetic_resnet").glob("*.pt.trace.json.gz"))), tmp_path / "one")
    (tmp_path / "two").mkdir()
    for w in ("a", "b"):
        (tmp_path / "two" / f"{w}.1.pt.trace.json").write_text(
            json.dumps(
                {
                    "traceEvents": [
                        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 0, "dur": 5}
                    ]
                }
            )
        )
    reg = RunRegistry(str(tmp_path))
    reg.scan()
    code, doc = api.distributed(reg, {"run": "one"})
    assert code == 200 and doc["reason_code"] == "one_file"
    assert doc["messages"] == [] and doc["notes"] == ["worker0: no distributedInfo; rank 0 taken from the position"]
    code, doc = api.distributed(reg, {"run": "two"})
    assert "notes" not in doc and doc["messages"][:2] == [
        "a: no distributedInfo; rank 0 taken from the position",
        "b: no distributedInfo; rank 1 taken from the position",
    ]
