"""The graphs document: CUDA/HIP graph replays as units, their graphs, the captures matched to them, and
the account of kernel time between operators and "unattributed" (definitions: :mod:`.graph_capture`).

Per replay (µs): ``start_us``/``end_us`` = first device start / last device end of its work (trace
time); ``kernel_us`` = Σ its kernel durations; ``busy_us`` = the union of its device work;
``gap_us`` = span − busy (time inside the replay when none of its work ran); ``launch_us`` = the
host duration of the graph launch call; ``launch_delay_us`` = first device start − launch start.
Per graph: its replays, device events per replay, those figures summed, and its kernels grouped by
name and, when attributed, by the operator and innermost Python frame around the captured launch.
``kernel_us``/``graph_kernel_us``/``graph_kernel_pct``: all kernel time, the part replayed from
graphs and its share (the Overview's "N replays, X % of GPU time in graphs").

**Accounting**: ``attributed_us`` = Σ kernel self time of the Operator table's rows; ``unattributed_us``
= kernel time launched outside every table row (no operator around the launch, or only a step /
DataLoader / wrapper marker); the two add up to ``kernel_us``. ``from_graph_replay_us`` = the
attributed kernel time that came through a matched capture.

**Advice** ``graphs.capture_missing``: when kernels replayed from graphs without a matched capture take
≥ :data:`UNMATCHED_PCT` % of kernel time, profile the capture in the same trace.
"""

from __future__ import annotations

from typing import TypedDict, cast

import numpy as np

from ..trace.categories import Kind
from ..trace.model import Trace
from .graph_capture import captures, graph_sizes, matches, replay_source, replays
from .numfmt import fixed
from .op_tree import op_tree
from .operators import _groups, op_times
from .recommendations import THRESHOLDS, Recommendation, recommendation, threshold_us

UNMATCHED_PCT = THRESHOLDS["graphs.capture_missing"]
NOTES = {
    "attributed": "Replayed kernels attributed to the operators that launched them during the capture ({method}).",
    "ambiguous": "{n} captures in this profile have {size} launches, as this graph has device events: which one "
    "it replays is ambiguous, so its kernels stay with the replay.",
    "partial": "No complete capture in this profile has {size} launches (a capture cut by the profiling window, "
    "or another graph): its kernels stay with the replay.",
    "no_capture": "The graph was captured before the profiled window: its kernels are grouped by graph and "
    "name. Profile the capture (cudaStreamBeginCapture … cudaGraphInstantiate) in the same trace "
    "to attribute them to operators and source lines.",
}


class KernelAccounting(TypedDict):
    """Kernel time between the Operator table's rows and unattributed (µs; the module docstring)."""

    kernel_us: float
    attributed_us: float
    unattributed_us: float
    from_graph_replay_us: float


class GraphKernelRow(TypedDict):
    """Replayed kernels of one graph with one name, owning operator and Python frame (µs)."""

    graph: int
    name: str
    op: str | None  # the operator that launched it during the capture; None when not attributed
    frame: str | None  # the Python frame around that launch
    calls: int
    total_us: float


class GraphRowBase(TypedDict):
    """One CUDA graph of the document: its replays' figures and its capture (µs)."""

    graph: int  # its index in the document
    graph_id: int | None  # the trace's graph id, when the trace records one
    replays: int
    events_per_replay: int
    kernel_us: float  # over all its replays
    busy_us: float
    gap_us: float
    launch_us: float  # host time of its launches
    streams: list[int]
    status: str  # "attributed", "ambiguous", "partial", "no_capture" or "other_trace" (analysis/graph_elsewhere.py)
    method: str | None  # how replayed kernels were matched to captured launches; None when not attributed
    capture: int | None  # the index of its capture in ``captures``
    candidates: list[int]  # the captures of its size
    note: str
    kernels: list[GraphKernelRow]  # most time first within the graph


class GraphRow(GraphRowBase, total=False):
    """:class:`GraphRowBase` and, for a graph attributed from another trace of the run, that trace."""

    capture_file: str


class ReplayRow(TypedDict):
    """One replay of a graph (µs; start and end in trace time)."""

    replay: int
    graph: int
    start_us: float
    end_us: float
    events: int
    kernels: int
    kernel_us: float
    busy_us: float  # the union of its work
    gap_us: float  # its span minus busy
    launch_us: float  # host time of its launch
    launch_delay_us: float  # from the launch's start to its first device event


class CaptureRow(TypedDict):
    """One stream capture (µs, trace time)."""

    capture: int
    start_us: float
    launches: int
    complete: bool  # begin and end capture both in the trace
    instantiated: bool
    graphs: list[int]  # the graphs matched to it


class GraphsDocument(TypedDict):
    """The CUDA graphs document (:func:`graphs_document`; µs, the module docstring)."""

    replays: int
    graphs: int
    kernel_us: float
    graph_kernel_us: float
    graph_kernel_pct: float
    graph_list: list[GraphRow]
    replay_list: list[ReplayRow]
    captures: list[CaptureRow]
    accounting: KernelAccounting
    advice: list[Recommendation]  # the graphs.capture_missing recommendation, when it holds


def kernel_accounting(trace: Trace) -> KernelAccounting:
    """Kernel time split between the Operator table's rows and unattributed (µs, see the docstring)."""
    ev = trace.events
    kernel = ev.kind == Kind.KERNEL
    times = op_times(trace)
    rows = _groups(trace, "operator")[0]
    table = np.zeros(len(ev), dtype=bool)
    table[rows] = True
    kernels = np.flatnonzero(kernel)
    owner = times.owner[kernels]
    listed = owner >= 0
    listed[listed] = table[owner[listed]] | times.merged[owner[listed]]
    return {
        "kernel_us": float(ev.dur[kernels].sum()),
        "attributed_us": float(times.kernel_self[rows].sum()),
        "unattributed_us": float(ev.dur[kernels[~listed]].sum()),
        "from_graph_replay_us": float(ev.dur[kernels[listed & (replay_source(trace)[kernels] >= 0)]].sum()),
    }


def graphs_document(trace: Trace) -> GraphsDocument:
    """``{"replays", "graphs", "kernel_us", "graph_kernel_us", "graph_kernel_pct", "graph_list",
    "replay_list", "captures", "accounting", "advice"}`` (µs; see the module docstring)."""
    ev = trace.events
    rep = replays(trace)
    kernel_us = float(ev.dur[ev.kind == Kind.KERNEL].sum())
    doc: GraphsDocument = {
        "replays": int(len(rep.launch)),
        "graphs": 0,
        "kernel_us": kernel_us,
        "graph_kernel_us": 0.0,
        "graph_kernel_pct": 0.0,
        "graph_list": [],
        "replay_list": [],
        "captures": _capture_list(trace, None),
        "accounting": kernel_accounting(trace),
        "advice": [],
    }
    if not len(rep.launch):
        return doc
    per = _per_replay(trace)
    match = matches(trace)
    n_graphs = len(match.status)
    is_kernel = ev.kind[rep.rows] == Kind.KERNEL
    graph_kernel_us = float(ev.dur[rep.rows[is_kernel]].sum())
    doc["graphs"], doc["graph_kernel_us"] = n_graphs, graph_kernel_us
    doc["graph_kernel_pct"] = 100.0 * graph_kernel_us / kernel_us if kernel_us > 0 else 0.0
    doc["replay_list"] = [
        cast(ReplayRow, dict(replay=i, graph=int(rep.graph[i]), **{k: v[i] for k, v in per.items()}))
        for i in range(len(rep.launch))
    ]
    doc["captures"] = _capture_list(trace, match)
    kernel_rows = _kernels_by_graph(trace)
    source = match.source
    unmatched_us = 0.0
    sums = {
        k: np.bincount(rep.graph, weights=np.asarray(per[k]), minlength=n_graphs)
        for k in ("busy_us", "gap_us", "launch_us")
    }
    sizes = graph_sizes(rep, n_graphs)
    replays_of = np.bincount(rep.graph, minlength=n_graphs)
    first_replay = np.full(n_graphs, len(rep.launch), dtype=np.int64)
    np.minimum.at(first_replay, rep.graph, np.arange(len(rep.launch)))
    event_graph = rep.graph[rep.replay]
    by_graph = np.argsort(event_graph, kind="stable")
    bounds = np.searchsorted(event_graph[by_graph], np.arange(n_graphs + 1))
    kernels_of: dict[int, list[GraphKernelRow]] = {}
    for row in kernel_rows:
        kernels_of.setdefault(row["graph"], []).append(row)
    for g in range(n_graphs):  # one pass per graph, each over its own events
        rows_g = rep.rows[by_graph[bounds[g] : bounds[g + 1]]]
        size = int(sizes[g])
        status = match.status[g]
        method = "graph node id order" if rep.by_node_id else "launch order"
        note = NOTES[status].format(method=method, n=len(match.candidates[g]), size=size)
        k_us = float(ev.dur[rows_g[ev.kind[rows_g] == Kind.KERNEL]].sum())
        unmatched_us += float(ev.dur[rows_g[(ev.kind[rows_g] == Kind.KERNEL) & (source[rows_g] < 0)]].sum())
        doc["graph_list"].append(
            {
                "graph": g,
                "graph_id": int(rep.graph_key[first_replay[g]]) if rep.graph_key[first_replay[g]] >= 0 else None,
                "replays": int(replays_of[g]),
                "events_per_replay": size,
                "kernel_us": k_us,
                "busy_us": float(sums["busy_us"][g]),
                "gap_us": float(sums["gap_us"][g]),
                "launch_us": float(sums["launch_us"][g]),
                "streams": sorted({int(s) for s in np.unique(ev.stream[rows_g]).tolist()}),
                "status": status,
                "method": method if status == "attributed" else None,
                "capture": int(match.capture[g]) if match.capture[g] >= 0 else None,
                "candidates": match.candidates[g],
                "note": note,
                "kernels": kernels_of.get(g, []),
            }
        )
    if kernel_us > 0 and 100.0 * unmatched_us / kernel_us >= UNMATCHED_PCT:
        share = 100.0 * unmatched_us / kernel_us
        doc["advice"].append(
            recommendation(
                "graphs.capture_missing",
                unmatched_us,
                threshold_us("graphs.capture_missing", kernel_us),
                "kernel_time",
                f"{fixed(share, 1)}% of kernel time is replayed from CUDA graphs whose capture is not in this profile: start the "
                "profiler before the capture (warm-up included) to see which operators and source lines the kernels "
                "belong to.",
                threshold_pct=UNMATCHED_PCT,
                share_pct=share,
            )
        )
    return doc


def graph_advice(trace: Trace) -> list[Recommendation]:
    """The CUDA-graph rules of the one recommendation list (``graphs_document``'s ``advice``): none for a
    trace without replays, without building its document (the kernel accounting needs the operator tree)."""
    return graphs_document(trace)["advice"] if len(replays(trace).launch) else []


def _per_replay(trace: Trace) -> dict:
    """Per replay: ``start_us``, ``end_us``, ``events``, ``kernels``, ``kernel_us``, ``busy_us``, ``gap_us``,
    ``launch_us``, ``launch_delay_us`` (lists, replay order)."""
    ev = trace.events
    rep = replays(trace)
    n = len(rep.launch)
    rows, which = rep.rows, rep.replay
    ts, end = ev.ts[rows], ev.ts[rows] + ev.dur[rows]
    start = np.full(n, np.inf)
    stop = np.full(n, -np.inf)
    np.minimum.at(start, which, ts)
    np.maximum.at(stop, which, end)
    kernel = ev.kind[rows] == Kind.KERNEL
    # the union of each replay's work: times relative to its start, replays laid end to end (each one
    # its own span + 1 µs wide, so a replay never reaches into the next)
    rel_s, rel_e = ts - start[which], end - start[which]
    width = np.where(np.isfinite(stop - start), stop - start, 0.0) + 1.0
    base = (np.cumsum(width) - width)[which]
    order = np.lexsort((rel_s, which))
    s, e, w = (rel_s + base)[order], (rel_e + base)[order], which[order]
    reach = np.maximum.accumulate(e)
    new = np.r_[True, s[1:] > reach[:-1]] if len(s) else np.zeros(0, dtype=bool)
    group_end = np.r_[np.flatnonzero(new)[1:] - 1, len(s) - 1] if len(s) else np.zeros(0, dtype=np.int64)
    busy = np.bincount(w[new], weights=reach[group_end] - s[new], minlength=n)
    launch = rep.launch
    return {
        "start_us": start.tolist(),
        "end_us": stop.tolist(),
        "events": rep.count.tolist(),
        "kernels": np.bincount(which[kernel], minlength=n).tolist(),
        "kernel_us": np.bincount(which[kernel], weights=ev.dur[rows[kernel]], minlength=n).tolist(),
        "busy_us": busy.tolist(),
        "gap_us": np.maximum(stop - start - busy, 0.0).tolist(),
        "launch_us": ev.dur[launch].tolist(),
        "launch_delay_us": (start - ev.ts[launch]).tolist(),
    }


def _kernels_by_graph(trace: Trace) -> list[GraphKernelRow]:
    """Replayed kernels grouped by graph, name, owning operator and the Python frame around the captured
    launch (the last two only when attributed): calls and total µs."""
    ev = trace.events
    rep = replays(trace)
    rows = rep.rows[ev.kind[rep.rows] == Kind.KERNEL]
    if not len(rows):
        return []
    graph = rep.graph[rep.replay[ev.kind[rep.rows] == Kind.KERNEL]]
    source = replay_source(trace)[rows]
    owner = op_times(trace).owner[rows]
    op = np.where((source >= 0) & (owner >= 0), ev.name[np.maximum(owner, 0)], -1).astype(np.int64)
    frame_row = np.where(source >= 0, op_tree(trace).py_parent[np.maximum(source, 0)], -1)
    frame = np.where(frame_row >= 0, ev.name[np.maximum(frame_row, 0)], -1).astype(np.int64)
    cols = (graph, ev.name[rows].astype(np.int64), op, frame)
    order = np.lexsort(cols[::-1])  # by graph, then name, op, frame (a sort, not np.unique on rows: 10× faster)
    new = np.zeros(len(order), dtype=bool)
    new[0] = True
    for c in cols:
        new[1:] |= c[order][1:] != c[order][:-1]
    inverse = np.empty(len(order), dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    uniq = np.stack([c[order][new] for c in cols], axis=1)
    calls = np.bincount(inverse, minlength=len(uniq))
    total = np.bincount(inverse, weights=ev.dur[rows], minlength=len(uniq))
    out: list[GraphKernelRow] = [
        {
            "graph": g,
            "name": trace.strings[n],
            "op": trace.strings[o] if o >= 0 else None,
            "frame": trace.strings[f] if f >= 0 else None,
            "calls": int(calls[i]),
            "total_us": float(total[i]),
        }
        for i, (g, n, o, f) in enumerate(uniq.tolist())
    ]
    out.sort(key=lambda r: (r["graph"], -r["total_us"], r["name"]))
    return out


def _capture_list(trace: Trace, match) -> list[CaptureRow]:
    """Per capture: its start (µs, trace time), launches, whether it is complete and instantiated, and
    the graphs matched to it."""
    ev = trace.events
    cap = captures(trace)
    out: list[CaptureRow] = []
    for i in range(len(cap.begin)):
        anchor = cap.begin[i] if cap.begin[i] >= 0 else cap.end[i]
        graphs = [] if match is None else [g for g, c in enumerate(match.capture.tolist()) if c == i]
        out.append(
            {
                "capture": i,
                "start_us": float(ev.ts[anchor]),
                "launches": int(len(cap.launches[i])),
                "complete": bool(cap.complete[i]),
                "instantiated": bool(cap.instantiate[i] >= 0),
                "graphs": graphs,
            }
        )
    return out
