"""Process groups: which communicator each collective ran on, and what each group cost (µs, bytes).

- **Group of a collective kernel**: its ``Process Group Name`` arg, else that of its launching
  communication op (``record_param_comms``); else (PyTorch 2.1-2.2) the ``pg_name`` of the
  ``pg_config`` entry whose ``uid`` is its ``Process Group ID`` (the ID as text without one). Its
  **description** (``Process Group Description``, e.g. ``default_pg``, ``mesh_dp_shard``, ``mesh_tp``)
  and **ranks** (``Process Group Ranks``) come the same way, else from ``distributedInfo.pg_config``
  (``pg_desc``, ``ranks``) of the same ``pg_name``.
  Two groups are the same when name and ranks are equal.
- **size**: the kernel's ``Group size``, else the number of ranks, else ``pg_config``'s ``pg_size``.
- **role**: read from the description's words (split at anything not a letter or digit), first rule
  that matches: ``shard`` → FSDP shard; ``replicate`` → FSDP replicate; ``fsdp`` or ``hsdp`` → FSDP;
  ``tp``/``tensor`` → TP; ``pp``/``pipeline`` → PP; ``ep``/``expert``/``moe`` → EP; ``cp``/``context``
  → CP; ``ddp``/``dp``/``data`` → DDP; ``default``/``world`` → world; else none.
- Per group and rank: **calls** (collective kernels), **time_us** (the sum of their durations),
  **bytes** (the sum of their message bytes, :func:`analysis.distributed.comm_kernels`), **exposed_us**
  (the time of the union of the group's kernels not covered by the union of the rank's computation
  kernels, i.e. every non-communication kernel; overlap with another group's kernels hides nothing).
- Across the loaded member ranks of a group: ``time_us``, ``bytes`` and ``exposed_us`` are means per
  rank (``by_rank`` has each; ``bytes`` None when no kernel's is known, a mean over the ranks that know
  it); **bandwidth_gbps** = bytes ÷ time_us ÷ 1000 (GB/s, None without bytes; kernel time includes
  waiting for the other ranks, so this is a lower bound of the algorithm bandwidth).
- **Fallback**: when no collective carries a ``Process Group Name`` or ID and ``pg_config`` is absent,
  all collectives are one group ``default`` over the world (``world_size``, else the loaded ranks),
  with a message; kernels without a group among named ones form group ``default``, with a message.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..trace.categories import Kind
from ..trace.model import Trace
from .intervals import covered_in_windows, merge

FALLBACK_NAME = "default"
_ROLES = (
    ("FSDP shard", ("shard",)),
    ("FSDP replicate", ("replicate",)),
    ("FSDP", ("fsdp", "hsdp")),
    ("TP", ("tp", "tensor")),
    ("PP", ("pp", "pipeline")),
    ("EP", ("ep", "expert", "moe")),
    ("CP", ("cp", "context")),
    ("DDP", ("ddp", "dp", "data")),
    ("world", ("default", "world")),
)


def group_role(description: str | None) -> str | None:
    """The parallelism a group serves, from its description's words (see the module docstring)."""
    if not description:
        return None
    words = set(re.split(r"[^a-z0-9]+", description.lower()))
    for role, keys in _ROLES:
        if words.intersection(keys):
            return role
    return None


def parse_ranks(text) -> list[int] | None:
    """``"[0, 1, 2]"`` (or a list) → ``[0, 1, 2]``; None when absent or not a list of integers."""
    if isinstance(text, list):
        items = text
    elif isinstance(text, str) and text.strip().startswith("[") and text.strip().endswith("]"):
        inner = text.strip()[1:-1].strip()
        items = [x.strip() for x in inner.split(",")] if inner else []
    else:
        return None
    try:
        return [int(x) for x in items] or None
    except (TypeError, ValueError):
        return None


def pack_ranks(ranks: list[int] | None) -> list[list[int]] | None:
    """A rank list as it travels in a per-rank summary: runs ``[first, count, step]`` for 3 or more
    ranks in arithmetic progression, ``[rank]`` otherwise (the world group of a 4096-rank job is one
    run, not 4096 numbers in each of 4096 summaries). :func:`unpack_ranks` gives the list back."""
    if ranks is None:
        return None
    out: list[list[int]] = []
    i, n = 0, len(ranks)
    while i < n:  # once per rank of the group, never per event
        j = i + 1
        if i + 2 < n and ranks[i + 2] - ranks[i + 1] == ranks[i + 1] - ranks[i]:
            step = ranks[i + 1] - ranks[i]
            while j + 1 < n and ranks[j + 1] - ranks[j] == step:
                j += 1
            out.append([ranks[i], j - i + 1, step])
            j += 1
        else:
            out.append([ranks[i]])
        i = j
    return out


def unpack_ranks(runs: list[list[int]] | None) -> list[int] | None:
    """The rank list :func:`pack_ranks` packed."""
    if runs is None:
        return None
    out: list[int] = []
    for run in runs:
        out.extend(
            run if len(run) == 1 else range(run[0], run[0] + run[1] * run[2], run[2]) if run[2] else [run[0]] * run[1]
        )
    return out


def _pg_config(info: dict | None) -> tuple[dict[str, dict], dict[int, str]]:
    """``distributedInfo.pg_config`` by ``pg_name`` (``description``, ``ranks``, ``size``; None where
    absent), and ``uid`` → ``pg_name``."""
    configs = (info or {}).get("pg_config")
    out, by_uid = {}, {}
    for pg in configs if isinstance(configs, list) else []:
        if isinstance(pg, dict) and pg.get("pg_name") is not None:
            ranks = parse_ranks(pg.get("ranks"))
            size = pg.get("pg_size") if isinstance(pg.get("pg_size"), int) else None
            desc = pg.get("pg_desc") if isinstance(pg.get("pg_desc"), str) else None
            out[str(pg["pg_name"])] = {
                "description": desc,
                "ranks": ranks,
                "size": size or (len(ranks) if ranks else None),
            }
            if isinstance(pg.get("uid"), int):
                by_uid[pg["uid"]] = str(pg["pg_name"])
    return out, by_uid


def rank_groups(trace: Trace, kernels: dict) -> dict:
    """The per-rank half: this rank's groups, from ``kernels`` (:func:`analysis.distributed.comm_kernels`).

    Returns ``named`` (whether any group came from the trace's args or ``pg_config``), ``unnamed`` (the
    kernels with no group name or ID) and ``groups``:
    per group ``name``, ``description``, ``ranks`` (packed by :func:`pack_ranks`, or None), ``size`` (or
    None), ``calls``, ``time_us``, ``bytes``, ``exposed_us`` (see the module docstring)."""
    ev = trace.events
    rows = np.asarray(kernels["rows"], dtype=np.int64)
    ops = np.asarray(kernels["op"], dtype=np.int64).reshape(-1)
    config, by_uid = _pg_config(trace.distributed)

    def arg(column: np.ndarray, missing: int = 0) -> np.ndarray:  # the kernel's value, else its op's
        own = column[rows]
        of_op = np.where(ops >= 0, column[np.maximum(ops, 0)], missing) if len(rows) else own
        return np.where(own > missing, own, of_op)

    name_id, desc_id, ranks_id = arg(ev.process_group), arg(ev.process_group_desc), arg(ev.process_group_ranks)
    pg_id = np.where(name_id > 0, -1, arg(ev.process_group_id, -1)).astype(np.int64)  # only where no name
    size_col = np.asarray([s or 0 for s in kernels["group_size"]], dtype=np.int64)
    nbytes = np.asarray([b or 0 for b in kernels["bytes"]], dtype=np.int64)
    start = ev.ts[rows]
    end = start + ev.dur[rows]
    comp = ev.kind == Kind.KERNEL  # computation kernels: breakdown.category_masks' "kernel", without a second pass
    comp[rows] = False
    cs, ce = merge(ev.ts[comp], ev.ts[comp] + ev.dur[comp])
    keys = np.stack([name_id, ranks_id, pg_id]) if len(rows) else np.zeros((3, 0), dtype=np.int64)
    pairs, code = np.unique(keys, axis=1, return_inverse=True)
    code = code.ravel()
    groups: list[dict[str, Any]] = []
    for g in range(pairs.shape[1]):  # per group (a handful), never per event
        mine = code == g
        first = int(np.flatnonzero(mine)[0])
        uid = int(pairs[2, g])
        name = trace.string(int(pairs[0, g])) or (by_uid.get(uid, str(uid)) if uid >= 0 else None)
        conf = config.get(name, {}) if name is not None else {}
        desc = trace.string(int(desc_id[first])) if desc_id[first] > 0 else conf.get("description")
        ranks = parse_ranks(trace.string(int(pairs[1, g]))) or conf.get("ranks")
        known = size_col[mine][size_col[mine] > 0]
        size = int(known[0]) if len(known) else (len(ranks) if ranks else conf.get("size"))
        gs, ge = merge(start[mine], end[mine])
        union = float((ge - gs).sum())
        hidden = float(covered_in_windows(cs, ce, gs, ge).sum())
        groups.append(
            {
                "name": name or FALLBACK_NAME,
                "description": desc or None,
                "ranks": pack_ranks(ranks),
                "size": size,
                "calls": int(mine.sum()),
                "time_us": float(ev.dur[rows][mine].sum()),
                "bytes": int(nbytes[mine].sum()) if (nbytes[mine] > 0).any() else None,
                "exposed_us": union - hidden,
                "_first": first,
            }
        )
    groups.sort(key=lambda g: g.pop("_first"))
    named = bool(config) or bool((name_id > 0).any()) or bool((pg_id >= 0).any())
    return {"named": named, "unnamed": int(((name_id <= 0) & (pg_id < 0)).sum()), "groups": groups}


def combine_groups(ranks: list[tuple[int, dict]], world_size: int | None) -> dict:
    """The cross-rank half: ``(rank, rank_groups(...))`` each → ``groups`` (per group ``name``,
    ``description``, ``role``, ``ranks``, ``size``, ``ranks_loaded``, ``calls``, ``time_us``, ``bytes``,
    ``exposed_us`` (means per loaded member rank), ``bandwidth_gbps`` and ``by_rank`` [{``rank``,
    ``calls``, ``time_us``, ``bytes``, ``exposed_us``}]) and ``messages``. Ordered by time, longest first."""
    loaded = sorted(r for r, _ in ranks)
    merged: dict[tuple, dict] = {}
    for rank, rg in sorted(ranks, key=lambda x: x[0]):
        for g in rg["groups"]:
            key = (g["name"], tuple(map(tuple, g["ranks"])) if g["ranks"] else None)  # packed: one form per list
            row = merged.get(key)
            if row is None:  # unpacked once per group, not once per member rank
                row = merged[key] = {
                    "name": g["name"],
                    "description": g["description"],
                    "ranks": unpack_ranks(g["ranks"]),
                    "size": g["size"],
                    "by_rank": [],
                }
            row["description"] = row["description"] or g["description"]
            row["size"] = row["size"] or g["size"]
            row["by_rank"].append({"rank": rank, **{k: g[k] for k in ("calls", "time_us", "bytes", "exposed_us")}})
    messages = []
    named = any(rg["named"] for _, rg in ranks)
    out = []
    for row in merged.values():
        if not named:
            row["ranks"] = list(range(world_size)) if world_size else loaded
            row["size"] = row["size"] or len(row["ranks"])
        per = row["by_rank"]
        k = len(per)
        time_us = sum(p["time_us"] for p in per) / k
        sized = [p["bytes"] for p in per if p["bytes"] is not None]  # unknown bytes are None, never 0
        nbytes = sum(sized) / len(sized) if sized else None
        out.append(
            row
            | {
                "role": group_role(row["description"]),
                "ranks_loaded": k,
                "calls": round(sum(p["calls"] for p in per) / k),
                "time_us": time_us,
                "bytes": round(nbytes) if nbytes is not None else None,
                "exposed_us": sum(p["exposed_us"] for p in per) / k,
                "bandwidth_gbps": nbytes / (time_us * 1e3) if time_us > 0 and nbytes is not None else None,
            }
        )
    if not named and out:
        messages.append(
            "the traces name no process group (no 'Process Group Name' args, no "
            "pg_config): all collectives are counted in one group over the world"
        )
    unnamed = {rank: rg.get("unnamed", 0) for rank, rg in ranks if named and rg.get("unnamed", 0)}
    if unnamed:
        items = sorted(unnamed.items())
        where = ", ".join(f"rank {r}: {n}" for r, n in items[:8])
        where += f", … ({len(items)} ranks)" if len(items) > 8 else ""
        messages.append(
            f"some collective kernels name no process group ({where}): they are counted in group {FALLBACK_NAME!r}"
        )
    out.sort(key=lambda g: (-g["time_us"], g["name"]))
    return {"groups": out, "messages": messages}
