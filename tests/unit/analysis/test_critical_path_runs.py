"""The critical path's walk in numpy (stream-order runs, analysis/critical_path_runs.py; the chain's fold
and items, analysis/critical_path_chain.py) against the node-by-node walk and the segment-by-segment
fold it replaced: the same per-rank chains, compared as text (every float's bits, every order), on
random traces with fractional times (so a sum in another order would differ), on the synthetic
known-answer traces and on real samples."""

from __future__ import annotations

import glob
import gzip
import json
import random

import numpy as np
import pytest
from conftest import SAMPLES
from synth.critical import chain_doc, dataloader_docs, pipeline_docs, wait_event_doc
from synth.critical_rules import RULES
from synth.events import complete

from tb_plugin.analysis import critical_path as cp
from tb_plugin.analysis import critical_path_chain as chain
from tb_plugin.analysis.critical_path_runs import walk_run
from tb_plugin.analysis.distributed import comm_kernels
from tb_plugin.trace.decode import decode_trace


class _Stored:
    """A memo entry of the reference fold: the state itself."""

    def __init__(self, state: tuple):
        self.held = state

    def state(self, _p: int) -> tuple:
        return self.held


def _reference_fold(self, memo: dict) -> tuple:
    """The fold one segment at a time (the walk's summary before it was done in numpy)."""
    tail = self.tail[0].state(self.tail[1]) if self.tail is not None else None
    tail = tail or ([0.0] * len(chain.CATEGORIES), [], None, self.stop, self.stop_at, self.truncated, 0.0, None)
    by_cat, top, work, stop, stop_at, trunc, blocked, tail_items = tail
    by_cat, top = list(by_cat), list(top)
    trunc = trunc or self.truncated
    marks = dict(self.marks)
    for p in range(len(self.segs) - 1, -1, -1):
        a, b, cat, name, _, blk = seg = self.segs[p]
        d = b - a
        by_cat[cat] += d
        blocked += blk
        if len(top) < chain.TOP or d > top[-1][1] - top[-1][0]:
            top = sorted(top + [seg], key=lambda s: -(s[1] - s[0]))[: chain.TOP]
        if cat != chain.WAIT and (work is None or d > work[1] - work[0]):
            work = seg
        if p in marks:
            state = (
                list(by_cat),
                list(top),
                work,
                stop,
                stop_at,
                trunc,
                blocked,
                _ReferenceItems(self.segs, p, tail_items),
            )
            memo[marks[p]] = (_Stored(state), p)
    return by_cat, top, work, stop, stop_at, trunc, blocked, _ReferenceItems(self.segs, 0, tail_items)


class _ReferenceItems(chain.Items):
    def resolve(self) -> dict:
        if self.done is None:
            out = {k: list(v) for k, v in self.tail.resolve().items()} if self.tail is not None else {}
            for a, b, cat, name, *_ in self.segs[self.p :]:
                if cat != chain.WAIT:
                    it = out.get((cat, name))
                    if it is None:
                        out[(cat, name)] = [b - a, 1]
                    else:
                        it[0] += b - a
                        it[1] += 1
            self.done = out
        return self.done


def _chains(trace, reference: bool, monkeypatch) -> str:
    with monkeypatch.context() as m:
        if reference:
            m.setattr(cp.RankGraph, "_stream_run", lambda self, w, top: ("dev", top, self._ts[top + 1]))
            m.setattr(chain.Walk, "fold", _reference_fold)
        return repr(cp.rank_chains(trace, comm_kernels(trace)["rows"]))


def _random_doc(seed: int) -> dict:
    """Steps of kernels on two compute streams and an NCCL stream (NCCL kernels on a compute stream too:
    walks from them meet the step's earlier walks), launched from the main thread, some back to back,
    some overlapping their predecessor, some after a gap, with a synchronize per step; fractional µs."""
    rng = random.Random(seed)
    events, corr, t = [], 0, 0.0
    for step in range(rng.randint(1, 4)):
        start = t
        host = t + rng.uniform(0.1, 5.3)
        device = {7: host, 8: host, 20: host}
        for _ in range(rng.randint(1, 120)):
            corr += 1
            stream = rng.choice((7, 7, 7, 8, 20) if rng.random() < 0.3 else (7, 7, 7, 8))
            launch_dur = rng.uniform(0.3, 4.7)
            events.append(complete("cudaLaunchKernel", "cuda_runtime", host, launch_dur, correlation=corr))
            gap = rng.choice((0.0, 0.0, 0.0, rng.uniform(0.01, 9.9), -rng.uniform(0.01, 2.2)))
            k_ts = max(device[stream] + gap, host + launch_dur * rng.choice((0.5, 1.0)))
            k_dur = rng.uniform(0.1, 37.3)
            name = (
                "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
                if stream == 20 or rng.random() < 0.06
                else rng.choice(("gemm", "relu", "add"))
            )
            events.append(complete(name, "kernel", k_ts, k_dur, correlation=corr, device=0, stream=stream))
            device[stream] = max(device[stream], k_ts + k_dur)
            host += launch_dur + rng.uniform(0.05, 3.1)
        end_dev = max(device.values())
        events.append(complete("cudaDeviceSynchronize", "cuda_runtime", host, end_dev - host + 1.7))
        t = max(host, end_dev) + rng.uniform(2.0, 6.0)
        events.append(complete(f"ProfilerStep#{step}", "user_annotation", start, t - start))
    return {"schemaVersion": 1, "traceEvents": events}


@pytest.mark.parametrize("seed", range(40))
def test_random_traces_walk_as_node_by_node(seed, monkeypatch):
    trace = decode_trace(json.dumps(_random_doc(seed)).encode())
    assert _chains(trace, False, monkeypatch) == _chains(trace, True, monkeypatch)


def _synthetic_docs() -> list[dict]:
    docs = [chain_doc(), wait_event_doc(True), wait_event_doc(False), *pipeline_docs()]
    docs += dataloader_docs([[60, 50], [50, 500]])
    return docs + [RULES[name]()[0] for name in sorted(RULES)]


@pytest.mark.parametrize("k", range(len(_synthetic_docs())))
def test_synthetic_traces_walk_as_node_by_node(k, monkeypatch):
    trace = decode_trace(json.dumps(_synthetic_docs()[k]).encode())
    assert _chains(trace, False, monkeypatch) == _chains(trace, True, monkeypatch)


@pytest.mark.corpus
@pytest.mark.parametrize(
    "pattern",
    [
        "kineto/resnet50_num_workers_0/*.json.gz",
        "dlrm_8ranks/worker[03]_*.json",
        "hta/critical_path/alexnet/*.json.gz",
        "tracelens/h100/Qwen*.json.gz",
    ],
)
def test_real_samples_walk_as_node_by_node(pattern, monkeypatch):
    for path in sorted(glob.glob(str(SAMPLES / pattern))):
        raw = open(path, "rb").read()
        if path.endswith(".gz"):
            raw = gzip.decompress(raw)
        trace = decode_trace(raw)
        assert _chains(trace, False, monkeypatch) == _chains(trace, True, monkeypatch), path


def test_runs_skip_nothing_on_a_gpu_bound_step(monkeypatch):
    """A step of 200 back-to-back kernels: one run walks them, with the node-by-node walk's visits."""
    events, corr = [], 0
    for i in range(200):
        corr += 1
        events.append(complete("cudaLaunchKernel", "cuda_runtime", 1.0 + i * 0.5, 0.25, correlation=corr))
        events.append(complete("gemm", "kernel", 10.0 + i * 3.3, 3.3, correlation=corr, device=0, stream=7))
    events.append(complete("ProfilerStep#1", "user_annotation", 0.0, 700.0))
    trace = decode_trace(json.dumps({"schemaVersion": 1, "traceEvents": events}).encode())
    g = cp.RankGraph(trace, np.zeros(0, np.int64))
    calls = []
    monkeypatch.setattr(cp, "walk_run", lambda *a: calls.append(a[1]) or walk_run(*a))
    w = g.from_end(0.0, 700.0)
    assert len(calls) == 1 and g.visits == 201  # the 200 kernels, then the thread that launched the first
    assert sum(1 for s in w.segs if s[2] == chain.KERNEL) == 200
