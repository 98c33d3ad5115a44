"""Synthesized traces whose advice is known by construction (µs): blocking runtime calls (the caching
allocator, a blocking D2H copy under ``.item()``, a synchronize from a Python helper), a host blocked in
a copy while the device shows no work (work outside the trace), a gap ended by work launched early
(not host wait), compiled regions and a CUDA-graph capture. The answers are in each builder's docstring
and asserted by ``tests/test_advice.py``; API and operator names are the real ones."""

from __future__ import annotations

from types import SimpleNamespace

from .events import DEVICE_WORK_CATEGORIES, work

HOST_PID = 1


class Builder:
    """Events of one host thread and one GPU (device 0) as ``torch.profiler`` writes them."""

    def __init__(self):
        self.events: list[dict] = []
        self.corr = 0

    def x(self, name: str, cat: str, ts: float, dur: float, **args) -> int:
        if cat in DEVICE_WORK_CATEGORIES:
            args = {"device": 0, "stream": 7, **args}
        ev = work(name, cat, ts, dur, **args)
        self.events.append(ev)
        return len(self.events) - 1

    def step(self, n: int, ts: float, dur: float) -> None:
        self.x(f"ProfilerStep#{n}", "user_annotation", ts, dur)

    def op(self, name: str, ts: float, dur: float) -> None:
        self.x(name, "cpu_op", ts, dur)

    def frame(self, name: str, ts: float, dur: float) -> None:
        self.x(name, "python_function", ts, dur)

    def call(self, name: str, ts: float, dur: float, cat: str = "cuda_runtime") -> int:
        """A runtime call with a fresh correlation id (returned)."""
        self.corr += 1
        self.x(name, cat, ts, dur, correlation=self.corr)
        return self.corr

    def launch(
        self,
        call_ts: float,
        call_dur: float,
        ts: float,
        dur: float,
        name: str = "gemm_kernel",
        api: str = "cudaLaunchKernel",
    ) -> None:
        corr = self.call(api, call_ts, call_dur)
        self.x(name, "kernel", ts, dur, correlation=corr)

    def device(self, name: str, cat: str, ts: float, dur: float, corr: int) -> None:
        self.x(name, cat, ts, dur, correlation=corr)

    def doc(self) -> dict:
        return {
            "schemaVersion": 1,
            "traceEvents": self.events,
            "deviceProperties": [
                {
                    "id": 0,
                    "name": "NVIDIA A100-SXM4-80GB",
                    "totalGlobalMem": 85899345920,
                    "computeMajor": 8,
                    "computeMinor": 0,
                    "numSms": 108,
                }
            ],
        }


def allocator_trace(api: str = "hipFree") -> dict:
    """Step ``[0, 10000]``: ``torch.cuda.empty_cache()`` (a Python frame, no operator) calls ``api`` 4
    times, 2000 µs each, ``[100 + 2000 i, 2100 + 2000 i]``; then one kernel launched ``[8200, 8210]``
    runs ``[8220, 9220]``. The GPU idles from 100 until 8220 while the calls block and until the kernel
    starts: the allocator rule addresses 8120 µs (threshold 5 % of the 10 ms window: 500 µs), names
    ``api``, "4 calls", no operator and the frame. Host wait: ``[0, 8220]`` (the kernel's launch returned
    late), less the 8120 µs after the calls: 100 µs, under half the 9000 µs idle: no CPU-overhead advice.
    """
    b = Builder()
    b.step(1, 0, 10000)
    b.frame("torch/cuda/memory.py(192): empty_cache", 90, 8020)
    for i in range(4):
        b.call(api, 100 + 2000 * i, 2000)
    b.launch(8200, 10, 8220, 1000)
    return b.doc()


def item_copy_trace() -> dict:
    """Step ``[0, 5000]`` inside the frame ``train.py(12): <module>``: a kernel launched ``[100, 110]``
    runs ``[120, 2900]``; ``aten::item`` ``[1000, 3000]`` ⊃ ``aten::_local_scalar_dense`` ``[1010, 2990]``
    ⊃ ``cudaMemcpyAsync`` ``[1020, 2980]`` whose DtoH copy runs ``[2900, 2950]`` (it ended inside the
    call: a blocking copy); the next kernel, launched ``[3500, 3510]``, runs ``[3520, 4000]``. The GPU
    idles ``[2950, 3520]`` = 570 µs during and after the copy (threshold 250 µs): the blocking-copy rule
    names ``aten::_local_scalar_dense`` and ``.item()``, "1 call"."""
    b = Builder()
    b.step(1, 0, 5000)
    b.frame("train.py(12): <module>", 5, 4990)
    b.launch(100, 10, 120, 2780)
    b.op("aten::item", 1000, 2000)
    b.op("aten::_local_scalar_dense", 1010, 1980)
    corr = b.call("cudaMemcpyAsync", 1020, 1960)
    b.device("Memcpy DtoH (Device -> Pageable)", "gpu_memcpy", 2900, 50, corr)
    b.launch(3500, 10, 3520, 480)
    return b.doc()


def sync_trace() -> dict:
    """Step ``[0, 4000]``: a kernel launched ``[100, 110]`` runs ``[120, 2990]``; the Python helper
    ``train.py(30): log_metrics`` ``[2000, 3100]`` calls ``cudaDeviceSynchronize`` ``[2010, 3000]`` outside
    any operator; the next kernel, launched ``[3500, 3510]``, runs ``[3520, 3900]``. The GPU idles
    ``[2990, 3520]`` = 530 µs (threshold 200 µs): the synchronize rule names the frame, not
    ``ProfilerStep#1``, and says "1 call"."""
    b = Builder()
    b.step(1, 0, 4000)
    b.launch(100, 10, 120, 2870)
    b.frame("train.py(30): log_metrics", 2000, 1100)
    b.call("cudaDeviceSynchronize", 2010, 990)
    b.launch(3500, 10, 3520, 380)
    return b.doc()


def outside_trace_trace() -> dict:
    """Step ``[0, 100000]`` (SGLang-like): a 29 µs kernel launched ``[900, 950]`` runs ``[1100, 1129]``; the
    host then sits in ``hipMemcpyWithStream`` ``[1000, 61000]`` (60 ms) whose DtoH copy runs only
    ``[60900, 60950]``: the trace shows the device busy 79 µs of the call (29 + 50). The next kernel,
    launched ``[62000, 62010]``, runs ``[62020, 70000]``. Answer: an "About this trace" warning (1
    blocking call, 60 ms, device busy 79 µs); no blocking-copy, CPU-overhead or Runtime advice."""
    b = Builder()
    b.step(1, 0, 100000)
    b.launch(900, 50, 1100, 29, api="hipLaunchKernel")
    b.op("aten::_local_scalar_dense", 995, 60010)
    corr = b.call("hipMemcpyWithStream", 1000, 60000)
    b.device("Memcpy DtoH (Device -> Pageable)", "gpu_memcpy", 60900, 50, corr)
    b.launch(62000, 10, 62020, 7980, api="hipLaunchKernel")
    return b.doc()


def early_launch_trace() -> dict:
    """Step ``[0, 2000]``: kernel A launched ``[0, 10]`` runs ``[20, 500]``; kernel B launched ``[600, 610]``
    (early in the gap) runs ``[1500, 1600]``; kernel C launched ``[1700, 1790]`` runs ``[1800, 1900]``.
    Gaps: ``[0, 20]`` host wait (A's launch returned at 10, the gap's midpoint); ``[500, 1500]`` other
    (B's launch returned at 610, before the midpoint 1000: the GPU did not wait for the host);
    ``[1600, 1800]`` host wait; ``[1900, 2000]`` other. Host wait 220, other 1100 (the old rule: 1220)."""
    b = Builder()
    b.step(1, 0, 2000)
    b.launch(0, 10, 20, 480)
    b.launch(600, 10, 1500, 100)
    b.launch(1700, 90, 1800, 100)
    return b.doc()


def with_events(doc: dict, *events: tuple[str, str, float, float]) -> dict:
    """``doc`` with more host events ``(name, category, ts, dur)``."""
    extra = [
        {"ph": "X", "cat": cat, "name": name, "pid": HOST_PID, "tid": 1, "ts": ts, "dur": dur}
        for name, cat, ts, dur in events
    ]
    return dict(doc, traceEvents=doc["traceEvents"] + extra)


def gpu_summary(**kw) -> SimpleNamespace:
    """A GPU as the recommendation rules read it (analysis/gpu.py GpuSummary's fields they use): an
    NVIDIA compute capability 8.0 device with 80 GiB, 90 % utilized, no tensor-core kernel; ``kw``
    overrides."""
    base = dict(
        id=0,
        utilization_pct=90.0,
        matrix_units=True,
        tensor_core_us=0.0,
        vendor="NVIDIA",
        architecture=None,
        compute_capability="8.0",
        memory_bytes=80 * 2**30,
    )
    return SimpleNamespace(**dict(base, **kw))
