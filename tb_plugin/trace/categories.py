"""Event kinds: the one place that maps Kineto/PyTorch category spellings to normalized kinds.

Kineto 2021 traces say ``Operator``/``Runtime``/``Kernel``/``Memcpy``/``Memset``; PyTorch 2.x says
``cpu_op``/``cuda_runtime``/``kernel``/``gpu_memcpy``/``gpu_memset``; ROCm traces reuse the CUDA names
with HIP calls inside. Everything after ``trace/`` sees only :class:`Kind` values.
"""

from __future__ import annotations

import enum
import re

#: Kineto's category of CUPTI range-profiler ranges (``CUDA_PROFILER_RANGE`` activities).
CUPTI_RANGE_CATEGORY = "cuda_profiler_range"


class Kind(enum.IntEnum):
    """Normalized kind of a duration event (stored as ``uint8``)."""

    UNKNOWN_HOST = 0  # missing or unrecognized category (generic Chrome traces: Composer, Lightning)
    CPU_OP = 1  # Operator / cpu_op
    USER_ANNOTATION = 2  # record_function ranges (ProfilerStep#N, DataLoader spans in 2.x)
    PYTHON_FUNCTION = 3  # python_function (with_stack)
    RUNTIME = 4  # cuda_runtime / Runtime / *_runtime (hip calls too)
    DRIVER = 5  # cuda_driver: cuLaunchKernel & friends (Triton, torch.compile)
    KERNEL = 6
    MEMCPY = 7
    MEMSET = 8
    GPU_USER_ANNOTATION = 9  # device-side copy of record_function ranges
    IGNORED = 10  # known categories that carry no step-time meaning (Trace span, overhead, cuda_sync)


DEVICE_KINDS = (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET)
LAUNCH_KINDS = (Kind.RUNTIME, Kind.DRIVER)
HOST_WORK_KINDS = (Kind.CPU_OP, Kind.USER_ANNOTATION, Kind.PYTHON_FUNCTION, Kind.UNKNOWN_HOST)

_CATEGORY_TO_KIND = {
    "operator": Kind.CPU_OP,
    "cpu_op": Kind.CPU_OP,
    "user_annotation": Kind.USER_ANNOTATION,
    "python_function": Kind.PYTHON_FUNCTION,
    "runtime": Kind.RUNTIME,
    "cuda_runtime": Kind.RUNTIME,
    "cuda_driver": Kind.DRIVER,
    "kernel": Kind.KERNEL,
    "memcpy": Kind.MEMCPY,
    "gpu_memcpy": Kind.MEMCPY,
    "memset": Kind.MEMSET,
    "gpu_memset": Kind.MEMSET,
    "gpu_user_annotation": Kind.GPU_USER_ANNOTATION,
    "trace": Kind.IGNORED,
    "overhead": Kind.IGNORED,
    "cuda_sync": Kind.IGNORED,
    # device work that is not a CUDA kernel record: MTIA's command-processor events. We differ from
    # torch-tb-profiler, which drops them, so such traces read "no GPU activity".
    "mtia_ccp_events": Kind.KERNEL,
    # CUPTI range-profiler ranges: the profiler replays each range of kernels to read hardware counters,
    # so a range's time is the profiler's pass, not how long its kernels ran (every range of a trace
    # can read the same 121.43 ms). Not kernel time; the file says so (trace/finish.py).
    CUPTI_RANGE_CATEGORY: Kind.IGNORED,
    "cpu_instant_event": Kind.IGNORED,
    "python_function_enter": Kind.IGNORED,
}


def kind_of_category(cat: str | None) -> tuple[Kind, bool]:
    """Return ``(kind, known)`` for a raw ``cat`` string; ``known`` is False for unrecognized ones.

    ``xpu_runtime``, ``mtia_runtime``, ``privateuse1_runtime``… are Runtime; ``*_driver`` is Driver.
    """
    if not cat:
        return Kind.UNKNOWN_HOST, False
    key = cat.lower()
    kind = _CATEGORY_TO_KIND.get(key)
    if kind is not None:
        return kind, True
    if key.endswith("_runtime"):
        return Kind.RUNTIME, True
    if key.endswith("_driver"):
        return Kind.DRIVER, True
    return Kind.UNKNOWN_HOST, False


PROFILER_STEP_PREFIX = "ProfilerStep#"
DATALOADER_PREFIXES = ("enumerate(DataLoader)", "enumerate(DataPipe)", "dataloader/", "event/dataloader")
COMPOSER_BATCH = "event/batch"  # Composer's engine event around one training batch
COMPOSER_EVENT_PREFIX = "event/"
# Composer's trainer writes its own spans: engine events "event/<name>" (category ""), callback spans
# "callback/<Callback>/event/<name>" (category "<event>,<Callback>") and "dataloader/<split>" (category
# "dataloader"). They are Composer's, not unknown content: counted in a file's notes, not its warnings.
COMPOSER_TRAINER_PREFIXES = (COMPOSER_EVENT_PREFIX, "callback/", "dataloader/")


def is_composer_trainer_event(name: str) -> bool:
    """Whether an event name is one of Composer's trainer spans (engine, callback or dataloader)."""
    return name.startswith(COMPOSER_TRAINER_PREFIXES)


# Communication ops (host side), by name: one definition for the step breakdown's Communication
# category and the Distributed view's search for the op around a communication kernel.
COMM_OP_PREFIXES = ("nccl:", "gloo:", "mpi:", "ucc:", "c10d::", "c10d_functional::", "_c10d_functional::")
COMM_OP_NAMES = frozenset({"record_param_comms"})


def is_comm_op_name(name: str) -> bool:
    """Whether an operator name is a communication op: a ``COMM_OP_PREFIXES`` backend/namespace prefix
    (``nccl:all_reduce``, ``c10d::allreduce_``, ``_c10d_functional::all_gather_into_tensor``) or one of
    ``COMM_OP_NAMES`` (``record_param_comms``)."""
    return name.startswith(COMM_OP_PREFIXES) or name in COMM_OP_NAMES


# Communication kernels, by name (one definition: the breakdown's Communication category, the
# Distributed view and the insights all call :func:`is_comm_kernel_name`).
COMM_KERNEL_MARKERS = (
    "nccl",  # NCCL: ncclKernel_* (≤ 2.18), ncclDevKernel_* (2.19+), and names carrying ncclDevComm*
    "rccl",  # RCCL (ROCm)
    "msccl",  # MSCCL / MSCCL++ kernels (mscclKernel_*)
    "nvshmem",  # NVSHMEM device kernels (nvshmemi_*, nvshmemx_*): DeepEP, symmetric-memory libraries
    "rocshmem",  # the ROCm twin of NVSHMEM
    "cross_device_reduce",  # vLLM / SGLang custom all-reduce (cross_device_reduce_1stage<bf16, 8>)
)
# Custom collective kernels named after the collective: multimem_all_reduce (PyTorch symmetric
# memory), one_shot_all_reduce, TensorRT-LLM's twoShotAllReduceKernel, *_all_gather_*, *reduce_scatter*…
# The collective word must start a word: after a non-letter (``_all_reduce``, ``::allgather``) or at a
# camel-case boundary (``twoShotAllReduce``), so ``smallReduceKernel`` is not a collective.
_COLLECTIVE_WORD = re.compile(r"(?<![a-z])(?:all_?reduce|all_?gather|reduce_?scatter|all_?to_?all)", re.IGNORECASE)
_COLLECTIVE_CAMEL = re.compile(r"(?:All_?[Rr]educe|All_?[Gg]ather|Reduce_?[Ss]catter|All_?[Tt]o_?[Aa]ll)")
# Inductor-generated kernels list the ATen ops they fuse (triton_poi_fused_all_gather_into_tensor_copy_0
# copies into a collective's buffer): never communication by name. Kernels launched by a
# communication op still are (see analysis.breakdown.category_masks).
_NEVER_COMM_PREFIXES = ("triton_", "triton__")
# Expert-parallel (MoE) dispatch/combine kernels: DeepEP's ``deep_ep::intranode::dispatch<…>``,
# ``deep_ep::internode::combine<…>``, ``deep_ep::internode_ll::dispatch<…>`` (and their notify_/cached_
# helpers), the ``dpsk::ep::internode::dispatch`` spelling of its forks, and bare ``intranode::``/
# ``internode::`` namespaces of the same kernels. They move tokens between GPUs (NVLink, or RDMA through
# NVSHMEM) and wait for their peers like any collective, so they are communication.
_EXPERT_PARALLEL = re.compile(r"(?<![A-Za-z0-9_])(?:deep_ep::|dpsk::ep::|(?:intranode|internode(?:_ll)?)::)")


def is_comm_kernel_name(name: str) -> bool:
    """Whether a kernel name is a communication kernel (see ``COMM_KERNEL_MARKERS``, the custom
    collective-kernel rule and the expert-parallel rule above). ``at::native::reduce_kernel`` and ``cub::DeviceReduceKernel`` are not."""
    if name.startswith(_NEVER_COMM_PREFIXES):
        return False
    lower = name.lower()
    if any(marker in lower for marker in COMM_KERNEL_MARKERS):
        return True
    return (
        _COLLECTIVE_WORD.search(name) is not None
        or _COLLECTIVE_CAMEL.search(name) is not None
        or _EXPERT_PARALLEL.search(name) is not None
    )
