"""Where a hang's collectives stand in the profiler traces of the same ranks. A flight-recorder instance
(process-group name, ``collective_seq_id``) is the trace's collective with the same ``Process Group
Name`` and ``Seq`` args (on the kernel or its ``record_param_comms`` op). Per rank, a trace summary
(:func:`rank_collectives`) holds each group's sequence numbers and the rank's last recorded step (its
longest host ops and last collectives); :func:`link_findings` joins it to the findings: whether the
stuck instance is in the trace, where, and what a suspect rank was doing last. The one linking
function of ``kinetoscope hang``, the notebook, the ``hang`` route, MCP and the report."""

from __future__ import annotations

import numpy as np

from ..trace.categories import Kind
from ..trace.model import Trace
from .distributed import comm_kernels
from .hang_finding import rank_list
from .op_tree import op_tree
from .steps import compute_steps

MAX_TOP_OPS = 3  # longest host ops of the last step shown
MAX_NOTE_RANKS = 4  # ranks a finding's trace note names


def rank_collectives(trace: Trace) -> dict:
    """The trace's summary: ``{"groups": {pg name: {"last_seq": int (−1: no Seq), "kernels": int,
    "seq": array, "at": array (indices into "kernels")}}, "kernels": {"collective": [...], "ts_us",
    "dur_us": arrays}, "last_step": {"name", "start_us", "end_us", "top_ops": [{"name", "dur_us"}],
    "collectives": [{"collective", "group", "seq"}] (its last three communication kernels)} or None}``;
    computed once per trace (:meth:`~tb_plugin.trace.model.Trace.memo`)."""
    return trace.memo("hang_rank_collectives", lambda: _summary(trace))


def _summary(trace: Trace) -> dict:
    k = comm_kernels(trace)
    ev = trace.events
    names = np.array(k["group"], dtype=object)
    seqs = np.asarray(k["seq"], dtype=np.int64)
    groups: dict[str, dict] = {}
    for g in sorted({str(x) for x in k["group"] if x is not None}):  # one pass per process group of the trace
        at = np.flatnonzero(names == g)
        mine = seqs[at]
        last = int(mine.max()) if mine.size else -1
        groups[g] = {"last_seq": last, "kernels": int(at.size), "seq": mine, "at": at}
    rows = np.asarray(k["rows"], dtype=np.int64)
    kernels = {"collective": k["collective"], "ts_us": ev.ts[rows], "dur_us": ev.dur[rows]}
    return {"groups": groups, "kernels": kernels, "last_step": _last_step(trace, k, rows)}


def _last_step(trace: Trace, k: dict, rows: np.ndarray) -> dict | None:
    steps = compute_steps(trace)
    if not len(steps.names):
        return None
    ev = trace.events
    lo, hi = float(steps.start[-1]), float(steps.end[-1])
    inside = np.flatnonzero((ev.ts[rows] >= lo) & (ev.ts[rows] <= hi))
    parent = op_tree(trace).op_parent
    host = np.flatnonzero((ev.kind == Kind.CPU_OP) & (ev.ts >= lo) & (ev.ts <= hi))
    outer = host[(parent[host] < 0) | (ev.kind[np.maximum(parent[host], 0)] != Kind.CPU_OP)]
    longest = outer[np.argsort(-ev.dur[outer], kind="stable")[:MAX_TOP_OPS]]
    return {
        "name": steps.names[-1],
        "start_us": lo,
        "end_us": hi,
        "top_ops": [{"name": trace.string(int(ev.name[r])), "dur_us": float(ev.dur[r])} for r in longest.tolist()],
        "collectives": [
            {"collective": k["collective"][i], "group": k["group"][i], "seq": int(k["seq"][i])} for i in inside[-3:]
        ],
    }


def link_findings(findings: list[dict], by_rank: dict[int, dict]) -> None:
    """Adds to each finding with a group and an instance, when a rank it names has a trace summary in
    ``by_rank`` (:func:`rank_collectives`): ``in_traces`` (rank → ``{"last_seq"`` (the group's last
    ``Seq`` in that trace), ``"has_instance"``, ``"instance"`` (the trace's collective of that group
    and ``Seq``: ``{"collective", "ts_us", "dur_us"}``, or None), ``"last_step"}``) and ``trace_note``
    (one sentence: the suspects' traces first)."""
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
            links[str(r)] = {
                "last_seq": last,
                "has_instance": last >= seq,
                "instance": _instance(got, group, seq),
                "last_step": dict(got["last_step"]) if got["last_step"] else None,
            }
        if links:
            f["in_traces"] = links
            f["trace_note"] = note(f, links)


def _instance(got: dict, group: dict | None, seq: int) -> dict | None:
    if group is None:
        return None
    hit = group["at"][group["seq"] == seq]
    if not hit.size:
        return None
    i = int(hit[0])
    kernels = got["kernels"]
    return {
        "collective": kernels["collective"][i],
        "ts_us": float(kernels["ts_us"][i]),
        "dur_us": float(kernels["dur_us"][i]),
    }


def note(f: dict, links: dict[str, dict]) -> str:
    """What the traces say of finding ``f``: for each suspect (missing) rank with a trace, how far its
    trace got in the group and what its last step did; for the others, whether the instance is there."""
    instance = f"{f.get('op') or 'collective'} #{f['collective_seq_id']}"
    parts = []
    suspects = [r for r in f["missing_ranks"] if str(r) in links][:MAX_NOTE_RANKS]
    no_seq = f"no Seq of group {f['pg_name']}"  # no Seq args (Gloo, older traces) or no such collective
    for r in suspects:
        link = links[str(r)]
        if link["last_seq"] < 0:
            where = f"records {no_seq}"
        elif link["has_instance"]:
            where = f"has {instance} (Seq {f['collective_seq_id']})"
        else:
            where = f"ends before {instance} (its last Seq in group {f['pg_name']} is {link['last_seq']})"
        parts.append(f"rank {r}'s trace {where}" + _doing(link["last_step"]))
    others = [int(r) for r in links if int(r) not in f["missing_ranks"]]
    unnumbered = [r for r in others if links[str(r)]["last_seq"] < 0]
    if unnumbered:
        parts.append(f"the traces of {rank_list(unnumbered)} record {no_seq}")
    others = [r for r in others if r not in unnumbered]
    have = [r for r in others if links[str(r)]["instance"] is not None]
    if have:
        first = links[str(have[0])]["instance"]
        parts.append(
            f"the traces of {rank_list(have)} have it ({first['collective']}, {first['dur_us']:.0f} µs on rank {have[0]})"
        )
    lacking = [r for r in others if links[str(r)]["instance"] is None]
    if lacking:
        parts.append(f"the traces of {rank_list(lacking)} end before it")
    text = "; ".join(parts)
    return f"{text[:1].upper()}{text[1:]}." if text else ""


def _doing(step: dict | None) -> str:
    if not step:
        return ""
    ops = ", ".join(f"{o['name']} ({o['dur_us']:.0f} µs)" for o in step["top_ops"])
    colls = ", ".join(f"{c['collective']} #{c['seq']}" for c in step["collectives"] if c["seq"] >= 0)
    name = str(step["name"])
    label = f"step {name}" if name.isdigit() else name
    text = f"; in its last recorded step ({label}) its longest ops were {ops}" if ops else ""
    return text + (f" and its last collectives {colls}" if colls else "")
