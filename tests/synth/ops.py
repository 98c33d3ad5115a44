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

from .events import host_ops

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
    return {
        "traceEvents": host_ops(
            """
            aten::add         | cpu_op |  0.0 | 10.0
            aten::mul         | cpu_op |  2.0 |  0.0
            aten::mul         | cpu_op |  2.0 |  0.0
            aten::mul         | cpu_op |  2.0 |  0.0
            aten::result_type | cpu_op |  5.0 |  0.0
            aten::sub         | cpu_op |  5.0 |  3.0
            aten::empty       | cpu_op | 10.0 |  0.0
            aten::empty       | cpu_op | 10.0 |  0.0
            aten::view        | cpu_op |  3.0 |  0.0 | 2
            aten::view        | cpu_op |  3.0 |  0.0 | 2
            """,
            with_args=False,
        )
    }


def ulp_edges(t0: float, count: int) -> np.ndarray:
    """``count`` consecutive float64 values from ``t0`` upward, each 1 ULP after the last (µs)."""
    out = np.empty(count)
    out[0] = t0
    for i in range(1, count):
        out[i] = np.nextafter(out[i - 1], np.inf)
    return out


def ulp_kernels(segments: int = 64) -> dict:
    """Trace document: one ``ProfilerStep#1`` ``[T, T + 100]`` µs (``T`` = :data:`ULP_T0_US`) and, from
    just after ``T + 10``, a grid ``g`` of 1-ULP-apart timestamps (1 ULP = 2^-10 µs) whose ``g[0]`` has
    an odd mantissa. For each ``i < segments``: a 1-ULP gap ``[g[4i], g[4i+1]]``, a kernel
    ``[g[4i+1], g[4i+2]]``, a memcpy ``[g[4i+1], g[4i+3]]`` (under the kernel for its first ULP) and a
    runtime call ``[g[4i+2], g[4i+4]]`` on the host (under the memcpy for its first ULP). Then ten 2.5 µs
    kernels at ``T + 30 + 5j``. The float64 midpoint of a 1-ULP segment that starts on an odd mantissa
    rounds onto its end, so the gaps and the memcpy-only ULPs are where midpoint tests go wrong.
    By construction, in the step: kernel = 25 µs + ``segments`` ULPs (its union); memcpy = ``segments``
    ULPs; runtime = ``segments`` ULPs; other = the rest."""
    t0 = ULP_T0_US
    first = t0 + 10.0
    if not int(np.array(first).view(np.int64)) & 1:
        first = float(np.nextafter(first, np.inf))
    g = ulp_edges(first, 4 * segments + 1)
    events = [_x("ProfilerStep#1", "user_annotation", t0, 100.0)]

    def span(name, cat, a, b, pid=0, tid=7):
        # the end is given as a duration, as in real files; ts + dur lands exactly on g[b]
        events.append(_x(name, cat, float(g[a]), float(g[b] - g[a]), pid=pid, tid=tid))

    for i in range(segments):
        span("k1", "kernel", 4 * i + 1, 4 * i + 2)
        span("Memcpy HtoD", "gpu_memcpy", 4 * i + 1, 4 * i + 3)
        span("cudaMemcpyAsync", "cuda_runtime", 4 * i + 2, 4 * i + 4, pid=1, tid=1)
    for j in range(10):
        events.append(_x("coarse", "kernel", t0 + 30.0 + 5.0 * j, 2.5, pid=0, tid=7))
    return {"traceEvents": events}
