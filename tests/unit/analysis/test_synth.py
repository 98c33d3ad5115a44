"""Tests of the trace synthesizer (tests/synth/traces.py).

Besides structural checks, `_raster_overview` recomputes the Overview numbers from the *emitted
JSON events* on the synthesizer's time grid (0.125 µs for pytorch2, 1 µs for kineto2021), one cell
at a time, with the METRICS.md rules written out plainly. expected_overview derives the same
numbers from the synthesizer's internal plan; the two must agree. That checks that the events
say what the plan says, independently of the analysis code under test elsewhere.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter, defaultdict

import numpy as np
import pytest
from synth.traces import (
    CATEGORY_KEYS,
    TENSOR_CORE_KERNELS,
    SynthSpec,
    expected_overview,
    synthesize,
    worked_example_trace,
    write_trace,
)

RUNTIME_CATS = {"Runtime", "cuda_runtime", "cuda_driver"}
KERNEL_CATS = {"Kernel", "kernel"}
MEMCPY_CATS = {"Memcpy", "gpu_memcpy"}
MEMSET_CATS = {"Memset", "gpu_memset"}
DEVICE_CATS = KERNEL_CATS | MEMCPY_CATS | MEMSET_CATS
HOST_CPU_CATS = {"Operator", "cpu_op", "user_annotation", "python_function"}

SPECS = {
    "pt2_default": SynthSpec(),
    "pt2_all": SynthSpec(
        steps=4, seed=7, with_driver_launch=True, with_cuda_graph=True, with_python_stack=True, backward_thread=True
    ),
    "pt2_ddp_r0": SynthSpec(steps=3, ranks=2, rank=0, seed=3),
    "pt2_ddp_r1": SynthSpec(steps=3, ranks=2, rank=1, seed=3, with_cuda_graph=True),
    "pt2_spill": SynthSpec(steps=3, seed=5, device_spill_us=25.0, tail="no_device"),
    "pt2_truncated": SynthSpec(
        steps=2, seed=11, tail="truncated", tensor_cores=False, step_marker_cat="cpu_op", with_memory=False
    ),
    "pt2_no_bpsm": SynthSpec(steps=2, seed=13, omit_blocks_per_sm=True, with_overlap=True),
    "k21_default": SynthSpec(style="kineto2021"),
    "k21_ddp": SynthSpec(
        style="kineto2021", ranks=2, rank=1, seed=2, with_cuda_graph=True, with_python_stack=True, backward_thread=True
    ),
    "k21_spill_trunc": SynthSpec(
        style="kineto2021",
        steps=3,
        seed=9,
        device_spill_us=12.0,
        tail="truncated",
        tensor_cores=False,
        dataloader_us=40.0,
    ),
}


def _x_events(trace: dict) -> list[dict]:
    return [e for e in trace["traceEvents"] if e.get("ph") == "X"]


def _is_host(e: dict) -> bool:
    return e.get("cat") not in DEVICE_CATS | {"gpu_user_annotation", "Trace"}


# ------------------------------------------------------------------------------------------
# Independent oracle: raster the emitted events


def _host_category(e: dict) -> str | None:
    """METRICS.md host-side category of an X event, from its cat and name alone."""
    cat, name = e.get("cat"), e["name"]
    if cat in RUNTIME_CATS:
        return "runtime"
    if cat not in HOST_CPU_CATS:
        return None
    if name.startswith("ProfilerStep#"):
        return None
    if name.startswith("nccl:") or name == "record_param_comms":
        return "comm"
    if name.startswith("enumerate(DataLoader)#"):
        return "dataloader"
    return "cpu"


def _device_category(e: dict) -> str:
    if e["cat"] in KERNEL_CATS:
        return "comm" if e["name"].startswith("nccl") else "kernel"
    return "memcpy" if e["cat"] in MEMCPY_CATS else "memset"


def _raster_overview(trace: dict, q: float) -> dict:
    """Steps, breakdown and GPU metrics recomputed cell by cell from the trace events."""
    xs = _x_events(trace)
    host_steps = [e for e in xs if e["cat"] != "gpu_user_annotation" and e["name"].startswith("ProfilerStep#")]
    runtimes = [e for e in xs if e["cat"] in RUNTIME_CATS]
    devs = [e for e in xs if e["cat"] in DEVICE_CATS]
    by_corr = defaultdict(list)
    for d in devs:
        by_corr[d["args"]["correlation"]].append(d)
    t0 = min(e["ts"] for e in xs if e["cat"] != "Trace")
    t1 = max(e["ts"] + e["dur"] for e in xs if e["cat"] != "Trace")

    def cell(t: float) -> int:
        c = (t - t0) / q
        assert c == round(c), f"{t} is off the {q} µs grid"
        return int(round(c))

    n = cell(t1) + 1
    # steps
    rows = []
    prev_end = None
    for s in sorted(host_steps, key=lambda e: e["ts"]):
        a, b = s["ts"], s["ts"] + s["dur"]
        launched = [
            d
            for r in runtimes
            if a <= r["ts"] and r["ts"] + r["dur"] <= b
            for d in by_corr.get(r["args"]["correlation"], [])
        ]
        dev_end = max((d["ts"] + d["dur"] for d in launched), default=b)
        start = a if prev_end is None else max(prev_end, a)
        end = max(b, dev_end)
        rows.append([s["name"].split("#")[1], start, end, len(launched)])
        prev_end = end
    while rows and rows[-1][3] == 0:
        rows.pop()
    if len(rows) >= 2 and rows[-1][3] < 0.8 * rows[-2][3]:
        rows.pop()
    # category masks
    masks = {t: np.zeros(n, bool) for t in ("kernel", "memcpy", "memset", "comm", "runtime", "dataloader", "cpu")}
    for e in xs:
        cat = _device_category(e) if e["cat"] in DEVICE_CATS else _host_category(e)
        if cat is not None:
            masks[cat][cell(e["ts"]) : cell(e["ts"] + e["dur"])] = True
    owner = np.full(n, 7)  # 7 = other
    for i, t in reversed(list(enumerate(masks))):
        owner[masks[t]] = i
    steps = []
    for name, a, b, _ in rows:
        seg = owner[cell(a) : cell(b)]
        row = {"step": name, "total_us": b - a}
        for i, k in enumerate(CATEGORY_KEYS):
            row[k] = float(np.count_nonzero(seg == i)) * q
        steps.append(row)
    # GPU metrics over the steps window
    w0, w1 = cell(rows[0][1]), cell(rows[-1][2])
    kernels = [e for e in devs if e["cat"] in KERNEL_CATS]
    busy = np.zeros(n, bool)
    load = np.zeros(n)
    occ_num = occ_den = 0.0
    sms = trace["deviceProperties"][0]["numSms"]
    for k in kernels:
        a, b = cell(k["ts"]), cell(k["ts"] + k["dur"])
        busy[a:b] = True
        g = k["args"]["grid"]
        bpsm = k["args"].get("blocks per SM", g[0] * g[1] * g[2] / sms)
        if bpsm > 0:
            load[a:b] += bpsm
        ca, cb = max(a, w0), min(b, w1)
        occ = k["args"]["est. achieved occupancy %"]
        threads = k["args"]["block"][0] * k["args"]["block"][1] * k["args"]["block"][2]
        if occ == 0 and min(bpsm, 1.0) * threads / 2048 * 100 >= 1:
            continue  # Kineto's 0 for "not computed" (its launch implies >= 1 %): left out
        if cb > ca:
            occ_num += occ * (cb - ca)
            occ_den += cb - ca
    width = w1 - w0
    tc = sum(k["dur"] for k in kernels if k["name"] in TENSOR_CORE_KERNELS)
    gpu = {
        "utilization_pct": 100.0 * np.count_nonzero(busy[w0:w1]) / width,
        "sm_efficiency_pct": 100.0 * float(np.minimum(load[w0:w1], 1.0).sum()) / width,
        "achieved_occupancy_pct": occ_num / occ_den,
        "tensor_core_pct": 100.0 * tc / sum(k["dur"] for k in kernels),
    }
    return {"steps": steps, "gpu": gpu, "window_us": (w1 - w0) * q}


# ------------------------------------------------------------------------------------------


def test_deterministic():
    for spec in (SPECS["pt2_all"], SPECS["k21_ddp"]):
        a, b = synthesize(spec), synthesize(spec)
        assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
        assert expected_overview(spec) == expected_overview(spec)
    other = synthesize(SynthSpec(seed=1))
    assert json.dumps(other) != json.dumps(synthesize(SynthSpec(seed=0)))


def test_write_trace_roundtrip_and_bytes_stable(tmp_path):
    trace = synthesize(SPECS["pt2_default"])
    p1, p2, p3 = (tmp_path / "a.pt.trace.json.gz", tmp_path / "b.pt.trace.json.gz", tmp_path / "c.pt.trace.json")
    write_trace(trace, p1)
    write_trace(trace, p2)
    write_trace(trace, p3)
    assert p1.read_bytes() == p2.read_bytes()
    assert p1.read_bytes()[:2] == b"\x1f\x8b"
    assert json.loads(gzip.decompress(p1.read_bytes())) == trace
    assert json.loads(p3.read_text()) == trace


@pytest.mark.parametrize("name", sorted(SPECS))
def test_events_well_formed(name):
    spec = SPECS[name]
    trace = synthesize(spec)
    assert trace["schemaVersion"] == 1
    assert isinstance(trace["traceEvents"], list) and trace["deviceProperties"]
    xs = _x_events(trace)
    for e in xs:
        assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float))
        assert e["dur"] >= 0 and e["ts"] >= 0
        if spec.style == "kineto2021":
            assert isinstance(e["ts"], int) and isinstance(e["dur"], int)
    # correlation: every device event matches exactly one runtime event; runtime ids unique
    rt = Counter(e["args"]["correlation"] for e in xs if e["cat"] in RUNTIME_CATS)
    assert all(c == 1 for c in rt.values())
    devs = [e for e in xs if e["cat"] in DEVICE_CATS]
    assert devs
    for d in devs:
        assert rt[d["args"]["correlation"]] == 1, d["name"]
    # flows come in s/f pairs with the same id
    flows = [e for e in trace["traceEvents"] if e.get("ph") in ("s", "f")]
    kinds = defaultdict(list)
    for f in flows:
        kinds[f["id"]].append(f["ph"])
    assert flows and all(sorted(v) == ["f", "s"] for v in kinds.values())
    # proper nesting per (pid, tid): sort by (start, -end); each event inside its parent
    groups = defaultdict(list)
    for e in xs:
        groups[(str(e["pid"]), str(e["tid"]))].append(e)
    for key, evs in groups.items():
        stack: list[float] = []
        for e in sorted(evs, key=lambda e: (e["ts"], -e["dur"])):
            while stack and stack[-1] <= e["ts"]:
                stack.pop()
            end = e["ts"] + e["dur"]
            assert not stack or end <= stack[-1], (key, e["name"], e["ts"])
            stack.append(end)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_expected_adds_up(name):
    exp = expected_overview(SPECS[name])
    assert exp["configuration"]["step_count"] == SPECS[name].steps
    for row in exp["steps"]:
        assert sum(row[k] for k in CATEGORY_KEYS) == pytest.approx(row["total_us"], abs=1e-9)
        assert all(row[k] >= 0 for k in CATEGORY_KEYS)
        assert row["end_us"] - row["start_us"] == pytest.approx(row["total_us"], abs=1e-9)
    assert [r["step"] for r in exp["steps"]] == [str(SPECS[name].first_step + i) for i in range(SPECS[name].steps)]


@pytest.mark.parametrize("name", sorted(SPECS))
def test_expected_matches_raster_of_events(name):
    spec = SPECS[name]
    trace = synthesize(spec)
    exp = expected_overview(spec)
    got = _raster_overview(trace, 0.125 if spec.style == "pytorch2" else 1.0)
    assert [r["step"] for r in got["steps"]] == [r["step"] for r in exp["steps"]]
    for g, e in zip(got["steps"], exp["steps"]):
        for k in ("total_us", *CATEGORY_KEYS):
            assert g[k] == pytest.approx(e[k], rel=1e-9, abs=1e-9), (g["step"], k)
    assert got["window_us"] == pytest.approx(exp["configuration"]["steps_window_us"])
    (gpu,) = exp["gpus"]
    assert gpu["id"] == spec.rank
    for k, v in got["gpu"].items():
        assert v == pytest.approx(gpu[k], rel=1e-9, abs=1e-9), k


def test_worked_example_is_metrics_md():
    trace, exp = worked_example_trace()
    (row,) = exp["steps"]
    assert (row["start_us"], row["end_us"], row["total_us"]) == (0.0, 400.0, 400.0)
    # the breakdown worked out from the docstring's intervals (µs), not copied from the synthesizer's answer
    kernel, memcpy, memset, dataloader = 335 - 320, 270 - 260, 355 - 350, 240 - 60
    runtime = (280 - 255 - 10) + (315 - 305) + (345 - 340)  # the copy's call less the copy under it
    cpu_exec = (300 - 250 - 25) + (330 - 300 - 10 - 10)  # the ops less their calls, less the kernel in aten::add
    other = 400 - (kernel + memcpy + memset + runtime + dataloader + cpu_exec)
    answer = (kernel, memcpy, memset, 0, runtime, dataloader, cpu_exec, other)
    assert answer == (15, 10, 5, 0, 30, 180, 35, 125)  # the docstring's (and METRICS.md's) figures
    assert {k: row[k] for k in CATEGORY_KEYS} == dict(zip(CATEGORY_KEYS, map(float, answer)))
    step = next(e for e in _x_events(trace) if e["cat"] == "user_annotation" and e["name"] == "ProfilerStep#1")
    assert (step["ts"], step["ts"] + step["dur"]) == (50, 450)
    got = _raster_overview(trace, 1.0)
    assert got["steps"] == [{"step": "1", "total_us": 400, **{k: row[k] for k in CATEGORY_KEYS}}]
    for k, v in got["gpu"].items():
        assert v == pytest.approx(exp["gpus"][0][k]), k


def test_gpu_user_annotations_cover_idle_time():
    """pytorch2 traces carry gpu_user_annotation copies of user annotations. They must not count
    as CPU Exec (METRICS.md, we differ); in these layouts counting them would change the answer."""
    changed = 0
    for name in ("pt2_default", "pt2_all", "pt2_ddp_r0"):
        trace = synthesize(SPECS[name])
        gpu_ann = {e["name"] for e in _x_events(trace) if e["cat"] == "gpu_user_annotation"}
        assert {"ProfilerStep#1", "## forward ##", "Optimizer.step#SGD.step"} <= gpu_ann
        base = _raster_overview(trace, 0.125)["steps"]
        for e in trace["traceEvents"]:
            if e.get("cat") == "gpu_user_annotation" and not e["name"].startswith("Profiler"):
                e["cat"] = "user_annotation"
        flipped = _raster_overview(trace, 0.125)["steps"]
        changed += sum(f["cpu_exec_us"] > b["cpu_exec_us"] for f, b in zip(flipped, base))
    assert changed > 0


def test_styles_use_their_categories():
    pt2 = {e.get("cat") for e in synthesize(SPECS["pt2_all"])["traceEvents"]}
    assert {
        "cpu_op",
        "user_annotation",
        "python_function",
        "cuda_runtime",
        "cuda_driver",
        "kernel",
        "gpu_memcpy",
        "gpu_memset",
        "gpu_user_annotation",
        "ac2g",
        "cpu_instant_event",
    } <= pt2
    k21 = synthesize(SPECS["k21_ddp"])
    cats = {e.get("cat") for e in k21["traceEvents"]}
    assert cats <= {"Operator", "Runtime", "Kernel", "Memcpy", "Memset", "async", "Trace", None}
    for e in _x_events(k21):
        if e["cat"] in DEVICE_CATS | {"Runtime"}:
            assert "external id" in e["args"] and "External id" not in e["args"]
        if e["cat"] == "Operator":
            assert "External id" in e["args"] and "Call stack" in e["args"]
        if e["cat"] in DEVICE_CATS:
            assert e["tid"].startswith("stream ")
    mem = [e for e in k21["traceEvents"] if e.get("name") == "[memory]"]
    assert mem and all("Addr" not in e["args"] for e in mem)


def test_features_present():
    t = synthesize(SPECS["pt2_all"])
    xs = _x_events(t)
    assert any(e["cat"] == "cuda_driver" and e["name"] == "cuLaunchKernel" for e in xs)
    graph_corrs = {e["args"]["correlation"] for e in xs if e["name"] == "cudaGraphLaunch"}
    per_corr = Counter(e["args"]["correlation"] for e in xs if e["cat"] == "kernel")
    assert graph_corrs and all(per_corr[c] == 3 for c in graph_corrs)
    streams = {e["args"]["stream"] for e in xs if e["cat"] == "kernel"}
    assert {7, 20} <= streams
    assert len({e["tid"] for e in xs if e["cat"] == "cpu_op"}) == 2  # backward thread
    names = {e["name"] for e in xs}
    assert "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__" in names
    assert {
        "aten::conv2d",
        "aten::convolution",
        "aten::cudnn_convolution",
        "aten::linear",
        "aten::addmm",
        "aten::mm",
        "Optimizer.step#SGD.step",
    } <= names
    mem = [e for e in t["traceEvents"] if e.get("name") == "[memory]"]
    assert {"Addr", "Bytes", "Total Allocated", "Total Reserved", "Device Type", "Device Id"} <= set(mem[0]["args"])
    assert "distributedInfo" not in t


def test_ddp_ranks():
    for rank in (0, 1):
        t = synthesize(SynthSpec(ranks=2, rank=rank, seed=3))
        assert t["distributedInfo"] == {"backend": "nccl", "rank": rank, "world_size": 2}
        xs = _x_events(t)
        nccl = [e for e in xs if e["cat"] == "kernel" and e["name"].startswith("nccl")]
        assert len(nccl) == 3 and all(e["args"]["device"] == rank for e in nccl)
        rpc = [e for e in xs if e["name"] == "record_param_comms"]
        assert len(rpc) == 3
        assert {"In msg nelems", "Out msg nelems", "dtype", "Group size"} <= set(rpc[0]["args"])
        assert rpc[0]["args"]["Group size"] == 2
        assert expected_overview(SynthSpec(ranks=2, rank=rank, seed=3))["steps"][0]["communication_us"] > 0


def test_gpu_metrics_exercise_overlap_and_saturation():
    spec = SPECS["pt2_default"]
    exp = expected_overview(spec)["gpus"][0]
    kernels = [e for e in _x_events(synthesize(spec)) if e["cat"] == "kernel"]
    # two streams overlap somewhere
    s7 = [(k["ts"], k["ts"] + k["dur"]) for k in kernels if k["args"]["stream"] == 7]
    s20 = [(k["ts"], k["ts"] + k["dur"]) for k in kernels if k["args"]["stream"] == 20]
    assert any(a < d and c < b for a, b in s7 for c, d in s20)
    # some kernels saturate (blocks per SM > 1), some do not
    bpsm = [k["args"]["blocks per SM"] for k in kernels]
    assert max(bpsm) > 1 and min(bpsm) < 1
    # utilization is the union (not the sum) of kernel time
    assert 0 < exp["sm_efficiency_pct"] < exp["utilization_pct"] < 100
    assert 0 < exp["tensor_core_pct"] < 100


def test_no_tensor_cores_means_zero():
    for spec in (SPECS["pt2_truncated"], SPECS["k21_spill_trunc"]):
        assert expected_overview(spec)["gpus"][0]["tensor_core_pct"] == 0.0


def test_spill_stretches_steps_and_tail_is_trimmed():
    spec = SPECS["pt2_spill"]
    t = synthesize(spec)
    exp = expected_overview(spec)
    markers = sorted(
        (e for e in _x_events(t) if e["cat"] == "user_annotation" and e["name"].startswith("ProfilerStep#")),
        key=lambda e: e["ts"],
    )
    assert len(markers) == spec.steps + 1  # one extra trailing step, trimmed
    first = markers[0]["ts"]
    for m, row in zip(markers, exp["steps"]):
        # end stretched past the host marker by the device spill
        assert row["end_us"] > m["ts"] + m["dur"] - first
    # the second step starts when the first one's device work ends, after its own marker
    assert exp["steps"][1]["start_us"] > markers[1]["ts"] - first


def test_omitted_blocks_per_sm():
    t = synthesize(SPECS["pt2_no_bpsm"])
    assert all("blocks per SM" not in e["args"] for e in _x_events(t) if e["cat"] == "kernel")


def test_kernel_names_tensor_core_flags():
    tc = [
        e["name"]
        for e in _x_events(synthesize(SPECS["pt2_default"]))
        if e["cat"] == "kernel" and e["name"] in TENSOR_CORE_KERNELS
    ]
    assert tc and all(n.startswith("sm90_xmma") for n in tc)
    k21 = [
        e["name"]
        for e in _x_events(synthesize(SPECS["k21_default"]))
        if e["cat"] == "Kernel" and e["name"] in TENSOR_CORE_KERNELS
    ]
    assert k21 and all(n.startswith("volta_") and ("884" in n) for n in k21)


def test_spec_validation():
    with pytest.raises(ValueError):
        SynthSpec(style="kineto2021", with_driver_launch=True)
    with pytest.raises(ValueError):
        SynthSpec(ranks=2, rank=2)
    with pytest.raises(ValueError):
        SynthSpec(tail="bogus")


def test_committed_samples_are_current(tmp_path):
    """samples/synthetic_* are exactly what samples/make_samples.py writes (rerun it after
    changing the synthesizer)."""
    import importlib.util
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[3] / "samples"
    spec = importlib.util.spec_from_file_location("make_samples", root / "make_samples.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for p in map(pathlib.Path, mod.write_samples(str(tmp_path))):
        committed = root / p.relative_to(tmp_path)
        assert committed.exists(), committed
        assert committed.read_bytes() == p.read_bytes(), committed
