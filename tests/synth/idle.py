"""Synthesized traces whose idle time, launch delays and steps are known by construction (µs).

Each builder returns a Kineto-style trace document (``{"traceEvents": [...]}``); the answers are in
the builders' docstrings and asserted by ``tests/unit/analysis/test_trust_idle.py``.
"""

from __future__ import annotations

from .events import work


def _x(name: str, cat: str, ts: float, dur: float, **args) -> dict:
    return work(name, cat, ts, dur, default_stream=1, **args)


class _Builder:
    def __init__(self):
        self.events: list[dict] = []
        self.corr = 0

    def step(self, n: int, ts: float, dur: float) -> None:
        self.events.append(_x(f"ProfilerStep#{n}", "user_annotation", ts, dur))

    def launch(
        self,
        call_ts: float,
        call_dur: float,
        work_ts: float,
        work_dur: float,
        stream: int,
        name: str = "gemm",
        cat: str = "kernel",
        api: str = "cudaLaunchKernel",
    ) -> None:
        self.corr += 1
        self.events.append(_x(api, "cuda_runtime", call_ts, call_dur, correlation=self.corr))
        self.events.append(_x(name, cat, work_ts, work_dur, correlation=self.corr, device=0, stream=stream))

    def call(self, name: str, ts: float, dur: float) -> None:
        self.corr += 1
        self.events.append(_x(name, "cuda_runtime", ts, dur, correlation=self.corr))

    def doc(self) -> dict:
        return {"traceEvents": self.events}


def multi_stream_idle() -> dict:
    """One GPU, step ``[0, 1000]``: compute streams 7 and 8, an NCCL-only stream 20, a copy-only stream 30.

    GPU busy (union) = [5, 500] ∪ [600, 700] ∪ [800, 900] ∪ [905, 906] ∪ [950, 1000] = 746; idle 254:
    [0, 5) host wait (its kernel's launch ended at 3 > 0); [500, 600) host wait (launch ended 560);
    [700, 800) other (launch ended 22, long before; ≥ 10 µs); [900, 905) short (launch ended 24);
    [906, 950) other (ended by the NCCL-only stream, which never waits for the host).
    GPU 0: idle 254 = host wait 105 + short 5 + other 144. Summed per stream (the old rule) host wait
    was 200 (s7) + 800 (s20) + 290 (s30) = 1290 > the 1000 µs window.
    """
    b = _Builder()
    b.step(1, 0, 1000)
    b.launch(1, 2, 5, 395, 7)  # k7a [5, 400]
    b.launch(10, 2, 200, 300, 8)  # k8a [200, 500]
    b.launch(20, 2, 800, 100, 8)  # k8b [800, 900]: queued long before
    b.launch(22, 2, 905, 1, 8)  # k8c [905, 906]
    b.launch(90, 5, 100, 50, 20, name="ncclDevKernel_AllReduce_Sum_f32_RING_LL")
    b.launch(110, 2, 120, 40, 30, name="Memcpy HtoD (Pageable -> Device)", cat="gpu_memcpy", api="cudaMemcpyAsync")
    b.launch(440, 5, 450, 30, 30, name="Memcpy HtoD (Pageable -> Device)", cat="gpu_memcpy", api="cudaMemcpyAsync")
    b.launch(550, 10, 600, 100, 7)  # k7b [600, 700]
    b.launch(930, 10, 950, 50, 20, name="ncclDevKernel_AllReduce_Sum_f32_RING_LL")
    return b.doc()


def queued_launches(kernels: int = 100) -> dict:
    """Step ``[0, 200000]``: a 99 ms kernel [1000, 100000], then ``kernels`` 2 µs kernels launched from
    t = 30000 (8 µs calls every 10 µs) that run back to back from t = 100000 on the same stream.

    Kernel i (0-based) is launched by the call ``[30000 + 10 i, 30008 + 10 i]`` and starts at
    ``100000 + 2 i``: its launch delay ``69992 − 8 i`` µs is all queueing (the GPU was busy), launch
    overhead 0. The long kernel's delay is 990 µs of launch overhead (the GPU was idle from 10 to 1000).
    """
    b = _Builder()
    b.step(1, 0, 200000)
    b.launch(0, 10, 1000, 99000, 7, name="long_gemm")
    for i in range(kernels):
        b.launch(30000 + 10 * i, 8, 100000 + 2 * i, 2, 7, name="tiny_elementwise")
    return b.doc()


def tiny_kernels(kernels: int = 200, graphs: bool = False) -> dict:
    """Step ``[0, 40 · kernels]``: kernel i is launched by ``[40 i, 40 i + 10]`` and runs 2 µs from
    ``40 i + 12``. GPU idle = 38 · kernels: the leading gap [0, 12) and ``kernels − 1`` gaps of 38 µs
    are host waits and launch-bound (each ended by a 2 µs kernel whose 10 µs launch ended after the gap
    began): 12 + 38 (kernels − 1) µs over ``kernels`` gaps; the trailing 26 µs gap is other (no work
    after it). Launch overhead of each kernel = 2 µs (idle between its launch end and its start),
    queueing 0. With ``graphs``, the trace also holds a ``cudaGraphLaunch`` call (a graph replay).
    """
    b = _Builder()
    b.step(1, 0, 40 * kernels)
    for i in range(kernels):
        b.launch(40 * i, 10, 40 * i + 12, 2, 7, name="vectorized_elementwise_kernel")
    if graphs:
        b.call("cudaGraphLaunch", 40 * kernels - 5, 3)
    return b.doc()


def outlived_profiler(step_dur: float = 13_300_000.0) -> dict:
    """A ``PyTorch Profiler (0)`` span ``[0, 355000]`` (category ``Trace``) and a ``ProfilerStep#1``
    annotation ``[1000, 1000 + step_dur]`` that outlives it. Inside: ``aten::mm`` ``[2000, 100000]``
    launching a kernel ``[5000, 50000]``. The step is clipped to ``[1000, 355000]`` (354 ms)."""
    b = _Builder()
    b.events.append(
        {
            "ph": "X",
            "cat": "Trace",
            "name": "PyTorch Profiler (0)",
            "pid": "Spans",
            "tid": "PyTorch Profiler",
            "ts": 0,
            "dur": 355000,
        }
    )
    b.step(1, 1000, step_dur)
    b.events.append(_x("aten::mm", "cpu_op", 2000, 98000))
    b.launch(3000, 10, 5000, 45000, 7)
    return b.doc()


def pipelined_steps(slow_step: int | None = None, slow_first: bool = False) -> dict:
    """Five 10 ms host steps ``[10000 i, 10000 (i + 1)]`` (i = 0…4) whose GPU work lags behind.

    Before the first step, a kernel launched at t = −2000 runs ``[−1000, 45000]`` on stream 8. Step 0
    launches ``[500, 9500]`` and ``[45000, 48000]`` (stream 7, the second waits for the earlier work);
    steps 1–4 each launch one kernel of 9 ms (40 ms for ``slow_step``) that run back to back from
    48000. Steps: step 0 = ``[0, 48000]`` (48 ms, of which 36 ms only the earlier kernel explains), the
    others 9 ms (the slow one 40 ms). On the same footing step 0 is 12 ms. With ``slow_first``, step 0
    also launches a kernel ``[9500, 45000]`` on stream 9: its own work then covers ``[500, 48000]``, so
    only ``[0, 500)`` is explained by the earlier kernel alone and step 0 is 47.5 ms on the same footing.
    """
    b = _Builder()
    b.events.append(_x("aten::mm", "cpu_op", -2005, 20))
    b.launch(-2000, 10, -1000, 46000, 8, name="earlier_gemm")
    for i in range(5):
        b.step(i + 1, 10000 * i, 10000)
    b.launch(100, 10, 500, 9000, 7)
    b.launch(200, 10, 45000, 3000, 7)
    if slow_first:
        b.launch(300, 10, 9500, 35500, 9)
    cursor = 48000
    for i in range(1, 5):
        dur = 40000 if i == slow_step else 9000
        b.launch(10000 * i + 100, 10, cursor, dur, 7)
        cursor += dur
    return b.doc()
