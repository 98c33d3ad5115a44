"""Trace kinds that are not a GPU's kernel timeline: CUPTI range-profiler ranges (the profiler's replay
passes, recognized and explained, not kernel time), and MTIA (an accelerator card in its own words:
no tensor-core share, SM efficiency or occupancy). Known answers by construction."""

from __future__ import annotations

import json

from conftest import write_json, x

from tb_plugin.analysis.kernels import kernel_rows
from tb_plugin.analysis.overview import compute_overview
from tb_plugin.cli import main
from tb_plugin.registry.parse import load_trace_file

KERNEL = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >(int)"


def _range_profiler_doc() -> dict:
    """A step of 1000 µs with one real 100 µs kernel, and three CUPTI range-profiler ranges of the
    kernels profiled, each 121 430 µs long (the range profiler's pass; all equal, as on real traces)."""
    events = [
        x("ProfilerStep#1", "user_annotation", 0, 1000),
        x("aten::fill_", "cpu_op", 10, 20),
        x("cudaLaunchKernel", "cuda_runtime", 12, 5, correlation=1),
        {
            "ph": "X",
            "cat": "kernel",
            "name": KERNEL,
            "pid": 0,
            "tid": 7,
            "ts": 100,
            "dur": 100,
            "args": {"correlation": 1, "device": 0, "stream": 7},
        },
    ]
    for i in range(3):
        events.append(
            {
                "ph": "X",
                "cat": "cuda_profiler_range",
                "name": f"{KERNEL}",
                "pid": 0,
                "tid": 1,
                "ts": 50 + i,
                "dur": 121_430,
                "args": {"device": 0, "sm__cycles_active.avg": 1234.0 + i},
            }
        )
    return {"schemaVersion": 1, "traceEvents": events}


def test_cupti_ranges_are_explained_not_counted(tmp_path):
    trace = load_trace_file(str(write_json(tmp_path / "r.pt.trace.json", _range_profiler_doc())))
    (warning,) = [w for w in trace.warnings if "CUPTI" in w]
    assert warning.startswith("3 CUPTI range-profiler ranges ('cuda_profiler_range')")
    assert "every one lasts 121.43 ms" in warning and "not how long its kernels ran" in warning
    ov = compute_overview(trace)
    (step,) = ov["steps"]
    assert step["kernel_us"] == 100  # the real kernel only
    assert ov["gpus"][0]["utilization_pct"] == 10.0
    (row,) = kernel_rows(trace)
    assert (row["calls"], row["total_us"]) == (1, 100.0)  # not 4 calls with a 121.43 ms mean


def test_cli_report_prints_the_explanation(tmp_path, capsys):
    write_json(tmp_path / "run" / "w0.1.pt.trace.json", _range_profiler_doc())
    assert main(["report", str(tmp_path), "--no-cache"]) == 0
    assert "warning: 3 CUPTI range-profiler ranges" in capsys.readouterr().out


def _mtia_doc() -> dict:
    """One 1000 µs step on MTIA 0: two command-processor events of 100 µs under ``aten::mm``."""
    events = [
        x("ProfilerStep#1", "user_annotation", 0, 1000),
        x("aten::mm", "cpu_op", 10, 50, input_type=["float", "float"]),
    ]
    for corr, ts in ((1, 100), (2, 300)):
        events.append(x("mtiaLaunchKernel", "mtia_runtime", 10 + 10 * corr, 5, correlation=corr))
        events.append(
            {
                "ph": "X",
                "cat": "mtia_ccp_events",
                "name": "fused_gemm_kernel",
                "pid": "MTIA 0",
                "tid": 7,
                "ts": ts,
                "dur": 100,
                "args": {"correlation": corr},
            }
        )
    return {"schemaVersion": 1, "traceEvents": events}


def test_mtia_card_has_no_gpu_only_metrics(tmp_path):
    trace = load_trace_file(str(write_json(tmp_path / "m.pt.trace.json", _mtia_doc())))
    ov = compute_overview(trace)
    (dev,) = ov["gpus"]
    assert dev["device_type"] == "MTIA" and dev["utilization_pct"] == 20.0
    assert (dev["tensor_core_pct"], dev["sm_efficiency_pct"], dev["achieved_occupancy_pct"]) == (None, None, None)
    assert not [r for r in ov["recommendations"] if "mixed precision" in r or "Tensor" in r]


def test_mtia_text_report_says_mtia(tmp_path, capsys):
    write_json(tmp_path / "run" / "w0.1.pt.trace.json", _mtia_doc())
    assert main(["report", str(tmp_path), "--no-cache"]) == 0
    text = capsys.readouterr().out
    line = next(l for l in text.splitlines() if "utilization" in l)
    assert line.strip().startswith("MTIA 0") and "tensor cores" not in line and "SM efficiency" not in line
    assert main(["report", str(tmp_path), "--no-cache", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["runs"][0]["workers"][0]["overview"]["gpus"][0]["device_type"] == "MTIA"


def _mtia_collective_doc() -> dict:
    """One 1000 µs step on MTIA 0: gemms ``[100, 200]`` and ``[400, 500]`` on queue 7, and an all-reduce
    ``[150, 450]`` on queue 8 launched (``mtiaLaunchKernel``, correlation 2) inside ``c10d::allreduce_``
    ``[40, 70]`` / ``record_param_comms``, as PyTorch's c10d writes it on any backend. Exposed
    communication (not under a gemm): ``[200, 400]`` = 200 µs; the step breakdown's Communication adds the
    host collective call ``[40, 70]`` = 30 µs (its launch call inside it included), when the device is idle."""

    def device(name: str, ts: float, dur: float, corr: int, queue: int) -> dict:
        return {
            "ph": "X",
            "cat": "mtia_ccp_events",
            "name": name,
            "pid": "MTIA 0",
            "tid": queue,
            "ts": ts,
            "dur": dur,
            "args": {"correlation": corr},
        }

    events = [
        x("ProfilerStep#1", "user_annotation", 0, 1000),
        x("aten::mm", "cpu_op", 10, 20),
        x("mtiaLaunchKernel", "mtia_runtime", 12, 5, correlation=1),
        device("fused_gemm_kernel", 100, 100, 1, 7),
        x("c10d::allreduce_", "cpu_op", 40, 30),
        x("record_param_comms", "cpu_op", 42, 25),
        x("mtiaLaunchKernel", "mtia_runtime", 45, 5, correlation=2),
        device("allreduce_ring_kernel", 150, 300, 2, 8),
        x("aten::mm", "cpu_op", 80, 20),
        x("mtiaLaunchKernel", "mtia_runtime", 82, 5, correlation=3),
        device("fused_gemm_kernel", 400, 100, 3, 7),
    ]
    return {"schemaVersion": 1, "traceEvents": events}


def test_mtia_exposed_communication_agrees_with_the_breakdown(tmp_path):
    """On MTIA a collective launched inside a c10d op is communication for the step breakdown and for
    the exposed-time decomposition alike (one classifier, ``breakdown.category_masks``): the exposed
    communication is the breakdown's device part, and the breakdown's Communication exceeds it only by
    the host collective call's own time while the device is idle."""
    from tb_plugin.analysis.insights import exposed_time

    trace = load_trace_file(str(write_json(tmp_path / "m.pt.trace.json", _mtia_collective_doc())))
    ov = compute_overview(trace)
    (step,) = ov["steps"]
    (dev,) = ov["gpus"]
    exposed = exposed_time(trace)
    assert dev["device_type"] == "MTIA" and dev["utilization_pct"] == 40.0  # [100, 500]: gemms and the collective
    assert (exposed["compute_us"], exposed["exposed_comm_us"], exposed["idle_us"]) == (200.0, 200.0, 600.0)
    assert step["kernel_us"] == exposed["compute_us"]
    # the breakdown's Communication: the exposed 200 µs plus c10d::allreduce_ [40, 70] (host, device idle)
    assert step["communication_us"] == exposed["exposed_comm_us"] + 30.0
    assert (dev["tensor_core_pct"], dev["sm_efficiency_pct"]) == (None, None)
