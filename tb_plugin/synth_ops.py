"""Synthetic traces for operator nesting and timestamp precision, with answers known by construction.

- :func:`zero_length_siblings`: on one thread, ``aten::add`` ``[0, 10]`` µs holds three zero-length
  ``aten::mul`` at ``t = 2`` (siblings: a zero-length event contains nothing), a zero-length
  ``aten::result_type`` at ``t = 5`` at the start of an ``aten::sub`` ``[5, 8]`` (inside it, not its
  parent), two zero-length ``aten::empty`` at ``t = 10``, the end of ``aten::add`` (inside it, siblings),
  and, on a second thread, two zero-length ``aten::view`` at ``t = 3`` with nothing around them.
- :func:`ulp_kernels`: one ``ProfilerStep#1`` at ``T ≈ 7e12`` µs, where one float64 ULP is
  ≈ 0.98 ns, holding kernels, memcpys and runtime calls whose edges are 1 ULP apart
  (``np.nextafter``), so that midpoints of 1-ULP segments round onto an edge.
"""

from __future__ import annotations

import numpy as np

#: the absolute start of :func:`ulp_kernels` (µs): near 7e12, where float64 steps are 2^-10 µs
ULP_T0_US = 7.0e12 + 0.125


def _x(name: str, cat: str, ts: float, dur: float, pid=1, tid=1, **args) -> dict:
    ev = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        ev["args"] = args
    return ev


def zero_length_siblings() -> dict:
    """Trace document; calls: aten::add 1, aten::mul 3, aten::sub 1, aten::result_type 1,
    aten::empty 2, aten::view 2 (see the module docstring)."""
    return {"traceEvents": [
        _x("aten::add", "cpu_op", 0.0, 10.0),
        _x("aten::mul", "cpu_op", 2.0, 0.0),
        _x("aten::mul", "cpu_op", 2.0, 0.0),
        _x("aten::mul", "cpu_op", 2.0, 0.0),
        _x("aten::result_type", "cpu_op", 5.0, 0.0),
        _x("aten::sub", "cpu_op", 5.0, 3.0),
        _x("aten::empty", "cpu_op", 10.0, 0.0),
        _x("aten::empty", "cpu_op", 10.0, 0.0),
        _x("aten::view", "cpu_op", 3.0, 0.0, tid=2),
        _x("aten::view", "cpu_op", 3.0, 0.0, tid=2),
    ]}


def ulp_edges(t0: float, count: int) -> np.ndarray:
    """``count`` consecutive float64 values from ``t0`` upward, each 1 ULP after the last (µs)."""
    out = np.empty(count)
    out[0] = t0
    for i in range(1, count):
        out[i] = np.nextafter(out[i - 1], np.inf)
    return out


def ulp_kernels(segments: int = 64, seed: int = 0) -> dict:
    """Trace document: one step ``[T, T + 100)`` µs with ``segments`` kernels, memcpys and runtime
    calls whose starts and ends lie on a grid of 1-ULP-apart timestamps (kernels and memcpys on
    alternating, partly overlapping grid cells), plus coarser kernels elsewhere in the step."""
    rng = np.random.default_rng(seed)
    t0 = ULP_T0_US
    grid = ulp_edges(t0 + 10.0, 4 * segments + 2)
    events = [_x("ProfilerStep#1", "user_annotation", t0, 100.0)]
    for i in range(segments):
        a, b = sorted(rng.choice(len(grid), 2, replace=False))
        cat = ("kernel", "gpu_memcpy", "cuda_runtime")[i % 3]
        name = {"kernel": "k", "gpu_memcpy": "Memcpy HtoD", "cuda_runtime": "cudaMemcpyAsync"}[cat]
        pid, tid = (1, 1) if cat == "cuda_runtime" else (0, 7)
        # the end is given as a duration, as in real files: ts + dur must land on grid[b]
        events.append(_x(name, cat, float(grid[a]), float(grid[b] - grid[a]), pid=pid, tid=tid))
        # 1-ULP kernels right on grid cells
        events.append(_x("k1", "kernel", float(grid[a]), float(grid[a + 1] - grid[a]), pid=0, tid=7))
    for j in range(10):  # coarse kernels
        events.append(_x("coarse", "kernel", t0 + 30.0 + 5.0 * j, 2.5, pid=0, tid=7))
    return {"traceEvents": events}
