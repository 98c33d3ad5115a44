"""A many-step trace whose critical path crosses step boundaries (µs), for the host side made a group of
steps at a time (tb_plugin/analysis/critical_path_groups.py).

:func:`steps_doc`: one rank, ``n`` step markers of 1000 µs (marker ``k`` from ``b = 100 + 1000·k``; the
steps end where ``side`` ends, 50 µs later); on the main thread (tid 1) a Python frame over every step
and an annotation over steps 2–4; per marker, from its start ``b``:

- ``aten::mm`` [b+10, b+50] launching ``gemm`` [b+60, b+360] (stream 7);
- a Python ``backward`` frame [b+380, b+560] (no leaf work: blocked) while the autograd thread (tid 2)
  runs ``autograd::engine::evaluate_function`` [b+400, b+500] holding ``aten::mm`` launching
  ``bwd_gemm`` (stream 7); in odd steps the backward frame and the engine node reach into the next step;
- ``aten::add`` [b+580, b+600] launching ``side`` [b+600, b+1050] on stream 9: it runs into the next step;
- ``record_param_comms`` [b+760, b+790] launching an NCCL all-reduce [b+800, b+900] (stream 21);
- ``aten::add`` [b+900, b+920] launching ``carry`` [b+970, b+1030] (stream 7), run across the boundary;
- ``aten::item`` [b+950, b+1050] holding ``cudaStreamSynchronize`` [b+955, b+1035] that waits for it;
- in the next step, ``aten::relu`` [b+1000, b+1008] launching ``late`` [b+1060, b+1090] on stream 20,
  which waits for ``side`` (recorded: a ``cudaEventRecord`` on stream 9 and CUPTI's "Stream Wait
  Event", when ``recorded``; else inferred from timing), work that started before its step.

NCCL all-reduces also run before the first step and after the last (outside every step).
"""

from __future__ import annotations

from .critical import _Doc

STEP_US = 1000.0
FIRST_US = 100.0
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"


def steps_doc(n: int = 10, recorded: bool = True) -> dict:
    d = _Doc()
    end = FIRST_US + n * STEP_US
    d.x("train.py(12): loop", "python_function", FIRST_US - 50, end + 100)
    d.x("## phase ##", "user_annotation", FIRST_US + 2 * STEP_US + 500, 2 * STEP_US)
    _nccl(d, 20, 30)  # outside every step: before the first
    for k in range(n):
        b = FIRST_US + k * STEP_US
        d.x(f"ProfilerStep#{k}", "user_annotation", b, STEP_US)
        d.x("aten::mm", "cpu_op", b + 10, 40)
        d.launch(b + 20, 5, "gemm", b + 60, 300)
        over = 500 if k % 2 else 0  # odd steps: backward reaches into the next step
        d.x("torch/autograd/__init__.py(200): backward", "python_function", b + 380, 180 + over)
        d.x("autograd::engine::evaluate_function: MmBackward0", "cpu_op", b + 400, 100 + over, tid=2)
        d.x("aten::mm", "cpu_op", b + 410, 30, tid=2)
        d.launch(b + 420, 5, "bwd_gemm", b + 430, 40)
        d.x("aten::add", "cpu_op", b + 580, 20)
        d.launch(b + 585, 5, "side", b + 600, 450, stream=9)
        d.corr += 1
        record = d.corr
        d.x("cudaEventRecord", "cuda_runtime", b + 592, 1, correlation=record)
        d.x("record_param_comms", "cpu_op", b + 760, 30)
        _nccl(d, b + 770, b + 800)
        d.x("aten::add", "cpu_op", b + 900, 20)
        d.launch(b + 905, 5, "carry", b + 970, 60)
        d.x("aten::item", "cpu_op", b + 950, 100)
        d.x("cudaStreamSynchronize", "cuda_runtime", b + 955, 80)
        d.x("aten::relu", "cpu_op", b + 1000, 8)
        d.corr += 1
        d.x("cudaStreamWaitEvent", "cuda_runtime", b + 1001, 1, correlation=d.corr)
        if recorded:
            d.events.append(_wait(b + 1002, d.corr, record))
        d.launch(b + 1003, 2, "late", b + 1060, 30, stream=20)
    _nccl(d, end + 20, end + 40)  # outside every step: after the last
    return {"schemaVersion": 1, "traceEvents": d.events}


def _nccl(d: _Doc, launch_us: float, start_us: float) -> None:
    d.launch(launch_us, 5, NCCL, start_us, 100, stream=21)


def _wait(ts: float, corr: int, record: int) -> dict:
    """CUPTI's "Stream Wait Event" on stream 20 for the event recorded (correlation ``record``) on stream 9."""
    args = {"cuda_sync_kind": "Stream Wait Event", "correlation": corr, "stream": 20, "wait_on_stream": 9}
    args.update(wait_on_cuda_event_record_corr_id=record, device=0)
    return {"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "pid": 0, "tid": 20, "ts": ts, "dur": 0} | {
        "args": args
    }
