"""Trace synthesizer: structurally real Kineto / PyTorch profiler traces with known answers.

The synthesizer lays out simulated training steps on a time grid and writes them as a Chrome trace
JSON object (``{"schemaVersion": 1, "deviceProperties": [...], "traceEvents": [...], ...}``), the way
``torch.profiler`` does. Two flavours exist:

- ``style="pytorch2"``: categories ``cpu_op``, ``user_annotation``, ``python_function``,
  ``cuda_runtime``, ``cuda_driver``, ``kernel``, ``gpu_memcpy``, ``gpu_memset``,
  ``gpu_user_annotation``, ``cpu_instant_event`` ([memory]) and ``ac2g`` flows; integer tids; float
  timestamps with sub-µs parts (multiples of 0.125 µs, exactly representable in a double).
- ``style="kineto2021"``: categories ``Operator``, ``Runtime``, ``Kernel``, ``Memcpy``, ``Memset``,
  ``async``/``launch`` flows; string tids (``"stream 7"``); integer µs timestamps; device and runtime
  events carry the lowercase ``"external id"``, operators ``"External id"``.

Known answers: every event the builder emits is also recorded in a *plan*: an interval tagged with
the breakdown category it was laid out for (``kernel``, ``memcpy``, ``memset``, ``comm``,
``runtime``, ``dataloader``, ``cpu``), the host step it belongs to, and for kernels the
blocks-per-SM, occupancy and tensor-core flag it was given. :func:`expected_overview` derives the
step bounds, the per-step breakdown and the GPU metrics from that plan (it never parses the emitted
JSON), following docs METRICS.md:

- step bounds: ``start = max(previous end, host start)``, ``end = max(host end, device end)``, with
  the tail trim (trailing steps without device work; a last step with < 0.8x the previous step's
  device events);
- breakdown: each µs of a step goes to the first active category in the order Kernel, Memcpy,
  Memset, Communication, Runtime, DataLoader, CPU Exec; the rest is Other;
- GPU utilization, Est. SM efficiency (time average of ``min(1, sum of blocks per SM)``),
  Est. achieved occupancy (duration-weighted) and tensor-core kernel time share.

All times are µs, all sizes bytes. The layout is deterministic for a given :class:`SynthSpec`.

Only the standard library and numpy are used.
"""

from __future__ import annotations

import bisect
import contextlib
import gzip
import json
import os
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

__all__ = [
    "SynthSpec",
    "synthesize",
    "expected_overview",
    "write_trace",
    "worked_example_trace",
    "CATEGORY_KEYS",
    "TENSOR_CORE_KERNELS",
]

#: Breakdown keys in priority order (docs/http_api.md "categories").
CATEGORY_KEYS = (
    "kernel_us",
    "memcpy_us",
    "memset_us",
    "communication_us",
    "runtime_us",
    "dataloader_us",
    "cpu_exec_us",
    "other_us",
)
#: Plan tags, in the same priority order as CATEGORY_KEYS (without "other").
_TAGS = ("kernel", "memcpy", "memset", "comm", "runtime", "dataloader", "cpu")
_TAG_KEY = dict(zip(_TAGS, CATEGORY_KEYS))


_DATALOADER_NAME = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
_MIB = 1 << 20

# Device descriptions written into "deviceProperties" (the fields Kineto writes).
_H100 = {
    "name": "NVIDIA H100 80GB HBM3",
    "totalGlobalMem": 85018279936,
    "computeMajor": 9,
    "computeMinor": 0,
    "maxThreadsPerBlock": 1024,
    "maxThreadsPerMultiprocessor": 2048,
    "regsPerBlock": 65536,
    "warpSize": 32,
    "sharedMemPerBlock": 49152,
    "numSms": 132,
    "regsPerMultiprocessor": 65536,
    "sharedMemPerBlockOptin": 232448,
    "sharedMemPerMultiprocessor": 233472,
}
_V100 = {
    "name": "Tesla V100-SXM2-32GB",
    "totalGlobalMem": 34079899648,
    "computeMajor": 7,
    "computeMinor": 0,
    "maxThreadsPerBlock": 1024,
    "maxThreadsPerMultiprocessor": 2048,
    "regsPerBlock": 65536,
    "regsPerMultiprocessor": 65536,
    "warpSize": 32,
    "sharedMemPerBlock": 49152,
    "sharedMemPerMultiprocessor": 98304,
    "numSms": 80,
    "sharedMemPerBlockOptin": 98304,
}

# Kernel names per style: (tensor-core name, plain name).
_NAMES = {
    "pytorch2": {
        "conv_fwd": (
            "sm90_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_"
            "warpgroupsize1x1x1_g1_execute_kernel__5x_cudnn",
            "void implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, false, true>"
            "(int, int, int, float const*, int, float*, float const*, kernel_conv_params, "
            "unsigned long long, int, float, float, int, float const*, float const*, bool, int, int)",
        ),
        "dgrad": (
            "sm90_xmma_dgrad_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x64x64_"
            "warpgroupsize1x1x1_g1_execute_kernel__5x_cudnn",
            "void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int, int, "
            "float const*, int, float const*, int, float*, kernel_grad_params, unsigned long long, "
            "int, unsigned long long, int, float, int, int, int)",
        ),
        "wgrad": (
            "sm90_xmma_wgrad_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x128x32_"
            "warpgroupsize1x1x1_g1_execute_kernel__5x_cudnn",
            "void cudnn::cnn::wgrad_alg0_engine<float, 128, 6, 7, 3, 3, 5, false, 512>(int, int, "
            "int, float const*, int, float*, float const*, kernel_grad_params, unsigned long long, "
            "int, float, int, int, int, int)",
        ),
        "gemm": (
            "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
            "execute_segment_k_off_kernel__5x_cublas",
            "void gemmSN_TN_kernel<float, 128, 16, 2, 4, 8, 9, false, "
            "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>>"
            "(cublasGemmSmallNParams<float const, float, float>)",
        ),
        "nccl": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    },
    "kineto2021": {
        "conv_fwd": (
            "volta_fp16_s884cudnn_fp16_256x128_ldg8_relu_f2f_exp_small_nhwc_tn_v1",
            "void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>"
            "(cudnn::winograd_nonfused::WinogradDataParams<float, float>)",
        ),
        "dgrad": (
            "volta_fp16_s884cudnn_fp16_128x128_ldg8_dgrad_f2f_exp_interior_nhwc_tt_v1",
            "void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int, int, "
            "float const*, int, float const*, int, float*, kernel_grad_params, unsigned long long, "
            "int, unsigned long long, int, float, int, int, int)",
        ),
        "wgrad": (
            "volta_fp16_s884cudnn_fp16_128x128_ldg8_wgrad_exp_interior_nhwc_nt_v1",
            "void cudnn::cnn::wgrad_alg0_engine<float, 128, 6, 7, 3, 3, 5, false, 512>(int, int, "
            "int, float const*, int, float*, float const*, kernel_grad_params, unsigned long long, "
            "int, float, int, int, int, int)",
        ),
        "gemm": ("volta_h884gemm_64x64_ldg8_nn", "volta_sgemm_128x64_nn"),
        "nccl": "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)",
    },
}
#: The kernels that use tensor cores, known by construction: the first name of each (tensor-core name,
#: plain name) pair above, a real cuDNN/cuBLAS name of a tensor-core kernel. No other kernel here uses them.
TENSOR_CORE_KERNELS = frozenset(
    pair[0] for style in _NAMES.values() for pair in style.values() if isinstance(pair, tuple)
)
_RELU_KERNEL = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
    "launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, "
    "at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() "
    "const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::native::(anonymous "
    "namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, "
    "at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() "
    "const::{lambda(float)#1}, at::detail::Array<char*, 2>)"
)
_ADD_KERNEL = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, "
    "at::detail::Array<char*, 3>)"
)
_FILL_KERNEL = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
    "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)"
)
_MEAN_KERNEL = (
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, "
    "float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float>, "
    "unsigned int, float, 4>)"
)
_FOREACH_KERNEL = (
    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
    "namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::"
    "BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<float>, float>(at::native::(anonymous "
    "namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::"
    "BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<float>, float)"
)
_TRITON_KERNEL = "triton_poi_fused_add_relu_threshold_backward_0"

_STREAM_COMPUTE = 7
_STREAM_SIDE = 20
_STREAM_COMM = 24


@dataclass(frozen=True)
class SynthSpec:
    """What to simulate. All durations are µs.

    steps: number of profiled training steps (``ProfilerStep#first_step`` ...).
    style: ``"pytorch2"`` or ``"kineto2021"``.
    seed: RNG seed; together with ``rank`` it fixes every duration.
    ranks / rank: world size and this trace's rank (device id = rank). ``ranks > 1`` turns on NCCL.
    layers: conv layers; each gives 2 forward and 2 backward kernels (kernels per step =
        ``4 * layers`` + fixed extras).
    dataloader_us: duration of the DataLoader ``__next__`` span in each step.
    with_memory: emit ``[memory]`` instant events (allocations and frees).
    memory_addr: write ``Addr``/``Total Allocated``/``Total Reserved`` (default: pytorch2 only, like
        the real 2021 traces that lack them).
    with_comm: NCCL all-reduce per step (default: ``ranks > 1``).
    with_driver_launch: a Triton kernel launched by driver-API ``cuLaunchKernel`` (pytorch2 only).
    with_cuda_graph: a ``cudaGraphLaunch`` replaying 3 kernels (one correlation id).
    with_overlap: two kernels overlapping on streams 7 and 20 (exercises SM-efficiency saturation
        and the utilization union).
    with_python_stack: ``python_function`` frames (pytorch2) or ``Call stack`` args (kineto2021).
    backward_thread: run backward ops on a second host thread (as the autograd engine does).
    tensor_cores: use tensor-core kernel names for half of the convs and the gemms.
    omit_blocks_per_sm: leave out ``blocks per SM`` (the analysis must compute grid / numSms).
    device_spill_us: when > 0, the last kernel of each step ends this long after the host step,
        which stretches the step and pushes the next one's start.
    tail: ``"none"``, ``"no_device"`` (an extra trailing step with no device work) or
        ``"truncated"`` (an extra trailing step with too few device events); both get trimmed.
    num_sms: SM count written to ``deviceProperties`` (default H100 132 / V100 80).
    step_marker_cat: category of ``ProfilerStep#N`` in pytorch2 (``"user_annotation"`` or
        ``"cpu_op"``).
    gpu_step_annotation: pytorch2 only: the ``gpu_user_annotation`` copy of each step marker.
    first_step: number of the first step marker.
    """

    steps: int = 3
    style: str = "pytorch2"
    seed: int = 0
    ranks: int = 1
    rank: int = 0
    layers: int = 3
    dataloader_us: float = 150.0
    with_memory: bool = True
    memory_addr: bool | None = None
    with_comm: bool | None = None
    with_driver_launch: bool = False
    with_cuda_graph: bool = False
    with_overlap: bool = True
    with_python_stack: bool = False
    backward_thread: bool = False
    tensor_cores: bool = True
    omit_blocks_per_sm: bool = False
    device_spill_us: float = 0.0
    tail: str = "none"
    num_sms: int | None = None
    step_marker_cat: str = "user_annotation"
    gpu_step_annotation: bool = True
    first_step: int = 1

    def __post_init__(self) -> None:
        if self.style not in ("pytorch2", "kineto2021"):
            raise ValueError(f"unknown style {self.style!r}")
        if self.steps < 1 or self.layers < 1:
            raise ValueError("steps and layers must be >= 1")
        if not 0 <= self.rank < self.ranks:
            raise ValueError("rank must be in [0, ranks)")
        if self.tail not in ("none", "no_device", "truncated"):
            raise ValueError(f"unknown tail {self.tail!r}")
        if self.with_driver_launch and self.style != "pytorch2":
            raise ValueError("cuda_driver events exist only in pytorch2-style traces")
        if self.step_marker_cat not in ("user_annotation", "cpu_op"):
            raise ValueError("step_marker_cat must be 'user_annotation' or 'cpu_op'")
        if self.dataloader_us <= 0:
            raise ValueError("dataloader_us must be > 0")

    @property
    def comm(self) -> bool:
        """Whether each step has an NCCL all-reduce."""
        return self.ranks > 1 if self.with_comm is None else bool(self.with_comm)

    @property
    def addr(self) -> bool:
        """Whether [memory] events carry Addr and the allocator totals."""
        return self.style == "pytorch2" if self.memory_addr is None else bool(self.memory_addr)

    @property
    def sms(self) -> int:
        """SM count of the simulated device."""
        if self.num_sms is not None:
            return int(self.num_sms)
        return _H100["numSms"] if self.style == "pytorch2" else _V100["numSms"]


# --------------------------------------------------------------------------------------------
# Layout records


@dataclass
class _Planned:
    """One planned interval [t0, t1) (µs) tagged with the breakdown category it was laid out for."""

    t0: float
    t1: float
    tag: str


@dataclass
class _KernelPlan:
    """A kernel as laid out: times (µs), blocks per SM and occupancy (%) as the analysis must read them."""

    t0: float
    t1: float
    device: int
    blocks_per_sm: float
    occupancy: float
    tensor_core: bool


@dataclass
class _HostStep:
    """A ProfilerStep marker and the device work launched by runtime calls inside it."""

    name: str
    t0: float
    t1: float
    dev_end: float | None = None
    dev_count: int = 0


@dataclass
class _Layout:
    """Everything expected_overview needs: the plan, the steps and the kernels."""

    plan: list[_Planned]
    steps: list[_HostStep]
    kernels: list[_KernelPlan]
    device: int
    distributed: dict | None
    peak_allocated: dict[int, int]


# --------------------------------------------------------------------------------------------
# Builder


class _Builder:
    """Writes events onto a host cursor and per-stream device queues, and records the plan."""

    def __init__(self, spec: SynthSpec) -> None:
        self.spec = spec
        self.pt2 = spec.style == "pytorch2"
        self.q = 0.125 if self.pt2 else 1.0  # time quantum, µs
        self.rng = np.random.default_rng([spec.seed, spec.rank, 20240611])
        self.pid = 2910249 + 1000 * spec.rank if self.pt2 else 25738 + 1000 * spec.rank
        self.main_tid = self.pid
        self.bwd_tid = self.pid + 9503
        self.tid = self.main_tid
        self.device = spec.rank
        base = 4458676416000.0 if self.pt2 else 1623143093496000.0
        self.t = base + 3.0 * spec.rank
        self.t_begin = self.t
        self.events: list[dict] = []
        self.plan: list[_Planned] = []
        self.kernels: list[_KernelPlan] = []
        self.steps: list[_HostStep] = []
        self.cur_step: _HostStep | None = None
        self.stack: list[dict] = []  # open host spans on the current thread
        self.ext = 0
        self.corr = 60000 if self.pt2 else 160000
        self.ev_idx = 0
        self.stream_free: dict[int, float] = {}
        self.dev_log: list[tuple[float, float, int]] = []  # (start, end, stream) of device work
        self.step_dev_spans: list[tuple[float, float]] = []  # stream-7 work of the current step
        self.alloc_total = 104857600  # weights etc., allocated before profiling, bytes
        self.reserved = 2 * self.alloc_total
        self.peak_alloc = self.alloc_total
        self.next_addr = 0x7F3A_0000_0000 + 0x1_0000_0000 * spec.rank
        self.cpu_addr = 0x5581_0000_0000
        self.batch: tuple[int, int] | None = None  # (addr, bytes) of the step's input on GPU

    # ---- time helpers -------------------------------------------------------------------

    def dur(self, lo: float, hi: float) -> float:
        """A random duration in [lo, hi] µs, rounded to the style's time quantum."""
        x = float(self.rng.uniform(lo, hi))
        return max(self.q, round(x / self.q) * self.q)

    def quant(self, x: float) -> float:
        """x rounded down to the time quantum (at least one quantum)."""
        return max(self.q, (x // self.q) * self.q)

    def adv(self, d: float) -> None:
        """Advance the host cursor by d µs."""
        self.t += d

    def tval(self, x: float) -> float | int:
        """A timestamp or duration as written to JSON (int µs in kineto2021)."""
        return x if self.pt2 else int(round(x))

    # ---- ids ----------------------------------------------------------------------------

    def new_ext(self) -> int:
        self.ext += 1
        return self.ext

    def new_corr(self) -> int:
        self.corr += 1
        return self.corr

    def host_tid(self) -> Any:
        return self.tid if self.pt2 else str(self.tid)

    def gpu_tid(self, stream: int) -> Any:
        return stream if self.pt2 else f"stream {stream}"

    def current_op_ext(self) -> int:
        """External id of the innermost open operator/annotation (0 when none)."""
        for s in reversed(self.stack):
            if s["ext"] is not None:
                return s["ext"]
        return 0

    # ---- host spans ---------------------------------------------------------------------

    def _cat(self, kind: str) -> str:
        if not self.pt2:
            return {"python": "python_function"}.get(kind, "Operator")
        return {
            "op": "cpu_op",
            "annotation": "user_annotation",
            "python": "python_function",
            "step": self.spec.step_marker_cat,
        }[kind]

    @contextlib.contextmanager
    def span(
        self,
        name: str,
        kind: str = "op",
        tag: str | None = "cpu",
        args: dict | None = None,
        shapes: list | None = None,
        types: list | None = None,
    ) -> Iterator[dict]:
        """A host duration event [enter cursor, exit cursor) on the current thread.

        kind: "op" (aten op), "annotation" (record_function), "python", "step".
        tag: the breakdown category it stands for (None: not a CPU activity, e.g. ProfilerStep).
        """
        ts = self.t
        is_py = kind == "python"
        ext = None if is_py else self.new_ext()
        rec = {"name": name, "ts": ts, "ext": ext, "kind": kind, "dev0": len(self.dev_log)}
        self.stack.append(rec)
        try:
            yield rec
        finally:
            self.stack.pop()
        ev_args: dict[str, Any] = {}
        if is_py:
            ev_args = {"Python parent id": None, "Python id": rec.get("py_id", 0)}
        elif self.pt2:
            ev_args = {"External id": ext, "Record function id": 0}
            if shapes is not None:
                ev_args["Input Dims"] = shapes
                ev_args["Input type"] = types or ["float"] * len(shapes)
            ev_args["Ev Idx"] = self._ev_idx()
        else:
            ev_args = {"Device": self.pid, "External id": ext, "Trace name": "PyTorch Profiler", "Trace iteration": 0}
            if shapes is not None:
                ev_args["Input Dims"] = shapes
                ev_args["Input type"] = types or ["float"] * len(shapes)
            if self.spec.with_python_stack:
                ev_args["Call stack"] = _call_stack(name)
        if args:
            ev_args.update(args)
        self.events.append(
            {
                "ph": "X",
                "cat": self._cat(kind),
                "name": name,
                "pid": self.pid,
                "tid": self.host_tid(),
                "ts": self.tval(ts),
                "dur": self.tval(self.t - ts),
                "args": ev_args,
            }
        )
        if tag is not None and self.t > ts:
            self.plan.append(_Planned(ts, self.t, tag))
        if kind == "annotation" and self.pt2 and tag in ("cpu", "comm"):
            self._gpu_annotation(name, ext, self.dev_log[rec["dev0"] :])

    def _gpu_annotation(self, name: str, ext: int, work: list[tuple[float, float, int]]) -> None:
        """pytorch2: the gpu_user_annotation copy of a user annotation, one per stream, from
        the first to the last device event launched inside it. Not CPU work (METRICS.md)."""
        for stream in sorted({s for _, _, s in work}):
            t0 = min(a for a, _, s in work if s == stream)
            t1 = max(b for _, b, s in work if s == stream)
            self.events.append(
                {
                    "ph": "X",
                    "cat": "gpu_user_annotation",
                    "name": name,
                    "pid": self.device,
                    "tid": stream,
                    "ts": t0,
                    "dur": t1 - t0,
                    "args": {"External id": ext},
                }
            )

    def _ev_idx(self) -> int:
        self.ev_idx += 1
        return self.ev_idx

    def leaf(self, name: str, d: float, shapes: list | None = None, tag: str = "cpu") -> None:
        """A host op with no children, lasting d µs."""
        with self.span(name, "op", tag, shapes=shapes):
            self.adv(d)

    @contextlib.contextmanager
    def pyframe(self, name: str) -> Iterator[None]:
        """A python_function frame (pytorch2 + with_python_stack) with 0.25 µs margins."""
        if not (self.pt2 and self.spec.with_python_stack):
            yield
            return
        with self.span(name, "python", "cpu") as rec:
            rec["py_id"] = self._ev_idx()
            self.adv(0.25)
            yield
            self.adv(0.25)

    # ---- memory -------------------------------------------------------------------------

    def mem(self, nbytes: int, addr: int, device_type: int = 1) -> None:
        """A [memory] instant event at the cursor. Positive bytes allocate, negative free."""
        if not self.spec.with_memory:
            return
        args: dict[str, Any] = {}
        if device_type == 1:
            self.alloc_total += nbytes
            self.peak_alloc = max(self.peak_alloc, self.alloc_total)
            self.reserved = max(self.reserved, -(-self.alloc_total // (2 * _MIB)) * 2 * _MIB)
            dev_id = self.device
        else:
            dev_id = -1
        if self.spec.addr:
            args["Total Reserved"] = self.reserved if device_type == 1 else 0
            args["Total Allocated"] = self.alloc_total if device_type == 1 else max(nbytes, 0)
        args["Bytes"] = nbytes
        if self.spec.addr:
            args["Addr"] = addr
        args["Device Id"] = dev_id
        args["Device Type"] = device_type
        ev: dict[str, Any] = {
            "ph": "i",
            "s": "t",
            "name": "[memory]",
            "pid": self.pid,
            "tid": self.tid,
            "ts": self.tval(self.t),
            "args": args,
        }
        if self.pt2:
            ev["cat"] = "cpu_instant_event"
            args["Ev Idx"] = self._ev_idx()
        self.events.append(ev)

    def gpu_alloc(self, nbytes: int) -> int:
        """Allocate nbytes on the GPU at the cursor; returns the address."""
        addr = self.next_addr
        self.next_addr += -(-nbytes // 512) * 512
        self.mem(nbytes, addr)
        return addr

    # ---- runtime and device work --------------------------------------------------------

    def _runtime_event(self, name: str, ts: float, end: float, corr: int, driver: bool) -> None:
        ext = self.current_op_ext()
        cbid = {
            "cudaLaunchKernel": 211,
            "cudaMemcpyAsync": 41,
            "cudaMemsetAsync": 51,
            "cudaStreamSynchronize": 131,
            "cudaGraphLaunch": 311,
            "cuLaunchKernel": 307,
            "cudaDeviceSynchronize": 165,
            "cudaStreamWaitEvent": 145,
            "cudaEventRecord": 135,
        }.get(name, 1)
        if self.pt2:
            args = {"External id": ext, "cbid": cbid, "correlation": corr}
            cat = "cuda_driver" if driver else "cuda_runtime"
        else:
            args = {
                "cbid": cbid,
                "correlation": corr,
                "external id": ext,
                "external ts": self.tval(self.stack[-1]["ts"] if self.stack else ts),
            }
            cat = "Runtime"
        self.events.append(
            {
                "ph": "X",
                "cat": cat,
                "name": name,
                "pid": self.pid,
                "tid": self.host_tid(),
                "ts": self.tval(ts),
                "dur": self.tval(end - ts),
                "args": args,
            }
        )
        self.plan.append(_Planned(ts, end, "runtime"))

    def _flow(self, corr: int, host_ts: float, dev_ts: float, stream: int) -> None:
        cat, name = ("ac2g", "ac2g") if self.pt2 else ("async", "launch")
        self.events.append(
            {
                "ph": "s",
                "id": corr,
                "pid": self.pid,
                "tid": self.host_tid(),
                "ts": self.tval(host_ts),
                "cat": cat,
                "name": name,
            }
        )
        self.events.append(
            {
                "ph": "f",
                "id": corr,
                "pid": self.device,
                "tid": self.gpu_tid(stream),
                "ts": self.tval(dev_ts),
                "cat": cat,
                "name": name,
                "bp": "e",
            }
        )

    def _device_event(self, item: dict, ts: float, corr: int) -> float:
        """Emit one device event starting at ts; returns its end (µs)."""
        d = item["dur"]
        stream = item.get("stream", _STREAM_COMPUTE)
        kind = item["kind"]
        ext = self.current_op_ext()
        if self.pt2:
            args: dict[str, Any] = {"External id": ext}
            cat = {"kernel": "kernel", "memcpy": "gpu_memcpy", "memset": "gpu_memset"}[kind]
        else:
            args = {}
            cat = {"kernel": "Kernel", "memcpy": "Memcpy", "memset": "Memset"}[kind]
        if kind == "kernel":
            args.update({"queued": 0, "device": self.device, "context": 1, "stream": stream, "correlation": corr})
            if not self.pt2:
                args["external id"] = ext
            grid, block = item["grid"], item["block"]
            nblocks = grid[0] * grid[1] * grid[2]
            bpsm_exact = nblocks / self.spec.sms
            bpsm_written = round(bpsm_exact, 6)
            warps = round(bpsm_exact * (block[0] * block[1] * block[2]) / 32, 6)
            args["registers per thread"] = item.get("regs", 32)
            args["shared memory"] = item.get("smem", 0)
            if not self.spec.omit_blocks_per_sm:
                args["blocks per SM"] = bpsm_written
                args["warps per SM"] = warps
            args["grid"] = list(grid)
            args["block"] = list(block)
            args["est. achieved occupancy %"] = item["occ"]
            if item.get("comm_args"):
                args.update(item["comm_args"])
            bpsm = bpsm_exact if self.spec.omit_blocks_per_sm else bpsm_written
            # a 0 that Kineto writes when its occupancy calculation failed is unknown (-1), not 0 %
            occ = -1.0 if item.get("occ_not_computed") else float(item["occ"])
            self.kernels.append(_KernelPlan(ts, ts + d, self.device, bpsm, occ, item["name"] in TENSOR_CORE_KERNELS))
            tag = "comm" if item.get("comm") else "kernel"
        else:
            nbytes = item["bytes"]
            args.update({"device": self.device, "context": 1, "stream": stream, "correlation": corr})
            if not self.pt2:
                args["external id"] = ext
            args["bytes"] = nbytes
            args["memory bandwidth (GB/s)"] = nbytes / (d * 1000.0)
            tag = kind
        self.events.append(
            {
                "ph": "X",
                "cat": cat,
                "name": item["name"],
                "pid": self.device,
                "tid": self.gpu_tid(stream),
                "ts": self.tval(ts),
                "dur": self.tval(d),
                "args": args,
            }
        )
        self.plan.append(_Planned(ts, ts + d, tag))
        self.stream_free[stream] = ts + d
        self.dev_log.append((ts, ts + d, stream))
        if self.cur_step is not None:
            st = self.cur_step
            st.dev_count += 1
            st.dev_end = ts + d if st.dev_end is None else max(st.dev_end, ts + d)
            if stream == _STREAM_COMPUTE:
                self.step_dev_spans.append((ts, ts + d))
        return ts + d

    def launch(
        self, items: list[dict], name: str = "cudaLaunchKernel", rt_dur: float | None = None, driver: bool = False
    ) -> None:
        """An asynchronous runtime call at the cursor; its device work queues on the streams.

        Each item starts at max(runtime end + launch latency, stream free time); several items
        (a CUDA graph replay) run back to back on their streams with 0.5-2 µs gaps and share one
        correlation id.
        """
        r0 = self.t
        d = rt_dur if rt_dur is not None else self.dur(3, 9)
        r1 = r0 + d
        corr = self.new_corr()
        self._runtime_event(name, r0, r1, corr, driver)
        ready = r1 + self.dur(1, 4)
        first = True
        for item in items:
            stream = item.get("stream", _STREAM_COMPUTE)
            start = max(ready, self.stream_free.get(stream, -1.0), item.get("not_before", -1.0))
            if first:
                self._flow(corr, r0, start, stream)
                first = False
            ready = self._device_event(item, start, corr) + self.dur(0.5, 2)
        self.t = r1

    def sync_copy(self, item: dict, name: str = "cudaMemcpyAsync") -> None:
        """A synchronous copy (pageable host memory): the runtime call lasts until the copy ends."""
        r0 = self.t
        corr = self.new_corr()
        stream = item.get("stream", _STREAM_COMPUTE)
        start = max(r0 + self.dur(2, 5), self.stream_free.get(stream, -1.0), item.get("not_before", -1.0))
        self._flow(corr, r0, start, stream)
        end = self._device_event(item, start, corr)
        r1 = end + self.dur(1, 4)
        self._runtime_event(name, r0, r1, corr, False)
        self.t = r1

    def wait_all(self, name: str = "cudaStreamSynchronize") -> None:
        """A blocking runtime call that returns after every stream is idle."""
        r0 = self.t
        busy = max(self.stream_free.values(), default=r0)
        r1 = max(r0 + self.dur(2, 4), busy + self.dur(1, 3))
        self._runtime_event(name, r0, r1, self.new_corr(), False)
        self.t = r1

    def runtime_only(self, name: str, d: float) -> None:
        """A runtime call with no device work (cudaEventRecord, cudaStreamWaitEvent ...)."""
        self._runtime_event(name, self.t, self.t + d, self.new_corr(), False)
        self.adv(d)

    def kernel(
        self,
        name: str,
        dur: float,
        nblocks: int,
        occ: int,
        threads: int = 256,
        stream: int = _STREAM_COMPUTE,
        **extra: Any,
    ) -> dict:
        """A kernel work item with a grid of nblocks blocks split over (x, y, 1)."""
        gx = nblocks if nblocks <= 65535 else nblocks // 4
        gy = nblocks // gx
        item = {
            "kind": "kernel",
            "name": name,
            "dur": dur,
            "grid": [gx, gy, 1],
            "block": [threads, 1, 1],
            "occ": occ,
            "stream": stream,
            "regs": 32 if "xmma" not in name and "884" not in name else 168,
            "smem": 0 if "xmma" not in name and "884" not in name else 49152,
        }
        item.update(extra)
        return item

    # ---- gpu annotation -----------------------------------------------------------------

    def gpu_step_annotation(self, step: _HostStep, ext: int) -> None:
        """pytorch2: the gpu_user_annotation copy of a ProfilerStep over its stream-7 work."""
        if not (self.pt2 and self.spec.gpu_step_annotation and self.step_dev_spans):
            return
        t0 = min(a for a, _ in self.step_dev_spans)
        t1 = max(b for _, b in self.step_dev_spans)
        self.events.append(
            {
                "ph": "X",
                "cat": "gpu_user_annotation",
                "name": step.name,
                "pid": self.device,
                "tid": _STREAM_COMPUTE,
                "ts": t0,
                "dur": t1 - t0,
                "args": {"External id": ext},
            }
        )


def _call_stack(name: str) -> str:
    """An old-style 'Call stack' string for an op (kineto2021 with_python_stack)."""
    return (
        "/opt/conda/lib/python3.8/site-packages/torch/nn/modules/module.py(1051): _call_impl;"
        "train_synthetic.py(57): train_step;train_synthetic.py(88): <module>"
    )


# --------------------------------------------------------------------------------------------
# The simulated program


def _conv_shapes(i: int) -> tuple[list, int, int]:
    """Input dims of conv layer i, and its output size (elements) and channel count."""
    c_in = 3 if i == 0 else 32 * 2 ** (i - 1)
    c_out = 32 * 2**i
    hw = max(7, 56 >> i)
    dims = [[32, c_in, hw, hw], [c_out, c_in, 3, 3], [c_out], [], [], [], []]
    return dims, 32 * c_out * hw * hw, c_out


def _classifier_gemm(b: _Builder, tc_layers: set[int], max_us: float) -> None:
    """Launch the Linear layer's GEMM kernel (6 to ``max_us`` µs): the tensor-core one when any conv uses them."""
    tc = bool(tc_layers)
    b.launch(
        [b.kernel(_NAMES[b.spec.style]["gemm"][0 if tc else 1], b.dur(6, max_us), 66, 31 if tc else 18, threads=128)]
    )


def _forward(b: _Builder, tc_layers: set[int]) -> list[tuple[int, int]]:
    """Conv + ReLU layers and a linear head. Returns the activations' (addr, bytes)."""
    spec = b.spec
    names = _NAMES[spec.style]
    acts = []
    with b.span("## forward ##", "annotation"):
        b.adv(b.dur(1, 3))
        for i in range(spec.layers):
            dims, n_out, c_out = _conv_shapes(i)
            with b.pyframe(f"nn.Module: Conv2d_{i}"):
                with b.span(
                    "aten::conv2d",
                    shapes=dims,
                    types=["float", "float", "float", "ScalarList", "ScalarList", "ScalarList", "Int"],
                ):
                    b.adv(b.dur(2, 5))
                    with b.span("aten::convolution", shapes=dims):
                        b.adv(b.dur(1, 3))
                        with b.span("aten::_convolution", shapes=dims):
                            b.adv(b.dur(1, 3))
                            with b.span("aten::cudnn_convolution", shapes=dims[:2]):
                                with b.span("aten::empty", shapes=[[], [], [], [], [], []]):
                                    b.adv(b.dur(1, 2))
                                    acts.append((b.gpu_alloc(n_out * 4), n_out * 4))
                                    b.adv(b.dur(0.5, 1))
                                b.adv(b.dur(2, 6))
                                tc = i in tc_layers
                                kname = names["conv_fwd"][0 if tc else 1]
                                b.launch([b.kernel(kname, b.dur(25, 60), 264 + 40 * i, 25 if tc else 12)])
                                b.adv(b.dur(2, 5))
                            b.adv(b.dur(1, 2))
                        b.adv(b.dur(1, 2))
                    b.adv(b.dur(1, 2))
            b.adv(b.dur(2, 6))
            with b.pyframe(f"nn.Module: ReLU_{i}"):
                with b.span("aten::relu_", shapes=[[32, c_out, max(7, 56 >> i), max(7, 56 >> i)]]):
                    b.adv(b.dur(1, 3))
                    with b.span("aten::clamp_min_", shapes=[[32, c_out, 1, 1], []]):
                        b.adv(b.dur(1, 3))
                        b.launch([b.kernel(_RELU_KERNEL, b.dur(4, 12), 1056 + 128 * i, 75, threads=128)])
                        b.adv(b.dur(0.5, 2))
                    b.adv(b.dur(0.5, 2))
            b.adv(b.dur(3, 8))
        with b.pyframe("nn.Module: Linear_0"):
            with b.span("aten::linear", shapes=[[32, 256], [10, 256], [10]]):
                b.adv(b.dur(1, 3))
                b.leaf("aten::t", b.dur(2, 4), shapes=[[10, 256]])
                b.adv(b.dur(1, 2))
                with b.span("aten::addmm", shapes=[[10], [32, 256], [256, 10], [], []]):
                    b.adv(b.dur(3, 6))
                    _classifier_gemm(b, tc_layers, 14)
                    b.adv(b.dur(1, 3))
                b.adv(b.dur(1, 2))
        b.adv(b.dur(2, 4))
    return acts


def _backward(b: _Builder, tc_layers: set[int], acts: list[tuple[int, int]]) -> None:
    """Backward ops (optionally on the autograd thread), frees the activations."""
    spec = b.spec
    names = _NAMES[spec.style]
    if spec.backward_thread:
        b.tid = b.bwd_tid
    b.adv(b.dur(2, 5))
    with b.span("autograd::engine::evaluate_function: AddmmBackward0", "op"):
        b.adv(b.dur(2, 4))
        with b.span("AddmmBackward0"):
            b.adv(b.dur(1, 3))
            with b.span("aten::mm", shapes=[[32, 10], [10, 256]]):
                b.adv(b.dur(2, 4))
                _classifier_gemm(b, tc_layers, 12)
                b.adv(b.dur(1, 2))
            b.adv(b.dur(1, 2))
        b.adv(b.dur(1, 2))
    for i in reversed(range(spec.layers)):
        dims, _, _ = _conv_shapes(i)
        b.adv(b.dur(2, 6))
        with b.span("autograd::engine::evaluate_function: ConvolutionBackward0"):
            b.adv(b.dur(1, 3))
            with b.span("ConvolutionBackward0"):
                b.adv(b.dur(1, 3))
                with b.span("aten::convolution_backward", shapes=[dims[0], dims[0], dims[1]]):
                    b.adv(b.dur(2, 5))
                    tc = i in tc_layers
                    b.launch([b.kernel(names["dgrad"][0 if tc else 1], b.dur(20, 50), 198 + 20 * i, 25 if tc else 12)])
                    b.adv(b.dur(2, 4))
                    b.launch([b.kernel(names["wgrad"][0 if tc else 1], b.dur(20, 50), 150 + 10 * i, 25 if tc else 10)])
                    b.adv(b.dur(1, 3))
                    if acts:
                        addr, n = acts.pop()
                        b.mem(-n, addr)
                    b.adv(b.dur(0.5, 2))
                b.adv(b.dur(1, 2))
            b.adv(b.dur(1, 2))
    b.tid = b.main_tid


def _overlap(b: _Builder) -> None:
    """Two kernels on streams 7 and 20 that overlap (sum of blocks per SM > 1), then a pair that
    overlaps with a sum below 1."""
    sms = b.spec.sms
    b.adv(b.dur(2, 4))
    with b.span("aten::mm", shapes=[[512, 512], [512, 512]]):
        b.adv(b.dur(1, 2))
        b.launch([b.kernel(_MEAN_KERNEL, 40.0, int(sms * 0.6), 40)])
        b.adv(b.dur(0.5, 1))
    with b.span("aten::add", shapes=[[512, 512], [512, 512], []]):
        b.adv(b.dur(0.5, 1))
        b.runtime_only("cudaStreamWaitEvent", b.dur(1, 2))
        b.launch([b.kernel(_ADD_KERNEL, 30.0, int(sms * 0.7), 60, stream=_STREAM_SIDE)])
        b.adv(b.dur(0.5, 1))
    with b.span("aten::fill_", shapes=[[512], []]):
        b.adv(b.dur(0.5, 1))
        b.launch([b.kernel(_FILL_KERNEL, 12.0, max(1, int(sms * 0.25)), 50, stream=_STREAM_SIDE)])
        b.adv(b.dur(0.5, 1))
    with b.span("aten::fill_", shapes=[[512], []]):
        b.adv(b.dur(0.5, 1))
        b.launch([b.kernel(_FILL_KERNEL, 12.0, max(1, int(sms * 0.3)), 50)])
        b.adv(b.dur(0.5, 1))


def _allreduce(b: _Builder) -> None:
    """DDP gradient all-reduce: record_param_comms > nccl:all_reduce > launch of an NCCL kernel.

    Laid out so the margins of record_param_comms outside nccl:all_reduce are covered by a running
    kernel: a compute kernel at the start (launched just before) and the NCCL kernel at the end.
    Whether an analysis counts record_param_comms itself as communication then does not matter.
    The NCCL kernel's occupancy is written 0 while its launch (544-thread blocks, 0.1 blocks per SM)
    implies ≥ 1 %: Kineto's "not computed" (real NCCL kernels, with over 48 KiB of shared memory, read
    so), which the analysis must leave out (``occ_not_computed``).
    """
    spec = b.spec
    names = _NAMES[spec.style]
    nelems = 2_049_000
    b.adv(b.dur(1, 2))
    with b.span("aten::mul_", shapes=[[nelems], []]):
        b.adv(b.dur(1, 2))
        b.launch([b.kernel(_ADD_KERNEL, 30.0, int(spec.sms * 2.2), 80)])
        b.adv(b.dur(0.5, 1))
    # wait until that kernel runs: it covers record_param_comms' start margin
    b.t = max(b.t, b.stream_free[_STREAM_COMPUTE] - 30.0) + b.q
    comm_args = {
        "Collective name": "allreduce",
        "In msg nelems": nelems,
        "Out msg nelems": nelems,
        "Group size": spec.ranks,
        "dtype": "Float",
        "In split size": "[]",
        "Out split size": "[]",
        "Process Group Name": "0",
        "Process Group Description": "default_pg",
        "Process Group Ranks": str(list(range(spec.ranks))),
    }
    nccl_item = b.kernel(
        names["nccl"],
        b.dur(60, 120),
        2 * (spec.sms // 20 or 1),
        0,
        threads=544,
        stream=_STREAM_COMM,
        comm=True,
        occ_not_computed=True,
        comm_args=comm_args if b.pt2 else None,
    )
    if b.pt2:
        rpc_args = dict(comm_args, **{"Global rank start": 0, "Global rank stride": 1})
        outer = b.span("record_param_comms", "op", "comm", args=rpc_args)
    else:
        outer = contextlib.nullcontext()
    with outer:
        if b.pt2:
            b.adv(b.dur(2, 4))
        kind = "annotation" if b.pt2 else "op"
        with b.span("nccl:all_reduce", kind, "comm", shapes=[[nelems]]):
            b.adv(b.dur(2, 4))
            b.runtime_only("cudaStreamWaitEvent", b.dur(1, 2))
            b.launch([nccl_item], name="cudaLaunchKernelExC" if b.pt2 else "cudaLaunchKernel")
            # stay until the NCCL kernel has started, so it covers the outer op's end margin
            b.t = max(b.t, b.stream_free[_STREAM_COMM] - nccl_item["dur"]) + b.dur(1, 2)
        if b.pt2:
            b.adv(min(b.dur(2, 4), b.quant(nccl_item["dur"] / 4)))


def _optimizer(b: _Builder) -> None:
    """Optimizer.step with a foreach add (waits for the all-reduce on the comm stream)."""
    spec = b.spec
    kind = "annotation" if b.pt2 else "op"
    b.adv(b.dur(2, 5))
    with b.span("Optimizer.step#SGD.step", kind):
        b.adv(b.dur(3, 6))
        with b.span("aten::_foreach_add_", shapes=[[], [], []], types=["TensorList", "TensorList", "Scalar"]):
            b.adv(b.dur(2, 4))
            nb = b.stream_free.get(_STREAM_COMM, -1.0) if spec.comm else -1.0
            b.launch([b.kernel(_FOREACH_KERNEL, b.dur(10, 20), 2 * spec.sms, 70, threads=512, not_before=nb)])
            b.adv(b.dur(1, 2))
        b.adv(b.dur(1, 2))
        # host-side work until the GPU has drained, then one more launch that starts late (8 µs
        # after its runtime call). The host leaves Optimizer.step before that kernel starts, so
        # the GPU copy of this annotation covers a few µs where neither host nor GPU is busy.
        with b.span("aten::_foreach_norm", shapes=[[], []], types=["TensorList", "Scalar"]):
            b.t = max(b.t + b.dur(2, 4), max(b.stream_free.values()) + b.dur(1, 2))
        with b.span("aten::_foreach_mul_", shapes=[[], []], types=["TensorList", "Scalar"]):
            b.adv(b.dur(1, 2))
            b.launch(
                [b.kernel(_FOREACH_KERNEL, b.dur(3, 6), spec.sms, 70, threads=512, not_before=b.t + 12.0)], rt_dur=4.0
            )
            b.adv(b.q)
        b.adv(b.q)


def _zero_grad(b: _Builder) -> None:
    """Optimizer.zero_grad: a cudaMemsetAsync per gradient bucket."""
    kind = "annotation" if b.pt2 else "op"
    b.adv(b.dur(2, 4))
    with b.span("Optimizer.zero_grad#SGD.zero_grad", kind):
        b.adv(b.dur(2, 4))
        with b.span("aten::zero_", shapes=[[4096]]):
            b.adv(b.dur(1, 2))
            if b.batch is not None:
                b.mem(-b.batch[1], b.batch[0])
                b.batch = None
                b.adv(b.q)
            with b.span("aten::fill_", shapes=[[4096], []]):
                b.adv(b.dur(1, 2))
                b.launch(
                    [{"kind": "memset", "name": "Memset (Device)", "dur": b.dur(1, 3), "bytes": 16384}],
                    name="cudaMemsetAsync",
                )
                b.adv(b.dur(0.5, 1))
            b.adv(b.dur(0.5, 1))
        b.adv(b.dur(1, 2))


def _triton(b: _Builder) -> None:
    """A torch.compile'd region: a Triton kernel launched by driver-API cuLaunchKernel."""
    b.adv(b.dur(2, 4))
    with b.span("CompiledFunction", "annotation" if b.pt2 else "op"):
        b.adv(b.dur(2, 4))
        with b.span(_TRITON_KERNEL, "annotation" if b.pt2 else "op"):
            b.adv(b.dur(1, 2))
            b.launch([b.kernel(_TRITON_KERNEL, b.dur(5, 12), 528, 45, threads=128)], name="cuLaunchKernel", driver=True)
            b.adv(b.dur(0.5, 1))
        b.adv(b.dur(1, 2))


def _graph(b: _Builder) -> None:
    """CUDA graph replay: one cudaGraphLaunch, three kernels sharing its correlation id."""
    names = _NAMES[b.spec.style]
    b.adv(b.dur(2, 4))
    with b.span("aten::_graph_replay" if b.pt2 else "CUDAGraph.replay", "op" if b.pt2 else "op"):
        b.adv(b.dur(2, 4))
        tc = b.spec.tensor_cores
        b.launch(
            [
                b.kernel(_FILL_KERNEL, b.dur(2, 4), 4, 10),
                b.kernel(names["gemm"][0 if tc else 1], b.dur(8, 16), 132, 31, threads=128),
                b.kernel(_ADD_KERNEL, b.dur(2, 5), 64, 20),
            ],
            name="cudaGraphLaunch",
            rt_dur=b.dur(10, 20),
        )
        b.adv(b.dur(1, 2))


def _h2d(b: _Builder, nbytes: int) -> None:
    """aten::to > aten::_to_copy > aten::copy_ > synchronous cudaMemcpyAsync (pageable)."""
    with b.span("aten::to", shapes=[[32, 3, 56, 56], [], [], [], []]):
        b.adv(b.dur(1, 3))
        with b.span("aten::_to_copy", shapes=[[32, 3, 56, 56], [], [], [], [], [], []]):
            b.adv(b.dur(1, 2))
            with b.span("aten::empty_strided", shapes=[[], [], [], [], [], []]):
                b.adv(b.dur(1, 2))
                b.batch = (b.gpu_alloc(nbytes), nbytes)
                b.adv(b.dur(0.5, 1))
            b.adv(b.dur(0.5, 1))
            with b.span("aten::copy_", shapes=[[32, 3, 56, 56], [32, 3, 56, 56], []]):
                b.adv(b.dur(1, 3))
                b.sync_copy(
                    {
                        "kind": "memcpy",
                        "name": "Memcpy HtoD (Pageable -> Device)",
                        "dur": b.dur(15, 30),
                        "bytes": nbytes,
                    }
                )
                b.adv(b.dur(0.5, 2))
                b.mem(-nbytes, b.cpu_addr, device_type=0)
                b.adv(b.q)
            b.adv(b.dur(0.5, 1))
        b.adv(b.dur(0.5, 1))


def _dataloader(b: _Builder) -> None:
    """The DataLoader __next__ span with a collate op and a CPU allocation inside."""
    kind = "annotation" if b.pt2 else "op"
    total = round(b.spec.dataloader_us / b.q) * b.q
    with b.span(_DATALOADER_NAME, kind, "dataloader"):
        t_end = b.t + total
        b.adv(min(b.dur(5, 10), b.quant(total / 4)))
        if total >= 20:
            with b.span("aten::stack", shapes=[[], []], types=["TensorList", "Int"]):
                b.adv(b.q)
                b.mem(32 * 3 * 56 * 56 * 4, b.cpu_addr, device_type=0)
                b.adv(min(b.dur(4, 8), b.quant(total / 4)))
        b.t = t_end


def _item(b: _Builder) -> None:
    """loss.item(): a DtoH copy queued after all streams, then a blocking synchronize."""
    with b.span("aten::item", shapes=[[]]):
        b.adv(b.dur(1, 2))
        with b.span("aten::_local_scalar_dense", shapes=[[]]):
            b.adv(b.dur(1, 2))
            busy = max(b.stream_free.values(), default=-1.0)
            b.launch(
                [
                    {
                        "kind": "memcpy",
                        "name": "Memcpy DtoH (Device -> Pageable)",
                        "dur": b.dur(1, 3),
                        "bytes": 4,
                        "not_before": busy,
                    }
                ],
                name="cudaMemcpyAsync",
            )
            b.wait_all("cudaStreamSynchronize")
            b.adv(b.dur(0.5, 1))
        b.adv(b.dur(0.5, 1))


def _spill(b: _Builder) -> float:
    """End of a step without a sync: a long kernel that ends device_spill_us after the host step.

    Returns the host time still to spend in the step after the launch."""
    b.adv(b.dur(1, 2))
    host_tail = b.dur(3, 6)
    with b.span("aten::add_", shapes=[[4096], [4096], []]):
        b.adv(b.dur(1, 2))
        r0 = b.t
        rt = b.dur(3, 6)
        # the host step ends at r0 + rt + 1 + host_tail; aim the kernel end at that + spill
        start = max(r0 + rt + 4.0, b.stream_free.get(_STREAM_COMPUTE, -1.0))
        host_end = r0 + rt + 1.0 + host_tail
        kdur = max(4.0, b.quant(host_end + b.spec.device_spill_us - start))
        b.launch([b.kernel(_ADD_KERNEL, kdur, 3 * b.spec.sms, 85, not_before=start)], rt_dur=rt)
        b.adv(1.0)
    return host_tail


def _train_step(b: _Builder, number: int, tc_layers: set[int], kind: str = "full") -> None:
    """One ProfilerStep. kind: "full", "no_device" (host only) or "truncated" (2 device events)."""
    spec = b.spec
    name = f"ProfilerStep#{number}"
    step = _HostStep(name, b.t, b.t)
    b.cur_step = step
    b.step_dev_spans = []
    with b.span(name, "step", None) as rec:
        b.adv(b.dur(2, 5))
        _dataloader(b)
        b.adv(b.dur(3, 8))
        if kind == "no_device":
            b.leaf("aten::zeros", b.dur(5, 10), shapes=[[], [], [], [], []])
            b.adv(b.dur(20, 40))
        else:
            _h2d(b, 32 * 3 * 56 * 56 * 4)
            b.adv(b.dur(2, 5))
        if kind == "full":
            acts = _forward(b, tc_layers)
            _backward(b, tc_layers, acts)
            if spec.with_overlap:
                _overlap(b)
            if spec.comm:
                _allreduce(b)
            if spec.with_driver_launch:
                _triton(b)
            if spec.with_cuda_graph:
                _graph(b)
            _optimizer(b)
            _zero_grad(b)
            b.adv(b.dur(2, 4))
            if spec.device_spill_us > 0:
                b.adv(_spill(b))
            else:
                _item(b)
                b.adv(b.dur(2, 5))
        elif kind == "truncated":
            _zero_grad(b)
            b.adv(b.dur(10, 20))
        step.t1 = b.t
    b.gpu_step_annotation(step, rec["ext"])
    b.steps.append(step)
    b.cur_step = None


def _tc_layers(spec: SynthSpec) -> set[int]:
    """Layers whose convs use tensor-core kernels: every other one when tensor_cores is on."""
    return {i for i in range(spec.layers) if i % 2 == 0} if spec.tensor_cores else set()


def _build(spec: SynthSpec) -> tuple[dict, _Layout]:
    """Run the simulated program and return (trace dict, layout)."""
    b = _Builder(spec)
    tcl = _tc_layers(spec)
    # before profiling steps: host-only setup work
    b.adv(b.dur(10, 20))
    b.leaf("aten::empty", b.dur(2, 4), shapes=[[], [], [], [], [], []])
    b.adv(b.dur(5, 10))
    for k in range(spec.steps):
        _train_step(b, spec.first_step + k, tcl)
        b.adv(b.dur(1, 3) if spec.device_spill_us <= 0 else 1.0)
    if spec.tail != "none":
        _train_step(b, spec.first_step + spec.steps, tcl, kind=spec.tail)
        b.adv(b.dur(1, 3))
    b.adv(b.dur(5, 10))
    b.runtime_only("cudaDeviceSynchronize", b.dur(3, 6))
    t_end = max([b.t] + list(b.stream_free.values())) + 5.0
    trace = _envelope(b, t_end)
    dist = {"backend": "nccl", "rank": spec.rank, "world_size": spec.ranks} if spec.ranks > 1 or spec.comm else None
    layout = _Layout(b.plan, b.steps, b.kernels, b.device, dist, {b.device: b.peak_alloc})
    return trace, layout


def _envelope(b: _Builder, t_end: float) -> dict:
    """Metadata events and the top-level keys around b.events."""
    spec = b.spec
    props = dict(_H100 if b.pt2 else _V100)
    props["numSms"] = spec.sms
    n_dev = max(spec.ranks, 1)
    device_props = [{"id": i, **props} for i in range(n_dev)]
    t0 = b.t_begin
    meta: list[dict] = [
        {"name": "process_name", "ph": "M", "ts": b.tval(t0), "pid": b.pid, "tid": 0, "args": {"name": "python"}},
        {"name": "process_labels", "ph": "M", "ts": b.tval(t0), "pid": b.pid, "tid": 0, "args": {"labels": "CPU"}},
        {"name": "process_name", "ph": "M", "ts": b.tval(t0), "pid": b.device, "tid": 0, "args": {"name": "python"}},
        {
            "name": "process_labels",
            "ph": "M",
            "ts": b.tval(t0),
            "pid": b.device,
            "tid": 0,
            "args": {"labels": f"GPU {b.device}"},
        },
    ]
    tids = [b.main_tid] + ([b.bwd_tid] if spec.backward_thread else [])
    for tid in tids:
        meta.append(
            {
                "name": "thread_name",
                "ph": "M",
                "ts": b.tval(t0),
                "pid": b.pid,
                "tid": tid if b.pt2 else str(tid),
                "args": {"name": f"thread {tid} (python)"},
            }
        )
    streams = sorted({e["args"]["stream"] for e in b.events if e.get("ph") == "X" and "stream" in e.get("args", {})})
    for s in streams:
        meta.append(
            {
                "name": "thread_name",
                "ph": "M",
                "ts": b.tval(t0),
                "pid": b.device,
                "tid": b.gpu_tid(s),
                "args": {"name": f"stream {s} "},
            }
        )
    span_pid = "Spans" if b.pt2 else "Traces"
    tail = [
        {
            "ph": "X",
            "cat": "Trace",
            "name": "PyTorch Profiler (0)",
            "pid": span_pid,
            "tid": "PyTorch Profiler",
            "ts": b.tval(t0),
            "dur": b.tval(t_end - t0),
            "args": {"Op count": 0},
        },
        {
            "name": "Iteration Start: PyTorch Profiler",
            "ph": "i",
            "s": "g",
            "pid": "Traces",
            "tid": "Trace PyTorch Profiler",
            "ts": b.tval(t0),
        },
        {"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": b.tval(t_end)},
    ]
    out: dict[str, Any] = {"schemaVersion": 1, "deviceProperties": device_props}
    if spec.ranks > 1 or spec.comm:
        out["distributedInfo"] = {"backend": "nccl", "rank": spec.rank, "world_size": spec.ranks}
    if b.pt2:
        out.update(
            {
                "record_shapes": 1,
                "profile_memory": int(spec.with_memory),
                "with_stack": int(spec.with_python_stack),
                "cuda_runtime_version": 12040,
                "cuda_driver_version": 12090,
                "cupti_version": 22,
                "trace_id": f"{spec.seed:08X}{spec.rank:08X}{spec.steps:016X}",
                "displayTimeUnit": "ms",
                "baseTimeNanoseconds": 1751410836000000000,
            }
        )
    out["traceEvents"] = meta + b.events + tail
    out["traceName"] = f"synthetic/{spec.style}/rank{spec.rank}.pt.trace.json"
    return out


# --------------------------------------------------------------------------------------------
# Public API


def synthesize(spec: SynthSpec) -> dict:
    """The trace for spec as a dict (Chrome trace object form). Deterministic in spec."""
    return _build(spec)[0]


def write_trace(trace: dict, path: str | os.PathLike) -> None:
    """Write a trace dict as JSON; gzip-compressed when path ends in '.gz'."""
    data = json.dumps(trace, separators=(",", ":")).encode("utf-8")
    p = os.fspath(path)
    if p.endswith(".gz"):
        # no file name and mtime=0 in the gzip header: byte-identical reruns
        with open(p, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as f:
            f.write(data)
    else:
        with open(p, "wb") as f:
            f.write(data)


def expected_overview(spec: SynthSpec) -> dict:
    """The Overview answers for spec, derived from the laid-out schedule (not from the JSON).

    Returns {"steps": [...], "average": {...}, "gpus": [...], "configuration": {...},
    "memory": {...}} shaped like docs/http_api.md "overview": each step has "step" (the marker
    number as a string), "start_us"/"end_us" (relative to the first step's start), "total_us"
    and the eight CATEGORY_KEYS in µs, which add up to total_us. Each GPU entry has "id",
    "utilization_pct", "sm_efficiency_pct", "achieved_occupancy_pct" and "tensor_core_pct" (0-100).
    """
    return _expected_from_layout(_build(spec)[1])


# --------------------------------------------------------------------------------------------
# Known answers from a layout


def _merge(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Union of intervals as sorted, disjoint [a, b) pairs."""
    out: list[list[float]] = []
    for a, b in sorted(intervals):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _covers(merged: list[tuple[float, float]], starts: list[float], x: float) -> bool:
    """Whether point x lies in one of the merged intervals (starts = their start points)."""
    i = bisect.bisect_right(starts, x) - 1
    return i >= 0 and merged[i][0] <= x < merged[i][1]


def _step_bounds(steps: list[_HostStep]) -> list[tuple[str, float, float]]:
    """(number, start, end) per kept step: METRICS.md "Steps" rules 3-4 on the laid-out steps."""
    bounds = []
    prev_end = steps[0].t0
    for s in steps:
        start = max(prev_end, s.t0)
        end = max(s.t1, s.dev_end if s.dev_end is not None else s.t1)
        bounds.append((s.name.split("#", 1)[1], start, end))
        prev_end = end
    kept = list(range(len(steps)))
    if any(s.dev_count for s in steps):
        while kept and steps[kept[-1]].dev_count == 0:
            kept.pop()
        if len(kept) >= 2 and steps[kept[-1]].dev_count < 0.8 * steps[kept[-2]].dev_count:
            kept.pop()
    return [bounds[i] for i in kept]


def _claim(plan: list[_Planned], lo: float, hi: float) -> dict[str, float]:
    """Priority claim inside [lo, hi): µs per CATEGORY_KEY, Other = the unclaimed rest."""
    merged = {t: _merge([(p.t0, p.t1) for p in plan if p.tag == t]) for t in _TAGS}
    starts = {t: [a for a, _ in m] for t, m in merged.items()}
    cuts = {lo, hi}
    for m in merged.values():
        for a, b in m:
            if lo < a < hi:
                cuts.add(a)
            if lo < b < hi:
                cuts.add(b)
    edges = sorted(cuts)
    out = {k: 0.0 for k in CATEGORY_KEYS}
    for a, b in zip(edges, edges[1:]):
        mid = (a + b) / 2
        for t in _TAGS:
            if _covers(merged[t], starts[t], mid):
                out[_TAG_KEY[t]] += b - a
                break
        else:
            out["other_us"] += b - a
    return out


def _gpu_metrics(kernels: list[_KernelPlan], w0: float, w1: float) -> dict[str, float | None]:
    """Utilization, SM efficiency, occupancy and tensor-core share (all %) over [w0, w1]."""
    span = w1 - w0
    clipped = [(max(k.t0, w0), min(k.t1, w1), k) for k in kernels]
    clipped = [(a, b, k) for a, b, k in clipped if b > a]
    busy = sum(b - a for a, b in _merge([(a, b) for a, b, _ in clipped]))
    cuts = sorted({x for a, b, _ in clipped for x in (a, b)})
    sm = 0.0
    for a, b in zip(cuts, cuts[1:]):
        mid = (a + b) / 2
        s = sum(k.blocks_per_sm for ka, kb, k in clipped if ka <= mid < kb and k.blocks_per_sm > 0)
        sm += min(s, 1.0) * (b - a)
    occ_w = [(k.occupancy, b - a) for a, b, k in clipped if k.occupancy >= 0]
    occ_den = sum(d for _, d in occ_w)
    total = sum(k.t1 - k.t0 for k in kernels)
    tc = sum(k.t1 - k.t0 for k in kernels if k.tensor_core)
    return {
        "utilization_pct": 100.0 * busy / span,
        "sm_efficiency_pct": 100.0 * sm / span,
        "achieved_occupancy_pct": (sum(o * d for o, d in occ_w) / occ_den) if occ_den else None,
        "tensor_core_pct": 100.0 * tc / total if total else None,
    }


def _expected_from_layout(L: _Layout) -> dict:
    """Steps, breakdown, average and GPU metrics from a layout (see expected_overview)."""
    bounds = _step_bounds(L.steps)
    first = bounds[0][1]
    steps = []
    for number, a, b in bounds:
        row = {"step": number, "start_us": a - first, "end_us": b - first, "total_us": b - a}
        row.update(_claim(L.plan, a, b))
        steps.append(row)
    keys = ["total_us", *CATEGORY_KEYS]
    average = {k: sum(s[k] for s in steps) / len(steps) for k in keys}
    w0, w1 = bounds[0][1], bounds[-1][2]
    gpus = []
    if L.kernels:
        gpus.append({"id": L.device, **_gpu_metrics(L.kernels, w0, w1)})
    return {
        "steps": steps,
        "average": average,
        "gpus": gpus,
        "configuration": {
            "step_count": len(steps),
            "steps_window_us": w1 - w0,
            "average_step_us": average["total_us"],
            "has_step_markers": True,
            "gpu_count": len(gpus),
            "device_type": "GPU" if gpus else "CPU",
            "distributed": L.distributed,
        },
        "memory": {f"GPU{d}": {"peak_allocated_bytes": v} for d, v in L.peak_allocated.items()},
    }


# --------------------------------------------------------------------------------------------
# The METRICS.md worked example


def worked_example_trace() -> tuple[dict, dict]:
    """The METRICS.md worked example as a tiny hand-written pytorch2 trace, and its answers.

    Step [50, 450] (µs): DataLoader [60, 240]; aten::to [250, 300] with a synchronous
    cudaMemcpyAsync [255, 280] whose HtoD copy runs [260, 270]; aten::add [300, 330] with a
    cudaLaunchKernel [305, 315] whose kernel runs [320, 335]; a bare cudaMemsetAsync [340, 345]
    (no operator) whose memset runs [350, 355]; a gpu_user_annotation copy of the step marker over
    [260, 355], which must not count as CPU work. Breakdown: Kernel 15, Memcpy 10, Memset 5,
    Runtime 30 (15 + 10 + 5), DataLoader 180, CPU Exec 35 (25 + 10), Other 125.
    GPU 0 over the window [50, 450]: utilization 15/400 = 3.75 %, SM efficiency
    0.5 * 15 / 400 = 1.875 %, occupancy 25 %, tensor cores 0 %.
    """
    pid, tid = 1000, 1000

    def x(cat: str, name: str, ts: float, end: float, args: dict, p: int = pid, t: int = tid) -> dict:
        return {"ph": "X", "cat": cat, "name": name, "pid": p, "tid": t, "ts": ts, "dur": end - ts, "args": args}

    gpu = {"device": 0, "context": 1, "stream": 7}
    events = [
        {"name": "process_name", "ph": "M", "ts": 0, "pid": pid, "tid": 0, "args": {"name": "python"}},
        {"name": "process_name", "ph": "M", "ts": 0, "pid": 0, "tid": 0, "args": {"name": "python"}},
        x("user_annotation", "ProfilerStep#1", 50, 450, {"External id": 1}),
        x("user_annotation", _DATALOADER_NAME, 60, 240, {"External id": 2}),
        x("cpu_op", "aten::to", 250, 300, {"External id": 3, "Input Dims": [[32, 3, 8, 8]]}),
        x("cuda_runtime", "cudaMemcpyAsync", 255, 280, {"External id": 3, "cbid": 41, "correlation": 11}),
        x(
            "gpu_memcpy",
            "Memcpy HtoD (Pageable -> Device)",
            260,
            270,
            {"External id": 3, **gpu, "correlation": 11, "bytes": 24576, "memory bandwidth (GB/s)": 2.4576},
            p=0,
            t=7,
        ),
        x("cpu_op", "aten::add", 300, 330, {"External id": 4, "Input Dims": [[64], [64], []]}),
        x("cuda_runtime", "cudaLaunchKernel", 305, 315, {"External id": 4, "cbid": 211, "correlation": 12}),
        x(
            "kernel",
            _ADD_KERNEL,
            320,
            335,
            {
                "External id": 4,
                "queued": 0,
                **gpu,
                "correlation": 12,
                "registers per thread": 20,
                "shared memory": 0,
                "blocks per SM": 0.5,
                "warps per SM": 2.0,
                "grid": [66, 1, 1],
                "block": [128, 1, 1],
                "est. achieved occupancy %": 25,
            },
            p=0,
            t=7,
        ),
        x("cuda_runtime", "cudaMemsetAsync", 340, 345, {"cbid": 51, "correlation": 13}),
        x(
            "gpu_memset",
            "Memset (Device)",
            350,
            355,
            {**gpu, "correlation": 13, "bytes": 4096, "memory bandwidth (GB/s)": 0.8192},
            p=0,
            t=7,
        ),
        x("gpu_user_annotation", "ProfilerStep#1", 260, 355, {"External id": 1}, p=0, t=7),
        {
            "ph": "i",
            "cat": "cpu_instant_event",
            "s": "t",
            "name": "[memory]",
            "pid": pid,
            "tid": tid,
            "ts": 252,
            "args": {
                "Total Reserved": 2097152,
                "Total Allocated": 24576,
                "Bytes": 24576,
                "Addr": 139900000000000,
                "Device Id": 0,
                "Device Type": 1,
            },
        },
    ]
    for corr, ts, dev_ts in ((11, 255, 260), (12, 305, 320), (13, 340, 350)):
        events.append({"ph": "s", "id": corr, "pid": pid, "tid": tid, "ts": ts, "cat": "ac2g", "name": "ac2g"})
        events.append(
            {"ph": "f", "id": corr, "pid": 0, "tid": 7, "ts": dev_ts, "cat": "ac2g", "name": "ac2g", "bp": "e"}
        )
    trace = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, **_H100}],
        "traceEvents": events,
        "traceName": "worked_example.pt.trace.json",
        "displayTimeUnit": "ms",
    }
    row = {
        "step": "1",
        "start_us": 0.0,
        "end_us": 400.0,
        "total_us": 400.0,
        "kernel_us": 15.0,
        "memcpy_us": 10.0,
        "memset_us": 5.0,
        "communication_us": 0.0,
        "runtime_us": 30.0,
        "dataloader_us": 180.0,
        "cpu_exec_us": 35.0,
        "other_us": 125.0,
    }
    expected = {
        "steps": [row],
        "average": {k: v for k, v in row.items() if k not in ("step", "start_us", "end_us")},
        "gpus": [
            {
                "id": 0,
                "utilization_pct": 3.75,
                "sm_efficiency_pct": 1.875,
                "achieved_occupancy_pct": 25.0,
                "tensor_core_pct": 0.0,
            }
        ],
        "configuration": {
            "step_count": 1,
            "steps_window_us": 400.0,
            "average_step_us": 400.0,
            "has_step_markers": True,
            "gpu_count": 1,
            "device_type": "GPU",
            "distributed": None,
        },
        "memory": {"GPU0": {"peak_allocated_bytes": 24576}},
    }
    return trace, expected


if __name__ == "__main__":  # pragma: no cover - manual smoke run
    import pprint

    s = SynthSpec()
    pprint.pprint(expected_overview(s))
