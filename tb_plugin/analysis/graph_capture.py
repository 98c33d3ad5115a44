"""CUDA/HIP graphs: replays as units, the captures in the trace, and which captured launch each
replayed kernel came from.

Definitions (times µs):

- A **replay** is one graph launch (``cudaGraphLaunch``/``hipGraphLaunch``/``cuGraphLaunch``) and the
  device work (kernels, memcpy, memset) that shares its correlation id.
- The **graph** of a replay is Kineto's ``graph id`` kernel arg when the trace has it (CUDA 12+);
  else replays are one graph when they ran the same device work: the same names in the same order
  (node id order when the trace has ``graph node id``, else start order) — a hash of that sequence.
- A **capture** is, on one host thread, a ``…StreamBeginCapture`` to the next ``…StreamEndCapture``;
  its launches are the kernel, memcpy and memset calls (``…LaunchKernel…``, ``…Memcpy…``,
  ``…Memset…``) on that thread between the two, in start order; the first ``…GraphInstantiate`` after
  the end is recorded with it. A capture cut by the profiling window (an end without its begin, a
  begin without its end) is **partial**: its launches are listed, never matched.
- **Matching**: a graph is matched to the complete capture whose launch count equals the graph's
  device-work count per replay, when exactly one capture has that count (two or more: *ambiguous*,
  none: *partial* when any capture is in the trace, else *no capture*). The k-th captured launch is
  the source of each replay's k-th device event: in ``graph node id`` order when the trace has node
  ids (CUDA numbers a graph's nodes in creation, i.e. capture, order), else in start order, whatever
  stream it ran on. A replay of a matched graph whose count differs from the capture's stays
  unattributed.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from ..trace.links import device_mask, launch_mask, launch_of
from ..trace.model import Trace

GRAPH_LAUNCH_PREFIXES = ("cudaGraphLaunch", "hipGraphLaunch", "cuGraphLaunch")
BEGIN_CAPTURE_PREFIXES = ("cudaStreamBeginCapture", "hipStreamBeginCapture", "cuStreamBeginCapture")
END_CAPTURE_PREFIXES = ("cudaStreamEndCapture", "hipStreamEndCapture", "cuStreamEndCapture")
INSTANTIATE_PREFIXES = ("cudaGraphInstantiate", "hipGraphInstantiate", "cuGraphInstantiate")
NODE_LAUNCH_MARKERS = ("LaunchKernel", "LaunchCooperativeKernel", "Memcpy", "Memset")


@functools.cache
def _hash_mult() -> np.ndarray:
    """Per-position multipliers of the name-sequence hash (fixed seed: a graph's key is stable across
    runs); made on first use, so that a trace without graph replays never imports ``numpy.random``."""
    return np.random.default_rng(20240611).integers(1, 2**63, size=4096, dtype=np.int64).astype(np.uint64) | np.uint64(
        1
    )


@dataclasses.dataclass
class Replays:
    """One entry per replay, in launch order; ``rows``/``replay``/``position`` per device event."""

    launch: np.ndarray  # graph-launch event row
    graph: np.ndarray  # graph index (0-based, by first replay)
    graph_key: np.ndarray  # Kineto graph id, or -1 where the graph is known by its name sequence
    count: np.ndarray  # device events
    rows: np.ndarray  # device event rows of all replays, grouped by replay, in matching order
    replay: np.ndarray  # per entry of ``rows``: its replay index
    position: np.ndarray  # per entry of ``rows``: k, its place in the replay's matching order
    by_node_id: bool  # True: matching order is the graph node id order


@dataclasses.dataclass
class Captures:
    """One entry per capture (complete or partial), in start order."""

    begin: np.ndarray  # begin-capture row, -1 for a capture cut at its start
    end: np.ndarray  # end-capture row, -1 for a capture cut at its end
    instantiate: np.ndarray  # the graph-instantiate row after its end, -1 when none
    launches: list  # per capture, its launch rows in start order
    complete: np.ndarray  # bool


@dataclasses.dataclass
class Matches:
    """Per graph: status ("attributed" | "ambiguous" | "partial" | "no_capture"), its capture index
    (-1 unless attributed) and the indices of the complete captures of its size; per event: the
    captured launch row its device work came from (-1: none)."""

    status: list
    capture: np.ndarray
    candidates: list
    source: np.ndarray


def _prefix_mask(trace: Trace, prefixes: tuple) -> np.ndarray:
    return launch_mask(trace) & trace.name_mask(lambda s: s.startswith(prefixes))


def replays(trace: Trace) -> Replays:
    return trace.memo("graph_replays", lambda: _replays(trace))


def _replays(trace: Trace) -> Replays:
    ev = trace.events
    launches = np.flatnonzero(_prefix_mask(trace, GRAPH_LAUNCH_PREFIXES))
    launcher = launch_of(trace)
    work = np.flatnonzero(device_mask(trace) & (launcher >= 0))
    work = work[np.isin(launcher[work], launches)]
    launches = launches[np.isin(launches, launcher[work])]  # a launch without device work is no replay
    launches = launches[np.argsort(ev.ts[launches], kind="stable")]
    rank = np.full(len(ev), -1, dtype=np.int64)
    rank[launches] = np.arange(len(launches))
    replay = rank[launcher[work]]
    node = ev.graph_node_id[work]
    by_node = bool(len(work)) and bool((node >= 0).all())
    second = node.astype(np.float64) if by_node else ev.ts[work]
    order = np.lexsort((work, second, replay))
    work, replay = work[order], replay[order]
    count = np.bincount(replay, minlength=len(launches))
    first = np.r_[0, np.cumsum(count)[:-1]] if len(launches) else np.zeros(0, dtype=np.int64)
    position = np.arange(len(work)) - np.repeat(first, count)
    ids = ev.graph_id[work]
    if len(work) and (ids >= 0).all():
        key = np.full(len(launches), -1, dtype=np.int64)
        key[replay] = ids  # a replay's kernels share one graph id
        sig = key.astype(np.uint64)
    else:
        key = np.full(len(launches), -1, dtype=np.int64)
        hash_mult = _hash_mult() if len(work) else np.ones(1, dtype=np.uint64)  # no replay: no numpy.random
        mult = hash_mult[np.minimum(position, len(hash_mult) - 1)]
        terms = ev.name[work].astype(np.int64).astype(np.uint64) * mult + position.astype(np.uint64)
        sig = np.zeros(len(launches), dtype=np.uint64)
        if len(work):
            sig[count > 0] = np.add.reduceat(terms, first[count > 0])
        sig = sig ^ (count.astype(np.uint64) << np.uint64(40))
    _, first_seen, graph = np.unique(sig, return_index=True, return_inverse=True)
    relabel = np.empty(len(first_seen), dtype=np.int64)
    relabel[np.argsort(first_seen, kind="stable")] = np.arange(len(first_seen))  # graphs numbered by first replay
    return Replays(
        launches,
        relabel[graph.reshape(-1)] if len(launches) else np.zeros(0, dtype=np.int64),
        key,
        count,
        work,
        replay,
        position,
        by_node,
    )


def captures(trace: Trace) -> Captures:
    return trace.memo("graph_captures", lambda: _captures(trace))


def _captures(trace: Trace) -> Captures:
    """Walks the capture markers in time order (their count, not the events', sets the loop)."""
    ev = trace.events
    begins = _prefix_mask(trace, BEGIN_CAPTURE_PREFIXES)
    ends = _prefix_mask(trace, END_CAPTURE_PREFIXES)
    inst = _prefix_mask(trace, INSTANTIATE_PREFIXES)
    marks = np.flatnonzero(begins | ends)
    out = Captures(
        np.zeros(0, dtype=np.int64),
        np.zeros(0, dtype=np.int64),
        np.zeros(0, dtype=np.int64),
        [],
        np.zeros(0, dtype=bool),
    )
    if len(marks) == 0:
        return out
    thread = ev.pid.astype(np.int64) << 32 | ev.tid.astype(np.int64)
    nodes = np.flatnonzero(launch_mask(trace) & trace.name_mask(lambda s: any(m in s for m in NODE_LAUNCH_MARKERS)))
    inst_rows = np.flatnonzero(inst)
    spans = []  # (begin row, end row)
    for key in np.unique(thread[marks]).tolist():
        mine = marks[thread[marks] == key]
        mine = mine[np.argsort(ev.ts[mine], kind="stable")]
        open_row = None
        for row in mine.tolist():
            if begins[row]:
                if open_row is not None:
                    spans.append((open_row, -1))  # a second begin before an end: the first never ended here
                open_row = row
            else:
                spans.append((open_row if open_row is not None else -1, row))
                open_row = None
        if open_row is not None:
            spans.append((open_row, -1))
    spans.sort(key=lambda s: float(ev.ts[s[0] if s[0] >= 0 else s[1]]))
    begin = np.array([s[0] for s in spans], dtype=np.int64)
    end = np.array([s[1] for s in spans], dtype=np.int64)
    launches, instantiate = [], []
    for b, e in spans:
        anchor = b if b >= 0 else e
        here = nodes[thread[nodes] == thread[anchor]]
        lo = ev.ts[b] if b >= 0 else -np.inf
        hi = ev.ts[e] if e >= 0 else np.inf
        here = here[(ev.ts[here] >= lo) & (ev.ts[here] <= hi)]
        launches.append(here[np.argsort(ev.ts[here], kind="stable")])
        after = inst_rows[(thread[inst_rows] == thread[anchor]) & (ev.ts[inst_rows] >= hi)] if e >= 0 else inst_rows[:0]
        instantiate.append(int(after[np.argmin(ev.ts[after])]) if len(after) else -1)
    return Captures(begin, end, np.array(instantiate, dtype=np.int64), launches, (begin >= 0) & (end >= 0))


def matches(trace: Trace) -> Matches:
    return trace.memo("graph_matches", lambda: _matches(trace))


def _matches(trace: Trace) -> Matches:
    rep = replays(trace)
    cap = captures(trace)
    n_graphs = int(rep.graph.max()) + 1 if len(rep.graph) else 0
    source = np.full(len(trace.events), -1, dtype=np.int64)
    sizes = np.array([len(x) for x in cap.launches], dtype=np.int64)
    size_of = graph_sizes(rep, n_graphs)
    status, candidates = [], []
    chosen = np.full(n_graphs, -1, dtype=np.int64)
    for g in range(n_graphs):
        cands = np.flatnonzero(cap.complete & (sizes == size_of[g])).tolist()
        candidates.append(cands)
        if len(cands) == 1:
            status.append("attributed")
            chosen[g] = cands[0]
        elif len(cands) > 1:
            status.append("ambiguous")
        else:
            status.append("partial" if len(sizes) else "no_capture")
    if (chosen >= 0).any():
        table = np.full((n_graphs, int(size_of.max()) if n_graphs else 0), -1, dtype=np.int64)
        for g in np.flatnonzero(chosen >= 0).tolist():
            table[g, : size_of[g]] = cap.launches[chosen[g]]
        g_of = rep.graph[rep.replay]
        ok = (chosen[g_of] >= 0) & (rep.count[rep.replay] == size_of[g_of])
        source[rep.rows[ok]] = table[g_of[ok], rep.position[ok]]
    return Matches(status, chosen, candidates, source)


def graph_sizes(rep: Replays, n_graphs: int) -> np.ndarray:
    """Per graph: its replays' most common device-event count (the smallest among equally common)."""
    if not n_graphs:
        return np.zeros(0, dtype=np.int64)
    pairs, times = np.unique(np.stack([rep.graph, rep.count]), axis=1, return_counts=True)
    order = np.lexsort((pairs[1], -times, pairs[0]))  # per graph: most replays first, then the smaller count
    first = np.r_[True, pairs[0][order][1:] != pairs[0][order][:-1]]
    out = np.zeros(n_graphs, dtype=np.int64)
    out[pairs[0][order][first]] = pairs[1][order][first]
    return out


def replay_source(trace: Trace) -> np.ndarray:
    """Per event: the captured launch row its device work was replayed from, or -1 (see the module
    docstring). Without replays (most traces) a read-only stride-0 view of one -1: a fresh column of -1
    at each call was a column's worth of pages faulted in and held (4.5 GB trace: 51 MB, in the critical
    path's graph for the whole distributed section and in the operator times, where the process tree peaks)."""
    if not len(replays(trace).launch):
        return np.broadcast_to(np.int64(-1), (len(trace.events),))
    return matches(trace).source
