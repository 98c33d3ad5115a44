"""Memory on devices other than CUDA, and distributedInfo fields left out."""

from __future__ import annotations

import pytest
from conftest import sample, write_json, x
from synth.events import memory_instant

from tb_plugin.analysis.counters import counters
from tb_plugin.analysis.memory import curves, memory_summary
from tb_plugin.analysis.memory import gpu_peaks as peak_allocated_by_gpu
from tb_plugin.analysis.overview import compute_overview
from tb_plugin.registry.parse import load_trace_file
from tb_plugin.trace.devices import memory_device_label

MiB = 1 << 20


def _mem(ts, nbytes, addr, total, device_type, device_id=0):
    return memory_instant(
        ts,
        **{
            "Bytes": nbytes,
            "Addr": addr,
            "Total Allocated": total,
            "Total Reserved": 64 * MiB,
            "Device Type": device_type,
            "Device Id": device_id,
        },
    )


def _trace(tmp_path, memory_events, name="t.pt.trace.json"):
    events = [
        x("ProfilerStep#1", "user_annotation", 0, 1000),
        x("aten::empty", "cpu_op", 10, 20),
        x("aten::mul", "cpu_op", 100, 50),
    ] + memory_events
    return load_trace_file(str(write_json(tmp_path / name, {"schemaVersion": 1, "traceEvents": events})))


def test_rocm_memory_events_are_a_gpu(tmp_path):
    """HIP (Device Type 6) memory is GPU memory: 3 MiB allocated then 1 MiB freed → GPU0 peaks at 3 MiB."""
    t = _trace(
        tmp_path,
        [_mem(12, 2 * MiB, 1000, 2 * MiB, 6), _mem(15, MiB, 2000, 3 * MiB, 6), _mem(120, -MiB, 2000, 2 * MiB, 6)],
    )
    assert peak_allocated_by_gpu(t) == {0: 3 * MiB}
    assert [c["device"] for c in curves(t)] == ["GPU0"]
    summary = memory_summary(t)
    assert "GPU0" in str(summary)
    assert not [w for w in t.warnings if "memory events" in w]
    names = [c["name"] for c in counters(t, 0.0, 1000.0, 10)]
    assert "GPU 0 Memory Allocated" in names


def test_other_accelerators_are_named_by_type(tmp_path):
    t = _trace(tmp_path, [_mem(12, MiB, 1, MiB, 19, 1), _mem(13, MiB, 2, MiB, 12, 0)])
    assert sorted(c["device"] for c in curves(t)) == ["MTIA1", "XPU0"]
    assert peak_allocated_by_gpu(t) == {}  # not GPUs: the GPU memory advice does not compare them
    assert memory_device_label(6, 3) == "GPU3" and memory_device_label(0, -1) == "CPU"


def test_unplaceable_device_type_is_a_warning(tmp_path):
    t = _trace(tmp_path, [_mem(12, MiB, 1, MiB, 1), _mem(13, MiB, 2, MiB, 42), _mem(14, MiB, 3, MiB, 42)])
    assert [c["device"] for c in curves(t)] == ["GPU0"]
    warning = [w for w in t.warnings if "memory events" in w]
    assert warning == [
        "2 memory events on devices the tool cannot place (Device Type 42 ×2); they are left out of the Memory view"
    ]


@pytest.mark.corpus
def test_mi300_sample_shows_its_gpu_memory():
    """The real MI300 trace records its memory as Device Type 6: before, the Memory view had no GPU."""
    t = load_trace_file(str(sample("tracelens/mi300/gaunernst_bert-small-uncased__1016001.json.gz")))
    assert peak_allocated_by_gpu(t) == {0: 146394112}
    assert [c["device"] for c in curves(t)] == ["CPU", "GPU0"]


def test_distributed_info_with_only_a_rank_keeps_unknowns_null(tmp_path):
    """The API says null for what the trace leaves out (the UI omits it; see ConfigurationCard.test.tsx)."""
    doc = {
        "schemaVersion": 1,
        "distributedInfo": {"rank": 0},
        "traceEvents": [x("ProfilerStep#1", "user_annotation", 0, 100)],
    }
    t = load_trace_file(str(write_json(tmp_path / "r.pt.trace.json", doc)))
    assert compute_overview(t)["configuration"]["distributed"] == {"backend": None, "rank": 0, "world_size": None}


def _mtia_trace(tmp_path, device_pid):
    """One 1000 µs step; two MTIA command-processor events of 100 µs each, launched from the host."""

    def launch(ts, corr):
        return x("mtiaLaunchKernel", "mtia_runtime", ts, 5, correlation=corr)

    def ccp(ts, corr):
        ev = {
            "ph": "X",
            "cat": "mtia_ccp_events",
            "name": "fused_gemm_kernel",
            "pid": device_pid,
            "tid": 7,
            "ts": ts,
            "dur": 100,
            "args": {"correlation": corr},
        }
        return ev

    events = [
        x("ProfilerStep#1", "user_annotation", 0, 1000),
        x("aten::mm", "cpu_op", 10, 50),
        launch(20, 1),
        launch(30, 2),
        ccp(100, 1),
        ccp(300, 2),
    ]
    doc = {"schemaVersion": 1, "traceEvents": events}
    return load_trace_file(str(write_json(tmp_path / "mtia.pt.trace.json", doc)))


def test_mtia_device_work_is_device_time(tmp_path):
    """Item 14: MTIA events on an "MTIA 0" process are the device's work: kernel time 200 µs, 20 % busy."""
    for pid in ("MTIA 0", 0):
        t = _mtia_trace(tmp_path, pid)
        ov = compute_overview(t)
        assert ov["configuration"]["device_type"] == "MTIA", pid
        assert ov["configuration"]["gpu_count"] == 1
        (step,) = ov["steps"]
        assert step["total_us"] == 1000 and step["kernel_us"] == 200
        assert ov["gpus"][0]["id"] == 0 and ov["gpus"][0]["utilization_pct"] == 20.0


def test_cupti_profiler_ranges_are_not_kernel_time(tmp_path):
    """A range-profiler range is the profiler's replay pass, not kernel time (tests/test_trace_kinds.py)."""
    ranges = [
        {
            "ph": "X",
            "cat": "cuda_profiler_range",
            "name": "range_0",
            "pid": 0,
            "tid": 1,
            "ts": 100,
            "dur": 250,
            "args": {"device": 0},
        }
    ]
    events = [x("ProfilerStep#1", "user_annotation", 0, 1000)] + ranges
    t = load_trace_file(str(write_json(tmp_path / "r.pt.trace.json", {"schemaVersion": 1, "traceEvents": events})))
    ov = compute_overview(t)
    assert ov["steps"][0]["kernel_us"] == 0 and ov["steps"][0]["cpu_exec_us"] == 0
    assert any("CUPTI range-profiler" in w for w in t.warnings)
