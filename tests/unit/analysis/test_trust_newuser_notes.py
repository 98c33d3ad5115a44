"""Notes are not warnings: events without a duration and Composer's own trainer
spans are normal content, counted in a file's ``notes`` ("about this file"); ``warnings`` keep what
changes what the user sees (events skipped, categories nothing recognizes)."""

from __future__ import annotations

import io
import json

import pytest
from conftest import sample, write_json, x

from tb_plugin import api
from tb_plugin.cli.report import run_report
from tb_plugin.registry.cache import ParseCache
from tb_plugin.registry.parse import load_trace_file
from tb_plugin.registry.runs import RunRegistry
from tb_plugin.trace.decode import decode_trace


def _kineto_like():
    """Two ops, a kernel, a flow pair, an instant and metadata: what every Kineto file holds."""
    return [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}},
        x("ProfilerStep#1", "user_annotation", 0, 100),
        x("aten::mm", "cpu_op", 10, 50),
        x("cudaLaunchKernel", "cuda_runtime", 20, 5, correlation=7),
        x("gemm", "kernel", 30, 40, pid=0, tid=7, correlation=7, device=0, stream=7),
        {"ph": "s", "id": 7, "cat": "ac2g", "name": "ac2g", "pid": 1, "tid": 1, "ts": 20},
        {"ph": "f", "id": 7, "cat": "ac2g", "name": "ac2g", "pid": 0, "tid": 7, "ts": 30, "bp": "e"},
        {"ph": "i", "cat": "cpu_instant_event", "name": "mark", "pid": 1, "tid": 1, "ts": 60, "s": "t"},
    ]


def _composer_like():
    """Composer's trainer spans: engine events (category ""), callback spans ("<event>,<Callback>")
    and dataloader spans ("dataloader"), as B/E pairs."""
    out = []
    for name, cat, ts in (
        ("event/batch", "", 0),
        ("callback/JSONTraceHandler/event/batch_start", "batch_start,JSONTraceHandler", 1),
        ("callback/SystemProfiler/event/after_dataloader", "after_dataloader,SystemProfiler", 2),
        ("dataloader/train", "dataloader", 3),
    ):
        out += [
            {"ph": "B", "cat": cat, "name": name, "pid": 0, "tid": 1, "ts": ts},
            {"ph": "E", "cat": cat, "name": name, "pid": 0, "tid": 1, "ts": ts + 0.5},
        ]
    return out


def _decode(events):
    return decode_trace(json.dumps({"traceEvents": events}).encode())


def test_events_without_duration_are_a_note_not_a_warning():
    tr = _decode(_kineto_like())
    assert tr.warnings == []
    assert tr.notes == [
        "4 events carry no duration (metadata ×1, flow start ×1, flow end ×1, instant ×1); they are not step work"
    ]


def test_composer_trainer_spans_are_recognized_and_noted():
    tr = _decode(_composer_like())
    assert tr.warnings == []
    assert tr.notes == [
        "4 Composer trainer events (engine, callback and dataloader spans); they are analysed as host (CPU) work"
    ]


def test_what_changes_the_view_is_still_a_warning():
    events = _composer_like() + [
        x("mystery", "brand_new_cat", 10, 1),
        {"ph": "B", "cat": "cpu_op", "name": "open", "pid": 1, "tid": 1, "ts": 20},
    ]
    tr = _decode(events)
    assert tr.warnings == [
        "1 events in unrecognized categories ('brand_new_cat' ×1); they are analysed as host (CPU) work",
        "1 'B' events without an 'E' and 0 'E' events without a 'B' were skipped",
    ]
    assert len(tr.notes) == 1 and tr.notes[0].startswith("4 Composer trainer events")


@pytest.mark.corpus
def test_real_composer_and_kineto_files_have_no_warnings():
    composer = load_trace_file(str(sample("composer/rank_0.trace.json")))
    assert composer.warnings == []  # before: 359 events in unrecognized categories; 54 events carry no duration
    assert composer.notes == [
        "359 Composer trainer events (engine, callback and dataloader spans); they are analysed as host (CPU) work",
        "54 events carry no duration (instant ×46, metadata ×7, counter ×1); they are not step work",
    ]
    resnet = load_trace_file(str(sample("kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz")))
    assert resnet.warnings == [] and len(resnet.notes) == 1 and "carry no duration" in resnet.notes[0]


def test_notes_reach_the_api_the_cache_and_the_cli(tmp_path):
    write_json(tmp_path / "run" / "w0.5.pt.trace.json", {"traceEvents": _kineto_like()})
    cache = ParseCache()
    for _ in range(2):  # parsed, then read back from the parse cache
        reg = RunRegistry(str(tmp_path), cache=cache)
        reg.scan()
        st = reg.load(reg.find("run", "w0", "1"))
        code, doc = api.overview(reg, {"run": "run", "worker": "w0", "span": "1"})
        assert code == 200 and doc["warnings"] == [] and doc["notes"] == st.notes and len(st.notes) == 1
        assert reg.runs_document()["runs"][0]["workers"][0]["spans"][0]["notes"] == st.notes
    assert st.from_cache
    out = io.StringIO()
    assert run_report(str(tmp_path), None, False, False, out, io.StringIO()) == 0
    text = out.getvalue()
    assert "   note: 4 events carry no duration" in text and "warning:" not in text
    out = io.StringIO()
    assert run_report(str(tmp_path), None, True, False, out, io.StringIO()) == 0
    worker = json.loads(out.getvalue())["runs"][0]["workers"][0]
    assert worker["warnings"] == [] and worker["notes"][0].startswith("4 events carry no duration")
