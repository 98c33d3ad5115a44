"""Distributed view: the ranks of one job compared span by span (µs, bytes).

- **Rank** of a file: ``distributedInfo.rank`` when present; else the number after ``rank`` in the
  worker name (``rank-3``, ``rank_3``, ``rank3``); else its position among the sorted workers.
- **Communication kernels**: :func:`trace.categories.is_comm_kernel_name` (NCCL, RCCL, MSCCL,
  NVSHMEM, vLLM's ``cross_device_reduce*``, custom ``*all_reduce*``… kernels), or kernels launched by a
  communication op. The collective of a kernel is its ``Collective name`` arg, else that of its
  launching op (``record_param_comms``), else parsed from the op (``nccl:all_reduce``) or the kernel
  name (``ncclKernel_AllReduce_…``, ``cross_device_reduce`` = all-reduce).
- **Per step**: computation = union of non-communication kernels, communication = union of
  communication kernels; overlap = their intersection; the four parts are computation only, overlap,
  communication only, and other (the rest of the step).
- **Matching** of kernels across ranks into collective instances: :mod:`analysis.collective_matching`
  (by ``Seq`` where the trace has it, else in order with an alignment; dtype and size must agree). An
  instance's **transfer** time is the minimum kernel duration across its ranks; each rank's **sync**
  (waiting) time is its duration minus the transfer time, so transfer + sync = latency.
- **Bytes** of a kernel: :mod:`.comm_bytes` (the whole buffer, as nccl-tests count it); None when
  unknown, and a collective row's ``bytes`` is None when no call's is known (never 0). An all-to-all
  instance's bytes are the mean over its ranks (split sizes may differ). **Algorithm bandwidth** =
  bytes ÷ transfer time (GB/s = bytes/µs ÷ 1000); **bus bandwidth** = algbw × :func:`bus_factor` (collective, n).
- **n**, the communicator's size (:func:`.comm_bytes.communicator_sizes`): the named group's size
  (``Group size``, else the length of ``Process Group Ranks``, else ``pg_config``'s ``pg_size``), else
  whole buffer ÷ shard of an all-gather or reduce-scatter, else ``distributedInfo.world_size``; only
  when none is known, the number of ranks loaded (with a message). With k of n ranks loaded,
  ``bandwidth_caveat`` says that waiting for the absent ranks is inside transfer.
- **Stragglers**: :mod:`analysis.stragglers` (the rank that arrives last at collectives, judged from
  kernel durations, robust to clock offsets).
"""

from __future__ import annotations

import re

import numpy as np

from ..trace.categories import Kind, is_comm_op_name
from ..trace.links import launch_of
from ..trace.model import Trace
from .breakdown import category_masks
from .collective_matching import match_collectives
from .comm_bytes import communicator_sizes, instance_bytes, message
from .critical_path import rank_chains
from .critical_path_combine import critical_paths
from .distributed_records import DistributedView, SingleRankView
from .intervals import covered_in_windows, merge
from .op_tree import op_tree
from .overview import rank_devices
from .process_groups import combine_groups, rank_groups
from .steps import compute_steps
from .stragglers import arrivals

_RANK_IN_NAME = re.compile(r"rank[-_]?(\d+)", re.IGNORECASE)
_COLLECTIVES = (
    ("allreduce", ("allreduce", "all_reduce", "cross_device_reduce")),
    ("allgather", ("allgather", "all_gather")),
    ("reducescatter", ("reducescatter", "reduce_scatter")),
    ("alltoall", ("alltoall", "all_to_all")),
    ("broadcast", ("broadcast",)),
    ("reduce", ("reduce",)),
    ("sendrecv", ("sendrecv", "send", "recv")),
    ("barrier", ("barrier",)),
)


def bus_factor(collective: str, n: int) -> float:
    """Bus bandwidth ÷ algorithm bandwidth for a collective over a communicator of ``n`` ranks (the
    data each rank's link carries relative to the buffer size, as nccl-tests define it):

    - all-reduce: 2(n−1)/n (a reduce-scatter then an all-gather);
    - all-gather, reduce-scatter: (n−1)/n (the buffer is the gathered output / the scattered input);
    - all-to-all: (n−1)/n (each rank keeps 1/n of its buffer);
    - broadcast, reduce, send/recv and anything else: 1.
    """
    n = max(int(n), 1)
    if collective == "allreduce":
        return 2 * (n - 1) / n
    if collective in ("allgather", "reducescatter", "alltoall"):
        return (n - 1) / n
    return 1.0


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


def comm_kernel_rows(trace: Trace) -> np.ndarray:
    """The rows of the communication kernels in time order (:func:`comm_kernels`' ``rows``), without the
    operators they were launched under (no operator tree)."""
    ev = trace.events
    rows = np.flatnonzero(category_masks(trace)["communication"] & (ev.kind == Kind.KERNEL))
    return rows[np.argsort(ev.ts[rows], kind="stable")]


def comm_kernels(trace: Trace) -> dict:
    """Communication kernels in time order with their launching communication op (row, −1 when none),
    collective, process group, group size (None when unknown), dtype (canonical name or None), message bytes (or None) and ``Seq`` (−1 when absent)."""

    def build():
        ev = trace.events
        rows = comm_kernel_rows(trace)
        parent = op_tree(trace).op_parent
        op = _comm_ops(trace, launch_of(trace)[rows], parent)
        outer = _outermost_comm_ops(trace, op, parent)
        has, at = op >= 0, np.maximum(op, 0)
        out_at = np.maximum(outer, 0)
        size = np.where(ev.group_size[rows] > 0, ev.group_size[rows], np.where(has, ev.group_size[at], 0))
        seq = np.where(ev.seq[rows] >= 0, ev.seq[rows], np.where(has, ev.seq[at], -1))
        # the texts depend only on these columns of the kernel and of its op: worked out once per
        # distinct combination (a few per trace), not once per kernel
        key = np.stack(
            [ev.columns[c][rows].astype(np.int64) for c in _KERNEL_KEY]
            + [np.where(has, ev.columns[c][at].astype(np.int64), -1) for c in _OP_KEY]
            + [np.where(outer >= 0, ev.columns[c][out_at].astype(np.int64), -1) for c in _OUTER_KEY]
            + [op >= 0],
            axis=1,
        )
        _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
        texts = [_kernel_texts(trace, int(rows[i]), int(op[i]), int(outer[i])) for i in first.tolist()]
        per_kernel = [texts[g] for g in inverse.reshape(-1).tolist()]
        collective, group, nbytes, dtype, hint = (list(c) for c in zip(*per_kernel)) if per_kernel else ([],) * 5
        return {
            "rows": rows,
            "op": op.tolist(),
            "collective": collective,
            "group": group,
            "group_size": [s if s > 0 else None for s in size.tolist()],
            "bytes": nbytes,
            "dtype": dtype,
            "seq": seq.tolist(),
            "size_from_buffers": hint,
        }

    return trace.memo("comm_kernels", build)


_KERNEL_KEY = ("collective", "name", "process_group", "in_msg_nelems", "out_msg_nelems", "dtype")
_OP_KEY = _KERNEL_KEY + ("input_dims", "input_types")
_OUTER_KEY = ("name", "input_dims", "input_types")
MAX_COMM_OP_LEVELS = 16  # ancestors searched above a communication kernel's launch


def _comm_ops(trace: Trace, launch: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Per launch: the communication op around it, the innermost of its first :data:`MAX_COMM_OP_LEVELS`
    ancestors with comm args or a communication op's name (:func:`trace.categories.is_comm_op_name`, as
    the step breakdown); else its innermost op (−1: none). All launches at once, one pass per level."""
    is_comm = _comm_op_mask(trace)
    node = np.where(launch >= 0, parent[np.maximum(launch, 0)], -1)
    found = node.copy()
    live = np.flatnonzero(node >= 0)
    for _ in range(MAX_COMM_OP_LEVELS):
        hit = is_comm[node[live]]
        found[live[hit]] = node[live[hit]]
        live = live[~hit]
        node[live] = parent[node[live]]
        live = live[node[live] >= 0]
    return found


def _comm_op_mask(trace: Trace) -> np.ndarray:
    """Events that are communication ops: comm args, or a communication op's name (as the breakdown)."""
    ev = trace.events
    return (ev.collective > 0) | (ev.in_msg_nelems >= 0) | trace.name_mask(is_comm_op_name)


def _outermost_comm_ops(trace: Trace, op: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Per communication op (−1: none), the outermost communication op of the chain of them around it
    (``c10d::_allgather_base_`` around ``nccl:_all_gather_base``); itself when its parent is none, or
    when it is no communication op (:func:`_comm_ops`' fallback)."""
    is_comm = _comm_op_mask(trace)
    out = op.copy()
    live = np.flatnonzero(op >= 0)
    live = live[is_comm[op[live]]]  # a kernel under no communication op has no chain
    for _ in range(MAX_COMM_OP_LEVELS):
        up = parent[out[live]]
        ok = up >= 0
        ok[ok] = is_comm[up[ok]]
        out[live[ok]] = up[ok]
        live = live[ok]
        if not len(live):
            break
    return out


def _kernel_texts(trace: Trace, r: int, op: int, outer: int) -> tuple:
    """``(collective, group, bytes, dtype, size_from_buffers)`` of communication kernel ``r`` launched
    under ``op`` inside ``outer`` (:mod:`.comm_bytes`)."""
    ev = trace.events
    coll = trace.string(int(ev.collective[r])) or (trace.string(int(ev.collective[op])) if op >= 0 else None)
    name = (
        normalize_collective(coll)
        or normalize_collective(trace.strings[ev.name[op]] if op >= 0 else None)
        or normalize_collective(trace.strings[ev.name[r]])
    )
    group = trace.string(int(ev.process_group[r])) or (trace.string(int(ev.process_group[op])) if op >= 0 else None)
    return (name or "other", group or "default", *message(trace, r, op, outer, name or "other"))


def step_overlap(trace: Trace) -> list[dict]:
    """Per step: computation only, overlap, communication only and other (µs)."""
    ev = trace.events
    steps = compute_steps(trace)
    masks = category_masks(trace)
    comp = masks["kernel"]
    comm = masks["communication"] & (ev.kind == Kind.KERNEL)
    cs, ce = merge(ev.ts[comp], ev.ts[comp] + ev.dur[comp])
    ms, me = merge(ev.ts[comm], ev.ts[comm] + ev.dur[comm])
    us, ue = merge(np.concatenate([cs, ms]), np.concatenate([ce, me]))
    lo, hi = np.asarray(steps.start, dtype=np.float64), np.asarray(steps.end, dtype=np.float64)
    comp_len = covered_in_windows(cs, ce, lo, hi)  # all steps at once: no pass over the kernels per step
    comm_len = covered_in_windows(ms, me, lo, hi)
    union = covered_in_windows(us, ue, lo, hi)
    overlap = comp_len + comm_len - union
    return [
        {
            "step": name,
            "computation_us": float(c - o),
            "overlap_us": float(o),
            "communication_us": float(m - o),
            "other_us": float(h - l_) - float(u),
            "total_us": float(h - l_),
        }
        for name, c, m, u, o, l_, h in zip(steps.names, comp_len, comm_len, union, overlap, lo, hi)
    ]


def rank_reduce(trace: Trace) -> dict:
    """The per-rank half of :func:`distributed_view`: everything it needs of one trace, as a small
    picklable dict (no event columns): ``distributed_info`` (the integer ``rank`` and ``world_size``
    of ``distributedInfo`` and ``pg_sizes``, process group name → ``pg_size`` from its ``pg_config``),
    ``comm`` (per communication kernel in time order: collective, process group, group size or None,
    dtype or None, message bytes or None, ``Seq`` or −1, duration µs), ``steps`` (:func:`step_overlap`),
    ``groups`` (:func:`analysis.process_groups.rank_groups`) and ``critical_path`` (the per-rank chains
    of :func:`analysis.critical_path.rank_chains`)."""
    # the critical path first: it reads neither the operator tree nor the GPU summary, so a section child
    # (registry/executors/sections.py) walks it while its parent makes those and hands the summary over
    chains = rank_chains(trace, comm_kernel_rows(trace))
    info = trace.distributed or {}
    kernels = comm_kernels(trace)
    dur = trace.events.dur
    dist = {k: info[k] for k in ("rank", "world_size") if isinstance(info.get(k), int)}
    pg_sizes = {}
    configs = info.get("pg_config")
    for pg in configs if isinstance(configs, list) else []:
        if isinstance(pg, dict) and isinstance(pg.get("pg_size"), int) and pg.get("pg_name") is not None:
            pg_sizes[str(pg["pg_name"])] = pg["pg_size"]
    if pg_sizes:
        dist["pg_sizes"] = pg_sizes
    return {
        "distributed_info": dist,
        "devices": rank_devices(trace),
        "comm": {
            "collective": list(kernels["collective"]),
            "group": list(kernels["group"]),
            "group_size": list(kernels["group_size"]),
            "bytes": list(kernels["bytes"]),
            "dtype": list(kernels["dtype"]),
            "seq": list(kernels["seq"]),
            "size_from_buffers": list(kernels["size_from_buffers"]),
            "dur": np.asarray(dur, dtype=np.float64)[kernels["rows"]].tolist(),
        },
        "steps": step_overlap(trace),
        "groups": rank_groups(trace, kernels),
        "critical_path": chains,
    }


_FIELDS = ("dur", "bytes", "group_size", "size_from_buffers")


def _array(comm: dict, field: str) -> np.ndarray:
    """A ``comm`` list as numbers: durations µs (float), bytes and sizes (int, 0 = unknown)."""
    values = comm.get(field) or [None] * len(comm["dur"])
    if field == "dur":
        return np.asarray(values, dtype=np.float64)
    return np.array([v or 0 for v in values], dtype=np.int64)


def distributed_view(ranks: list[tuple[int, str, Trace]]) -> DistributedView:
    """Compare ranks of one job (``(rank, worker, trace)`` each, one span)."""
    return combine_ranks([(rank, worker, rank_reduce(tr)) for rank, worker, tr in ranks])


def combine_ranks(ranks: list[tuple[int, str, dict]]) -> DistributedView:
    """The cross-rank half of :func:`distributed_view`: ``(rank, worker, rank_reduce(trace))`` each.

    Returns ``world_size``, ``ranks_present``, ``ranks`` (per rank: step parts, transfer/sync/latency
    sums µs, ``comm_ops``), ``collectives`` (per collective and communicator size n: calls, bytes,
    transfer/sync µs, algbw/busbw GB/s), ``instances`` (``matched``/``total`` positions),
    ``matching`` (``method``, ``by_type`` [{name, matched, unmatched}], ``messages``), ``arrivals``
    (per rank: :func:`analysis.stragglers.arrivals`), ``stragglers`` (their ranks), ``groups`` and
    ``groups_messages`` (:func:`analysis.process_groups.combine_groups`), ``critical_path``
    (:func:`analysis.critical_path_combine.critical_paths`, per step; [] when a rank lacks chains)."""
    ranks = sorted(ranks, key=lambda r: r[0])
    world = None
    pg_sizes: dict[str, int] = {}
    for _, _, agg in ranks:
        info = agg["distributed_info"]
        if isinstance(info.get("world_size"), int):
            world = info["world_size"]
        pg_sizes.update(info.get("pg_sizes") or {})
    n_ranks = len(ranks)
    kernels = {rank: agg["comm"] for rank, _, agg in ranks}
    matching = match_collectives(kernels)
    # each rank's columns as arrays once, not once per group it is in
    arrays = {rank: {f: _array(comm, f) for f in _FIELDS} for rank, comm in kernels.items()}
    messages = list(matching.messages)
    transfer = {rank: 0.0 for rank, _, _ in ranks}
    sync = {rank: 0.0 for rank, _, _ in ranks}
    latency = {rank: 0.0 for rank, _, _ in ranks}
    by_type: dict[tuple, dict] = {}
    per_rank_type: dict[int, dict[str, dict]] = {rank: {} for rank, _, _ in ranks}
    straggler_input = []
    guessed_n = False
    for gm in matching.groups:
        if len(gm.index) == 0:
            continue
        col = {f: [arrays[r][f][gm.index[:, q]] for q, r in enumerate(gm.ranks)] for f in _FIELDS}
        dur = np.stack(col["dur"], axis=1)
        t = dur.min(axis=1)
        colls = np.asarray(kernels[gm.ranks[0]]["collective"], dtype=object)[gm.index[:, 0]].astype(str)
        nbytes = instance_bytes(colls, np.stack(col["bytes"], axis=1))
        sizes, guessed = communicator_sizes(col, pg_sizes.get(gm.group), world)
        guessed_n |= bool(guessed.any())
        sizes = np.where(sizes > 0, sizes, n_ranks)
        straggler_input.append((gm.ranks, dur, colls.tolist()))
        names, first_at, code = np.unique(colls, return_index=True, return_inverse=True)
        code = code.ravel()
        for q, r in enumerate(gm.ranks):
            transfer[r] += float(t.sum())
            sync[r] += float((dur[:, q] - t).sum())
            latency[r] += float(dur[:, q].sum())
            sums = {
                key: np.bincount(code, weights=w, minlength=len(names))
                for key, w in (
                    ("calls", None),
                    ("total_bytes", col["bytes"][q]),
                    ("_sized", col["bytes"][q] > 0),
                    ("latency_us", dur[:, q]),
                    ("transfer_us", t),
                    ("sync_us", dur[:, q] - t),
                )
            }
            for i in np.argsort(first_at).tolist():  # per collective type, in order of first appearance
                coll = str(names[i])
                row = per_rank_type[r].setdefault(
                    coll,
                    {
                        "name": coll,
                        "calls": 0,
                        "total_bytes": 0,
                        "_sized": 0,
                        "latency_us": 0.0,
                        "transfer_us": 0.0,
                        "sync_us": 0.0,
                    },
                )
                for key, v in sums.items():
                    row[key] += int(v[i]) if key in ("calls", "total_bytes", "_sized") else float(v[i])
        mean_sync = (dur - t[:, None]).mean(axis=1)
        timed = (nbytes > 0) & (t > 0)
        pairs, pair_code = np.unique(np.stack([code, sizes]), axis=1, return_inverse=True)
        pair_code = pair_code.ravel()
        sums = {
            key: np.bincount(pair_code, weights=w, minlength=pairs.shape[1])
            for key, w in (
                ("calls", None),
                ("bytes", nbytes),
                ("_sized", nbytes > 0),
                ("transfer_us", t),
                ("sync_us", mean_sync),
                ("_bw_bytes", np.where(timed, nbytes, 0)),
                ("_bw_time", np.where(timed, t, 0.0)),
            )
        }
        for i in range(pairs.shape[1]):  # per (collective, n)
            coll, size = str(names[pairs[0, i]]), int(pairs[1, i])
            entry = by_type.setdefault(
                (coll, size),
                {
                    "name": coll,
                    "calls": 0,
                    "bytes": 0,
                    "_sized": 0,
                    "transfer_us": 0.0,
                    "sync_us": 0.0,
                    "group_size": size,
                    "_bw_bytes": 0,
                    "_bw_time": 0.0,
                },
            )
            for key, v in sums.items():
                entry[key] += int(v[i]) if key in ("calls", "bytes", "_sized", "_bw_bytes") else float(v[i])
    if guessed_n:
        messages.append(
            f"the communicator size is not in the traces (no Group size, Process Group Ranks or "
            f"world_size): bus bandwidth assumes the {n_ranks} loaded ranks"
        )
    collectives = []
    for entry in sorted(by_type.values(), key=lambda e: -e["transfer_us"]):
        algbw = entry["_bw_bytes"] / (entry["_bw_time"] * 1e3) if entry["_bw_time"] > 0 else None
        factor = bus_factor(entry["name"], entry["group_size"])
        collectives.append(
            {k: v for k, v in entry.items() if not k.startswith("_")}
            | {
                "bytes": entry["bytes"] if entry["_sized"] else None,
                "calls_without_bytes": entry["calls"] - entry["_sized"],
                "algbw_gbps": algbw,
                "busbw_gbps": algbw * factor if algbw is not None else None,
                "bus_factor": factor,
            }
        )
    present = len(ranks)
    largest_n = max((c["group_size"] for c in collectives), default=0)
    caveat = None
    if collectives and largest_n > present:
        caveat = (
            f"{present} of {largest_n} ranks loaded: an instance's transfer time is its shortest kernel "
            f"among the loaded ranks, so waiting for the {largest_n - present} absent ranks is inside "
            f"transfer; algbw and busbw are lower bounds"
        )
    rank_rows = []
    for rank, worker, agg in ranks:
        steps = agg["steps"]
        k = len(steps) or 1
        mean = {
            key: sum(s[key] for s in steps) / k
            for key in ("computation_us", "overlap_us", "communication_us", "other_us", "total_us")
        }
        ops = [
            {k: v for k, v in row.items() if k != "_sized"}
            | {
                "total_bytes": row["total_bytes"] if row["_sized"] else None,
                "mean_bytes": row["total_bytes"] / row["_sized"] if row["_sized"] else None,
            }
            for row in per_rank_type[rank].values()
        ]
        rank_rows.append(
            {
                "rank": rank,
                "worker": worker,
                **mean,
                "transfer_us": transfer[rank],
                "sync_us": sync[rank],
                "latency_us": latency[rank],
                "steps": steps,
                "comm_ops": ops,
                **(agg.get("devices") or {"distributed": None, "gpus": []}),
            }
        )
    evidence = arrivals(straggler_input, [rank for rank, _, _ in ranks])
    groups = combine_groups([(rank, agg["groups"]) for rank, _, agg in ranks if "groups" in agg], world)
    matched = sum(v[0] for v in matching.by_type.values())
    total = matched + sum(v[1] for v in matching.by_type.values())
    return {
        "world_size": world or n_ranks,
        "ranks_present": n_ranks,
        "ranks": rank_rows,
        "collectives": collectives,
        "bandwidth_caveat": caveat,
        "instances": {"matched": matched, "total": total},
        "matching": {
            "method": matching.method,
            "messages": messages,
            "by_type": [{"name": t, "matched": v[0], "unmatched": v[1]} for t, v in sorted(matching.by_type.items())],
        },
        "arrivals": evidence,
        "stragglers": [e["rank"] for e in evidence if e["straggler"]],
        "groups": groups["groups"],
        "groups_messages": groups["messages"],
        "critical_path": critical_paths([(rank, agg["critical_path"]) for rank, _, agg in ranks], matching)
        if all("critical_path" in agg for _, _, agg in ranks)
        else [],
    }


def single_rank_view(rank: int, worker: str, agg: dict) -> SingleRankView:
    """A run with one loaded rank: its own ``groups`` and ``groups_messages``
    (:func:`analysis.process_groups.combine_groups` of that rank) and ``critical_path`` (the walk
    without cross-rank edges; [] without chains), from its :func:`rank_reduce` aggregate ``agg``."""
    found = combine_groups(
        [(rank, agg["groups"])] if "groups" in agg else [], agg["distributed_info"].get("world_size")
    )
    return {
        "rank": rank,
        "worker": worker,
        "groups": found["groups"],
        "groups_messages": found["messages"],
        "critical_path": critical_paths([(rank, agg["critical_path"])]) if "critical_path" in agg else [],
    }


def no_view_code(files: int, loaded: int) -> str | None:
    """Why a run has no distributed view at a span, as a code (None when it has one): ``"no_file"``
    (no file of the run has the span), ``"one_file"`` (one has), ``"ranks_failed"`` (several have but
    fewer than two loaded)."""
    if loaded >= 2:
        return None
    return "no_file" if files == 0 else "one_file" if files == 1 else "ranks_failed"
