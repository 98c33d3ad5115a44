"""The shared classifier of blocking host calls (analysis/blocking.py), on synthetic traces whose
answer is known by construction (µs)."""

from __future__ import annotations

import json

import numpy as np

from tb_plugin.analysis.blocking import BLOCKING_KINDS, always_blocks, blocking_calls
from tb_plugin.trace.decode import decode_trace


def _x(name, cat, ts, dur, pid=1, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _k(name, ts, dur, corr, stream=7, cat="kernel"):
    return _x(name, cat, ts, dur, pid=0, tid=stream, correlation=corr, device=0, stream=stream)


def _found(events):
    trace = decode_trace(json.dumps({"traceEvents": events}).encode())
    b = blocking_calls(trace)
    names = [trace.strings[trace.events.name[r]] for r in b.rows.tolist()]
    return [
        (n, BLOCKING_KINDS[k], None if np.isnan(w) else float(w))
        for n, k, w in zip(names, b.kind.tolist(), b.waited_end_us.tolist())
    ]


def test_names_that_always_block():
    for name in (
        "cudaStreamSynchronize",
        "cudaDeviceSynchronize",
        "cudaEventSynchronize",
        "hipStreamSynchronize",
        "cuStreamSynchronize",
        "cuCtxSynchronize",
        "cudaMemcpy",
        "hipMemcpy",
        "cudaMemcpy2D",
        "cuMemcpyDtoH_v2",
        "hipMemcpyDtoH",
    ):
        assert always_blocks(name), name
    for name in (
        "cudaMemcpyAsync",
        "hipMemcpyAsync",
        "hipMemcpyWithStream",
        "cudaLaunchKernel",
        "cudaEventQuery",
        "cudaStreamWaitEvent",
        "cuMemcpyDtoHAsync_v2",
        "aten::copy_",
    ):
        assert not always_blocks(name), name


def test_synchronize_waits_for_the_last_device_end_inside_it():
    ev = [
        _x("cudaLaunchKernel", "cuda_runtime", 0, 5, correlation=1),
        _k("gemm", 10, 100, 1),
        _x("cudaDeviceSynchronize", "cuda_runtime", 20, 95),  # returns at 115, gemm ended at 110
        _x("cudaStreamSynchronize", "cuda_runtime", 200, 5),
    ]  # nothing ended inside: no wait
    assert _found(ev) == [
        ("cudaDeviceSynchronize", "synchronize", 110.0),
        ("cudaStreamSynchronize", "synchronize", None),
    ]


def test_async_copy_blocks_when_its_copy_ended_inside_the_call():
    ev = [
        _x("cudaMemcpyAsync", "cuda_runtime", 0, 60, correlation=1),
        _k("Memcpy DtoH (Device -> Pageable)", 10, 40, 1, cat="gpu_memcpy"),
        _x("cudaMemcpyAsync", "cuda_runtime", 100, 5, correlation=2),
        _k("Memcpy HtoD (Pinned -> Device)", 110, 40, 2, cat="gpu_memcpy"),
        _x("hipMemcpyWithStream", "cuda_runtime", 200, 30, correlation=3),
        _k("CopyDeviceToHost", 205, 20, 3, cat="gpu_memcpy"),
    ]
    assert _found(ev) == [("cudaMemcpyAsync", "blocking_copy", 50.0), ("hipMemcpyWithStream", "blocking_copy", 225.0)]


def test_event_polling_loop_last_query_waits():
    ev = [
        _x("cudaLaunchKernel", "cuda_runtime", 0, 5, correlation=1),
        _k("dispatch", 10, 100, 1),
        _x("cudaEventRecord", "cuda_runtime", 6, 2),
    ]
    ev += [_x("cudaEventQuery", "cuda_runtime", 20 + 10 * i, 3) for i in range(10)]  # the last one at [110, 113]
    ev += [
        _x("cudaLaunchKernel", "cuda_runtime", 200, 5, correlation=2),
        _k("other", 210, 10, 2),
        _x("cudaEventQuery", "cuda_runtime", 300, 3),
    ]  # a lone query: no loop, no wait
    assert _found(ev) == [("cudaEventQuery", "event_poll", 110.0)]
    trace = decode_trace(json.dumps({"traceEvents": ev}).encode())
    assert blocking_calls(trace).blocked_from_us.tolist() == [20.0]  # the loop's first query


def test_the_same_calls_when_the_rows_are_not_in_time_order():
    """A parsed trace's rows are in time order, and the polling loops are found per thread taking each
    thread's rows in turn (``op_tree.by_thread_and_start``); rows in any other order (a trace built
    another way) are sorted on thread and start: the same calls, kinds and ends, the rows renumbered."""
    import dataclasses

    from tb_plugin.trace.model import Table

    ev = [_x("cudaStreamSynchronize", "cuda_runtime", 40, 80), _k("a", 10, 35, 1)]  # a ends at 45
    ev += [_x("cudaLaunchKernel", "cuda_runtime", 0, 5, correlation=1)]
    ev += [_x("cudaEventQuery", "cuda_runtime", 20 + 10 * i, 3, tid=2) for i in range(4)]
    ev += [_x("cudaMemcpyAsync", "cuda_runtime", 130, 30, correlation=3), _k("copy", 140, 10, 3, cat="gpu_memcpy")]
    trace = decode_trace(json.dumps({"traceEvents": ev}).encode())
    perm = np.arange(len(trace.events))[::-1].copy()  # latest first
    shuffled = dataclasses.replace(
        trace, events=Table({k: v[perm] for k, v in trace.events.columns.items()}), derived={}
    )
    assert not np.all(np.diff(shuffled.events.ts) >= 0)
    ordered, other = blocking_calls(trace), blocking_calls(shuffled)
    assert sorted(zip(perm[other.rows].tolist(), other.kind.tolist(), other.waited_end_us.tolist())) == sorted(
        zip(ordered.rows.tolist(), ordered.kind.tolist(), ordered.waited_end_us.tolist())
    )
    assert sorted(BLOCKING_KINDS[k] for k in ordered.kind.tolist()) == ["blocking_copy", "event_poll", "synchronize"]
