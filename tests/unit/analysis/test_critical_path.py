"""The critical path of each step, on one rank and across ranks.

Known answers by construction (tests/synth/critical.py), the tiling ``Σ = length_us = step time``,
the late rank of collectives on the real DLRM sample, and the report's ``critical_path``.
"""

from __future__ import annotations

import glob
import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
from conftest import REPO, sample
from synth.critical import CHAIN_EXPECTED, DATALOADER, chain_doc, dataloader_docs, dataloader_expected, dataloader_job

from tb_plugin.analysis.collective_matching import match_collectives
from tb_plugin.analysis.critical_path import rank_chains
from tb_plugin.analysis.critical_path_combine import critical_paths
from tb_plugin.analysis.distributed import comm_kernels, distributed_view, rank_of_info, rank_reduce
from tb_plugin.analysis.steps import compute_steps
from tb_plugin.trace.decode import decode_trace


def _tiles(path: dict) -> None:
    assert sum(path["by_category"].values()) == pytest.approx(path["length_us"], abs=1e-6)
    assert sum(r["us"] for r in path["by_rank"]) == pytest.approx(path["length_us"], abs=1e-6)
    assert all(v >= 0 for v in path["by_category"].values())


def test_single_rank_known_chain():
    """One rank: data loader → launch → gemm_A → relu_B (stream order) → sync → host (synth.critical)."""
    trace = decode_trace(json.dumps(chain_doc()).encode())
    (path,) = critical_paths([(0, rank_reduce(trace)["critical_path"])])
    steps = compute_steps(trace)
    assert path["length_us"] == CHAIN_EXPECTED["length_us"] == steps.end[0] - steps.start[0]
    assert path["by_category"] == CHAIN_EXPECTED["by_category"]
    assert path["by_rank"] == [{"rank": 0, "us": 1000.0, "pct": 100.0}]
    got = sorted((s["category"], s["name"], s["start_us"], s["dur_us"]) for s in path["segments"])
    assert got == sorted(CHAIN_EXPECTED["segments"])
    assert [s["dur_us"] for s in path["segments"]] == sorted((s["dur_us"] for s in path["segments"]), reverse=True)
    assert path["collectives"] == [] and not path["truncated"]
    assert path["host_blocked_us"] == CHAIN_EXPECTED["host_blocked_us"]
    items = {(i["category"], i["name"]): (i["us"], i["segments"]) for i in path["top_items"]}
    assert items[("kernel", "gemm_A")] == (300.0, 1) and items[("cpu", "aten::item")] == (70.0, 1)
    assert ("waiting", "idle") not in items
    _tiles(path)
    for s in path["segments"]:  # row: the segment's event in the trace ("show in trace"), -1 for waiting
        assert (
            (trace.strings[trace.events.name[s["row"]]] == s["name"]) if s["category"] != "waiting" else s["row"] == -1
        )


def test_rank_reduce_walks_the_critical_path_before_the_operator_tree_and_gpu_summary(monkeypatch):
    """The per-rank half walks the chains first, from the communication kernels' rows alone: a section
    child (registry/executors/sections.py) walks them while its parent makes the operator tree's and GPU
    summary's memos and hands them over. The rows are comm_kernels' rows; the summary is the same."""
    from tb_plugin.analysis import distributed

    trace = decode_trace(json.dumps(dataloader_docs([[50, 60]])[1]).encode())
    seen: list[set] = []
    real = distributed.rank_chains

    def walked(t, rows):
        seen.append(set(t.derived))
        return real(t, rows)

    monkeypatch.setattr(distributed, "rank_chains", walked)
    red = rank_reduce(trace)
    (before,) = seen
    assert not {"op_tree", "gpu_summary", "comm_kernels"} & before
    assert distributed.comm_kernel_rows(trace).tolist() == comm_kernels(trace)["rows"].tolist() != []
    again = decode_trace(json.dumps(dataloader_docs([[50, 60]])[1]).encode())
    assert red["critical_path"] == real(again, comm_kernels(again)["rows"])


@pytest.mark.parametrize("dl", [[[60, 50], [50, 500]], [[50, 50, 50, 180], [50, 50, 900, 50], [40, 30, 20, 10]]])
def test_slow_dataloader_rank_is_on_the_path(dl):
    """One rank loads its batch slowly in one step: the path runs through that rank's data loader and
    the all-reduce names it late; the ranks' clocks differ (baseTimeNanoseconds) and are reconciled."""
    view = distributed_view(dataloader_job(dl))
    paths = view["critical_path"]
    assert [p["step"] for p in paths] == [str(k + 1) for k in range(len(dl))]
    for k, path in enumerate(paths):
        want = dataloader_expected(dl, k)
        assert path["length_us"] == pytest.approx(want["length_us"])
        assert path["by_category"] == pytest.approx(want["by_category"])
        assert {r["rank"]: r["us"] for r in path["by_rank"]} == pytest.approx(want["by_rank"])
        _tiles(path)
        loaders = [s for s in path["segments"] if s["name"] == DATALOADER]
        assert [(s["rank"], s["dur_us"]) for s in loaders] == [(want["late"], dl[k][want["late"]])]
        if want["late"] != want["walker"]:
            (coll,) = path["collectives"]
            assert (coll["rank"], coll["late_rank"], coll["wait_us"], coll["dur_us"]) == (
                want["walker"],
                want["late"],
                pytest.approx(want["wait_us"]),
                pytest.approx(50.0),
            )
            assert coll["late_work"] == {
                "name": DATALOADER,
                "category": "cpu",
                "dur_us": dl[k][want["late"]],
                "annotation": None,
            }
            trace = dict((r, t) for r, _, t in dataloader_job(dl))[coll["rank"]]
            assert trace.strings[trace.events.name[coll["row"]]] == coll["name"]
            # start_us is on the late rank's own clock (true time − 1000·rank), as its timeline shows it
            (loader,) = loaders
            assert loader["start_us"] == pytest.approx(k * 2000.0 - 1000.0 * want["late"])
        else:
            assert path["collectives"] == []


def test_rank_summary_is_compact():
    """Only chains travel: the per-rank summary keeps ten segments per chain, so its size does not grow
    with the events on the path (300 or 3000 host ops replace the late rank's data loader)."""
    sizes, cpu = [], []
    for n in (300, 3000):
        doc = dataloader_docs([[50, 60]])[1]
        doc["traceEvents"] = [e for e in doc["traceEvents"] if e["name"] != DATALOADER]
        doc["traceEvents"] += [
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": f"op{i % 7}",
                "pid": 1,
                "tid": 1,
                "ts": 60.0 / n * i - 1000.0,
                "dur": 30.0 / n,
                "args": {},
            }
            for i in range(n)
        ]
        trace = decode_trace(json.dumps(doc).encode())
        cp = rank_chains(trace, comm_kernels(trace)["rows"])
        sizes.append(len(pickle.dumps(cp)))  # what an executor sends
        cpu.append(cp["comm"]["chain"][0]["by_category"])
    assert sizes[1] < 1.1 * sizes[0] < 20_000
    for by_cat in cpu:  # the ops' 30 µs and aten::mm's first 5 as cpu; the gaps between the ops wait
        assert by_cat == pytest.approx([100.0, 35.0, 0.0, 35.0])


_NO_CYCLES_PROBE = """
import gc, json
from synth.critical import dataloader_docs
from tb_plugin.analysis.critical_path import rank_chains
from tb_plugin.analysis.distributed import comm_kernels
from tb_plugin.trace.decode import decode_trace
trace = decode_trace(json.dumps(dataloader_docs([[50, 60, 40]])[1]).encode())
rows = comm_kernels(trace)["rows"]
gc.collect()
gc.disable()
expected = rank_chains(trace, rows)
left = gc.collect()
gc.enable()
print(left, rank_chains(trace, rows) == expected, gc.isenabled())
"""


def test_walks_leave_no_cycles_and_the_collector_as_found():
    """The walks run with the collector paused: each step's memo is cleared at its end, so nothing they
    made is left for the collector (no unreachable cycles), and the collector is on again after.

    In a child of its own: in a pytest worker, threads and finalizers left by earlier tests can make
    garbage while the collector is paused, which is not the walks' (CI saw 35 such objects once)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), str(REPO)])}
    done = subprocess.run(
        [sys.executable, "-c", _NO_CYCLES_PROBE], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["0", "True", "True"]


@pytest.mark.corpus
def test_dlrm_sample_length_and_late_ranks():
    """DLRM, 8 ranks: the path's length is each step's span over the ranks on the common clock; the
    late rank of each collective on the path is the one whose NCCL kernel of that instance starts last."""
    files = sorted(glob.glob(str(sample("dlrm_8ranks")) + "/*.json"))
    assert len(files) == 8
    loaded = []
    for i, f in enumerate(files):
        trace = decode_trace(open(f, "rb").read())
        red = rank_reduce(trace)
        rank, _ = rank_of_info(red["distributed_info"], f, i)
        loaded.append((rank, trace, red))
    paths = critical_paths(
        [(r, red["critical_path"]) for r, _, red in loaded], match_collectives({r: red["comm"] for r, _, red in loaded})
    )
    assert paths
    matching = match_collectives({r: red["comm"] for r, _, red in loaded})
    traces = {r: (t, red) for r, t, red in loaded}
    # independent starts of each rank's NCCL kernels on the common clock (trace time + base time)
    starts = {}
    for r, (t, red) in traces.items():
        ev = t.events
        rows = comm_kernels(t)["rows"]
        base = float(t.meta.get("baseTimeNanoseconds") or 0) / 1000.0
        starts[r] = ev.ts[rows] + base
    late_of = {}
    for gm in matching.groups:
        s = np.stack([starts[r][gm.index[:, p]] for p, r in enumerate(gm.ranks)], axis=1)
        for k in range(len(gm.index)):
            for p, r in enumerate(gm.ranks):
                late_of[(r, round(float(starts[r][gm.index[k, p]]), 3))] = gm.ranks[int(np.argmax(s[k]))]
    checked = 0
    for path in paths:
        name = path["step"]
        spans = [
            (
                st.start[st.names.index(name)],
                st.end[st.names.index(name)],
                float(t.meta.get("baseTimeNanoseconds") or 0) / 1000.0,
            )
            for t, _ in traces.values()
            for st in [compute_steps(t)]
            if name in st.names
        ]
        assert path["length_us"] == pytest.approx(max(e + b for _, e, b in spans) - min(s + b for s, _, b in spans))
        _tiles(path)
        for coll in path["collectives"]:
            base = float(traces[coll["rank"]][0].meta.get("baseTimeNanoseconds") or 0) / 1000.0
            # the collective segment starts where the late rank arrived; its own kernel started wait_us before
            own_start = round(coll["start_us"] - coll["wait_us"] + base, 3)
            assert late_of[(coll["rank"], own_start)] == coll["late_rank"] != coll["rank"]
            checked += 1
    assert checked >= 1
    # every matched instance, on the path or not: its late rank is the one whose kernel starts last
    from tb_plugin.analysis.critical_path_combine import _late_ranks

    cps = {r: red["critical_path"] for r, _, red in loaded}
    ref = min(cp["offset_us"] for cp in cps.values())
    late = _late_ranks(cps, matching, {r: cp["offset_us"] - ref for r, cp in cps.items()})
    instances = 0
    for r in cps:
        for i in np.flatnonzero(late[r][0] >= 0).tolist():
            assert late_of[(r, round(float(starts[r][i]), 3))] == late[r][0][i]
            instances += 1
    assert instances == sum(gm.index.size for gm in matching.groups) > 0


def test_report_has_critical_path(tmp_path, capsys):
    """The report: ``critical_path`` beside ``distributed`` for a multi-rank run, in the worker of a
    single-rank run."""
    from tb_plugin.cli import main

    job, single = tmp_path / "job", tmp_path / "single"
    job.mkdir()
    single.mkdir()
    for r, doc in enumerate(dataloader_docs([[60, 50], [50, 500]])):
        (job / f"rank{r}.pt.trace.json").write_text(json.dumps(doc))
    (single / "w.pt.trace.json").write_text(json.dumps(chain_doc()))
    assert main(["report", str(tmp_path), "--json", "--no-cache"]) == 0
    doc = json.loads(capsys.readouterr().out)
    runs = {r["name"]: r for r in doc["runs"]}
    first, second = runs["job"]["critical_path"]
    assert (first["length_us"], second["length_us"]) == (230.0, 670.0)
    assert second["collectives"][0]["late_rank"] == 1
    assert "distributed" in runs["job"]
    (w,) = runs["single"]["workers"]
    (path,) = w["critical_path"]
    assert path["by_category"] == CHAIN_EXPECTED["by_category"]


@pytest.mark.corpus
@pytest.mark.parametrize(
    "rel",
    [
        "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
        "hta/trace_diff/test/test.json.gz",
        "hta/ns_resolution_trace",
        "tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
        "torch213_cpu",
        "composer/rank_0.trace.json",
    ],
)
def test_real_single_rank_paths_tile_each_step(rel):
    """Real traces (GPU, ROCm, CPU-only, Composer, absolute clocks): each step's path tiles the step,
    Σ by_category = length_us = the step's end − start, with no overlapping stream work counted twice."""
    import gzip

    path = sample(rel)
    files = sorted(p for p in path.rglob("*") if p.name.endswith((".json", ".json.gz"))) if path.is_dir() else [path]
    for f in files[:2]:
        raw = gzip.open(f).read() if f.name.endswith(".gz") else f.read_bytes()
        trace = decode_trace(raw)
        steps = compute_steps(trace)
        paths = critical_paths([(0, rank_reduce(trace)["critical_path"])])
        assert [p["step"] for p in paths] == steps.names
        for p, lo, hi in zip(paths, steps.start, steps.end):
            assert p["length_us"] == hi - lo
            _tiles(p)
            assert not p["truncated"]


def test_pipeline_send_recv_path_crosses_to_the_sender():
    """Two pipeline stages (synth.critical.pipeline_docs): the receiver's path waits at the recv for
    the sender, and continues on the sender's forward gemm."""
    from synth.critical import pipeline_docs

    ranks = [(r, f"stage{r}", decode_trace(json.dumps(doc).encode())) for r, doc in enumerate(pipeline_docs())]
    (path,) = distributed_view(ranks)["critical_path"]
    assert path["length_us"] == 570.0
    assert path["by_category"] == {"kernel": 500.0, "cpu": 15.0, "communication": 50.0, "waiting": 5.0}
    assert path["by_rank"] == [
        {"rank": 0, "us": 310.0, "pct": 310 / 570 * 100},
        {"rank": 1, "us": 260.0, "pct": 260 / 570 * 100},
    ]
    # the shares of the length, served once (the Distributed view and the CLI show them as they are)
    assert path["by_category_pct"] == {
        "kernel": 500 / 570 * 100,
        "cpu": 15 / 570 * 100,
        "communication": 50 / 570 * 100,
        "waiting": 5 / 570 * 100,
    }
    (coll,) = path["collectives"]
    assert (coll["rank"], coll["late_rank"], coll["wait_us"], coll["start_us"], coll["dur_us"]) == (
        1,
        0,
        300.0,
        310.0,
        50.0,
    )
    assert coll["late_work"] == {"name": "gemm0", "category": "kernel", "dur_us": 300.0, "annotation": None}
    assert [(s["rank"], s["name"], s["dur_us"]) for s in path["segments"][:2]] == [
        (0, "gemm0", 300.0),
        (1, "gemm1", 200.0),
    ]


def test_hop_bound_still_tiles(monkeypatch):
    """Past the bound on followed chains the rest of the window is waiting: the path still tiles."""
    import tb_plugin.analysis.critical_path_combine as combine

    monkeypatch.setattr(combine, "MAX_HOPS", 1)
    for path in distributed_view(dataloader_job([[60, 50], [50, 500]]))["critical_path"]:
        assert path["truncated"]
        _tiles(path)
        assert path["length_us"] in (230.0, 670.0)


@pytest.mark.parametrize("recorded", [True, False])
def test_recorded_stream_wait_beats_timing(recorded):
    """A cudaStreamWaitEvent recorded by CUPTI ("Stream Wait Event" with its cudaEventRecord's
    correlation) is an edge from the recorded stream's last work to the waiting stream's next kernel;
    without it the wait is inferred from timing and lands on other work (synth.critical.wait_event_doc)."""
    from synth.critical import WAIT_EXPECTED, wait_event_doc

    trace = decode_trace(json.dumps(wait_event_doc(recorded)).encode())
    (path,) = critical_paths([(0, rank_reduce(trace)["critical_path"])])
    assert path["length_us"] == 600.0
    assert path["by_category"] == WAIT_EXPECTED[recorded]
    kernels = {s["name"] for s in path["segments"] if s["category"] == "kernel"}
    assert kernels == ({"gemm_X", "relu_Z"} if recorded else {"gemm_Y", "relu_Z"})
    _tiles(path)


@pytest.mark.corpus
def test_recorded_waits_on_real_sample():
    """HTA's alexnet trace (A100, PyTorch 2.1) records 20 Stream Wait Events; the 6 whose streams have
    device work on both sides become edges, each from a kernel that ended before its waiter started,
    across streams 7 and 20; where timing alone also explains the wait it picks the same kernel."""
    import gzip

    from tb_plugin.analysis import critical_path as cp

    raw = gzip.open(sample("hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz")).read()
    trace = decode_trace(raw)
    g = cp.RankGraph(trace, comm_kernels(trace)["rows"])
    assert g.explicit and int((trace.events.wait_event_correlation >= 0).sum()) == 20
    waiter = np.flatnonzero(g.waits_on >= 0)
    src = g.waits_on[waiter]
    assert len(waiter) == 6
    ev = trace.events
    assert (g.te[src] <= g.ts[waiter]).all()
    assert {(int(ev.stream[g.dev[s]]), int(ev.stream[g.dev[w]])) for s, w in zip(src, waiter)} == {(7, 20), (20, 7)}

    class _W:
        lo = -np.inf

        def add(self, *a):
            pass

    recorded = [g._before_dev(_W(), int(i)) for i in waiter]
    g.explicit, g.waits_on = False, np.full(len(g.dev), -1)
    inferred = [g._before_dev(_W(), int(i)) for i in waiter]
    bound = [r for r in recorded if r[0] == "dev"]
    assert len(bound) == 2 and [r[:2] for r in recorded] == [r[:2] for r in inferred]
