"""Synthetic traces for CUDA graph replays and torch.compile regions, with answers known by construction.

:func:`captured_replays`: on host thread (1, 1), a Python frame ``model.py(7): forward`` [5, 45] µs
holds one capture: ``cudaStreamBeginCapture`` at 10, then ``aten::mm`` [12, 16], ``aten::relu``
[17, 20], ``aten::add`` [21, 24], ``aten::mul`` [25, 28], each around one ``cudaLaunchKernel``
(captured: no device work), ``cudaStreamEndCapture`` at 40, ``cudaGraphInstantiate`` at 46. Then
:data:`REPLAYS` replays at ``t = 100, 200, 300``: a ``graph_replay`` annotation [t, t + 60] around a
``cudaGraphLaunch`` [t + 1, t + 6]; its kernels ``gemm`` (stream 7, [t + 10, t + 20]), ``relu_k``
(stream 7), ``add_k`` (stream 20), ``mul_k`` (stream 20) of :data:`KERNEL_US` µs. With
``node_ids``, each kernel carries ``graph id`` 42 and ``graph node id`` 1…4 in capture order, and
``add_k`` starts before ``relu_k`` (start order ≠ capture order; node ids set it right); without,
they start in capture order. Known: the mm/relu/add/mul rows own 3 × 10, 3 × 3, 3 × 5, 3 × 2 µs of
device self, all "from graph replay"; ``graph_replay`` owns none; each replay's busy time is 10 + 3 +
5 + 2 − overlaps (:data:`BUSY_US`; the span from the first start to the last end: :data:`SPAN_US`).

:func:`split_capture`: :func:`captured_replays` as two traces of one run: the capture (with its frames)
in one, the replays (without node ids) in the other.

:func:`ambiguous_captures`: the same with a second identical capture at 50–90 µs: two captures of 4
launches, so the graph is ambiguous and its kernels stay with ``graph_replay``.

:func:`partial_capture`: the capture cut at its start (no ``cudaStreamBeginCapture``; only the last two
launches are in the trace): the graph is ``partial``, the capture incomplete, nothing attributed.

:func:`compiled_steps`: three ``ProfilerStep#k`` of 1000 µs at 0, 1000, 2000 on thread (1, 1). In each,
``TorchDynamo Cache Lookup`` [s + 10, s + 20], ``Torch-Compiled Region: 0/0`` [s + 20, s + 300]
holding ``CompiledFunction`` [s + 30, s + 290] holding op ``triton_poi_fused_add_mul_0`` around a
``cuLaunchKernel`` of kernel ``triton_poi_fused_add_mul_0`` (40 µs); eager ``aten::nonzero``
[s + 300, s + 400] (a graph break: 100 µs between regions); then ``Torch-Compiled Region: 1/0``
(step 3: ``1/1``, a recompilation that takes 400 µs longer, the step too: 1400 µs) [s + 400, s + 600]
holding ``triton_red_fused_sum_1`` (20 µs). Backward: ``CompiledFunctionBackward`` on thread (1, 2)
[s + 700, s + 800] with ``triton_per_fused_native_layer_norm_backward_2`` (30 µs).

:func:`replays_on_path`: :func:`captured_replays` without the ``graph_replay`` annotations, so the host
is done at 306 µs and the last replay's kernels end the trace: its critical path ends in replayed
kernels (node ids: ``mul_k`` [324, 326] ← ``relu_k`` [321, 324] ← ``gemm`` [310, 320]; without:
``mul_k`` [328, 330] ← ``add_k`` [322, 327] ← ``gemm`` [310, 320]), and before ``gemm`` the path waits
[306, 310] for its ``cudaGraphLaunch`` [301, 306].
"""

from __future__ import annotations

REPLAYS = (100.0, 200.0, 300.0)
KERNEL_US = {"gemm": 10.0, "relu_k": 3.0, "add_k": 5.0, "mul_k": 2.0}
CAPTURED_OPS = ("aten::mm", "aten::relu", "aten::add", "aten::mul")


def _x(name, cat, ts, dur, pid=1, tid=1, **args):
    ev = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        ev["args"] = args
    return ev


def _capture(events, t0, begin=True, first_op=0):
    if begin:
        events.append(_x("cudaStreamBeginCapture", "cuda_runtime", t0, 1.0, correlation=900 + int(t0)))
    for k, op in enumerate(CAPTURED_OPS):
        if k < first_op:
            continue
        s = t0 + 2.0 + 4.0 * k
        events.append(_x(op, "cpu_op", s, 3.0))
        events.append(_x("cudaLaunchKernel", "cuda_runtime", s + 1.0, 1.0, correlation=500 + int(t0) + k))
    events.append(_x("cudaStreamEndCapture", "cuda_runtime", t0 + 30.0, 1.0))
    events.append(_x("cudaGraphInstantiate", "cuda_runtime", t0 + 36.0, 2.0))


#: per replay (start offset from t, stream) of each kernel
_LAYOUT = {
    True: {"gemm": (10.0, 7), "add_k": (12.0, 20), "relu_k": (21.0, 7), "mul_k": (24.0, 20)},
    False: {"gemm": (10.0, 7), "relu_k": (21.0, 7), "add_k": (22.0, 20), "mul_k": (28.0, 20)},
}
#: per replay: the union of its kernels (µs), by layout (node ids or not)
BUSY_US = {True: 10.0 + 3.0 + 2.0, False: 10.0 + 6.0 + 2.0}  # add_k under gemm / relu_k ∪ add_k = [21, 27]
SPAN_US = {True: 26.0 - 10.0, False: 30.0 - 10.0}


def _replays(events, node_ids):
    for r, t in enumerate(REPLAYS):
        corr = 1000 + r
        events.append(_x("graph_replay", "user_annotation", t, 60.0))
        events.append(_x("cudaGraphLaunch", "cuda_runtime", t + 1.0, 5.0, correlation=corr))
        for node, name in enumerate(("gemm", "relu_k", "add_k", "mul_k"), start=1):
            start, stream = _LAYOUT[node_ids][name]
            args = {"device": 0, "stream": stream, "correlation": corr}
            if node_ids:
                args.update({"graph id": 42, "graph node id": node})
            events.append(_x(name, "kernel", t + start, KERNEL_US[name], pid=0, tid=stream, **args))


def captured_replays(node_ids: bool = True) -> dict:
    """(See the module docstring; the forward frame runs inside module ``nn.Module: Net_0`` [4, 46].)"""
    events = [
        _x("nn.Module: Net_0", "python_function", 4.0, 42.0),
        _x("model.py(7): forward", "python_function", 5.0, 40.0),
    ]
    _capture(events, 10.0)
    _replays(events, node_ids)
    return {"traceEvents": events}


def replays_on_path(node_ids: bool = True) -> dict:
    """(See the module docstring.)"""
    doc = captured_replays(node_ids)
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e["name"] != "graph_replay"]
    return doc


def split_capture() -> tuple[dict, dict]:
    """(See the module docstring.) ``(capture trace, replay trace)``."""
    events = [
        _x("nn.Module: Net_0", "python_function", 4.0, 42.0),
        _x("model.py(7): forward", "python_function", 5.0, 40.0),
    ]
    _capture(events, 10.0)
    replayed = []
    _replays(replayed, False)
    return {"traceEvents": events}, {"traceEvents": replayed}


def ambiguous_captures() -> dict:
    events = []
    _capture(events, 10.0)
    _capture(events, 50.0)
    _replays(events, False)
    return {"traceEvents": events}


def partial_capture() -> dict:
    events = []
    _capture(events, 10.0, begin=False, first_op=2)
    _replays(events, False)
    return {"traceEvents": events}


def compiled_steps() -> dict:
    ev = []
    corr = [0]

    def launch(op, kernel, t, dur, tid=1):
        corr[0] += 1
        ev.append(_x(op, "cpu_op", t, 10.0, tid=tid))
        ev.append(_x("cuLaunchKernel", "cuda_driver", t + 2.0, 5.0, tid=tid, correlation=corr[0]))
        ev.append(_x(kernel, "kernel", t + 20.0, dur, pid=0, tid=7, device=0, stream=7, correlation=corr[0]))

    for k in range(3):
        s = 1000.0 * k
        extra = 400.0 if k == 2 else 0.0
        ev.append(_x(f"ProfilerStep#{k + 1}", "user_annotation", s, 1000.0 + (extra if k == 2 else 0.0)))
        ev.append(_x("TorchDynamo Cache Lookup", "cpu_op", s + 10.0, 10.0))
        ev.append(_x("Torch-Compiled Region: 0/0", "cpu_op", s + 20.0, 280.0))
        ev.append(_x("CompiledFunction", "cpu_op", s + 30.0, 260.0))
        launch("triton_poi_fused_add_mul_0", "triton_poi_fused_add_mul_0", s + 40.0, 40.0)
        ev.append(_x("aten::nonzero", "cpu_op", s + 300.0, 100.0))
        ev.append(_x("Torch-Compiled Region: " + ("1/1" if k == 2 else "1/0"), "cpu_op", s + 400.0, 200.0 + extra))
        launch("triton_red_fused_sum_1", "triton_red_fused_sum_1", s + 410.0, 20.0)
        ev.append(_x("CompiledFunctionBackward", "cpu_op", s + 700.0 + extra, 100.0, tid=2))
        launch(
            "triton_per_fused_native_layer_norm_backward_2",
            "triton_per_fused_native_layer_norm_backward_2",
            s + 710.0 + extra,
            30.0,
            tid=2,
        )
    return {"traceEvents": ev}


def two_graphs() -> dict:
    """:func:`captured_replays` without node ids, plus 2 replays at 500 and 600 µs of another graph (one
    ``other_k`` kernel of 7 µs at t + 10 on stream 7, correlation 2000 + r) whose capture is not in the
    trace: graph 0 is attributed, graph 1 (``other_k``) has no complete capture of 1 launch: partial."""
    doc = captured_replays(False)
    for r, t in enumerate((500.0, 600.0)):
        doc["traceEvents"].append(_x("cudaGraphLaunch", "cuda_runtime", t + 1.0, 4.0, correlation=2000 + r))
        doc["traceEvents"].append(
            _x("other_k", "kernel", t + 10.0, 7.0, pid=0, tid=7, device=0, stream=7, correlation=2000 + r)
        )
    return doc
