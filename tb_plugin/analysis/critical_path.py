"""Critical path of a training step, per rank and across ranks (µs): the per-rank half.

**Graph.** On each rank: device work (kernels, memcpy, memset) depends on its launch (the runtime or
driver call with the same correlation id) and on the previous device work of its stream (stream
order); a host thread runs in program order, and a blocking call (:mod:`analysis.blocking`: a
synchronize, a blocking copy, the query of an event-polling loop that saw the event complete) depends
on the device work it waited for. Across ranks (see :mod:`analysis.critical_path_combine`) the
kernels of one matched collective instance (:mod:`analysis.collective_matching`) depend on the
kernel of the rank that arrived last (the one that starts last on the common clock).

**Walk.** The path is found backward from the step's end: at device work ``D`` (``[s, e]`` on the
path as kernel, or communication for a communication kernel), the predecessor is whichever ended
later before ``s``: the previous work on ``D``'s stream, or ``D``'s launch (its end, capped at
``s``), the stream on ties, so kernels that run back to back keep the path on the device however far
ahead the host is. On a host thread at time ``t`` the path goes back along the thread to the latest
of: a blocking call that waited (its waited work ended inside the call, at ``j ≤ t``: the path jumps
to that device work at ``j``; the time the call held the host over the path's device segments is
``host_blocked_us``), or a **join** with a linked thread (below); with neither it reaches the step
start. Time ``[a, b]`` on a thread is split into its host tiles (category **cpu**,
:mod:`analysis.host_tiles`: leaf work, the innermost operator or runtime/driver call over its self
time, else a Python frame's own time, else ``untraced host work`` inside an annotation; an annotation
is never a segment's identity) and the gaps between them (**waiting**); time between a node's end
and the point the path reached it is **waiting** too. So the segments tile ``[step start, step end]``
exactly.

**Threads.** The walk from the step's end compares the last device end with the last tile end of the
**main thread**: the thread that launches or waits for the rank's device work (the step marker's
thread if it does, else the one with the most launches and blocking calls); with no device work, the
step marker's thread, else the one with the most leaf-operator time. Other threads are reached only
through a launch or a join, so a thread that launches nothing and waits for nothing (a sleeping
background thread) is never on the path. **Linked** threads are the two ends of a ``fwdbwd`` flow (the
forward thread and the autograd engine's thread; without flows, the threads running
``autograd::engine::`` nodes and the main thread). Where a thread does no leaf work (it is blocked,
e.g. inside ``backward()``, or between its operators) and a linked thread's leaf work ends at ``x``,
the thread waited for it: the rest of that blocked time is **waiting** ("blocked on another thread")
and the path continues on the linked thread from ``x``; so the backward pass on the engine thread is
on the path, and before its first node the path returns to the forward thread's last work before
``backward()``.

**Graph replays.** A kernel replayed from a CUDA graph depends on its graph launch (the same
correlation) like any launched kernel; when the replay's capture is matched
(:mod:`analysis.graph_capture`), its segment is named and credited by the operator that captured it
(``aten::mm (graph replay)``, the Operator table's owner) and carries the captured launch's
annotation and Python frame.

**Cross-stream waits** are inferred: a device
kernel that starts after both its launch and its stream predecessor ended waited for something else:
its predecessor is then the device work, on any stream, that ended last before it started, when that
ended after both (how a ``cudaStreamWaitEvent`` on another stream's work shows). When the trace
records its waits (CUPTI's ``cuda_sync`` "Stream Wait Event", PyTorch 2.1+, with the
``wait_on_cuda_event_record_corr_id`` of its ``cudaEventRecord`` and ``wait_on_stream``), they are read
instead of inferred (:func:`wait_edges`, :func:`analysis.blocking.recorded_waits`): the recorded event
completes with the last device work launched on ``wait_on_stream`` before the record (highest
correlation below it), and the waiting stream's first device work launched after the wait depends on it.

**Per-rank summary.** The walk on a rank only leaves it at a communication kernel, so each rank
reduces to *chains*: from its step end, and from the start of each communication kernel, the walk
back to the first communication kernel met (its ``stop``) or to the rank's step start. A chain keeps
its bounds, µs per category, its ten longest segments (host ones with their enclosing annotation and
Python frame as context), its longest non-waiting segment, its host-blocked µs and its work grouped by
``(category, name)`` (µs and segment count, the :data:`analysis.critical_path_chain.MAX_ITEMS` of most
time): about a kilobyte, whatever the number of events. Chains of one step share their tails (a node
already walked gives the rest of the chain), so each device node is walked once per step; a rank's
walks visit at most :data:`MAX_VISITS` nodes, past that the rest of a chain is waiting and ``truncated``.
A run of nodes that hand the walk to their stream predecessor is walked in one numpy pass
(:mod:`analysis.critical_path_runs`), and a chain is folded into its summary in numpy
(:class:`analysis.critical_path_chain.Folded`): the same segments and sums as node by node. The host
side (tiles, joins) is made for a group of steps at a time (:mod:`analysis.critical_path_groups`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np

from ..trace.categories import DEVICE_KINDS, HOST_WORK_KINDS, LAUNCH_KINDS, PROFILER_STEP_PREFIX
from ..trace.heap import gc_paused, release_after_step
from ..trace.links import launch_of
from ..trace.model import Trace
from ..trace.sparse import row_dtype
from ..trace.uniques import unique_values
from .blocking import STREAM_WAIT, blocking_calls
from .clock import shared_origin
from .critical_path_chain import CPU, KERNEL, WAIT, Walk
from .critical_path_edges import add_joins, linked_pairs, wait_edges
from .critical_path_groups import GROUP_HOST_EVENTS, step_groups, thread_sets, walks_stay_behind
from .critical_path_runs import stream_steps, walk_run
from .graph_capture import replay_source
from .host_tiles import ANNOTATION, ANNOTATION_SUFFIX, LEAF, UNTRACED, UNTRACED_NAME, Tiles, context, host_tiles
from .op_tree import op_tree
from .steps import compute_steps

MAX_VISITS = 1_000_000
REPLAY_SUFFIX = " (graph replay)"  # a replayed kernel's segment, named by its capturing operator


def rank_chains(trace: Trace, comm_rows: np.ndarray) -> dict:
    """The per-rank summary (see the module docstring). ``comm_rows``: the rows of the communication
    kernels in time order (``analysis.distributed.comm_kernels``). Times are the trace's own (µs);
    the common clock reads them + ``offset_us`` (kept apart: absolute clocks would round). Returns
    ``offset_us``, ``steps`` (per step ``step``, ``start``, ``end``, ``chain``), ``comm`` (``start``,
    ``end``, ``name``, ``row``, ``chain`` per communication kernel, None outside every step) and
    ``truncated``."""
    offset = shared_origin(trace, 0.0)[0]
    g = RankGraph(trace, np.asarray(comm_rows, dtype=np.int64), host_side=False)
    release_after_step()  # the device side's temporaries (4.5 GB trace: ~0.13 GB), before the first group's
    steps = compute_steps(trace)
    out_steps = []
    chains: list = [None] * len(g.comm_rows)
    starts = g.ts[g.comm_dev] if len(g.comm_rows) else np.zeros(0)
    which = np.searchsorted(steps.start, starts, side="right") - 1
    inside = (which >= 0) & (starts <= steps.end[np.maximum(which, 0)]) if len(steps) else which < -1
    members = np.flatnonzero(inside)  # the communication kernels of each step, in order, grouped once
    members = members[np.argsort(which[members], kind="stable")]
    bounds = np.searchsorted(which[members], np.arange(len(steps) + 1)).tolist()
    members = members.tolist()
    # the collector paused over the walks: they make tens of thousands of segment tuples and lists per
    # step, whose collection passes cost ~17 % of the distributed section's CPU on a 1.3 M-event trace and
    # grew faster than the events (7× the passes' time for 5× the events); the one cycle they make (a
    # step's memo holds its folded chains, which hold their walks, which hold the memo) is broken at
    # the step's end, so reference counting frees each step's walks there
    with gc_paused():
        # the host side a group of steps at a time (analysis.critical_path_groups): a group's walks read
        # its host events only
        starts, ends = steps.start.tolist(), steps.end.tolist()
        for k0, k1, rows in g.groups(steps.start, steps.end):
            g.set_host(rows)
            del rows
            # the tiles' and the last group's temporaries given back (trace/heap.trimmed_steps): rarely
            # reused by the next group, they stayed resident (4.5 GB trace's child: ~0.3 GB over 22 groups)
            release_after_step()
            for k in range(k0, k1):
                lo, hi = starts[k], ends[k]
                g.memo = {}  # chains of one step share their tails (the same lower bound)
                chain = g.from_end(lo, hi).summary(g.context)
                out_steps.append({"step": steps.names[k], "start": lo, "end": hi, "chain": chain})
                for c in members[bounds[k] : bounds[k + 1]]:
                    chains[c] = g.from_kernel(int(g.comm_dev[c]), lo).summary(g.context)
                g.memo.clear()
    ev = trace.events
    rows = g.comm_rows
    comm = {
        "start": ev.ts[rows].tolist(),
        "end": (ev.ts[rows] + ev.dur[rows]).tolist(),
        "name": [trace.strings[i] for i in ev.name[rows].tolist()],
        "row": rows.tolist(),
        "chain": chains,
    }
    return {"offset_us": offset, "steps": out_steps, "comm": comm, "truncated": g.visits > MAX_VISITS}


class RankGraph:
    """One rank's nodes: device work by stream, host threads' tiles and waiting syncs."""

    def __init__(self, trace: Trace, comm_rows: np.ndarray, host_side: bool = True):
        """``host_side``: the whole trace's host side made here (else by :meth:`set_host`, a group at a time)."""
        ev = trace.events
        self.trace, self.visits = trace, 0
        self.memo: dict = {}
        self._memo_of: dict | None = None  # the memo dict _memo_mask is for, and its keys so far
        self._memo_keys: list[int] = []
        kind = ev.kind
        finite = np.isfinite(ev.ts) & np.isfinite(ev.dur)  # a time that is not a number is on no path
        dev = np.flatnonzero(np.isin(kind, DEVICE_KINDS) & finite)
        order = np.lexsort((ev.ts[dev], ev.stream[dev], ev.device[dev]))
        dev = dev[order]
        self.dev, self.ts, self.te = dev, ev.ts[dev], ev.ts[dev] + ev.dur[dev]
        self._memo_mask = np.zeros(len(dev), bool)
        same = np.zeros(len(dev), bool)
        same[1:] = (ev.stream[dev][1:] == ev.stream[dev][:-1]) & (ev.device[dev][1:] == ev.device[dev][:-1])
        self.prev = np.where(same, np.arange(len(dev)) - 1, -1)
        pos = np.full(len(ev), -1, dtype=np.int64)
        pos[dev] = np.arange(len(dev))
        self.comm_rows = comm_rows
        self.comm_dev = pos[comm_rows] if len(comm_rows) else np.zeros(0, dtype=np.int64)
        del pos  # one int64 per event: not held while the tiles are built
        self.comm_of = np.full(len(dev), -1, dtype=np.int64)
        self.comm_of[self.comm_dev[self.comm_dev >= 0]] = np.flatnonzero(self.comm_dev >= 0)
        self.is_comm = self.comm_of >= 0
        self.waits_on, self.explicit = wait_edges(trace, dev)
        launch = launch_of(trace)[dev]
        self.launch = launch
        thread_key = _ThreadKeys(ev)  # a row's thread key, computed for the rows asked (no full column)
        self.thread_key = thread_key
        # host threads: leaf tiles (not ProfilerStep#; analysis.host_tiles, made a group of steps at a time:
        # set_host), the blocking calls that waited (analysis.blocking) and the joins with linked threads
        host = np.isin(kind, HOST_WORK_KINDS + LAUNCH_KINDS) & finite
        del finite
        step_ids = trace.name_mask(lambda s: s.startswith(PROFILER_STEP_PREFIX))
        marker = np.flatnonzero(host & step_ids)
        host &= ~step_ids
        self.host = host  # a mask per event: the rows the tiles are made of
        ends_order = np.argsort(self.te, kind="stable")
        sorted_ends = self.te[ends_order]
        self.ends_order, self.sorted_ends = ends_order, sorted_ends
        bc = blocking_calls(trace)
        held = (bc.kind != STREAM_WAIT) & np.isfinite(bc.waited_end_us)  # the calls that held a host thread
        b_rows, b_end, b_from = bc.rows[held], bc.waited_end_us[held], bc.blocked_from_us[held]
        b_key = thread_key[b_rows]
        self.known, self.other_threads = thread_sets(ev, host, thread_key)
        self.syncs: dict[int, list[np.ndarray]] = {}
        for key in self.known.tolist():
            mine = b_key == key
            jump, call_start = b_end[mine], b_from[mine]
            k = np.searchsorted(sorted_ends, jump, side="left")  # the first node (device order) ending there
            waited = ends_order[np.minimum(k, len(ends_order) - 1)] if len(ends_order) else k
            o = np.argsort(jump, kind="stable")
            self.syncs[key] = [jump[o], waited[o], call_start[o]]
        # the thread the step's host chain follows: the one that launches or waits for device work
        # (the step marker's thread among them first, then the most launches); with no device work, the
        # step marker's thread, else the one with the most leaf-operator time. A thread that launches
        # nothing and waits for nothing is never chosen (a sleeping background thread).
        known = set(self.known.tolist())
        launches = launch[launch >= 0]
        busy_keys = np.r_[thread_key[launches], b_key]
        marked = int(thread_key[marker[0]]) if len(marker) else None
        tiles = None
        if len(busy_keys):
            uk, counts = np.unique(busy_keys, return_counts=True)
            ranked = uk[np.lexsort((uk, -counts))].tolist()
            self.main = marked if marked in ranked else next((t for t in ranked if t in known), None)
        elif marked in known:
            self.main = marked
        else:  # leaf time counted over the whole trace's tiles: the trace is one group
            tiles = host_tiles(trace, np.flatnonzero(host), self.other_threads)
            leaf = tiles.what == LEAF
            leaf_us: np.ndarray | list = (
                np.bincount(
                    np.searchsorted(unique_values(tiles.thread), tiles.thread),
                    weights=np.where(leaf, tiles.end - tiles.start, 0.0),
                )
                if len(leaf)
                else []
            )
            self.main = int(unique_values(tiles.thread)[int(np.argmax(leaf_us))]) if len(leaf_us) else None
        self.pairs = linked_pairs(trace, self.main, thread_key)
        self._scalars(ev)
        # one group when a step's walks could reach outside it (analysis.critical_path_groups)
        waited = np.concatenate([v[1] for v in self.syncs.values()]) if self.syncs else np.zeros(0, np.int64)
        jumps = np.concatenate([v[0] for v in self.syncs.values()]) if self.syncs else np.zeros(0)
        self.whole = (
            tiles is not None
            or bool((self.source[dev] >= 0).any())
            or not walks_stay_behind(self.ts, self.te, self._waits_on, waited, jumps)
        )
        self.threads: dict[int, list[np.ndarray]] = {}
        self.parent = np.zeros(0, np.int64)
        self._parent_rows = np.zeros(0, np.int64)  # the rows whose ``parent`` entries the last tiles wrote
        if tiles is not None or host_side:
            self.set_host(np.flatnonzero(host), tiles)

    def groups(self, start: np.ndarray, end: np.ndarray) -> Iterator[tuple[int, int, np.ndarray]]:
        """Groups of consecutive steps (``start``/``end`` µs) and their host rows
        (:func:`analysis.critical_path_groups.step_groups`); one group when the trace must be one."""
        ev = self.trace.events
        budget = len(ev) + 1 if self.whole else GROUP_HOST_EVENTS
        return step_groups(ev.ts, ev.dur, self.host, start, end, budget)

    def set_host(self, rows: np.ndarray, tiles: Tiles | None = None) -> None:
        """The host side made of the host events ``rows`` (all of them, or those of a group of steps):
        each known thread's tiles (empty where it has none in ``rows``) with its blocking calls, the
        joins, and the enclosing events (``parent``) for the segments' context."""
        if tiles is None:
            self.threads = {}  # the last group's, freed first
            n = len(self.trace.events)
            if len(self.parent) == n:  # the last group's entries back to −1: one fill for all the groups
                self.parent[self._parent_rows] = -1
            else:
                self.parent = np.full(n, -1, dtype=row_dtype(n))
            tiles = host_tiles(self.trace, rows, self.other_threads, self.parent)
        self.parent, self._parent_rows = tiles.parent, rows
        t_cuts = np.flatnonzero(np.diff(tiles.thread)) + 1 if len(tiles.thread) else np.zeros(0, np.int64)
        t_first = np.r_[0, t_cuts] if len(tiles.thread) else t_cuts
        t_bounds = np.r_[t_first, len(tiles.thread)]
        empty: list[np.ndarray] = [np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0, np.int8)]
        threads: dict[int, list[np.ndarray]] = {key: empty + self.syncs[key] for key in self.known.tolist()}
        for lo_i, hi_i in zip(t_bounds[:-1].tolist(), t_bounds[1:].tolist()):  # one slice per thread
            key = int(tiles.thread[lo_i])
            sl = slice(lo_i, hi_i)
            threads[key] = [tiles.row[sl], tiles.start[sl], tiles.end[sl], tiles.what[sl]] + self.syncs[key]
        self.threads = threads
        add_joins(threads, self.pairs, LEAF)

    def _scalars(self, ev) -> None:
        """Per device node, every number the walk reads at that node, each as a memoryview of a numpy
        array (a read gives a Python float or int, as fast as a list lookup, without a Python object
        per node held): start, end, stream predecessor, the launch's end (−inf: no launch on a known
        thread) and thread, the latest end of any device work at or before the node's start and that
        work (the inferred wait), comm index and row; the names as a list of shared strings."""
        n, L = len(self.dev), self.launch
        at = np.maximum(L, 0)
        key = self.thread_key[at] if n else np.zeros(0, np.int64)
        known = (L >= 0) & np.isin(key, self.known)
        launch_end = np.where(known, ev.ts[at] + ev.dur[at], -np.inf) if n else np.zeros(0)
        self._l_end, self._l_key = _scalar_view(launch_end), _scalar_view(key)
        k = np.searchsorted(self.sorted_ends, self.ts, side="right") - 1 if n else np.zeros(0, np.int64)
        kk = np.maximum(k, 0)
        inf_end = np.where(k >= 0, self.sorted_ends[kk] if n else 0.0, -np.inf)
        inf_node = np.where((k >= 0) & (self.ends_order[kk] != np.arange(n)), self.ends_order[kk] if n else 0, -1)
        del k, kk
        self._inf_end, self._inf_node = _scalar_view(inf_end), _scalar_view(inf_node)
        self._run_inputs = (launch_end, (inf_end, inf_node))
        self._ts, self._te, self._prev = _scalar_view(self.ts), _scalar_view(self.te), _scalar_view(self.prev)
        self._comm_of, self._row = _scalar_view(self.comm_of), _scalar_view(self.dev)
        self._labels = _texts(self.trace.strings)  # every string of the trace, for numpy gathers
        self._names = self._labels[ev.name[self.dev]].tolist() if n else []
        self._replayed_names()

    def _replayed_names(self) -> None:
        """A replayed kernel with a matched capture (:func:`analysis.graph_capture.replay_source`) is named
        by its capturing operator, ``<operator> (graph replay)`` (the Operator table's owner)."""
        self.source = replay_source(self.trace)
        src = self.source[self.dev] if len(self.dev) else np.zeros(0, np.int64)
        if not (src >= 0).any():
            return
        owner = np.where(src >= 0, op_tree(self.trace).op_parent[np.maximum(src, 0)], -1)
        hit = np.flatnonzero(owner >= 0)
        names = _texts(self._names)
        names[hit] = self._labels[self.trace.events.name[owner[hit]]] + REPLAY_SUFFIX
        self._names = names.tolist()

    @property
    def waits_on(self) -> np.ndarray:
        """Per device node, the node its recorded wait is on (−1: none; see :func:`wait_edges`)."""
        return self._waits_on

    @waits_on.setter
    def waits_on(self, value) -> None:
        self._waits_on = np.asarray(value)
        self._waits = _scalar_view(self._waits_on)
        self._stops: np.ndarray | None = None  # made again for the new waits (analysis.critical_path_runs)

    def _stream_run(self, w: Walk, top: int) -> tuple:
        """The stream-order run from device node ``top`` walked at once (:mod:`analysis.critical_path_runs`):
        the state of the node the walk reaches after it."""
        if self._stops is None:
            launch_end, inferred = self._run_inputs
            self._stops = stream_steps(
                self.ts,
                self.te,
                self.prev,
                launch_end,
                self._waits_on,
                None if self.explicit else inferred,
                self.comm_of,
            )
            self._names_array = _texts(self._names)
        k = walk_run(
            w,
            top,
            self._stops,
            self.ts,
            self.te,
            self._memoized(),
            self._names_array,
            self.dev,
            MAX_VISITS - self.visits,
        )
        self.visits += top - k
        return ("dev", k, self._ts[k + 1])

    def _memoized(self) -> np.ndarray:
        """Per device node, whether ``memo`` holds it (kept in step with the dict, which only grows
        until a new walk replaces it)."""
        if self._memo_of is not self.memo:
            self._memo_mask[self._memo_keys] = False
            self._memo_of, self._memo_keys = self.memo, []
        if len(self._memo_keys) != len(self.memo):
            new = list(itertools.islice(self.memo, len(self._memo_keys), None))
            self._memo_mask[new] = True
            self._memo_keys.extend(new)
        return self._memo_mask

    # --- walks: each returns segment arrays (start, end, category, name) from the anchor backward
    def from_end(self, lo: float, hi: float) -> Walk:
        w = Walk(lo, hi, self.memo)
        # the latest end in (lo, hi] of device work and of the main thread's tiles, found by
        # bisection (a scan of every node per step would make a trace of many steps quadratic)
        k = int(np.searchsorted(self.sorted_ends, hi, side="right")) - 1
        dev_end = float(self.sorted_ends[k]) if k >= 0 and self.sorted_ends[k] > lo else None
        host_end = hi
        if self.main is not None and self.main in self.threads:
            ends = self.threads[self.main][2]  # non-decreasing: tiles do not overlap
            j = int(np.searchsorted(ends, hi, side="right")) - 1
            host_end = float(ends[j]) if j >= 0 and ends[j] > lo else lo
        if dev_end is not None and dev_end >= host_end:
            # the first node (in device order) that ends there: ends_order is a stable sort
            i = int(self.ends_order[np.searchsorted(self.sorted_ends, dev_end, side="left")])
            self._run(w, ("dev", i, hi))
        elif self.main is not None:
            self._run(w, ("thr", self.main, hi))
        else:
            w.add(lo, hi, WAIT, "idle")
        return w

    def from_kernel(self, i: int, lo: float) -> Walk:
        w = Walk(lo, float(self.ts[i]), self.memo)
        self._run(w, self._before_dev(w, i))
        return w

    def _run(self, w: Walk, state) -> None:
        while state is not None:
            self.visits += 1
            if self.visits > MAX_VISITS:
                w.add(w.lo, state[2], WAIT, "not walked (graph too large)")
                w.truncated = True
                return
            if state[0] == "dev":
                _, i, t = state
                te = self._te[i]
                end = min(te, t)  # overlapping work on one stream: held up to t only
                if end < t:
                    w.add(end, t, WAIT, "idle")
                if end == te and i in self.memo:  # the rest is known: a chain went through i
                    w.tail = self.memo[i]
                    return
                if self._comm_of[i] >= 0:
                    w.stop, w.stop_at = self._comm_of[i], end
                    return
                if end == te:
                    w.marks.append((len(w.segs), i))
                if self._ts[i] <= w.lo:  # began before the step: the rest of it is this kernel
                    w.add(w.lo, end, KERNEL, self._names[i], self._row[i])
                    return
                w.add(self._ts[i], end, KERNEL, self._names[i], self._row[i])
                state = self._before_dev(w, i)
                if state is not None and state[1] == self._prev[i] >= 0 and state[0] == "dev":
                    state = self._stream_run(w, state[1])  # the stream-order run before i, in one numpy pass
            else:
                state = self._thread(w, state[1], state[2])

    def _before_dev(self, w: Walk, i: int):
        """The predecessor of device node ``i`` at its start (see the module docstring)."""
        t = self._ts[i]
        p = self._prev[i]
        p_end = min(self._te[p], t) if p >= 0 and self._te[p] > w.lo else -np.inf
        key, l_end = self._l_key[i], min(self._l_end[i], t)  # -inf: no launch on a known thread
        if l_end <= w.lo and p_end == -np.inf:
            w.add(w.lo, t, WAIT, "idle")
            return None
        best = max(p_end, l_end)
        b = self._waits[i]
        if b >= 0 and min(self._te[b], t) > max(best, w.lo):  # a recorded wait on that work
            return ("dev", b, t)
        if best < t and not self.explicit:  # started after both: inferred wait on work that ended between
            j = self._inf_node[i]
            if j >= 0 and self._inf_end[i] > max(best, w.lo):
                return ("dev", j, t)
        if p_end >= l_end:
            return ("dev", p, t)
        if l_end < t:
            w.add(l_end, t, WAIT, "idle")
        return ("thr", key, l_end)

    def _thread(self, w: Walk, key: int, t: float):
        """Back along thread ``key`` from ``t`` to the latest blocking call that waited or the latest
        join with a linked thread, or to the step start."""
        rows, s, e, what, jump, waited, call_start, join_at, join_to, join_end = self.threads[key]
        k = int(np.searchsorted(jump, t, side="right")) - 1
        j = int(np.searchsorted(join_at, t, side="right")) - 1
        sync_t = float(jump[k]) if k >= 0 else -np.inf
        join_t = float(join_at[j]) if j >= 0 else -np.inf
        a = max(sync_t, join_t, w.lo)
        if join_t > sync_t and join_t > w.lo:  # blocked on a linked thread: [join, end of blocked time] waits
            b = min(float(join_end[j]), t)
            self._tiles(w, key, b, t)
            w.add(join_t, b, WAIT, "blocked on another thread (autograd)")
            return ("thr", int(join_to[j]), join_t)
        self._tiles(w, key, a, t)
        if k < 0 or sync_t <= w.lo:
            return None
        w.block = (float(call_start[k]), sync_t)  # the host was blocked on the device over this
        return ("dev", int(waited[k]), sync_t)

    def _tiles(self, w: Walk, key: int, a: float, t: float) -> None:
        """The tiles of thread ``key`` over ``[a, t]`` (cpu) and the gaps between them (waiting), backward."""
        if t <= a:
            return
        rows, s, e, what = self.threads[key][:4]
        lo_i, hi_i = int(np.searchsorted(e, a, side="right")), int(np.searchsorted(s, t, side="left"))
        cs, ce = np.clip(s[lo_i:hi_i], a, t), np.clip(e[lo_i:hi_i], a, t)
        keep = ce > cs
        cs, ce, names, kinds = cs[keep], ce[keep], rows[lo_i:hi_i][keep], what[lo_i:hi_i][keep]
        gap_s = np.concatenate([[a], ce])
        gap_e = np.concatenate([cs, [t]])
        g = gap_e > gap_s
        order = np.argsort(-np.concatenate([cs, gap_s[g]]), kind="stable")  # the walk goes backward
        a_all, b_all = np.concatenate([cs, gap_s[g]])[order], np.concatenate([ce, gap_e[g]])[order]
        cats = np.concatenate([np.full(len(cs), CPU), np.full(int(g.sum()), WAIT)])[order]
        label = self._labels[self.trace.events.name[names]]
        label = np.where(kinds == ANNOTATION, label + ANNOTATION_SUFFIX, label)
        label[kinds == UNTRACED] = UNTRACED_NAME
        text = np.concatenate([label, np.full(int(g.sum()), "idle (host)", dtype=object)])[order]
        rows_all = np.concatenate([names, np.full(int(g.sum()), -1)])[order]
        n = len(order)
        w.segs.extend(zip(a_all.tolist(), b_all.tolist(), cats.tolist(), text.tolist(), rows_all.tolist(), [0.0] * n))

    def context(self, row: int) -> dict:
        """The enclosing annotation and Python frame of host event ``row``; for a replayed kernel with a
        matched capture, those of its captured launch."""
        src = int(self.source[row]) if row >= 0 else -1
        return context(self.trace, src if src >= 0 else row, self.parent)


class _ThreadKeys:
    """``keys[rows]``: the thread key ``pid << 32 + tid`` (int64) of event rows, made for those rows only."""

    def __init__(self, ev) -> None:
        self._pid, self._tid = ev.pid, ev.tid

    def __getitem__(self, rows) -> np.ndarray:
        return self._pid[rows].astype(np.int64) * (1 << 32) + self._tid[rows].astype(np.int64)


def _scalar_view(values: np.ndarray) -> memoryview:
    """``values`` (float64, int64 or bool) as a 1-D memoryview: ``view[i]`` is a Python float, int or bool,
    read from the array's buffer (no copy, no Python object per element until read)."""
    values = np.ascontiguousarray(values)
    if values.dtype.kind not in "fib":
        raise TypeError(f"no scalar view of {values.dtype}")
    return values.data  # the array's own buffer as a memoryview


def _texts(strings: list[str]) -> np.ndarray:
    """``strings`` as a 1-D object array (one element per string, whatever they hold)."""
    out = np.empty(len(strings), dtype=object)
    out[:] = strings
    return out
