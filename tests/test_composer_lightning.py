"""Composer and Lightning traces: steps from engine events, trainer events, counters, old exports."""

from __future__ import annotations

import json

import pytest

from conftest import sample
from tb_plugin.analysis.operators import operator_rows
from tb_plugin.analysis.overview import compute_overview
from tb_plugin.trace.decode import decode_trace
from tb_plugin.trace.load import load_trace_file


def _composer(batches: int, load_us: float, compute_us: float, rank: int = 0, clock: int = 0,
              close: bool = True) -> bytes:
    events = [{"name": "clock_sync_timestamp_us", "ph": "M", "pid": rank, "tid": 1, "ts": 0,
               "args": {"value": 1_000_000 + clock}}]
    t = 100.0
    for b in range(batches):
        a = {"epoch": 0, "batch": b}
        events += [
            {"name": "dataloader/train", "cat": "dataloader", "ph": "B", "ts": t, "pid": rank, "tid": 1, "args": a},
            {"name": "dataloader/train", "cat": "dataloader", "ph": "E", "ts": t + load_us, "pid": rank, "tid": 1, "args": a},
            {"name": "event/batch", "cat": "", "ph": "B", "ts": t + load_us, "pid": rank, "tid": 1, "args": a},
            {"name": "event/forward", "cat": "", "ph": "B", "ts": t + load_us + 1, "pid": rank, "tid": 1, "args": a},
            {"name": "event/forward", "cat": "", "ph": "E", "ts": t + load_us + 1 + compute_us / 2, "pid": rank, "tid": 1,
             "args": a},
            # Composer's E of event/batch carries the NEXT batch number: args must not pair B with E
            {"name": "event/batch", "cat": "", "ph": "E", "ts": t + load_us + compute_us, "pid": rank, "tid": 1,
             "args": {"epoch": 0, "batch": b + 1}},
            {"name": "cpu", "cat": "cpu", "ph": "C", "ts": t, "pid": rank, "tid": 1, "args": {"cpu_percent": 10.0 * b}},
        ]
        t += load_us + compute_us
    text = "[\n" + ",\n".join(json.dumps(e) for e in events) + ("\n]" if close else ",\n")
    return text.encode()


def test_composer_steps_begin_with_loading_and_feed_dataloader():
    trace = decode_trace(_composer(4, load_us=300, compute_us=100))
    ov = compute_overview(trace)
    assert [s["step"] for s in ov["steps"]] == ["0", "1", "2", "3"]
    for s in ov["steps"]:
        assert s["total_us"] == pytest.approx(400) and s["dataloader_us"] == pytest.approx(300)
    assert any("DataLoader takes 75.0%" in r for r in ov["recommendations"])  # dataloader-bound: named
    fwd = {e["name"]: e for e in ov["trainer_events"]}["event/forward"]
    assert fwd["mean_per_step_us"] == pytest.approx(50)
    (cpu,) = ov["system_metrics"]
    assert cpu["name"] == "cpu/cpu_percent" and cpu["values"] == [0.0, 10.0, 20.0, 30.0]


def test_composer_array_without_closing_bracket_and_clock_sync():
    trace = decode_trace(_composer(3, 50, 50, rank=1, clock=250, close=False))
    assert any("cut off" in w for w in trace.warnings)
    assert len(compute_overview(trace)["steps"]) == 3
    assert trace.meta["metadata_values"]["clock_sync_timestamp_us"] == 1_000_250


def test_real_composer_sample():
    ov = compute_overview(load_trace_file(str(sample("composer/rank_0.trace.json"))))
    assert len(ov["steps"]) == 6 and ov["average"]["dataloader_us"] > 0
    assert {e["name"] for e in ov["trainer_events"]} >= {"event/forward", "event/backward", "event/loss"}
    assert ov["system_metrics"][0]["name"] == "cpu/cpu_percent"


def test_old_lightning_export_has_overview_and_operators():
    trace = load_trace_file(str(sample("lightning/0_trace.json")))
    ov = compute_overview(trace)
    assert len(ov["steps"]) == 1 and ov["average"]["cpu_exec_us"] > 0
    ops = {o["name"]: o for o in operator_rows(trace)}
    # no categories in this export: ATen-named events are operators, with nesting giving self times
    raw = json.loads(sample("lightning/0_trace.json").read_text())
    assert ops["aten::empty"]["calls"] == sum(1 for e in raw if e["name"] == "aten::empty")
    assert ops["aten::empty"]["host_total_us"] == pytest.approx(sum(e["dur"] for e in raw if e["name"] == "aten::empty"))
    assert all(o["host_self_us"] <= o["host_total_us"] + 1e-6 for o in ops.values())
    assert any("no 'cat'" in w for w in trace.warnings)


def test_lightning_module_scopes_feed_the_module_view():
    from tb_plugin.analysis.modules import module_tree

    def x(name, cat, ts, dur):
        return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur}

    events = [
        x("[pl][profile]run_training_batch", "user_annotation", 0, 100),
        x("[pl][module]mymodel.Net: ", "user_annotation", 1, 90),
        x("[pl][module]torch.nn.modules.linear.Linear: layer.0", "user_annotation", 2, 40),
        x("aten::linear", "cpu_op", 3, 30),
        x("[pl][module]torch.nn.modules.linear.Linear: layer.1", "user_annotation", 50, 30),
        x("aten::linear", "cpu_op", 51, 20),
    ]
    (root,) = module_tree(decode_trace(json.dumps({"traceEvents": events}).encode()))
    assert root["name"] == "Net" and root["host_total_us"] == 90 and root["host_self_us"] == 20
    assert [(c["name"], c["operators"]) for c in root["children"]] == [("layer.0 (Linear)", 1), ("layer.1 (Linear)", 1)]
