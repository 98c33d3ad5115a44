"""A graph whose capture is not in its own trace, attributed from a capture in another trace of the same
run (definitions of replays, captures and matching: :mod:`analysis.graph_capture`).

A trace's **capture table** lists its complete captures, each with, per captured launch in start order,
the operator around it and its innermost Python frame (the names the Operator table and the graphs
document use). A graph of this trace whose status is ``partial`` or ``no_capture`` is looked up in the
other traces' tables in the order given (the registry's: the same worker's other spans, then other
workers): the first trace holding complete captures of the graph's size (device events per replay)
decides; exactly one such capture there → status ``other_trace``, ``capture_file`` names that trace, and
the graph's kernels are grouped by the operator and frame of the k-th captured launch (launch order: the
k-th device event of each replay of that size, as within one trace). Two or more there: the graph keeps
its status and the note says so. These kernels stay in this trace's unattributed time: the capturing
operators are rows of the other trace's Operator table, not this one's.
"""

from __future__ import annotations

import numpy as np

from ..trace.categories import Kind
from ..trace.model import Trace
from .graph_capture import captures, replays
from .graphs import GraphKernelRow, GraphRow, GraphsDocument
from .op_tree import op_tree

LOOKED_UP = ("partial", "no_capture")  # the statuses a capture in another trace can resolve
MAX_TABLE_LAUNCHES = 200_000  # per capture table: past it the later captures are left out
NOTE = (
    "Replayed kernels attributed to the operators of capture {capture} in {file}, another trace of this "
    "run (launch order). They stay unattributed in this trace's Operator table: those operators ran there."
)
AMBIGUOUS_NOTE = (
    " {n} captures in {file} (another trace of this run) have {size} launches: which one it replays is ambiguous."
)


def capture_table(trace: Trace) -> list[dict]:
    """Per complete capture: ``capture`` (its index), ``ops`` and ``frames`` (per launch, the operator
    around it and its innermost Python frame; None: none)."""
    cap = captures(trace)
    tree = op_tree(trace)
    names, strings = trace.events.name, trace.strings
    out, total = [], 0
    for i in np.flatnonzero(cap.complete).tolist():
        rows = cap.launches[i]
        total += len(rows)
        if total > MAX_TABLE_LAUNCHES:
            break
        op, frame = tree.op_parent[rows], tree.py_parent[rows]
        out.append(
            {
                "capture": int(i),
                "ops": [strings[names[r]] if r >= 0 else None for r in op.tolist()],
                "frames": [strings[names[r]] if r >= 0 else None for r in frame.tolist()],
            }
        )
    return out


def attribute_elsewhere(trace: Trace, doc: GraphsDocument, others: list[tuple[str, list[dict]]]) -> GraphsDocument:
    """``doc`` (this trace's graphs document) with its ``partial``/``no_capture`` graphs attributed from
    ``others`` (``(file, capture table)`` in lookup order) where one capture there fits (see the module
    docstring); the advice is recomputed without the graphs so attributed. ``doc`` itself is not changed."""
    if not others or not any(g["status"] in LOOKED_UP for g in doc["graph_list"]):
        return doc
    graph_list: list[GraphRow] = []
    resolved_us = 0.0
    for g in doc["graph_list"]:
        if g["status"] not in LOOKED_UP:
            graph_list.append(g)
            continue
        size = g["events_per_replay"]
        for file, table in others:
            fits = [c for c in table if len(c["ops"]) == size]
            if len(fits) == 1:
                c = fits[0]
                g = g.copy()  # existing keys keep their place, ``capture_file`` comes last
                g["status"], g["method"], g["capture_file"] = "other_trace", "launch order", file
                g["note"] = NOTE.format(capture=c["capture"], file=file)
                g["kernels"] = _kernels(trace, g["graph"], c)
                resolved_us += g["kernel_us"]
                break
            if len(fits) > 1:
                g = g.copy()
                g["note"] += AMBIGUOUS_NOTE.format(n=len(fits), file=file, size=size)
                break
        graph_list.append(g)
    out = doc.copy()
    out["graph_list"] = graph_list
    advice = []
    for a in doc["advice"]:
        if a["rule"] == "graphs.capture_missing":
            left = a["addressed_us"] - resolved_us
            share = 100.0 * left / doc["kernel_us"] if doc["kernel_us"] > 0 else 0.0
            if share < a["threshold_pct"]:
                continue
            text = a["text"].replace("{:.1f}%".format(a["share_pct"]), f"{share:.1f}%", 1)
            a = a.copy()  # the keys keep their order: the JSON is the same as the trace's own
            a["addressed_us"], a["share_pct"], a["text"] = left, share, text
        advice.append(a)
    out["advice"] = advice
    return out


def _kernels(trace: Trace, graph: int, table: dict) -> list[GraphKernelRow]:
    """Graph ``graph``'s kernels grouped by name, the capture's operator and frame at their position
    (replays of the capture's size only; the others by name alone): calls and total µs."""
    ev = trace.events
    rep = replays(trace)
    size = len(table["ops"])
    g_of = rep.graph[rep.replay]
    mine = (g_of == graph) & (ev.kind[rep.rows] == Kind.KERNEL)
    rows, pos = rep.rows[mine], rep.position[mine]
    fits = rep.count[rep.replay[mine]] == size
    labels = [None] + sorted({x for x in table["ops"] + table["frames"] if x is not None})
    index = {s: k for k, s in enumerate(labels)}
    op_of = np.array([index[x] for x in table["ops"]], dtype=np.int64)
    frame_of = np.array([index[x] for x in table["frames"]], dtype=np.int64)
    p = np.minimum(pos, size - 1) if size else np.zeros(len(pos), dtype=np.int64)
    op = np.where(fits, op_of[p] if size else 0, 0)
    frame = np.where(fits, frame_of[p] if size else 0, 0)
    cols = np.stack([ev.name[rows].astype(np.int64), op, frame], axis=1)
    uniq, inverse = np.unique(cols, axis=0, return_inverse=True) if len(rows) else (np.zeros((0, 3), np.int64), rows)
    inverse = inverse.reshape(-1)
    calls = np.bincount(inverse, minlength=len(uniq))
    total = np.bincount(inverse, weights=ev.dur[rows], minlength=len(uniq))
    out: list[GraphKernelRow] = [
        {
            "graph": graph,
            "name": trace.strings[n],
            "op": labels[o],
            "frame": labels[f],
            "calls": int(calls[i]),
            "total_us": float(total[i]),
        }
        for i, (n, o, f) in enumerate(uniq.tolist())
    ]
    out.sort(key=lambda r: (-r["total_us"], r["name"]))
    return out


__all__ = ["LOOKED_UP", "attribute_elsewhere", "capture_table"]
