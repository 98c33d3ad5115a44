"""One definition per number: each quantity is computed in one place, and the places that
used to compute it separately (the Overview and the Trace view's counters, the Memory view, the
recommendations, the CLI) now give the same numbers. Traces are written here, values known."""

from __future__ import annotations

import json

import numpy as np

from tb_plugin.trace.decode import decode_trace


def _trace(events: list[dict], **top) -> bytes:
    return json.dumps(dict({"traceEvents": events}, **top)).encode()


def test_trace_memo_computes_once_and_keeps_none():
    trace = decode_trace(_trace([{"ph": "X", "name": "op", "cat": "cpu_op", "ts": 0, "dur": 5, "pid": 1, "tid": 1}]))
    calls = []
    assert trace.memo("k", lambda: calls.append(1) or 42) == 42
    assert trace.memo("k", lambda: calls.append(1) or 0) == 42 and calls == [1]
    assert trace.memo("none", lambda: calls.append(2)) is None
    assert trace.memo("none", lambda: calls.append(2)) is None and calls == [1, 2]
    assert trace.derived["k"] == 42


# -- one step-series rule: the Overview, the Trace view, the Memory view -------------------------------

from conftest import write_json, x
from synth.events import memory_instant

from tb_plugin import api
from tb_plugin.analysis import series
from tb_plugin.registry.runs import RunRegistry

STEP_START = 1000  # µs, absolute; every time below is an integer, so shifting by an origin is exact


def _counter(name, ts, **args):
    return {"ph": "C", "name": name, "pid": 1, "ts": ts, "args": args}


def _registry(tmp_path, events, device_properties=None):
    doc = {"schemaVersion": 1, "traceEvents": events}
    if device_properties:
        doc["deviceProperties"] = device_properties
    write_json(tmp_path / "job" / "w0.pt.trace.json", doc)
    reg = RunRegistry(str(tmp_path))
    reg.scan()
    (st,) = reg.files()
    reg.load(st)
    return reg, {"run": "job", "worker": st.worker, "span": st.span}


def _counter_trace():
    rng = np.random.default_rng(7)
    big_ts = STEP_START + np.arange(3000) * 50  # 3000 samples: more than the Overview's 2000 points
    big_v = rng.integers(0, 400, size=3000) / 4.0  # quarters: exact in binary, unchanged by rounding
    big_v[1234] = 999.75  # a lone peak the reduction must keep
    events = [x("ProfilerStep#1", "user_annotation", STEP_START, 150_000), x("aten::mm", "cpu_op", 0, 10)]
    events += [_counter("cpu", int(t), cpu_percent=float(v)) for t, v in zip(big_ts, big_v)]
    small = [(STEP_START + 777 * k, 1000 * k) for k in range(40)]
    events += [_counter("disk", t, read_bytes=v) for t, v in small]
    events.append({"ph": "C", "name": "disk", "pid": 1, "ts": "NaN", "args": {"read_bytes": 5}})  # no time: dropped
    rng.shuffle(events)  # the file's order is not time order
    return events, big_ts, big_v, small


def _absolute_metrics(overview: dict, meta: dict) -> dict:
    """The Overview's system metrics on the trace's clock (they are relative to the first step)."""
    step0 = meta["origin_us"] + meta["steps"][0]["start_us"]
    return {m["name"]: (np.asarray(m["ts_us"]) + step0, np.asarray(m["values"])) for m in overview["system_metrics"]}


def test_overview_system_metrics_equal_the_trace_views_counter_tracks(tmp_path):
    events, big_ts, big_v, small = _counter_trace()
    reg, q = _registry(tmp_path, events)
    overview = api.overview(reg, q)[1]
    meta = api.timeline_meta(reg, q)[1]
    metrics = _absolute_metrics(overview, meta)
    assert set(metrics) == {"cpu/cpu_percent", "disk/read_bytes"}
    # the small series whole (its NaN-time sample dropped, as the counter tracks drop it), by time
    ts, values = metrics["disk/read_bytes"]
    assert ts.tolist() == [t for t, _ in small] and values.tolist() == [v for _, v in small]
    ts, values = metrics["cpu/cpu_percent"]
    assert len(ts) <= 2000 and 999.75 in values.tolist()
    base = meta["origin_us"]
    # any window of the Trace view: the small series' held maximum per bin is the same from both documents
    doc = api.timeline(reg, dict(q, start_us=str(0), end_us=str(meta["end_us"]), width_px="137"))[1]
    tracks = {c["name"]: c["values"] for c in doc["counters"]}
    ts, values = metrics["disk/read_bytes"]
    assert tracks["disk/read_bytes"] == series.held_max(ts, values, base, base + meta["end_us"], 137).tolist()
    # the reduced series: on the Overview's own bins (its span, 999 bins) the held maxima are exact
    a0, a1 = float(big_ts[0]), float(big_ts[-1])
    doc = api.timeline(reg, dict(q, start_us=str(a0 - base), end_us=str(a1 - base), width_px="999"))[1]
    ts, values = metrics["cpu/cpu_percent"]
    from_overview = np.round(series.held_max(ts, values, a0, a1, 999), 4).tolist()
    from_trace_view = next(c["values"] for c in doc["counters"] if c["name"] == "cpu/cpu_percent")
    assert from_overview == from_trace_view
    assert from_trace_view == np.round(series.held_max(big_ts.astype(float), big_v, a0, a1, 999), 4).tolist()
    assert max(from_trace_view) == 999.75


def _mem(ts, total, reserved):
    return memory_instant(
        ts,
        **{
            "Bytes": 1,
            "Addr": ts,
            "Total Allocated": total,
            "Total Reserved": reserved,
            "Device Type": 1,
            "Device Id": 0,
        },
    )


def test_one_gpu_memory_curve_for_the_memory_view_the_counter_tracks_and_the_peak_advice(tmp_path):
    rng = np.random.default_rng(3)
    times = np.arange(5000) * 3  # µs from the first event
    alloc = rng.integers(1, 1000, size=5000) * 1024
    alloc[4321] = 15 * 2**30  # 15 GiB: over 90 % of a 16 GiB device
    events = [
        x("ProfilerStep#1", "user_annotation", 0, 20_000),
        x("aten::mm", "cpu_op", 0, 10),
        x("gemm", "kernel", 100, 50, pid=0, tid=7, device=0, stream=7),
    ]
    events += [_mem(int(t), int(a), int(a) + 4096) for t, a in zip(times, alloc)]
    props = [
        {
            "id": 0,
            "name": "Tesla V100-SXM2-16GB",
            "totalGlobalMem": 16 * 2**30,
            "computeMajor": 7,
            "computeMinor": 0,
            "numSms": 80,
        }
    ]
    reg, q = _registry(tmp_path, events, props)
    width, lo, hi = 300, 1000.0, 13_000.0
    mem = api.memory(reg, dict(q, start_us=str(lo), end_us=str(hi), width_px=str(width)))[1]
    (gpu,) = mem["devices"]
    assert gpu["device"] == "GPU0" and gpu["peak_allocated_bytes"] == 15 * 2**30
    assert len(gpu["allocated"]["ts_us"]) <= 2 * width  # http_api.md's bound
    meta = api.timeline_meta(reg, q)[1]
    assert meta["origin_us"] == 0
    doc = api.timeline(reg, dict(q, start_us=str(lo), end_us=str(hi), width_px=str(width)))[1]
    tracks = {c["name"]: c["values"] for c in doc["counters"]}
    # one device naming: the counter track names the device as the GPU summary and the Memory view show it
    assert {"GPU 0 Memory Allocated", "GPU 0 Memory Reserved"} <= set(tracks)
    # both are drawn from the one curve: the counter track holds its maxima in ``width`` bins, the
    # Memory view's points hold them in the ``width - 2`` bins its 2 × width points leave room for
    for curve, name, full in (
        (gpu["allocated"], "GPU 0 Memory Allocated", alloc),
        (gpu["reserved"], "GPU 0 Memory Reserved", alloc + 4096),
    ):
        drawn = series.held_max(np.asarray(curve["ts_us"]), np.asarray(curve["bytes"]), lo, hi, width - 2)
        assert drawn.tolist() == series.held_max(times.astype(float), full, lo, hi, width - 2).tolist(), name
        assert tracks[name] == series.held_max(times.astype(float), full, lo, hi, width).tolist(), name
    truth = series.held_max(times.astype(float), alloc, lo, hi, width)
    assert tracks["GPU 0 Memory Allocated"] == truth.tolist() and max(truth) == 15 * 2**30
    # the peak of the ">90 % of device memory" advice is the Memory view's peak
    overview = api.overview(reg, q)[1]
    (advice,) = [r for r in overview["recommendations"] if "peaks at" in r]
    assert advice.startswith("GPU 0 peaks at 15.0 GiB allocated, over 90% of its 16.0 GiB.")


def test_held_max_bin_rule():
    ts = np.array([0.0, 10.0, 10.0, 20.0, 30.0])
    v = np.array([1, 5, 2, 7, 9])
    # bins [0,10) [10,20) [20,30): a sample on an edge belongs to the bin it starts; one at the end to none
    assert series.held_max(ts, v, 0, 30, 3).tolist() == [1, 5, 7]
    # before the first sample: ``before``; the value in force at a bin's start counts
    assert series.held_max(ts, v, -10, 40, 5).tolist() == [0, 1, 5, 7, 9]
    assert series.held_max(ts, v, 12, 18, 2).tolist() == [2, 2]
    assert series.bin_of(np.array([-1.0, 0.0, 9.99, 10.0, 30.0]), series.bin_edges(0, 30, 3)).tolist() == [
        -1,
        0,
        0,
        1,
        3,
    ]


def test_point_reduction_keeps_every_bins_held_maximum():
    rng = np.random.default_rng(11)
    ts = np.sort(rng.uniform(0, 1000, size=20_000))
    v = rng.integers(0, 1 << 40, size=20_000)
    for lo, hi, bins in ((0.0, 1000.0, 64), (123.4, 567.8, 50), (-5.0, 2000.0, 7)):
        t2, v2 = series.reduce_points(ts, v, lo, hi, bins)
        assert len(t2) <= 2 * bins + 3
        assert (
            series.held_max(np.asarray(t2), np.asarray(v2), lo, hi, bins).tolist()
            == series.held_max(ts, v, lo, hi, bins).tolist()
        )
    keep = series.reduce_to(ts, v, 4000)
    assert len(keep) <= 4000 and int(np.argmax(v)) in keep.tolist() and keep[-1] == len(ts) - 1
    t3 = ts[keep]
    assert (
        series.held_max(t3, v[keep], ts[0], ts[-1], 1999).tolist()
        == series.held_max(ts, v, ts[0], ts[-1], 1999).tolist()
    )


def test_split_series_orders_by_time_and_drops_non_finite():
    ts = np.array([5.0, 1.0, np.nan, 3.0, 2.0, 4.0])
    sid = np.array([2, 2, 2, 1, 2, 1])
    val = np.array([50.0, 10.0, 7.0, np.inf, 20.0, 40.0])
    got = [(s, t.tolist(), v.tolist()) for s, t, v in series.split_series(ts, sid, val)]
    assert got == [(1, [4.0], [40.0]), (2, [1.0, 2.0, 5.0], [10.0, 20.0, 50.0])]


# -- one communication classifier ----------------------------------------------------------------------


def test_breakdown_and_distributed_view_share_the_communication_op_rule():
    """A functional collective (``_c10d_functional::all_reduce``, no comm args) is a communication op
    for the step breakdown; the Distributed view finds the same op around the NCCL kernel and reads the
    message size from its inputs (1024 floats = 4096 bytes). Before, it knew only nccl:/gloo:/c10d::."""
    from tb_plugin.analysis.breakdown import category_masks
    from tb_plugin.analysis.distributed import comm_kernels
    from tb_plugin.trace.categories import COMM_OP_NAMES, COMM_OP_PREFIXES, is_comm_op_name

    events = [
        x("ProfilerStep#1", "user_annotation", 0, 1000),
        x("_c10d_functional::all_reduce", "cpu_op", 10, 200, External_id=7, Input_Dims=[[1024]], Input_type=["float"]),
        x("aten::empty", "cpu_op", 20, 50, External_id=8),
        x("cudaLaunchKernel", "cuda_runtime", 30, 5, correlation=5, External_id=8),
        x(
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)",
            "kernel",
            100,
            40,
            pid=0,
            tid=7,
            correlation=5,
            device=0,
            stream=7,
            External_id=8,
        ),
    ]
    trace = decode_trace(_trace(events))
    names = [trace.strings[n] for n in trace.events.name]
    comm = category_masks(trace)["communication"]
    assert [names[i] for i in np.flatnonzero(comm)] == [
        "_c10d_functional::all_reduce",
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)",
    ]
    kernels = comm_kernels(trace)
    assert kernels["collective"] == ["allreduce"] and kernels["bytes"] == [4096] and kernels["dtype"] == ["float32"]
    for name in [p + "x" for p in COMM_OP_PREFIXES] + sorted(COMM_OP_NAMES):
        assert is_comm_op_name(name)
    assert not is_comm_op_name("aten::all_reduce_helper") and not is_comm_op_name("ncclKernel")


# -- one table of category labels; recommendations carry values, written by the one rounding rule ------


def _dataloader_job(tmp_path):
    """One 400 µs step whose DataLoader takes 49 µs: 12.25 %, a tie that the rounding rule writes 12.3
    (Python's ``:.1f`` gives 12.2)."""
    events = [
        x("ProfilerStep#1", "user_annotation", 0, 400),
        x("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "cpu_op", 10, 49),
    ]
    return _registry(tmp_path, events)


def test_category_labels_are_one_table_for_the_ui_the_cli_and_the_recommendations(tmp_path, capsys):
    from tb_plugin.analysis.breakdown import CATEGORY_LABELS
    from tb_plugin.cli import main

    reg, q = _dataloader_job(tmp_path)
    overview = api.overview(reg, q)[1]
    # the labels as the torch-tb-profiler Overview names them, in its priority order
    keys = [f"{c}_us" for c in "kernel memcpy memset communication runtime dataloader cpu_exec other".split()]
    labels = "Kernel, Memcpy, Memset, Communication, Runtime, DataLoader, CPU Exec, Other".split(", ")
    assert overview["category_labels"] == dict(zip(keys, labels))
    assert list(overview["category_labels"]) == overview["categories"]
    assert main(["report", str(tmp_path), "--no-cache"]) == 0
    printed = capsys.readouterr().out
    rows = [
        line.split()[0] + (" Exec" if line.split()[0] == "CPU" else "")
        for line in printed.splitlines()
        if line.startswith("   ") and line.split() and line.split()[-1].endswith("%") and "Category" not in line
    ]
    assert rows == list(CATEGORY_LABELS.values())


def test_recommendations_carry_values_written_by_the_rounding_rule(tmp_path, capsys):
    from tb_plugin.analysis.numfmt import fixed
    from tb_plugin.cli import main

    reg, q = _dataloader_job(tmp_path)
    overview = api.overview(reg, q)[1]
    (detail,) = [d for d in overview["recommendation_details"] if d["rule"] == "dataloader"]
    assert detail["dataloader_pct"] == 12.25 and f"{detail['dataloader_pct']:.1f}" == "12.2"
    assert detail["text"].startswith(f"DataLoader takes {fixed(12.25, 1)}% of the average step.")
    assert "12.3%" in detail["text"]
    assert overview["recommendations"] == [d["text"] for d in overview["recommendation_details"]]
    assert main(["report", str(tmp_path), "--no-cache"]) == 0
    assert f"   * [dataloader] {detail['text']} (addresses " in capsys.readouterr().out
