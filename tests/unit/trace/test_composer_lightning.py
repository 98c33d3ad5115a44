"""Composer and Lightning traces: steps from engine events, trainer events, counters, old exports."""

from __future__ import annotations

import json

import pytest
from conftest import sample

from tb_plugin.analysis.operators import operator_rows
from tb_plugin.analysis.overview import compute_overview
from tb_plugin.registry.parse import load_trace_file
from tb_plugin.trace.decode import decode_trace


def _composer(
    batches: int, load_us: float, compute_us: float, rank: int = 0, clock: int = 0, close: bool = True
) -> bytes:
    events = [
        {
            "name": "clock_sync_timestamp_us",
            "ph": "M",
            "pid": rank,
            "tid": 1,
            "ts": 0,
            "args": {"value": 1_000_000 + clock},
        }
    ]
    t = 100.0
    for b in range(batches):
        a = {"epoch": 0, "batch": b}
        events += [
            {"name": "dataloader/train", "cat": "dataloader", "ph": "B", "ts": t, "pid": rank, "tid": 1, "args": a},
            {
                "name": "dataloader/train",
                "cat": "dataloader",
                "ph": "E",
                "ts": t + load_us,
                "pid": rank,
                "tid": 1,
                "args": a,
            },
            {"name": "event/batch", "cat": "", "ph": "B", "ts": t + load_us, "pid": rank, "tid": 1, "args": a},
            {"name": "event/forward", "cat": "", "ph": "B", "ts": t + load_us + 1, "pid": rank, "tid": 1, "args": a},
            {
                "name": "event/forward",
                "cat": "",
                "ph": "E",
                "ts": t + load_us + 1 + compute_us / 2,
                "pid": rank,
                "tid": 1,
                "args": a,
            },
            # Composer's E of event/batch carries the NEXT batch number: args must not pair B with E
            {
                "name": "event/batch",
                "cat": "",
                "ph": "E",
                "ts": t + load_us + compute_us,
                "pid": rank,
                "tid": 1,
                "args": {"epoch": 0, "batch": b + 1},
            },
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


@pytest.mark.corpus
def test_real_composer_sample():
    ov = compute_overview(load_trace_file(str(sample("composer/rank_0.trace.json"))))
    assert len(ov["steps"]) == 6 and ov["average"]["dataloader_us"] > 0
    assert {e["name"] for e in ov["trainer_events"]} >= {"event/forward", "event/backward", "event/loss"}
    assert ov["system_metrics"][0]["name"] == "cpu/cpu_percent"


@pytest.mark.corpus
def test_old_lightning_export_has_overview_and_operators():
    trace = load_trace_file(str(sample("lightning/0_trace.json")))
    ov = compute_overview(trace)
    assert len(ov["steps"]) == 1 and ov["average"]["cpu_exec_us"] > 0
    ops = {o["name"]: o for o in operator_rows(trace)}
    # no categories in this export: ATen-named events are operators, with nesting giving self times
    raw = json.loads(sample("lightning/0_trace.json").read_text())
    assert ops["aten::empty"]["calls"] == sum(1 for e in raw if e["name"] == "aten::empty")
    assert ops["aten::empty"]["host_total_us"] == pytest.approx(
        sum(e["dur"] for e in raw if e["name"] == "aten::empty")
    )
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


def _composer_engine_intervals(events: list[dict]) -> list[tuple[str, float, float]]:
    """(name, begin, end) of Composer's ``event/…`` engine events, B/E paired by name per thread, by hand."""
    open_, out = {}, []
    for e in events:
        name = e.get("name", "")
        if not name.startswith("event/") or name == "event/batch" or name.startswith("event/dataloader"):
            continue
        key = (e.get("pid"), e.get("tid"), name)
        if e["ph"] == "B":
            open_.setdefault(key, []).append(e["ts"])
        elif e["ph"] == "E" and open_.get(key):
            out.append((name, open_[key].pop(), e["ts"]))
    return out


@pytest.mark.corpus
def test_merged_composer_and_kineto_trace_shows_both_layers():
    """A trace merged from Composer's profiler and the PyTorch profiler (Composer's merge puts the torch
    events, shifted onto its clock, into the same file, overlapping the engine events): ProfilerStep#
    markers define the steps, with the GPU side of every step exactly as in the Kineto trace alone; the
    Composer engine events are the trainer events, their time clipped to those steps; the timeline holds
    the tracks of both layers."""
    import gzip

    from tb_plugin.analysis import timeline_query as tq
    from tb_plugin.analysis.steps import compute_steps

    kineto_path = sample("kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz")
    composer_path = sample("composer/rank_0.trace.json")
    kineto = json.loads(gzip.decompress(kineto_path.read_bytes()))
    composer = json.loads(composer_path.read_bytes())
    shift = (
        min(e["ts"] for e in composer if "ts" in e)
        + 1000
        - min(e["ts"] for e in kineto["traceEvents"] if "ts" in e and e.get("ph") != "M")
    )
    for e in kineto["traceEvents"]:
        if "ts" in e:
            e["ts"] += shift
    merged = decode_trace(json.dumps(dict(kineto, traceEvents=kineto["traceEvents"] + composer)).encode())

    alone_k = load_trace_file(str(kineto_path))
    alone_c = load_trace_file(str(composer_path))
    ov, ov_k = compute_overview(merged), compute_overview(alone_k)
    gpu_side = ("step", "total_us", "kernel_us", "memcpy_us", "memset_us", "communication_us", "runtime_us")
    assert len(ov_k["steps"]) == 6
    assert [{k: s[k] for k in gpu_side} for s in ov["steps"]] == [{k: s[k] for k in gpu_side} for s in ov_k["steps"]]

    lo, hi = (t + shift for t in compute_steps(alone_k).window)
    expected: dict[str, float] = {}
    for name, b, e in _composer_engine_intervals(composer):
        expected[name] = expected.get(name, 0.0) + max(0.0, min(e, hi) - max(b, lo))
    got = {t["name"]: t["total_us"] for t in ov["trainer_events"]}
    assert got == pytest.approx(expected) and sum(got.values()) > 0
    assert [m["name"] for m in ov["system_metrics"]] == [m["name"] for m in compute_overview(alone_c)["system_metrics"]]

    names = [t["name"] for t in tq.tracks_meta(merged)]
    assert set(names) == {t["name"] for t in tq.tracks_meta(alone_k)} | {t["name"] for t in tq.tracks_meta(alone_c)}
    assert "Training Loop" in names and "stream 7" in names


@pytest.mark.corpus
def test_trainer_events_count_time_inside_the_steps_not_between_them():
    """Composer's event/epoch spans every step and the gaps between them: its time per step is the
    steps' own time (the average step), never more."""
    ov = compute_overview(load_trace_file(str(sample("composer/rank_0.trace.json"))))
    average = ov["average"]["total_us"]
    by_name = {e["name"]: e for e in ov["trainer_events"]}
    assert by_name["event/epoch"]["mean_per_step_us"] == pytest.approx(average)
    assert by_name["event/epoch"]["total_us"] == pytest.approx(sum(s["total_us"] for s in ov["steps"]))
    assert all(e["mean_per_step_us"] <= average + 1e-9 for e in ov["trainer_events"])
