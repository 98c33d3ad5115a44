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
``s``), the stream on ties. On a host thread at time ``t`` the path goes back along the thread to
the latest sync that waited (its waited work ended inside the call, at ``j ≤ t``) and jumps to that
device work at ``j``; with none it reaches the step start. Time ``[a, b]`` on a thread is split
into its host tiles (category **cpu**, :mod:`analysis.host_tiles`: the outermost operator or launch
call, else the innermost Python frame) and the gaps between them (**waiting**); time between a node's end and the point the path reached it is **waiting** too. So
the segments tile ``[step start, step end]`` exactly. Cross-stream waits are inferred: a device
kernel that starts after both its launch and its stream predecessor ended waited for something else:
its predecessor is then the device work, on any stream, that ended last before it started, when that
ended after both (how a ``cudaStreamWaitEvent`` on another stream's work shows). When the trace
records its waits (CUPTI's ``cuda_sync`` "Stream Wait Event", PyTorch 2.1+, with the
``wait_on_cuda_event_record_corr_id`` of its ``cudaEventRecord`` and ``wait_on_stream``), they are read
instead of inferred (:func:`wait_edges`): the recorded event completes with the last device work
launched on ``wait_on_stream`` before the record (highest correlation below it), and the waiting
stream's first device work launched after the wait depends on it.

**Per-rank summary.** The walk on a rank only leaves it at a communication kernel, so each rank
reduces to *chains*: from its step end, and from the start of each communication kernel, the walk
back to the first communication kernel met (its ``stop``) or to the rank's step start. A chain keeps
its bounds, µs per category, its ten longest segments and its longest non-waiting segment: a few
hundred bytes each, whatever the number of events. Chains of one step share their tails (a node
already walked gives the rest of the chain), so each device node is walked once per step; a rank's
walks visit at most :data:`MAX_VISITS` nodes, past that the rest of a chain is waiting and ``truncated``.
"""

from __future__ import annotations

import numpy as np

from ..trace.categories import DEVICE_KINDS, HOST_WORK_KINDS, LAUNCH_KINDS, PROFILER_STEP_PREFIX
from ..trace.links import launch_of
from ..trace.model import Trace
from .blocking import STREAM_WAIT, BlockingCalls, blocking_calls, recorded_waits
from .clock import shared_origin
from .host_tiles import host_tiles
from .op_tree import op_tree
from .steps import compute_steps

CATEGORIES = ("kernel", "cpu", "communication", "waiting")
KERNEL, CPU, COMM, WAIT = range(4)
TOP = 10
MAX_VISITS = 1_000_000


def rank_chains(trace: Trace, comm_rows: np.ndarray) -> dict:
    """The per-rank summary (see the module docstring). ``comm_rows``: the rows of the communication
    kernels in time order (``analysis.distributed.comm_kernels``). Times are the trace's own (µs);
    the common clock reads them + ``offset_us`` (kept apart: absolute clocks would round). Returns
    ``offset_us``, ``steps`` (per step ``step``, ``start``, ``end``, ``chain``), ``comm`` (``start``,
    ``end``, ``name``, ``row``, ``chain`` per communication kernel, None outside every step) and
    ``truncated``."""
    offset = shared_origin(trace, 0.0)[0]
    g = RankGraph(trace, np.asarray(comm_rows, dtype=np.int64))
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
    for k, (name, lo, hi) in enumerate(zip(steps.names, steps.start.tolist(), steps.end.tolist())):
        g.memo = {}  # chains of one step share their tails (the same lower bound)
        out_steps.append({"step": name, "start": lo, "end": hi,
                          "chain": g.from_end(lo, hi).summary()})
        for c in members[bounds[k]:bounds[k + 1]]:
            chains[c] = g.from_kernel(int(g.comm_dev[c]), lo).summary()
    ev = trace.events
    rows = g.comm_rows
    comm = {"start": ev.ts[rows].tolist(), "end": (ev.ts[rows] + ev.dur[rows]).tolist(),
            "name": [trace.strings[i] for i in ev.name[rows].tolist()], "row": rows.tolist(), "chain": chains}
    return {"offset_us": offset, "steps": out_steps, "comm": comm, "truncated": g.visits > MAX_VISITS}


class RankGraph:
    """One rank's nodes: device work by stream, host threads' tiles and waiting syncs."""

    def __init__(self, trace: Trace, comm_rows: np.ndarray):
        ev = trace.events
        self.trace, self.visits, self.memo = trace, 0, {}
        kind = ev.kind
        finite = np.isfinite(ev.ts) & np.isfinite(ev.dur)  # a time that is not a number is on no path
        dev = np.flatnonzero(np.isin(kind, DEVICE_KINDS) & finite)
        order = np.lexsort((ev.ts[dev], ev.stream[dev], ev.device[dev]))
        dev = dev[order]
        self.dev, self.ts, self.te = dev, ev.ts[dev], ev.ts[dev] + ev.dur[dev]
        same = np.zeros(len(dev), bool)
        same[1:] = (ev.stream[dev][1:] == ev.stream[dev][:-1]) & (ev.device[dev][1:] == ev.device[dev][:-1])
        self.prev = np.where(same, np.arange(len(dev)) - 1, -1)
        pos = np.full(len(ev), -1, dtype=np.int64)
        pos[dev] = np.arange(len(dev))
        self.comm_rows = comm_rows
        self.comm_dev = pos[comm_rows] if len(comm_rows) else np.zeros(0, dtype=np.int64)
        self.comm_of = np.full(len(dev), -1, dtype=np.int64)
        self.comm_of[self.comm_dev[self.comm_dev >= 0]] = np.flatnonzero(self.comm_dev >= 0)
        self.is_comm = self.comm_of >= 0
        self.waits_on, self.explicit = wait_edges(trace, dev)
        launch = launch_of(trace)[dev]
        self.launch = launch
        thread_key = ev.pid.astype(np.int64) * (1 << 32) + ev.tid.astype(np.int64)
        self.thread_key = thread_key
        # host threads: host tiles (not ProfilerStep#; analysis.host_tiles), and the syncs that waited
        host = np.flatnonzero(np.isin(kind, HOST_WORK_KINDS + LAUNCH_KINDS) & finite)
        step_ids = trace.name_mask(lambda s: s.startswith(PROFILER_STEP_PREFIX))
        marker = host[step_ids[host]] if len(host) else host
        host = host[~step_ids[host]] if len(host) else host
        self.threads: dict[int, tuple] = {}
        ends_order = np.argsort(self.te, kind="stable")
        sorted_ends = self.te[ends_order]
        self.ends_order, self.sorted_ends = ends_order, sorted_ends
        bc = blocking_calls(trace)
        host_block = bc.kind != STREAM_WAIT  # the calls that held a host thread
        block = BlockingCalls(bc.rows[host_block], bc.kind[host_block], bc.waited_end_us[host_block])
        py_parent = op_tree(trace).py_parent
        busiest, best = None, -1.0
        by_thread = host[np.lexsort((-ev.dur[host], ev.ts[host], thread_key[host]))]
        cuts = np.flatnonzero(np.diff(thread_key[by_thread])) + 1
        for rows in np.split(by_thread, cuts) if len(by_thread) else []:  # one slice per thread
            key = int(thread_key[rows[0]])
            tile_rows, tile_s, tile_e = host_tiles(trace, rows, py_parent)
            at = np.flatnonzero(np.isin(block.rows, rows)) if len(dev) else np.zeros(0, np.int64)
            jump = block.waited_end_us[at]
            jump = jump[np.isfinite(jump)]
            k = np.searchsorted(sorted_ends, jump, side="left")  # the first node (device order) ending there
            waited = ends_order[np.minimum(k, len(ends_order) - 1)] if len(ends_order) else k
            o = np.argsort(jump, kind="stable")
            self.threads[key] = (tile_rows, tile_s, tile_e, jump[o], waited[o])
            busy = float((tile_e - tile_s).sum())
            if busy > best:
                busiest, best = key, busy
        marked = int(thread_key[marker[0]]) if len(marker) else None
        self.main = marked if marked in self.threads else busiest
        self._scalars(ev)

    def _scalars(self, ev) -> None:
        """Per device node, as Python lists, every number the walk reads at that node (one numpy pass,
        so that a visit is list lookups, not numpy scalar reads): start, end, stream predecessor, the
        launch's end (−inf: no launch on a known thread) and thread, the latest end of any device work
        at or before the node's start and that work (the inferred wait), comm index, row and name."""
        n, L = len(self.dev), self.launch
        at = np.maximum(L, 0)
        key = self.thread_key[at] if n else np.zeros(0, np.int64)
        known = (L >= 0) & np.isin(key, np.fromiter(self.threads, dtype=np.int64, count=len(self.threads)))
        self._l_end = np.where(known, ev.ts[at] + ev.dur[at], -np.inf).tolist() if n else []
        self._l_key = key.tolist()
        k = np.searchsorted(self.sorted_ends, self.ts, side="right") - 1 if n else np.zeros(0, np.int64)
        kk = np.maximum(k, 0)
        self._inf_end = np.where(k >= 0, self.sorted_ends[kk] if n else 0.0, -np.inf).tolist()
        self._inf_node = np.where((k >= 0) & (self.ends_order[kk] != np.arange(n)), self.ends_order[kk] if n else 0,
                                  -1).tolist()
        self._ts, self._te, self._prev = self.ts.tolist(), self.te.tolist(), self.prev.tolist()
        self._comm_of, self._row = self.comm_of.tolist(), self.dev.tolist()
        self._names = np.asarray(self.trace.strings, dtype=object)[ev.name[self.dev]].tolist() if n else []

    @property
    def waits_on(self) -> np.ndarray:
        """Per device node, the node its recorded wait is on (−1: none; see :func:`wait_edges`)."""
        return self._waits_on

    @waits_on.setter
    def waits_on(self, value) -> None:
        self._waits_on = np.asarray(value)
        self._waits = self._waits_on.tolist()

    # --- walks: each returns segment arrays (start, end, category, name) from the anchor backward
    def from_end(self, lo: float, hi: float) -> "_Walk":
        w = _Walk(lo, hi, self.memo)
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

    def from_kernel(self, i: int, lo: float) -> "_Walk":
        w = _Walk(lo, float(self.ts[i]), self.memo)
        self._run(w, self._before_dev(w, i))
        return w

    def _run(self, w: "_Walk", state) -> None:
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
            else:
                state = self._thread(w, state[1], state[2])

    def _before_dev(self, w: "_Walk", i: int):
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

    def _thread(self, w: "_Walk", key: int, t: float):
        """Back along thread ``key`` from ``t`` to the latest sync that waited, or to the step start."""
        rows, s, e, jump, waited = self.threads[key]
        k = int(np.searchsorted(jump, t, side="right")) - 1
        a = max(float(jump[k]), w.lo) if k >= 0 else w.lo
        lo_i, hi_i = int(np.searchsorted(e, a, side="right")), int(np.searchsorted(s, t, side="left"))
        cs, ce = np.clip(s[lo_i:hi_i], a, t), np.clip(e[lo_i:hi_i], a, t)
        keep = ce > cs
        cs, ce, names = cs[keep], ce[keep], rows[lo_i:hi_i][keep]
        gap_s = np.concatenate([[a], ce])
        gap_e = np.concatenate([cs, [t]])
        g = gap_e > gap_s
        order = np.argsort(-np.concatenate([cs, gap_s[g]]), kind="stable")  # the walk goes backward
        a_all, b_all = np.concatenate([cs, gap_s[g]])[order], np.concatenate([ce, gap_e[g]])[order]
        cats = np.concatenate([np.full(len(cs), CPU), np.full(int(g.sum()), WAIT)])[order]
        label = self.trace.strings
        idx = self.trace.events.name[names]
        text = [label[j] for j in idx.tolist()] + ["idle (host)"] * int(g.sum())
        rows_all = np.concatenate([names, np.full(int(g.sum()), -1)])[order]
        w.segs.extend(zip(a_all.tolist(), b_all.tolist(), cats.tolist(), [text[j] for j in order.tolist()],
                          rows_all.tolist()))
        if k < 0 or jump[k] <= w.lo:
            return None
        dev_row = int(waited[k])
        return ("dev", dev_row, float(jump[k]))

    def _name(self, row: int) -> str:
        return self.trace.strings[self.trace.events.name[row]]


def wait_edges(trace: Trace, dev: np.ndarray) -> tuple[np.ndarray, bool]:
    """Recorded cross-stream waits (:func:`analysis.blocking.recorded_waits`): per device node (``dev``:
    device-work rows sorted by device, stream, start), the node it waits on (−1: none), and whether the
    trace records its waits at all (then none is inferred). A wait keeps the recorded node that ends last
    when several precede one."""
    ev = trace.events
    out = np.full(len(dev), -1, dtype=np.int64)
    if "wait_event_correlation" not in ev.columns or not len(dev):
        return out, False
    if not ((ev.wait_event_correlation >= 0) & (ev.wait_stream >= 0) & (ev.stream >= 0)).any():
        return out, False
    _, src, dst = recorded_waits(trace, dev)
    by_end = np.argsort(ev.ts[dev][src] + ev.dur[dev][src], kind="stable")  # later ends assigned last win
    out[dst[by_end]] = src[by_end]
    return out, True


class _Walk:
    """The segments of one chain, collected backward as ``(start, end, category, name)``; ``marks``
    are the device nodes met (where their segment begins) and ``tail`` the memoized rest of the walk."""

    def __init__(self, lo: float, hi: float, memo: dict):
        self.lo, self.hi, self.memo = lo, hi, memo
        self.segs: list[tuple] = []
        self.marks: list[tuple[int, int]] = []
        self.tail: tuple | None = None
        self.stop, self.stop_at, self.truncated = -1, lo, False

    def add(self, a: float, b: float, cat: int, name: str, row: int = -1) -> None:
        if b > a:
            self.segs.append((float(a), float(b), cat, name, row))

    def fold(self, memo: dict) -> tuple:
        """The summary state of the whole chain, ``(by_category, top, work, stop, stop_at, truncated)``,
        folding segments from the last (earliest) to the first; each marked node's suffix goes to ``memo``."""
        by_cat, top, work, stop, stop_at, trunc = self.tail or ([0.0] * len(CATEGORIES), [], None, self.stop,
                                                               self.stop_at, self.truncated)
        by_cat, top = list(by_cat), list(top)
        trunc = trunc or self.truncated
        marks = dict(self.marks)
        for p in range(len(self.segs) - 1, -1, -1):
            a, b, cat, name, _ = seg = self.segs[p]
            d = b - a
            by_cat[cat] += d
            if len(top) < TOP or d > top[-1][1] - top[-1][0]:
                top = sorted(top + [seg], key=lambda s: -(s[1] - s[0]))[:TOP]
            if cat != WAIT and (work is None or d > work[1] - work[0]):
                work = seg
            if p in marks:
                memo[marks[p]] = (tuple(by_cat), tuple(top), work, stop, stop_at, trunc)
        return by_cat, top, work, stop, stop_at, trunc

    def summary(self) -> dict:
        """Bounds (common clock), µs per category, the ten longest segments and the longest work."""
        by_cat, top, work, stop, stop_at, trunc = self.fold(self.memo)
        lo = stop_at if stop >= 0 else self.lo
        return {"lo": lo, "hi": self.hi, "by_category": [float(x) for x in by_cat],
                "top": [_segment(s) for s in top], "work": _segment(work) if work else None,
                "stop": stop, "truncated": bool(trunc)}


def _segment(seg: tuple) -> list:
    """A path segment as it travels: ``[category index, name, start_us, dur_us, row]`` (a list: the
    analysis cache's msgpack round trip gives lists back); ``start_us`` on
    the rank's own clock (as in its trace), ``row`` its event in that trace (the kernel, or the
    event naming the host tile), −1 for waiting."""
    a, b, cat, name, row = seg
    return [int(cat), name, a, b - a, int(row)]
