"""Synthetic multi-rank traces with known communication answers.

One rank's trace (:func:`rank_doc`) is a ``ProfilerStep#1`` annotation and, per :class:`Coll`, a
``record_param_comms`` host op, its ``cudaLaunchKernel`` and an NCCL kernel (the PyTorch 2.x layout:
the comm args ``Collective name``, ``dtype``, ``In msg nelems``, ``Out msg nelems``, ``Group size``,
``Process Group Name`` and, when given, ``Seq`` sit on the host op and on the kernel).

**Time.** A collective instance is written in true time: rank ``r``'s kernel starts at its arrival
``arrive_us[r]`` and every rank's kernel ends at the same ``end_us`` (NCCL kernels of one instance
finish together), so rank ``r``'s kernel lasts ``end_us − arrive_us[r]``; the last to arrive has the
shortest kernel. Rank ``r``'s clock reads true time + ``clock_offset_us``: all its timestamps carry it.
"""

from __future__ import annotations

import dataclasses
import json

from tb_plugin.trace.decode import decode_trace
from tb_plugin.trace.model import Trace

from .events import complete

DTYPE_BYTES = {"Float": 4, "BFloat16": 2, "Half": 2, "Long": 8, "Int": 4}


@dataclasses.dataclass
class Coll:
    """One collective call as seen by one rank (true time, µs; sizes in elements)."""

    name: str  # "allreduce", "allgather", "reduce_scatter", "all_to_all", "broadcast"
    arrive_us: float  # this rank's kernel start
    end_us: float  # the common end of the instance
    nelems: int = 1024  # In msg nelems
    out_nelems: int | None = None  # Out msg nelems (default: nelems)
    dtype: str = "Float"
    group: str | None = "0"  # Process Group Name (None: no arg)
    group_size: int | None = None  # Group size (None: no arg)
    group_ranks: str | None = None  # Process Group Ranks, e.g. "[0, 1]" (None: no arg)
    seq: int | None = None  # Seq (None: no arg)
    group_desc: str | None = None  # Process Group Description, e.g. "mesh_tp" (None: no arg)
    kernel: str | None = None  # kernel name (default: ncclDevKernel_<Name>_Sum_f32_RING_LL)


_KERNEL_NAMES = {
    "allreduce": "AllReduce",
    "allgather": "AllGather",
    "reduce_scatter": "ReduceScatter",
    "all_to_all": "SendRecv",
    "broadcast": "Broadcast",
}


def rank_doc(
    rank: int,
    colls: list[Coll],
    world_size: int | None = None,
    clock_offset_us: float = 0.0,
    compute: list[tuple[str, float, float]] = (),
    step: tuple[float, float] | None = None,
) -> dict:
    """The trace document of one rank: ``colls`` in order, ``compute`` kernels ``(name, start, dur)``
    (true time), and a ``ProfilerStep#1`` over ``step`` (default: from 0 to the last kernel's end)."""
    off = clock_offset_us
    events = []
    corr = 0

    def x(name, cat, ts, dur, **args):
        events.append(complete(name, cat, ts + off, dur, **args))

    last = 0.0
    for name, start, dur in compute:
        corr += 1
        x("aten::mm", "cpu_op", start - 3, 1)
        x("cudaLaunchKernel", "cuda_runtime", start - 2.5, 0.5, correlation=corr)
        x(name, "kernel", start, dur, correlation=corr, device=0, stream=7)
        last = max(last, start + dur)
    for c in colls:
        corr += 1
        args = {
            "Collective name": c.name,
            "dtype": c.dtype,
            "In msg nelems": c.nelems,
            "Out msg nelems": c.out_nelems if c.out_nelems is not None else c.nelems,
        }
        if c.group is not None:
            args["Process Group Name"] = c.group
        if c.group_size is not None:
            args["Group size"] = c.group_size
        if c.group_ranks is not None:
            args["Process Group Ranks"] = c.group_ranks
        if c.seq is not None:
            args["Seq"] = c.seq
        if c.group_desc is not None:
            args["Process Group Description"] = c.group_desc
        host = c.arrive_us - 5
        x("record_param_comms", "cpu_op", host, 2, **args)
        x("cudaLaunchKernel", "cuda_runtime", host + 0.5, 1, correlation=corr)
        kname = c.kernel or f"ncclDevKernel_{_KERNEL_NAMES.get(c.name, 'AllReduce')}_Sum_f32_RING_LL"
        x(kname, "kernel", c.arrive_us, c.end_us - c.arrive_us, correlation=corr, device=0, stream=7, **args)
        last = max(last, c.end_us)
    lo, hi = step if step is not None else (-10.0, last + 1)
    x("ProfilerStep#1", "user_annotation", lo, hi - lo)
    doc = {"schemaVersion": 1, "traceEvents": events}
    info = {"backend": "nccl", "rank": rank}
    if world_size is not None:
        info["world_size"] = world_size
    doc["distributedInfo"] = info
    return doc


def rank_trace(*args, **kwargs) -> Trace:
    """:func:`rank_doc` decoded."""
    return decode_trace(json.dumps(rank_doc(*args, **kwargs)).encode())


def job(
    per_rank: dict[int, list[Coll]],
    world_size: int | None = None,
    offsets: dict[int, float] | None = None,
    steps: dict[int, tuple[float, float]] | None = None,
) -> list[tuple[int, str, Trace]]:
    """``(rank, worker, trace)`` per rank, ready for ``distributed_view``."""
    offsets = offsets or {}
    steps = steps or {}
    return [
        (r, f"rank{r}", rank_trace(r, colls, world_size, offsets.get(r, 0.0), step=steps.get(r)))
        for r, colls in sorted(per_rank.items())
    ]


def late_rank_job(
    n_ranks: int = 4,
    late: int = 2,
    instances: int = 10,
    late_at: int = 9,
    wait_us: float = 300.0,
    transfer_us: float = 50.0,
    offsets: dict[int, float] | None = None,
):
    """``n_ranks`` ranks, ``instances`` all-reduces of 4 KiB (group size ``n_ranks``). At the first
    ``late_at`` instances rank ``late`` arrives ``wait_us`` after the others (who arrive together);
    at the rest, rank 0 arrives ``wait_us / 10`` late. Every instance ends ``transfer_us`` after its last
    arrival. Steps all end at the last end; rank ``late``'s step begins half-way and rank 0's 40 %
    of the way (they started late), the others' at the first instance, so the ranks that only WAITED
    have the longest steps (the old "step > 1.1× median" rule flagged them). Returns ``(job, expected)``."""
    per_rank: dict[int, list[Coll]] = {r: [] for r in range(n_ranks)}
    t = 0.0
    for i in range(instances):
        slow, delay = (late, wait_us) if i < late_at else (0, wait_us / 10)
        end = t + delay + transfer_us
        for r in range(n_ranks):
            arrive = t + (delay if r == slow else 0.0)
            per_rank[r].append(Coll("allreduce", arrive, end, nelems=1024, group_size=n_ranks))
        t = end + 100.0
    steps = {r: (-1.0, t) for r in range(n_ranks)}
    steps[late] = (0.5 * t, t)
    if late != 0:
        steps[0] = (0.4 * t, t)
    expected = {"late": late, "last_at": late_at, "instances": instances, "wait_us": wait_us}
    return job(per_rank, world_size=n_ranks, offsets=offsets, steps=steps), expected


def fsdp_tp_docs(named: bool = True) -> list[dict]:
    """The trace documents of :func:`fsdp_tp_job`, rank 0 to 3."""
    compute = [("sm80_xmma_gemm", 40.0, 60.0), ("sm80_xmma_gemm", 190.0, 20.0), ("elementwise_kernel", 300.0, 100.0)]
    docs = []
    for r in range(4):
        shard, tp = ("1", "[0, 2]") if r % 2 == 0 else ("2", "[1, 3]"), ("3", "[0, 1]") if r < 2 else ("4", "[2, 3]")
        arrive = 200.0 if r % 2 == 0 else 220.0
        colls = []
        for name, t0, nel, out_nel, (group, ranks), desc in (
            ("allgather", 0.0, 1024, 2048, shard, "mesh_dp_shard"),
            ("allreduce", arrive, 1024, 1024, tp, "mesh_tp"),
        ):
            end = 100.0 if name == "allgather" else 260.0
            colls.append(
                Coll(name, t0, end, nelems=nel, out_nelems=out_nel, group=group, group_ranks=ranks, group_desc=desc)
                if named
                else Coll(name, t0, end, nelems=nel, out_nelems=out_nel, group=None)
            )
        docs.append(rank_doc(r, colls, 4, compute=compute))
    return docs


def fsdp_tp_job(named: bool = True):
    """4 ranks on a 2 × 2 mesh: FSDP shard groups ``"1"`` = [0, 2] and ``"2"`` = [1, 3]
    (``mesh_dp_shard``), TP groups ``"3"`` = [0, 1] and ``"4"`` = [2, 3] (``mesh_tp``). Every rank runs
    one all-gather on its shard group over [0, 100) µs (1024 → 2048 floats: 8192 bytes) and one
    all-reduce on its TP group ending at 260 µs, which the group's lower rank enters at 200 and the higher
    at 220 (1024 floats: 4096 bytes); compute kernels at [40, 100), [190, 210) and [300, 400).

    By construction, per rank: all-gather time 100, exposed 40 (60 hidden by compute); all-reduce time
    60 / exposed 50 on the lower rank (10 hidden), 40 / 40 on the higher. Without ``named`` the
    collectives carry no process-group args (the fallback: one group). Returns ``(job, expected)``."""
    out = [(r, f"rank{r}", decode_trace(json.dumps(doc).encode())) for r, doc in enumerate(fsdp_tp_docs(named))]

    def group(role: str, us: tuple[float, float], exposed: tuple[float, float], nbytes: int, low: int, high: int):
        """A group's expected row: its ranks' (time, exposed) µs (the lower rank first) and their means."""
        by_rank = {low: (us[0], exposed[0]), high: (us[1], exposed[1])}
        return {
            "role": role,
            "time_us": sum(us) / 2,
            "exposed_us": sum(exposed) / 2,
            "bytes": nbytes,
            "by_rank": by_rank,
        }

    shard = ("FSDP shard", (100.0, 100.0), (40.0, 40.0), 8192)
    tp = ("TP", (60.0, 40.0), (50.0, 40.0), 4096)
    expected = {
        ("1", (0, 2)): group(*shard, 0, 2),
        ("2", (1, 3)): group(*shard, 1, 3),
        ("3", (0, 1)): group(*tp, 0, 1),
        ("4", (2, 3)): group(*tp, 2, 3),
    }
    return out, expected
