"""The decoder: every real format, and every kind of bad input, with exact values."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from conftest import sample

from tb_plugin.registry.parse import load_trace_file
from tb_plugin.trace.categories import Kind
from tb_plugin.trace.decode import decode_trace
from tb_plugin.trace.errors import TraceReadError


def _kinds(trace):
    return {Kind(k).name: int(n) for k, n in zip(*np.unique(trace.events.kind, return_counts=True))}


@pytest.mark.corpus
def test_kineto_2021_resnet_columns():
    tr = load_trace_file(str(sample("kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz")))
    kinds = _kinds(tr)
    assert kinds["CPU_OP"] == 23646 - 0 or kinds["CPU_OP"] > 20000
    assert kinds["KERNEL"] == 8772 and kinds["MEMSET"] == 312 and kinds["MEMCPY"] == 12
    assert len(tr.memory) == 12838  # [memory] instants; the 2 other instants are not memory
    assert tr.meta["trace_format"] == "kineto-2021"
    assert tr.devices[0].name == "Tesla V100-DGXS-32GB" and tr.devices[0].num_sms == 80
    # "external id" (2021 lowercase spelling) is read into the same column as "External id"
    runtime = tr.events.kind == Kind.RUNTIME
    assert (tr.events.external_id[runtime] >= 0).mean() > 0.99
    assert np.all(np.diff(tr.events.ts) >= 0)  # rows are sorted by start time


@pytest.mark.corpus
def test_pytorch2_h100_categories_and_driver_launch():
    tr = load_trace_file(str(sample("tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")))
    kinds = _kinds(tr)
    assert kinds["KERNEL"] == 1465 and kinds["RUNTIME"] == 1921 and kinds["DRIVER"] == 1
    assert kinds["PYTHON_FUNCTION"] == 4262 and kinds["GPU_USER_ANNOTATION"] == 1
    assert tr.meta["trace_format"] == "pytorch-2.x"
    assert tr.meta["baseTimeNanoseconds"] == 1751410836000000000


@pytest.mark.corpus
def test_older_compute_properties_layout():
    tr = load_trace_file(str(sample("kineto/gpu_metrics_input.json")))
    dev = tr.device_info(0)
    assert (dev.compute_major, dev.compute_minor, dev.num_sms) == (7, 0, 80)


@pytest.mark.corpus
def test_ns_resolution_float_timestamps():
    tr = load_trace_file(str(sample("hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz")))
    # float64 keeps these epoch-µs stamps to within 0.25 µs (their ulp); sub-µs parts survive
    assert np.min(np.abs(tr.events.ts - 1712195495519689.047)) <= 0.25
    assert np.any(tr.events.ts != np.round(tr.events.ts))
    assert np.any(tr.events.dur != np.round(tr.events.dur))  # sub-µs durations survive


def test_string_timestamps_and_string_pids():
    doc = {
        "traceEvents": [
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "aten::mm",
                "pid": "host",
                "tid": "main",
                "ts": "1000.5",
                "dur": "2.25",
            },
            {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 7, "tid": 7, "ts": 1003, "dur": 1},
        ]
    }
    tr = decode_trace(__import__("json").dumps(doc).encode())
    assert list(tr.events.ts) == [1000.5, 1003.0]
    assert list(tr.events.dur) == [2.25, 1.0]
    assert tr.strings[tr.events.pid[0]] == "host"
    assert any("string 'pid'" in w for w in tr.warnings)


def test_extra_top_level_keys_after_trace_events():
    body = (
        b'{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":2,"args":{"device":0}}],'
        b'"traceName":"x","deviceProperties":[{"id":0,"name":"G","numSms":10}],"someNewKey":{"a":[1,2]}}'
    )
    tr = decode_trace(body)
    assert len(tr.events) == 1 and tr.devices[0].name == "G" and tr.meta["traceName"] == "x"


def test_array_form_without_closing_bracket_is_recovered():
    body = b'[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":5},\n{"ph":"X","name":"b","pid":1,"tid":1,"ts":2,"dur":1},\n'
    tr = decode_trace(body)
    assert len(tr.events) == 2
    assert any("cut off" in w and "recovered 2" in w for w in tr.warnings)


def test_array_form_cut_mid_event_keeps_complete_events():
    body = (
        b'[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":5,"args":{"x":{"y":1}}},{"ph":"X","name":"b","pid":1,"ti'
    )
    tr = decode_trace(body)
    assert [tr.strings[i] for i in tr.events.name] == ["a"]


def test_begin_end_pairs_nest_per_thread():
    events = [
        {"ph": "B", "name": "outer", "pid": 1, "tid": 1, "ts": 10},
        {"ph": "B", "name": "inner", "pid": 1, "tid": 1, "ts": 12},
        {"ph": "B", "name": "other-thread", "pid": 1, "tid": 2, "ts": 13},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 15},
        {"ph": "E", "pid": 1, "tid": 2, "ts": 30},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 20},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 25},  # unmatched
    ]
    tr = decode_trace(__import__("json").dumps(events).encode())
    got = {tr.strings[n]: (t, d) for n, t, d in zip(tr.events.name, tr.events.ts, tr.events.dur)}
    assert got == {"outer": (10, 10), "inner": (12, 3), "other-thread": (13, 17)}
    assert any("0 'B' events without an 'E' and 1 'E' events" in w for w in tr.warnings)


def test_unknown_category_and_missing_cat_are_warnings_not_errors():
    events = [
        {"ph": "X", "cat": "brand_new_cat", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1},
        {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 2, "dur": 1},
        {"ph": "X", "cat": "cpu_op", "name": "c", "pid": 1, "tid": 1, "ts": 3},
        {"ph": "i", "name": "instant", "pid": 1, "tid": 1, "ts": 3},
    ]
    tr = decode_trace(__import__("json").dumps({"traceEvents": events}).encode())
    text = " | ".join(tr.warnings)
    assert "'brand_new_cat' ×1" in text
    assert "1 duration events have no 'cat'" in text
    assert "1 complete ('X') events had no 'dur'" in text
    assert "instant ×1" not in text and "instant ×1" in " | ".join(tr.notes)  # normal content: a note
    assert len(tr.events) == 3


def test_odd_typed_args_do_not_fail_the_file():
    events = [
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": ["not", "a", "dict"]},
        {
            "ph": "X",
            "cat": "kernel",
            "name": "k2",
            "pid": 0,
            "tid": 7,
            "ts": 3,
            "dur": 2,
            "args": {"device": "0", "grid": "x"},
        },
    ]
    tr = decode_trace(__import__("json").dumps({"traceEvents": events}).encode())
    assert len(tr.events) == 2
    assert list(tr.events.device) == [0, 0]  # pid fallback, then the numeric string
    assert [tr.strings[i] for i in tr.events.grid.tolist()] == ["", "x"]  # a grid that is no list: its text
    assert any("malformed 'args'" in w for w in tr.warnings)


@pytest.mark.parametrize(
    "body, message",
    [
        (b"", r"empty \(0 bytes\)"),
        (b'{"traceEvents": [ {"ph": "X", ', "invalid JSON"),
        (b'{"foo": 1}', "no 'traceEvents'"),
        (b'{"traceEvents": 5}', "not a list"),
        (b"42", "not a JSON trace"),
        (b"   \n ", "only whitespace"),
        (b"<html>hello</html>", "not a JSON trace"),
    ],
)
def test_unreadable_files_fail_with_a_clear_message(tmp_path, body, message):
    path = tmp_path / "bad.pt.trace.json"
    path.write_bytes(body)
    with pytest.raises(TraceReadError, match=message):
        load_trace_file(str(path))


@pytest.mark.corpus
def test_truncated_gzip_fails_clearly(tmp_path):
    data = gzip.compress(sample("kineto/gpu_metrics_input.json").read_bytes())
    path = tmp_path / "cut.pt.trace.json.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceReadError, match="gzip stream is truncated"):
        load_trace_file(str(path))


def test_corrupt_gzip_fails_clearly(tmp_path):
    data = bytearray(gzip.compress(b'{"traceEvents": []}' * 100))
    data[20:40] = b"\xff" * 20
    path = tmp_path / "bad.pt.trace.json.gz"
    path.write_bytes(bytes(data))
    with pytest.raises(TraceReadError, match="gzip"):
        load_trace_file(str(path))


def test_random_bytes_named_gz_fail_as_not_gzip(tmp_path):
    path = tmp_path / "random2.pt.trace.json.gz"
    path.write_bytes(bytes([0xD3, 0x5A]) + bytes(range(256)) * 4)
    with pytest.raises(
        TraceReadError, match=r"^not gzip: the file is named \.gz but starts with bytes d3 5a, not the gzip magic 1f 8b"
    ):
        load_trace_file(str(path))


def test_plain_json_named_gz_still_loads(tmp_path):
    path = tmp_path / "misnamed.pt.trace.json.gz"
    path.write_bytes(b' {"traceEvents": [{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":5}]}')
    assert len(load_trace_file(str(path)).events) == 1


def test_concatenated_gzip_members_are_read(tmp_path):
    body = b'{"traceEvents": [{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":5}]}'
    path = tmp_path / "two.pt.trace.json.gz"
    path.write_bytes(gzip.compress(body[:20]) + gzip.compress(body[20:]))
    assert len(load_trace_file(str(path)).events) == 1


@pytest.mark.corpus
def test_every_shared_sample_trace_loads():
    files = [p for p in sample(".").rglob("*.json*") if "memory_analysis" not in str(p)]
    assert len(files) >= 30
    for p in files:
        tr = load_trace_file(str(p))
        assert len(tr.events) > 0, p


@pytest.mark.corpus
def test_progress_reaches_one(tmp_path):
    seen = []
    load_trace_file(str(sample("kineto/gpu_metrics_input.json")), progress=seen.append)
    assert seen[-1] == pytest.approx(1.0) and seen == sorted(seen)
