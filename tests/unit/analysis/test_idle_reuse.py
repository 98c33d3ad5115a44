"""The idle-time figures that reuse another memo's arrays give the bytes of the computations they
replace: a device's only stream takes its GPU's gaps (``stream_idle_split``), the launch delays take
the idle memo's merged device work (``launch_delays``), equal starts' first indices come from sorted
starts (``sorted_unique``). Each is compared with the path it replaces, on the real samples, the
synthetic idle traces and random inputs."""

from __future__ import annotations

import json

import numpy as np
import pytest
from synth.events import work
from synth.idle import multi_stream_idle, queued_launches, tiny_kernels
from test_vectorized import _real_traces

from tb_plugin.analysis import gpu_idle as idle_mod
from tb_plugin.analysis import insights as insights_mod
from tb_plugin.trace.decode import decode_trace


def _random_doc(seed: int) -> dict:
    """Kernels and copies on two GPUs (device 0 one stream, device 1 two), launched at random, some of them
    before or after the one step's window (µs), with equal starts and back-to-back work."""
    rng = np.random.default_rng(seed)
    events = [work("ProfilerStep#1", "user_annotation", 300.0, 400.0, default_stream=1)]
    for corr in range(1, int(rng.integers(5, 80))):
        device = int(rng.integers(0, 2))
        stream = 7 if device == 0 else int(rng.choice([7, 9]))
        call = float(rng.integers(0, 1000))
        start = call + float(rng.choice([2.0, 5.0, 40.0, 300.0]))
        cat, name = ("gpu_memcpy", "Memcpy HtoD") if rng.random() < 0.2 else ("kernel", "gemm")
        events.append(
            work(
                "cudaLaunchKernel", "cuda_runtime", call, float(rng.integers(1, 12)), default_stream=1, correlation=corr
            )
        )
        events.append(
            work(
                name,
                cat,
                start,
                float(rng.integers(1, 30)),
                default_stream=1,
                correlation=corr,
                device=device,
                stream=stream,
            )
        )
    return {"traceEvents": events}


def _synthetic():
    for seed in range(20):
        yield f"random {seed}", decode_trace(json.dumps(_random_doc(seed)).encode())
    for name, doc in (
        ("multi_stream_idle", multi_stream_idle()),
        ("queued_launches", queued_launches()),
        ("tiny_kernels", tiny_kernels(graphs=True)),
    ):
        yield name, decode_trace(json.dumps(doc).encode())


# the traces each comparison runs on: the synthetic ones always, the real samples where the corpus is
SOURCES = [pytest.param(_synthetic, id="synthetic"), pytest.param(_real_traces, id="real", marks=pytest.mark.corpus)]


def _bytes(value) -> str:
    return json.dumps(value, sort_keys=True)


def test_sorted_unique_equals_numpy_on_random_sorted_starts():
    rng = np.random.default_rng(16)
    for case in range(300):
        n = int(rng.integers(0, 60))
        values = rng.integers(-5, 6, n).astype(np.float64) * float(rng.choice([1.0, 0.5, 1e-3]))
        if case % 5 == 0 and n:
            values[rng.integers(0, n, max(1, n // 4))] = -0.0  # -0.0 and 0.0 are one value
        if case % 7 == 0 and n:
            values[rng.integers(0, n, max(1, n // 5))] = np.nan  # NaNs sort last: numpy's path
        if case % 11 == 0 and n:
            values[rng.integers(0, n, max(1, n // 5))] = np.inf
        st = values[np.argsort(values, kind="stable")]
        uniq, first = idle_mod.sorted_unique(st)
        want_uniq, want_first = np.unique(st, return_index=True)
        assert uniq.tobytes() == want_uniq.tobytes() and uniq.dtype == want_uniq.dtype
        assert first.tobytes() == want_first.tobytes() and first.dtype == want_first.dtype


@pytest.mark.parametrize("traces", SOURCES)
def test_stream_split_reusing_the_gpus_gaps_equals_the_stream_by_stream_split(monkeypatch, traces):
    reused = 0
    for name, trace in traces():
        calls = []
        gaps = idle_mod._gaps
        monkeypatch.setattr(idle_mod, "_gaps", lambda *a: calls.append(1) or gaps(*a))
        idle_mod.gpu_idle(trace)
        before = len(calls)
        fast = _bytes(idle_mod.stream_idle_split(trace))
        streams = len(idle_mod._work_rows(trace)["stream_keys"])
        reused += streams - (len(calls) - before)
        monkeypatch.setattr(idle_mod, "gpu_idle", lambda t: [])  # no GPU to reuse: every stream's own gaps
        slow = _bytes(idle_mod.stream_idle_split(trace))
        monkeypatch.undo()
        assert fast == slow, name
    assert reused >= 3  # the reuse was taken (devices with one stream), not only the old path


@pytest.mark.parametrize("traces", SOURCES)
def test_launch_delays_with_the_idle_memos_merged_work_equal_their_own(monkeypatch, traces):
    compared = 0
    for name, trace in traces():
        fast = _bytes(insights_mod.launch_delays(trace))
        compared += bool(insights_mod.gpu_idle(trace)) and fast != _bytes({})
        monkeypatch.setattr(insights_mod, "gpu_idle", lambda t: [])  # each device's work merged here
        slow = _bytes(insights_mod.launch_delays(trace))
        monkeypatch.undo()
        assert fast == slow, name
    assert compared >= 5


def test_graph_use_counted_once_each_caller_its_own_dict():
    trace = decode_trace(json.dumps(tiny_kernels(graphs=True)).encode())
    first = insights_mod.graph_use(trace)
    assert first["replays"] > 0
    first["replays"] = -1
    assert insights_mod.graph_use(trace)["replays"] > 0
    assert "graph_use" in trace.derived


@pytest.mark.parametrize("traces", SOURCES)
def test_device_busy_equals_the_merge_of_all_device_work(traces):
    reused = merged = 0
    for name, trace in traces():
        ev = trace.events
        dev = idle_mod.device_mask(trace)
        want = idle_mod.Busy.of(ev.ts[dev], ev.ts[dev] + ev.dur[dev])
        got = idle_mod.device_busy(trace)
        gpus = idle_mod.gpu_idle(trace)
        if gpus and got is gpus[0].busy_all:
            reused += 1
        else:
            merged += 1
        for field in ("start", "end", "cum"):
            assert getattr(got, field).tobytes() == getattr(want, field).tobytes(), (name, field)
    assert reused >= 3 and merged >= 3  # the one GPU's arrays taken, and two GPUs' merged here (each source)


@pytest.mark.parametrize("traces", SOURCES)
def test_name_table_at_rows_equals_the_name_mask(traces):
    rng = np.random.default_rng(3)
    for name, trace in traces():
        ev = trace.events
        for predicate in (
            lambda s: s.startswith("ProfilerStep#"),
            lambda s: s.startswith("<built-in"),
            lambda s: "a" in s,
        ):
            mask = trace.name_mask(predicate)
            table = trace.name_table(predicate)
            rows = rng.integers(0, max(len(ev), 1), 50) if len(ev) else np.zeros(0, dtype=np.int64)
            assert np.array_equal(table[ev.name], mask), name
            assert np.array_equal(table[ev.name[rows]], mask[rows]), name
