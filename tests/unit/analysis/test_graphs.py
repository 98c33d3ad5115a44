"""CUDA graph replays, their captures and torch.compile regions: known answers on synthetic traces
(tests/synth/graphs.py), the real H200 samples, and the kernel-time account on every sample."""

from __future__ import annotations

import glob
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, SAMPLES, flight_recorder_dump
from synth import graphs as G
from synth.critical import chain_doc

from tb_plugin.analysis.compiled_regions import compiled_regions
from tb_plugin.analysis.graph_capture import replay_source
from tb_plugin.analysis.graphs import graphs_document, kernel_accounting
from tb_plugin.analysis.modules import module_tree
from tb_plugin.analysis.operators import op_times, operator_rows
from tb_plugin.registry.parse import load_trace_file
from tb_plugin.trace.decode import decode_trace
from tb_plugin.trace.model import held_bytes

OPS = dict(zip(G.CAPTURED_OPS, ("gemm", "relu_k", "add_k", "mul_k")))


def _decode(doc):
    return decode_trace(json.dumps(doc).encode())


def _ops(trace):
    return {r["name"]: (r["device_self_us"], r["graph_replay_self_us"]) for r in operator_rows(trace)}


@pytest.mark.parametrize("node_ids", [True, False])
def test_capture_attributes_replayed_kernels(node_ids):
    trace = _decode(G.captured_replays(node_ids))
    doc = graphs_document(trace)
    n = len(G.REPLAYS)
    assert doc["replays"] == n and doc["graphs"] == 1
    (graph,) = doc["graph_list"]
    assert graph["status"] == "attributed" and graph["capture"] == 0
    assert graph["method"] == ("graph node id order" if node_ids else "launch order")
    assert graph["graph_id"] == (42 if node_ids else None)
    assert graph["streams"] == [7, 20] and graph["events_per_replay"] == 4
    ops = _ops(trace)
    for op, kernel in OPS.items():
        assert ops[op] == (n * G.KERNEL_US[kernel], n * G.KERNEL_US[kernel])
    assert ops["graph_replay"] == (0.0, 0.0)
    (net,) = module_tree(trace)  # the Module view credits the capturing module
    assert (net["name"], net["device_self_us"], net["graph_replay_self_us"]) == ("Net_0", n * 20.0, n * 20.0)
    kernels = {(k["name"], k["op"], k["frame"]): k["total_us"] for k in graph["kernels"]}
    assert kernels == {(k, op, "model.py(7): forward"): n * G.KERNEL_US[k] for op, k in OPS.items()}
    replay = doc["replay_list"][0]
    assert replay["busy_us"] == G.BUSY_US[node_ids]
    assert replay["gap_us"] == G.SPAN_US[node_ids] - G.BUSY_US[node_ids]
    assert replay["launch_us"] == 5.0 and replay["launch_delay_us"] == 9.0 and replay["kernels"] == 4
    total = n * sum(G.KERNEL_US.values())
    assert doc["graph_kernel_us"] == total and doc["graph_kernel_pct"] == 100.0
    assert doc["accounting"] == {
        "kernel_us": total,
        "attributed_us": total,
        "unattributed_us": 0.0,
        "from_graph_replay_us": total,
    }
    assert doc["advice"] == []


def test_replay_source_without_replays_holds_no_column():
    """A trace without graph replays: every event's source is -1 (int64, one per event), as one read-only
    value, not a column of pages; with replays it is the matched column (each replayed kernel's launch)."""
    plain = _decode(chain_doc())
    assert graphs_document(plain)["replays"] == 0
    src = replay_source(plain)
    assert src.shape == (len(plain.events),) and src.dtype == np.int64 and held_bytes(src) == 8
    assert (src == -1).all() and not src.flags.writeable
    replayed = _decode(G.captured_replays(True))
    src = replay_source(replayed)
    assert held_bytes(src) == src.nbytes == 8 * len(replayed.events)
    assert int((src >= 0).sum()) == len(G.REPLAYS) * len(G.CAPTURED_OPS)


def test_operator_times_nothing_accumulates_into_are_zero_and_held_nowhere():
    """Without graph replays or tensor-core kernels the replay and tensor-core times are never summed:
    +0 on every operator (no -0.0), no row held; the device times still roll up (each total is its self
    time plus its children's totals, the root's the whole device time launched under it)."""
    trace = _decode(chain_doc())
    t = op_times(trace)
    ops = np.flatnonzero(t.is_op)
    for per_op in (t.replay_self, t.replay_total, t.tc_self, t.tc_total):
        got = per_op[ops]
        assert len(per_op.rows) == 0 and (got == 0).all() and not np.signbit(got).any()
    device_self, device_total = t.device_self[ops], t.device_total[ops]
    assert device_self.sum() > 0 and device_total.max() == pytest.approx(device_self.sum())
    assert t.kernel_total[ops].max() == pytest.approx(t.kernel_self[ops].sum())


def test_two_captures_of_one_size_are_ambiguous():
    trace = _decode(G.ambiguous_captures())
    (graph,) = graphs_document(trace)["graph_list"]
    assert graph["status"] == "ambiguous" and graph["candidates"] == [0, 1] and graph["capture"] is None
    assert "ambiguous" in graph["note"]
    ops = _ops(trace)
    assert ops["graph_replay"] == (len(G.REPLAYS) * sum(G.KERNEL_US.values()), 0.0)  # left with the replay
    assert all(ops[op] == (0.0, 0.0) for op in G.CAPTURED_OPS)


def test_partial_capture_is_reported_and_not_matched():
    trace = _decode(G.partial_capture())
    doc = graphs_document(trace)
    (graph,) = doc["graph_list"]
    assert graph["status"] == "partial" and graph["capture"] is None
    assert doc["captures"] == [
        {"capture": 0, "start_us": 40.0, "launches": 2, "complete": False, "instantiated": True, "graphs": []}
    ]
    assert doc["accounting"]["from_graph_replay_us"] == 0.0
    assert [a["rule"] for a in doc["advice"]] == ["graphs.capture_missing"]


def test_compiled_regions_and_recompilation():
    doc = compiled_regions(_decode(G.compiled_steps()))
    regions = {r["name"]: r for r in doc["regions"]}
    assert regions["Torch-Compiled Region: 0/0"]["calls"] == 3
    assert regions["Torch-Compiled Region: 0/0"]["triton_us"] == 3 * 40.0
    assert regions["Torch-Compiled Region: 1/1"]["host_us"] == 600.0
    assert regions["CompiledFunctionBackward"]["kernel_us"] == 3 * 30.0
    assert regions["TorchDynamo Cache Lookup"]["host_us"] == 30.0
    triton = {(k["name"], k["region"]): (k["kind"], k["fused"], k["calls"]) for k in doc["triton_kernels"]}
    assert triton[("triton_poi_fused_add_mul_0", "CompiledFunction")] == ("pointwise", "add_mul", 3)
    assert triton[("triton_red_fused_sum_1", "Torch-Compiled Region: 1/1")] == ("reduction", "sum", 1)
    assert (
        triton[("triton_per_fused_native_layer_norm_backward_2", "CompiledFunctionBackward")][0]
        == "persistent_reduction"
    )
    steps = doc["steps"]
    assert [s["versions"] for s in steps] == [["0/0", "1/0"], ["0/0", "1/0"], ["0/0", "1/1"]]
    assert [s["recompilations"] for s in steps] == [0, 0, 1]
    assert [s["between_us"] for s in steps] == [100.0] * 3
    assert [s["cache_lookup_us"] for s in steps] == [10.0] * 3
    advice = {a["rule"]: a for a in doc["advice"]}
    assert set(advice) == {"compile.graph_breaks", "compile.recompilation"}
    assert advice["compile.graph_breaks"]["addressed_us"] == 100.0
    assert advice["compile.recompilation"]["addressed_us"] == 400.0 and advice["compile.recompilation"]["steps"] == [
        "3"
    ]


def test_real_cudagraph_replays_without_capture_are_grouped():
    """samples/gpu_cudagraph: the whole step captured before profiling, replayed once per step."""
    (path,) = glob.glob(str(REPO / "samples/gpu_cudagraph/*.pt.trace.json.gz"))
    trace = load_trace_file(path)
    doc = graphs_document(trace)
    assert doc["replays"] == 3 and doc["graphs"] == 1 and doc["captures"] == []
    (graph,) = doc["graph_list"]
    assert graph["status"] == "no_capture" and graph["replays"] == 3
    assert "captured before the profiled window" in graph["note"]
    assert all(k["op"] is None for k in graph["kernels"])
    assert sum(k["calls"] for k in graph["kernels"]) == 816  # every kernel of the trace, by name
    assert doc["graph_kernel_pct"] == 100.0
    assert [a["rule"] for a in doc["advice"]] == ["graphs.capture_missing"]


def test_real_compile_regions():
    (path,) = glob.glob(str(REPO / "samples/gpu_compile/*.pt.trace.json.gz"))
    doc = compiled_regions(load_trace_file(path))
    regions = {r["name"]: r for r in doc["regions"]}
    assert {
        "Torch-Compiled Region: 0/0",
        "CompiledFunction",
        "CompiledFunctionBackward",
        "TorchDynamo Cache Lookup",
    } <= set(regions)
    assert all(r["calls"] == 3 for r in regions.values())
    assert [s["versions"] for s in doc["steps"]] == [["0/0"]] * 3
    assert all(s["recompilations"] == 0 and s["between_us"] == 0.0 for s in doc["steps"])
    assert doc["advice"] == []  # one frame, no recompilation: nothing to advise
    assert {k["region"] for k in doc["triton_kernels"]} == {"CompiledFunction", "CompiledFunctionBackward"}


def _every_sample():
    """The repository's traces, then the corpus's (marked ``corpus``)."""
    own = sorted(glob.glob(str(REPO / "samples/**/*.pt.trace.json*"), recursive=True))
    corpus = sorted(glob.glob(str(SAMPLES / "**/*.json*"), recursive=True))
    return [
        pytest.param(
            f, marks=[pytest.mark.corpus] if f in corpus else [], id=Path(f).parent.name + "/" + Path(f).name[:30]
        )
        for f in own + corpus
        if not f.endswith(".expected.json") and ".memory." not in f and not flight_recorder_dump(f)
    ]


@pytest.mark.parametrize("path", _every_sample())
def test_kernel_time_is_attributed_or_listed(path):
    """Operators' kernel self time + kernel time listed as unattributed = the trace's kernel time."""
    try:
        trace = load_trace_file(path)
    except Exception:  # not a trace (a snapshot, a config): nothing to account
        pytest.skip("not a trace")
    acc = kernel_accounting(trace)
    assert acc["attributed_us"] + acc["unattributed_us"] == pytest.approx(acc["kernel_us"], rel=1e-9, abs=1e-6)


def _write_compiled(tmp_path):
    trace = tmp_path / "w.1.pt.trace.json"
    trace.write_text(json.dumps(G.compiled_steps()))
    return trace


def test_provenance_file_names_source_nodes(tmp_path):
    trace = _write_compiled(tmp_path)
    (tmp_path / "kernel_information.json").write_text(
        json.dumps(
            {
                "triton_poi_fused_add_mul_0": {
                    "stack_traces": ["model.py:12 in forward: y = x * w + b"],
                    "post_grad_nodes": ["mul", "add"],
                    "pre_grad_nodes": ["linear_mul", "add_1"],
                },
                "triton_red_fused_sum_1": {"post_grad_nodes": ["sum_1", 7], "stack_traces": "not a list"},
                7: "odd",
            }
        )
    )
    doc = compiled_regions(load_trace_file(str(trace)))
    rows = {(k["name"], k["region"]): k for k in doc["triton_kernels"]}
    poi = rows[("triton_poi_fused_add_mul_0", "CompiledFunction")]
    assert poi["source_nodes"] == ["linear_mul", "add_1"] and poi["source_lines"] == [
        "model.py:12 in forward: y = x * w + b"
    ]
    red = rows[("triton_red_fused_sum_1", "Torch-Compiled Region: 1/0")]
    assert red["source_nodes"] == ["sum_1"] and red["source_lines"] is None  # strings only
    assert rows[("triton_per_fused_native_layer_norm_backward_2", "CompiledFunctionBackward")]["source_nodes"] is None


@pytest.mark.parametrize("kind", ["fifo", "symlink", "oversized", "malformed", "not_a_dict"])
def test_hostile_provenance_file_is_ignored(tmp_path, kind):
    import os

    from tb_plugin.registry import provenance

    trace = _write_compiled(tmp_path)
    target = tmp_path / "kernel_information.json"
    if kind == "fifo":
        os.mkfifo(target)  # opening it must not block
    elif kind == "symlink":
        outside = tmp_path.parent / f"outside_{tmp_path.name}.json"
        outside.write_text(json.dumps({"triton_poi_fused_add_mul_0": {"pre_grad_nodes": ["secret"]}}))
        target.symlink_to(outside)
    elif kind == "oversized":
        target.write_text(json.dumps({"k": {"pre_grad_nodes": ["x" * (provenance.MAX_BYTES + 1)]}}))
    elif kind == "malformed":
        target.write_text("{not json")
    else:
        target.write_text("[1, 2, 3]")
    loaded = load_trace_file(str(trace))
    assert "inductor_kernels" not in loaded.meta
    assert all(k["source_nodes"] is None for k in compiled_regions(loaded)["triton_kernels"])


def test_two_graphs_one_captured():
    trace = _decode(G.two_graphs())
    doc = graphs_document(trace)
    assert doc["replays"] == 5 and doc["graphs"] == 2
    first, second = doc["graph_list"]
    assert (first["status"], first["replays"], first["events_per_replay"]) == ("attributed", 3, 4)
    assert (second["status"], second["replays"], second["events_per_replay"]) == ("partial", 2, 1)
    assert second["kernels"] == [
        {"graph": 1, "name": "other_k", "op": None, "frame": None, "calls": 2, "total_us": 14.0}
    ]
    acc = doc["accounting"]
    assert acc["from_graph_replay_us"] == 60.0 and acc["unattributed_us"] == 14.0  # no operator around its launch
    assert acc["attributed_us"] + acc["unattributed_us"] == acc["kernel_us"] == 74.0


def test_odd_graph_ids_do_not_crash():
    doc = G.captured_replays(True)
    for ev in doc["traceEvents"]:
        if ev.get("cat") == "kernel":
            ev["args"]["graph id"] = "not a number" if ev["name"] == "gemm" else -5
            ev["args"]["graph node id"] = [1]
    trace = _decode(doc)
    out = graphs_document(trace)
    assert out["replays"] == 3 and out["graph_list"][0]["graph_id"] is None
    assert out["graph_list"][0]["method"] == "launch order"  # node ids unreadable: start order


def test_provenance_is_read_through_the_logdir(tmp_path):
    """Through the registry (a confined logdir): the provenance beside the trace names source nodes in the
    report; a provenance symlinked to outside the logdir is not read."""
    from tb_plugin.registry.graph_siblings import graphs_report
    from tb_plugin.registry.runs import RunRegistry

    run = tmp_path / "logdir" / "run"
    run.mkdir(parents=True)
    _write_compiled(run)
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"triton_poi_fused_add_mul_0": {"pre_grad_nodes": ["secret"]}}))
    (run / "kernel_information.json").symlink_to(outside)
    for linked in (True, False):
        if not linked:
            (run / "kernel_information.json").unlink()
            (run / "kernel_information.json").write_text(outside.read_text().replace("secret", "mul_1"))
        registry = RunRegistry(str(tmp_path / "logdir"))
        registry.start()
        assert registry.wait_scanned(60)
        (st,) = registry.files()
        registry.ensure_loaded(st)
        rows = graphs_report(registry.views(st))["compiled"]["triton_kernels"]
        nodes = {k["name"]: k["source_nodes"] for k in rows}
        assert nodes["triton_poi_fused_add_mul_0"] == (None if linked else ["mul_1"])
        registry.stop()


@pytest.mark.parametrize("node_ids", [True, False])
def test_replayed_kernels_on_the_critical_path(node_ids):
    """The path through a replay: its kernels are named and credited by their capturing operators, carry
    the captured launch's Python frame, and depend on their ``cudaGraphLaunch`` (idle 306 → 310)."""
    import numpy as np

    from tb_plugin.analysis.critical_path import RankGraph
    from tb_plugin.analysis.critical_path_combine import critical_paths
    from tb_plugin.analysis.distributed import rank_reduce
    from tb_plugin.analysis.steps import compute_steps

    trace = _decode(G.replays_on_path(node_ids))
    steps = compute_steps(trace)
    w = RankGraph(trace, np.zeros(0, dtype=np.int64)).from_end(float(steps.start[0]), float(steps.end[0]))
    tail = [(n, a, b) for a, b, c, n, *_ in sorted(w.segs) if a >= 301.0]
    middle = (
        [("idle", 320.0, 321.0), ("aten::relu (graph replay)", 321.0, 324.0)]
        if node_ids
        else [("idle", 320.0, 322.0), ("aten::add (graph replay)", 322.0, 327.0), ("idle", 327.0, 328.0)]
    )
    last = [("aten::mul (graph replay)", 324.0, 326.0)] if node_ids else [("aten::mul (graph replay)", 328.0, 330.0)]
    assert (
        tail
        == [("cudaGraphLaunch", 301.0, 306.0), ("idle", 306.0, 310.0), ("aten::mm (graph replay)", 310.0, 320.0)]
        + middle
        + last
    )
    (path,) = critical_paths([(0, rank_reduce(trace)["critical_path"])])
    items = {i["name"]: (i["category"], i["us"], i["segments"]) for i in path["top_items"]}
    assert items["aten::mm (graph replay)"] == ("kernel", 10.0, 1)
    assert items["aten::mul (graph replay)"] == ("kernel", 2.0, 1)
    replayed = [s for s in path["segments"] if s["name"].endswith("(graph replay)")]
    assert replayed and all(s["python"] == "model.py(7): forward" for s in replayed)  # the ten longest only


def test_unmatched_replays_keep_kernel_names_on_the_path():
    """Without a matched capture (ambiguous), the path names the replayed kernels themselves."""
    doc = G.ambiguous_captures()
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e["name"] != "graph_replay"]
    from tb_plugin.analysis.critical_path_combine import critical_paths
    from tb_plugin.analysis.distributed import rank_reduce

    (path,) = critical_paths([(0, rank_reduce(_decode(doc))["critical_path"])])
    names = {i["name"] for i in path["top_items"] if i["category"] == "kernel"}
    assert "gemm" in names and not any(n.endswith("(graph replay)") for n in names)


@pytest.mark.parametrize("node_ids", [True, False])
def test_replay_bands_route(tmp_path, node_ids):
    """``graph_replays``: one band per replay and stream track (3 replays × streams 7 and 20), from the
    first start to the last end of the replay's work on that stream (timeline clock: origin 4 µs), with
    the replay's kernels (4), busy µs and its graph's status; the tracks are the timeline's stream tracks."""
    from conftest import loaded_registry, write_json

    from tb_plugin import api

    write_json(tmp_path / "one" / "w.pt.trace.json", G.captured_replays(node_ids))
    reg = loaded_registry(tmp_path)
    q = {"run": "one", "worker": "w", "span": "1"}
    code, doc = api.graph_replays(reg, q)
    assert code == 200 and doc["state"] == "ready" and (doc["total"], doc["shown"]) == (6, 6)
    assert doc["graphs"] == [{"graph": 0, "status": "attributed", "replays": 3}]
    _, meta = api.timeline_meta(reg, q)
    stream_of = {t["id"]: t["name"] for t in meta["tracks"] if t["kind"] == "stream"}
    b = doc["bands"]
    got = [
        (stream_of[t], s, e, r, g, k, u)
        for s, e, t, r, g, k, u in zip(
            b["start_us"], b["end_us"], b["track"], b["replay"], b["graph"], b["kernels"], b["busy_us"]
        )
    ]
    lay = {
        True: {"stream 7": (10.0, 24.0), "stream 20": (12.0, 26.0)},
        False: {"stream 7": (10.0, 24.0), "stream 20": (22.0, 30.0)},
    }[node_ids]
    want = sorted(
        (
            (name, t + a - 4.0, t + e - 4.0, r, 0, 4, G.BUSY_US[node_ids])
            for r, t in enumerate(G.REPLAYS)
            for name, (a, e) in lay.items()
        ),
        key=lambda x: (x[1], x[0] != "stream 7"),
    )
    assert sorted(got, key=lambda x: (x[1], x[0] != "stream 7")) == want
    assert [x[1] for x in got] == sorted(x[1] for x in got)


def test_replay_bands_without_replays(tmp_path):
    from conftest import loaded_registry, write_json

    from tb_plugin import api

    write_json(tmp_path / "one" / "w.pt.trace.json", G.compiled_steps())
    code, doc = api.graph_replays(loaded_registry(tmp_path), {"run": "one", "worker": "w", "span": "1"})
    assert code == 200 and doc["total"] == 0 and doc["bands"]["start_us"] == [] and doc["graphs"] == []


def test_capture_in_another_trace_of_the_run(tmp_path, capsys):
    """Replays in one trace, their capture in another trace of the run: the graph is attributed from it
    (status ``other_trace``, the file named), kernels grouped by the capturing operator and frame; the
    trace's own Operator table and accounting are unchanged (nothing "from graph replay"), the same answer in
    the route, MCP and the notebook; without the other trace: ``no_capture`` and its note."""
    from conftest import loaded_registry, write_json

    from tb_plugin import api
    from tb_plugin.analysis.graphs import NOTES
    from tb_plugin.interfaces.mcp_tools import Tools
    from tb_plugin.interfaces.notebook import Trace as NotebookTrace

    capture, replayed = G.split_capture()
    write_json(tmp_path / "job" / "a_capture.pt.trace.json", capture)
    write_json(tmp_path / "job" / "b_replay.pt.trace.json", replayed)
    reg = loaded_registry(tmp_path)
    code, doc = api.graphs(reg, {"run": "job", "worker": "b_replay", "span": "1"})
    assert code == 200
    (g,) = doc["cuda_graphs"]["graph_list"]
    assert (g["status"], g["capture_file"], g["method"]) == (
        "other_trace",
        "job/a_capture.pt.trace.json",
        "launch order",
    )
    assert "job/a_capture.pt.trace.json" in g["note"]
    got = {(k["name"], k["op"], k["frame"]): (k["calls"], k["total_us"]) for k in g["kernels"]}
    assert got == {
        (name, op, "model.py(7): forward"): (3, 3 * G.KERNEL_US[name])
        for name, op in zip(("gemm", "relu_k", "add_k", "mul_k"), G.CAPTURED_OPS)
    }
    acc = doc["cuda_graphs"]["accounting"]
    # this trace's own account: the kernels stay with the ``graph_replay`` annotation around the launch
    assert (acc["kernel_us"], acc["attributed_us"], acc["from_graph_replay_us"]) == (60.0, 60.0, 0.0)
    assert doc["cuda_graphs"]["advice"] == []  # the capture was found: no "profile the capture" advice
    st = reg.find("job", "b_replay", "1")
    (mcp,) = Tools(reg).graphs("job", "b_replay", "1")["cuda_graphs"]["graph_list"]
    assert (mcp["status"], mcp["capture_file"]) == ("other_trace", "job/a_capture.pt.trace.json")
    nb = NotebookTrace(reg, st).graphs()["graphs"]
    assert list(nb["status"]) == ["other_trace"]
    from tb_plugin.cli import main

    assert main(["report", str(tmp_path), "--json", "--no-cache"]) == 0  # the CLI report finds it too
    (worker,) = [w for w in json.loads(capsys.readouterr().out)["runs"][0]["workers"] if w["worker"] == "b_replay"]
    (rep,) = worker["graphs"]["cuda_graphs"]["graph_list"]
    assert (rep["status"], rep["capture_file"]) == ("other_trace", "job/a_capture.pt.trace.json")

    alone = tmp_path / "alone"
    write_json(alone / "solo" / "b_replay.pt.trace.json", replayed)
    _, doc = api.graphs(loaded_registry(alone), {"run": "solo", "worker": "b_replay", "span": "1"})
    (g,) = doc["cuda_graphs"]["graph_list"]
    assert g["status"] == "no_capture" and g["note"] == NOTES["no_capture"] and "capture_file" not in g
    assert [a["rule"] for a in doc["cuda_graphs"]["advice"]] == ["graphs.capture_missing"]


def test_replay_bands_say_the_other_trace_status(tmp_path):
    from conftest import loaded_registry, write_json

    from tb_plugin import api

    capture, replayed = G.split_capture()
    write_json(tmp_path / "job" / "a_capture.pt.trace.json", capture)
    write_json(tmp_path / "job" / "b_replay.pt.trace.json", replayed)
    _, doc = api.graph_replays(loaded_registry(tmp_path), {"run": "job", "worker": "b_replay", "span": "1"})
    assert doc["graphs"] == [{"graph": 0, "status": "other_trace", "replays": 3}] and doc["total"] == 6


def test_kernel_table_by_graph(tmp_path):
    """``group_by=graph``: per kernel name and graph (two graphs, one kernel outside every replay), in
    the route, MCP ``top_kernels`` and the notebook; the groups add up to the kernel time."""
    from conftest import loaded_registry, write_json

    from tb_plugin import api
    from tb_plugin.interfaces.mcp_tools import Tools
    from tb_plugin.interfaces.notebook import Trace as NotebookTrace

    doc = G.two_graphs()
    doc["traceEvents"] += [
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 1,
            "tid": 1,
            "ts": 700.0,
            "dur": 2.0,
            "args": {"correlation": 3000},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "gemm",
            "pid": 0,
            "tid": 7,
            "ts": 710.0,
            "dur": 4.0,
            "args": {"device": 0, "stream": 7, "correlation": 3000},
        },
    ]
    write_json(tmp_path / "one" / "w.pt.trace.json", doc)
    reg = loaded_registry(tmp_path)
    code, page = api.kernels(reg, {"run": "one", "worker": "w", "span": "1", "group_by": "graph"})
    assert code == 200
    got = {(r["name"], r["graph"]): (r["calls"], r["total_us"]) for r in page["rows"]}
    assert got == {
        ("gemm", 0): (3, 30.0),
        ("relu_k", 0): (3, 9.0),
        ("add_k", 0): (3, 15.0),
        ("mul_k", 0): (3, 6.0),
        ("other_k", 1): (2, 14.0),
        ("gemm", None): (1, 4.0),
    }
    mcp = Tools(reg).top_kernels("one", "w", "1", group_by="graph", limit=2)
    assert [(r["name"], r["graph"]) for r in mcp["rows"]] == [("gemm", 0), ("add_k", 0)] and mcp["rows_total"] == 6
    nb = NotebookTrace(reg, reg.find("one", "w", "1")).kernels(group_by="graph")
    assert "graph" in nb.columns and len(nb) == 6 and float(nb["total_us"].sum()) == 78.0
    _, plain = api.kernels(reg, {"run": "one", "worker": "w", "span": "1"})
    assert "graph" not in plain["rows"][0]
