"""Where a hang's collectives stand in the profiler traces of the same ranks: per rank and process
group, the last collective its trace recorded (``Seq``, matched by ``Process Group Name``), so a
finding can say whether the stuck instance is in the trace and how far before it the trace ends, and
what the rank was doing in its last recorded step (its longest collectives there)."""

from __future__ import annotations

import numpy as np

from ..trace.model import Trace
from .distributed import comm_kernels
from .steps import compute_steps


def rank_collectives(trace: Trace) -> dict:
    """``{"groups": {pg name: {"last_seq": int (−1: no Seq), "kernels": int}}, "last_step": {"name",
    "collectives": [{"collective", "group", "seq"}] (its last three communication kernels)} or None}``."""
    k = comm_kernels(trace)
    groups: dict[str, dict] = {}
    names = np.array(k["group"], dtype=object)
    seqs = np.asarray(k["seq"], dtype=np.int64)
    for g in sorted(set(k["group"])):  # one pass per process group of the trace
        mine = seqs[names == g]
        groups[str(g)] = {"last_seq": int(mine.max()) if mine.size else -1, "kernels": int(mine.size)}
    last_step = None
    steps = compute_steps(trace)
    if len(steps.names) and len(k["rows"]):
        ts = trace.events.ts[k["rows"]]
        inside = np.flatnonzero((ts >= steps.start[-1]) & (ts <= steps.end[-1]))
        last_step = {
            "name": steps.names[-1],
            "collectives": [
                {"collective": k["collective"][i], "group": k["group"][i], "seq": int(k["seq"][i])} for i in inside[-3:]
            ],
        }
    return {"groups": groups, "last_step": last_step}


def link_findings(findings: list[dict], by_rank: dict[int, dict]) -> None:
    """Adds ``in_traces`` to each finding with a group and an instance: per rank of the finding that has a
    trace summary in ``by_rank`` (:func:`rank_collectives`), ``{"last_seq"`` (the group's last ``Seq``
    in that trace), ``"has_instance"`` (the finding's ``collective_seq_id`` is in it), ``"last_step"}``."""
    for f in findings:
        seq, name = f.get("collective_seq_id"), f.get("pg_name")
        if seq is None or name is None:
            continue
        links = {}
        for r in sorted(set(f["ranks_present"]) | set(f["missing_ranks"])):
            got = by_rank.get(r)
            if got is None:
                continue
            group = got["groups"].get(str(name))
            last = group["last_seq"] if group else -1
            links[str(r)] = {"last_seq": last, "has_instance": last >= seq, "last_step": got["last_step"]}
        if links:
            f["in_traces"] = links
