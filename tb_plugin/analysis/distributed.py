"""Distributed view: the ranks of one job compared span by span (µs, bytes).

- **Rank** of a file: ``distributedInfo.rank`` when present; else the number after ``rank`` in the
  worker name (``rank-3``, ``rank_3``, ``rank3``); else its position among the sorted workers.
- **Communication kernels** are kernels whose name says NCCL, RCCL, Gloo or HCCL, or whose launching
  operator is a communication op. The collective of a kernel is its ``Collective name`` arg, else that
  of its launching op (``record_param_comms``), else parsed from the op (``nccl:all_reduce``) or the
  kernel name (``ncclKernel_AllReduce_…``).
- **Per step**: computation = union of non-communication kernels, communication = union of
  communication kernels; overlap = their intersection; the four parts are computation only, overlap,
  communication only, and other (the rest of the step).
- **Matching**: the k-th communication kernel of a (collective, process group) on every rank is one
  collective instance. Its **transfer** time is the minimum duration across ranks; each rank's
  **sync** (waiting) time is its duration minus the transfer time, so transfer + sync = latency.
- **Bytes** of an instance: ``In msg nelems`` × dtype size, else ∏ ``Input Dims`` × input type size
  of the launching op. **Algorithm bandwidth** = bytes ÷ transfer time; **bus bandwidth** =
  algbw × factor(n), n = group size: all-reduce 2(n−1)/n; all-gather, reduce-scatter and all-to-all
  (n−1)/n; broadcast, reduce, send/recv 1.
- **Stragglers**: a rank whose average step time exceeds the median across ranks by more than 10 %,
  and the rank everyone waits for: the one with the least sync time, when it is under half the median
  sync of the ranks and the median sync is over 5 % of the median communication time.
"""

from __future__ import annotations

import ast
import re

import numpy as np

from ..trace.categories import Kind
from ..trace.links import _cached, launch_of
from ..trace.model import Trace
from .breakdown import category_masks
from .intervals import merge
from .op_tree import op_tree
from .steps import compute_steps

STRAGGLER_STEP_RATIO = 1.10
_RANK_IN_NAME = re.compile(r"rank[-_]?(\d+)", re.IGNORECASE)
DTYPE_BYTES = {"float": 4, "float32": 4, "double": 8, "float64": 8, "half": 2, "float16": 2, "bfloat16": 2,
               "c10::half": 2, "c10::bfloat16": 2, "long": 8, "long int": 8, "int64": 8, "int": 4, "int32": 4,
               "short": 2, "int16": 2, "char": 1, "signed char": 1, "unsigned char": 1, "uint8": 1, "byte": 1,
               "bool": 1, "int8": 1, "float8_e4m3fn": 1, "float8_e5m2": 1}
_COLLECTIVES = (("allreduce", ("allreduce", "all_reduce")), ("allgather", ("allgather", "all_gather")),
                ("reducescatter", ("reducescatter", "reduce_scatter")), ("alltoall", ("alltoall", "all_to_all")),
                ("broadcast", ("broadcast",)), ("reduce", ("reduce",)), ("sendrecv", ("sendrecv", "send", "recv")),
                ("barrier", ("barrier",)))
BUS_FACTOR = {"allreduce": lambda n: 2 * (n - 1) / n, "allgather": lambda n: (n - 1) / n,
              "reducescatter": lambda n: (n - 1) / n, "alltoall": lambda n: (n - 1) / n}
COMM_KERNEL_WORDS = ("nccl", "rccl", "gloo", "hccl")


def rank_of(trace: Trace, worker: str, position: int) -> tuple[int, str]:
    return rank_of_info(trace.distributed, worker, position)


def rank_of_info(info: dict | None, worker: str, position: int) -> tuple[int, str]:
    """``(rank, where it came from)`` given a file's ``distributedInfo`` (see the module docstring)."""
    info = info or {}
    if isinstance(info.get("rank"), int):
        return info["rank"], "distributedInfo"
    m = _RANK_IN_NAME.search(worker)
    if m:
        return int(m.group(1)), "file name"
    return position, "position"


def normalize_collective(text: str | None) -> str | None:
    if not text:
        return None
    low = text.lower().replace("ncclkernel_", "").replace("nccldevkernel_", "")
    for name, words in _COLLECTIVES:
        if any(w in low for w in words):
            return name
    return None


def comm_kernels(trace: Trace) -> dict:
    """Communication kernels in time order with their collective, process group, group size, bytes."""
    def build():
        ev = trace.events
        masks = category_masks(trace)
        rows = np.flatnonzero(masks["communication"] & (ev.kind == Kind.KERNEL))
        rows = rows[np.argsort(ev.ts[rows], kind="stable")]
        launcher = launch_of(trace)
        parent = op_tree(trace).op_parent
        out = {"rows": rows, "collective": [], "group": [], "group_size": [], "bytes": []}
        for r in rows.tolist():
            op = _comm_op(trace, int(launcher[r]), parent)
            coll = (trace.string(int(ev.collective[r])) or (trace.string(int(ev.collective[op])) if op >= 0 else None))
            name = normalize_collective(coll) or normalize_collective(
                trace.strings[ev.name[op]] if op >= 0 else None) or normalize_collective(trace.strings[ev.name[r]])
            group = trace.string(int(ev.process_group[r])) or (trace.string(int(ev.process_group[op])) if op >= 0 else None)
            size = int(ev.group_size[r]) if ev.group_size[r] > 0 else (int(ev.group_size[op]) if op >= 0 and ev.group_size[op] > 0 else None)
            out["collective"].append(name or "other")
            out["group"].append(group or "default")
            out["group_size"].append(size)
            out["bytes"].append(_message_bytes(trace, r, op))
        return out

    return _cached(trace, "comm_kernels", build)


def _comm_op(trace: Trace, launch: int, parent: np.ndarray) -> int:
    """The communication op around a launch: the innermost ancestor with comm args or an nccl:/gloo: name."""
    ev = trace.events
    node = int(parent[launch]) if launch >= 0 else -1
    first = node
    for _ in range(16):
        if node < 0:
            break
        name = trace.strings[ev.name[node]]
        if ev.collective[node] > 0 or ev.in_msg_nelems[node] >= 0 or name.startswith(("nccl:", "gloo:", "c10d::")):
            return node
        node = int(parent[node])
    return first


def _message_bytes(trace: Trace, kernel: int, op: int) -> int | None:
    ev = trace.events
    for row in (kernel, op):
        if row >= 0 and ev.in_msg_nelems[row] >= 0:
            size = DTYPE_BYTES.get((trace.string(int(ev.dtype[row])) or "float").lower(), 4)
            return int(ev.in_msg_nelems[row]) * size
    if op >= 0 and ev.input_dims[op] > 0:
        try:
            dims = ast.literal_eval(trace.strings[ev.input_dims[op]])
            types = ast.literal_eval(trace.strings[ev.input_types[op]]) if ev.input_types[op] > 0 else []
        except (ValueError, SyntaxError):
            return None
        total = 0
        for i, shape in enumerate(dims):
            if isinstance(shape, list) and shape and all(isinstance(x, int) for x in shape):
                kind = str(types[i]).lower() if i < len(types) else "float"
                total += int(np.prod(shape)) * DTYPE_BYTES.get(kind, 4)
        return total or None
    return None


def step_overlap(trace: Trace) -> list[dict]:
    """Per step: computation only, overlap, communication only and other (µs)."""
    ev = trace.events
    steps = compute_steps(trace)
    masks = category_masks(trace)
    comp = masks["kernel"]
    comm = masks["communication"] & (ev.kind == Kind.KERNEL)
    out = []
    for name, lo, hi in zip(steps.names, steps.start, steps.end):
        cs, ce = merge(np.clip(ev.ts[comp], lo, hi), np.clip(ev.ts[comp] + ev.dur[comp], lo, hi))
        ms, me = merge(np.clip(ev.ts[comm], lo, hi), np.clip(ev.ts[comm] + ev.dur[comm], lo, hi))
        comp_len, comm_len = float(np.sum(ce - cs)), float(np.sum(me - ms))
        us, ue = merge(np.concatenate([cs, ms]), np.concatenate([ce, me]))
        union = float(np.sum(ue - us))
        overlap = comp_len + comm_len - union
        out.append({"step": name, "computation_us": comp_len - overlap, "overlap_us": overlap,
                    "communication_us": comm_len - overlap, "other_us": float(hi - lo) - union,
                    "total_us": float(hi - lo)})
    return out


def rank_reduce(trace: Trace) -> dict:
    """The per-rank half of :func:`distributed_view`: everything it needs of one trace, as a small
    picklable dict (no event columns): ``distributed_info`` (the integer ``rank`` and ``world_size``
    of ``distributedInfo``), ``comm`` (per communication kernel in time order: collective, process
    group, group size or None, message bytes or None, duration µs) and ``steps`` (:func:`step_overlap`)."""
    info = trace.distributed or {}
    kernels = comm_kernels(trace)
    dur = trace.events.dur
    return {
        "distributed_info": {k: info[k] for k in ("rank", "world_size") if isinstance(info.get(k), int)},
        "comm": {"collective": list(kernels["collective"]), "group": list(kernels["group"]),
                 "group_size": list(kernels["group_size"]), "bytes": list(kernels["bytes"]),
                 "dur": [float(dur[r]) for r in kernels["rows"].tolist()]},
        "steps": step_overlap(trace),
    }


def distributed_view(ranks: list[tuple[int, str, Trace]]) -> dict:
    """Compare ranks of one job (``(rank, worker, trace)`` each, one span)."""
    return combine_ranks([(rank, worker, rank_reduce(tr)) for rank, worker, tr in ranks])


def combine_ranks(ranks: list[tuple[int, str, dict]]) -> dict:
    """The cross-rank half of :func:`distributed_view`: ``(rank, worker, rank_reduce(trace))`` each."""
    ranks = sorted(ranks, key=lambda r: r[0])
    world = None
    for _, _, agg in ranks:
        if isinstance(agg["distributed_info"].get("world_size"), int):
            world = agg["distributed_info"]["world_size"]
    world = world or len(ranks)
    kernels = {rank: agg["comm"] for rank, _, agg in ranks}
    # instances: (collective, group, k) → per rank row index in its comm list
    instances: dict[tuple, dict[int, int]] = {}
    for rank, data in kernels.items():
        seen: dict[tuple, int] = {}
        for i, key in enumerate(zip(data["collective"], data["group"])):
            k = seen.get(key, 0)
            seen[key] = k + 1
            instances.setdefault((*key, k), {})[rank] = i
    n_ranks = len(ranks)
    matched = {key: per for key, per in instances.items() if len(per) == n_ranks}
    transfer = {rank: 0.0 for rank, _, _ in ranks}
    sync = {rank: 0.0 for rank, _, _ in ranks}
    latency = {rank: 0.0 for rank, _, _ in ranks}
    by_type: dict[str, dict] = {}
    per_rank_type: dict[int, dict[str, dict]] = {rank: {} for rank, _, _ in ranks}
    for (coll, group, _), per in matched.items():
        durs = {r: kernels[r]["dur"][i] for r, i in per.items()}
        t = min(durs.values())
        any_rank = next(iter(per))
        nbytes = kernels[any_rank]["bytes"][per[any_rank]]
        gsize = kernels[any_rank]["group_size"][per[any_rank]] or n_ranks
        for r, d in durs.items():
            transfer[r] += t
            sync[r] += d - t
            latency[r] += d
            row = per_rank_type[r].setdefault(coll, {"name": coll, "calls": 0, "total_bytes": 0, "latency_us": 0.0,
                                                     "transfer_us": 0.0, "sync_us": 0.0})
            row["calls"] += 1
            row["total_bytes"] += kernels[r]["bytes"][per[r]] or 0
            row["latency_us"] += d
            row["transfer_us"] += t
            row["sync_us"] += d - t
        entry = by_type.setdefault(coll, {"name": coll, "calls": 0, "bytes": 0, "transfer_us": 0.0, "sync_us": 0.0,
                                          "group_size": gsize, "_bw_bytes": 0, "_bw_time": 0.0})
        entry["calls"] += 1
        entry["bytes"] += nbytes or 0
        entry["transfer_us"] += t
        entry["sync_us"] += sum(d - t for d in durs.values()) / len(durs)
        if nbytes and t > 0:
            entry["_bw_bytes"] += nbytes
            entry["_bw_time"] += t
    collectives = []
    for entry in sorted(by_type.values(), key=lambda e: -e["transfer_us"]):
        algbw = entry["_bw_bytes"] / (entry["_bw_time"] * 1e3) if entry["_bw_time"] > 0 else None
        factor = BUS_FACTOR.get(entry["name"], lambda n: 1.0)(max(entry["group_size"], 1))
        collectives.append({k: v for k, v in entry.items() if not k.startswith("_") and k != "group_size"}
                           | {"group_size": entry["group_size"], "algbw_gbps": algbw,
                              "busbw_gbps": algbw * factor if algbw is not None else None})
    rank_rows = []
    for rank, worker, agg in ranks:
        steps = agg["steps"]
        k = len(steps) or 1
        mean = {key: sum(s[key] for s in steps) / k for key in ("computation_us", "overlap_us", "communication_us",
                                                                "other_us", "total_us")}
        ops = [dict(row, mean_bytes=row["total_bytes"] / row["calls"]) for row in per_rank_type[rank].values()]
        rank_rows.append({"rank": rank, "worker": worker, **mean, "transfer_us": transfer[rank], "sync_us": sync[rank],
                          "latency_us": latency[rank], "steps": steps, "comm_ops": ops})
    return {"world_size": world, "ranks_present": n_ranks, "ranks": rank_rows, "collectives": collectives,
            "instances": {"matched": len(matched), "total": len(instances)},
            "stragglers": stragglers(rank_rows)}


def stragglers(rank_rows: list[dict]) -> list[int]:
    """See the module docstring for the rule."""
    if len(rank_rows) < 2:
        return []
    out = set()
    steps = np.array([r["total_us"] for r in rank_rows])
    median = float(np.median(steps))
    for r, t in zip(rank_rows, steps):
        if median > 0 and t > STRAGGLER_STEP_RATIO * median:
            out.add(r["rank"])
    syncs = np.array([r["sync_us"] for r in rank_rows])
    comm = np.array([r["latency_us"] for r in rank_rows])
    least = int(np.argmin(syncs))
    others = np.delete(syncs, least)
    if np.median(comm) > 0 and np.median(syncs) > 0.05 * np.median(comm) and syncs[least] < 0.5 * np.median(others):
        out.add(rank_rows[least]["rank"])
    return sorted(out)
