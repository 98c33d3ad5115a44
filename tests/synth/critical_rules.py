"""Synthetic one-rank traces, one per rule of the critical path's host side, whose path is known by
construction (µs; the rules: analysis/critical_path.py, analysis/host_tiles.py, analysis/blocking.py).
Each function returns ``(document, expected)``: ``expected`` has ``by_category`` and the path's
segments as ``(category, name, start, dur)`` in time order, and ``host_blocked_us``."""

from __future__ import annotations

from .events import complete, table

MAIN, ENGINE, SLEEPER = 1, 2, 9


class _Doc:
    def __init__(self):
        self.events: list[dict] = []
        self.corr = 0

    def x(self, name, cat, ts, dur, tid=MAIN, **args):
        self.events.append(complete(name, cat, ts, dur, tid, **args))

    def launch(self, ts, dur, kernel, k_ts, k_dur, api="cudaLaunchKernel", cat="kernel", tid=MAIN):
        self.corr += 1
        self.x(api, "cuda_runtime", ts, dur, tid=tid, correlation=self.corr)
        self.x(kernel, cat, k_ts, k_dur, correlation=self.corr, device=0, stream=7)

    def doc(self) -> dict:
        return {"schemaVersion": 1, "traceEvents": self.events}


def _path(text: str) -> list[tuple]:
    """The path's segments ``(category, name, start, dur)`` (µs) from a :func:`table` of those columns."""
    return [(cat, name, int(start), int(dur)) for cat, name, start, dur in table(text)]


def _cats(kernel=0.0, cpu=0.0, comm=0.0, waiting=0.0) -> dict:
    return {"kernel": kernel, "cpu": cpu, "communication": comm, "waiting": waiting}


def annotation_step():
    """``## forward ##`` [0, 1000] around the whole step, ``aten::mm`` [100, 300] inside launching
    ``gemm`` [310, 900] (launch [150, 160]), a sync [400, 905] in ``aten::item`` [350, 950]. The
    annotation is no segment: its time with no operator inside is ``untraced host work``."""
    d = _Doc()
    d.x("ProfilerStep#1", "user_annotation", 0, 1000)
    d.x("## forward ##", "user_annotation", 0, 1000)
    d.x("aten::mm", "cpu_op", 100, 200)
    d.launch(150, 10, "gemm", 310, 590)
    d.x("aten::item", "cpu_op", 350, 600)
    d.x("cudaStreamSynchronize", "cuda_runtime", 400, 505)
    segs = _path(
        """
        cpu     | untraced host work    |   0 | 100
        cpu     | aten::mm              | 100 |  50
        cpu     | cudaLaunchKernel      | 150 |  10
        waiting | idle                  | 160 | 150
        kernel  | gemm                  | 310 | 590
        cpu     | cudaStreamSynchronize | 900 |   5
        cpu     | aten::item            | 905 |  45
        cpu     | untraced host work    | 950 |  50
        """
    )
    return d.doc(), {"by_category": _cats(kernel=590, cpu=260, waiting=150), "segments": segs, "host_blocked_us": 500.0}


def autograd_step():
    """No device work. Main thread: ``aten::mm`` [0, 100] (a forward op: a ``fwdbwd`` flow to the engine
    thread), blocked in ``## backward ##`` [100, 900], then ``aten::add_`` [900, 1000]. Engine thread:
    ``autograd::engine::evaluate_function: MmBackward0`` [120, 800] holding ``aten::mm`` [130, 700].
    The path: the main thread's op, 20 µs until the engine starts, the engine's work, 100 µs until the
    main thread resumes (blocked: waiting, not cpu), the optimizer op."""
    d = _Doc()
    d.x("ProfilerStep#1", "user_annotation", 0, 1000)
    d.x("aten::mm", "cpu_op", 0, 100)
    d.x("## backward ##", "user_annotation", 100, 800)
    d.x("aten::add_", "cpu_op", 900, 100)
    node = "autograd::engine::evaluate_function: MmBackward0"
    d.x(node, "cpu_op", 120, 680, tid=ENGINE)
    d.x("aten::mm", "cpu_op", 130, 570, tid=ENGINE)
    d.events += [
        {"ph": "s", "id": 1, "pid": 1, "tid": MAIN, "ts": 0, "cat": "fwdbwd", "name": "fwdbwd"},
        {"ph": "f", "bp": "e", "id": 1, "pid": 1, "tid": ENGINE, "ts": 120, "cat": "fwdbwd", "name": "fwdbwd"},
    ]
    segs = _path(
        """
        cpu     | aten::mm                                         |   0 | 100
        waiting | blocked on another thread (autograd)             | 100 |  20
        cpu     | autograd::engine::evaluate_function: MmBackward0 | 120 |  10
        cpu     | aten::mm                                         | 130 | 570
        cpu     | autograd::engine::evaluate_function: MmBackward0 | 700 | 100
        waiting | blocked on another thread (autograd)             | 800 | 100
        cpu     | aten::add_                                       | 900 | 100
        """
    )
    return d.doc(), {"by_category": _cats(cpu=880, waiting=120), "segments": segs, "host_blocked_us": 0.0}


def polling_step():
    """``dispatch`` [10, 500] (launch [0, 5]), an event record, then ``cudaEventQuery`` polled every
    10 µs [10 + 10·i, 13 + 10·i] up to [500, 503] (the first to see it complete), then ``aten::add``
    [510, 600]. The polls are no cpu work on the path: the last one jumps to the kernel."""
    d = _Doc()
    d.x("ProfilerStep#1", "user_annotation", 0, 600)
    d.launch(0, 5, "dispatch", 10, 490)
    d.x("cudaEventRecord", "cuda_runtime", 6, 2)
    for i in range(50):
        d.x("cudaEventQuery", "cuda_runtime", 10 + 10 * i, 3)
    d.x("aten::add", "cpu_op", 510, 90)
    segs = _path(
        """
        cpu     | cudaLaunchKernel |   0 |   5
        waiting | idle             |   5 |   5
        kernel  | dispatch         |  10 | 490
        cpu     | cudaEventQuery   | 500 |   3
        waiting | idle (host)      | 503 |   7
        cpu     | aten::add        | 510 |  90
        """
    )
    return d.doc(), {"by_category": _cats(kernel=490, cpu=98, waiting=12), "segments": segs, "host_blocked_us": 490.0}


def blocking_copy_step():
    """``gemm`` [10, 400] (launch [0, 5]); ``cudaMemcpyAsync`` [20, 460] whose D2H copy [400, 450] runs
    behind it on the stream and ends inside the call (pageable memory); ``aten::add`` [460, 500]."""
    d = _Doc()
    d.x("ProfilerStep#1", "user_annotation", 0, 500)
    d.launch(0, 5, "gemm", 10, 390)
    d.launch(20, 440, "Memcpy DtoH (Device -> Pageable)", 400, 50, api="cudaMemcpyAsync", cat="gpu_memcpy")
    d.x("aten::add", "cpu_op", 460, 40)
    segs = _path(
        """
        cpu     | cudaLaunchKernel                 |   0 |   5
        waiting | idle                             |   5 |   5
        kernel  | gemm                             |  10 | 390
        kernel  | Memcpy DtoH (Device -> Pageable) | 400 |  50
        cpu     | cudaMemcpyAsync                  | 450 |  10
        cpu     | aten::add                        | 460 |  40
        """
    )
    return d.doc(), {"by_category": _cats(kernel=440, cpu=55, waiting=5), "segments": segs, "host_blocked_us": 430.0}


def gpu_bound_step():
    """Five kernels back to back [100 + 200·i, 300 + 200·i] launched far ahead ([10·i, 10·i + 5]), a
    ``cudaDeviceSynchronize`` [60, 1105], the step ends at 1110: the path stays on the device."""
    d = _Doc()
    d.x("ProfilerStep#1", "user_annotation", 0, 1110)
    for i in range(5):
        d.launch(10 * i, 5, f"k{i}", 100 + 200 * i, 200)
    d.x("cudaDeviceSynchronize", "cuda_runtime", 60, 1045)
    segs = [("cpu", "cudaLaunchKernel", 0, 5), ("waiting", "idle", 5, 95)]
    segs += [("kernel", f"k{i}", 100 + 200 * i, 200) for i in range(5)]
    segs += [("cpu", "cudaDeviceSynchronize", 1100, 5), ("waiting", "idle (host)", 1105, 5)]
    return d.doc(), {
        "by_category": _cats(kernel=1000, cpu=10, waiting=100),
        "segments": segs,
        "host_blocked_us": 1040.0,
    }


def sleeper_step():
    """No step marker. A background thread sleeps in a Python frame over the whole trace [0, 1000]
    (it launches nothing and waits for nothing); the main thread: ``aten::mm`` [0, 50] launching
    ``gemm`` [20, 300] ([10, 15]), a sync [60, 305], ``aten::add`` [305, 400]. The path never touches
    the sleeper; its end [400, 1000] is the main thread's idle time."""
    d = _Doc()
    d.x("vllm/usage/usage_lib.py: _report_continuous_usage", "python_function", 0, 1000, tid=SLEEPER)
    d.x("aten::mm", "cpu_op", 0, 50)
    d.launch(10, 5, "gemm", 20, 280)
    d.x("cudaStreamSynchronize", "cuda_runtime", 60, 245)
    d.x("aten::add", "cpu_op", 305, 95)
    segs = _path(
        """
        cpu     | aten::mm              |   0 |  10
        cpu     | cudaLaunchKernel      |  10 |   5
        waiting | idle                  |  15 |   5
        kernel  | gemm                  |  20 | 280
        cpu     | cudaStreamSynchronize | 300 |   5
        cpu     | aten::add             | 305 |  95
        waiting | idle (host)           | 400 | 600
        """
    )
    return d.doc(), {"by_category": _cats(kernel=280, cpu=115, waiting=605), "segments": segs, "host_blocked_us": 240.0}


def tie_step():
    """A kernel and the main thread's last op end together at 500 (``gemm`` [100, 500] launched at
    [0, 5]; ``aten::add`` [300, 500]); a sleeping thread's frame ends there too. On a tie the path
    ends on the device, never on the sleeper."""
    d = _Doc()
    d.x("ProfilerStep#1", "user_annotation", 0, 500)
    d.launch(0, 5, "gemm", 100, 400)
    d.x("aten::add", "cpu_op", 300, 200)
    d.x("time.sleep", "python_function", 0, 500, tid=SLEEPER)
    segs = [("cpu", "cudaLaunchKernel", 0, 5), ("waiting", "idle", 5, 95), ("kernel", "gemm", 100, 400)]
    return d.doc(), {"by_category": _cats(kernel=400, cpu=5, waiting=95), "segments": segs, "host_blocked_us": 0.0}


RULES = {
    "annotation": annotation_step,
    "autograd": autograd_step,
    "polling": polling_step,
    "blocking_copy": blocking_copy_step,
    "gpu_bound": gpu_bound_step,
    "sleeper": sleeper_step,
    "tie": tie_step,
}
