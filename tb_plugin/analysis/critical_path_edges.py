"""Edges of the critical path's graph that are not program or stream order (see
:mod:`analysis.critical_path`): threads linked by autograd, and recorded cross-stream waits."""

from __future__ import annotations

import numpy as np

from ..trace.model import Trace
from ..trace.uniques import unique_values
from .blocking import recorded_waits


def linked_pairs(trace: Trace, main: int | None, thread_key) -> np.ndarray:
    """The linked threads' key pairs, both ways (see :func:`add_joins`): :func:`linked_threads`, else the
    threads running ``autograd::engine::`` nodes with the ``main`` thread (``thread_key[rows]``: the rows'
    thread keys)."""
    pairs = linked_threads(trace)
    if not len(pairs) and main is not None:
        engine = trace.name_mask(lambda s: s.startswith("autograd::engine::"))
        eng = unique_values(thread_key[np.flatnonzero(engine)])
        pairs = np.array([(main, int(t)) for t in eng.tolist() if t != main], dtype=np.int64).reshape(-1, 2)
    return np.unique(np.concatenate([pairs, pairs[:, ::-1]]), axis=0) if len(pairs) else pairs


def add_joins(threads: dict[int, list[np.ndarray]], pairs: np.ndarray, leaf: int) -> None:
    """Per thread, where it waited for a linked thread (see :mod:`analysis.critical_path`): the ends of
    the linked thread's leaf work (tiles of kind ``leaf``) inside this thread's blocked time (no leaf
    work of its own), each with the end of that blocked time, appended to each thread's state (its
    tiles' rows, starts, ends and kinds first, then its blocking calls) as join times, threads and
    blocked-time ends (µs). Linked: ``pairs`` (:func:`linked_pairs`)."""
    for state in threads.values():
        state.extend([np.zeros(0), np.zeros(0, np.int64), np.zeros(0)])
    for key, other in pairs.tolist():
        if key not in threads or other not in threads:
            continue
        mine, theirs = threads[key], threads[other]
        my_leaf = mine[3] == leaf
        ls, le = mine[1][my_leaf], mine[2][my_leaf]
        x = theirs[2][theirs[3] == leaf]  # the other thread's leaf ends
        k = np.searchsorted(ls, x, side="left") - 1
        inside = (k >= 0) & (le[np.maximum(k, 0)] >= x) if len(ls) else np.zeros(len(x), bool)
        x = x[~inside]
        nxt = np.searchsorted(ls, x, side="left")
        block_end = np.where(nxt < len(ls), ls[np.minimum(nxt, len(ls) - 1)] if len(ls) else 0.0, np.inf)
        at = np.r_[mine[7], x]
        to = np.r_[mine[8], np.full(len(x), other, dtype=np.int64)]
        be = np.r_[mine[9], block_end]
        o = np.argsort(at, kind="stable")
        mine[7], mine[8], mine[9] = at[o], to[o], be[o]


def linked_threads(trace: Trace) -> np.ndarray:
    """``(thread, thread)`` key pairs of the ``fwdbwd`` flows that cross threads: a forward operator and
    its backward node on the autograd engine's thread (keys ``pid << 32 | tid``)."""
    fl = trace.flows
    if not len(fl):
        return np.zeros((0, 2), dtype=np.int64)
    key = fl.pid.astype(np.int64) * (1 << 32) + fl.tid.astype(np.int64)
    order = np.lexsort((fl.phase, fl.id))
    fid, ph, k = fl.id[order], fl.phase[order], key[order]
    pair = np.flatnonzero((fid[1:] == fid[:-1]) & (ph[:-1] == 0) & (ph[1:] == 1) & (k[1:] != k[:-1]))
    if not len(pair):
        return np.zeros((0, 2), dtype=np.int64)
    return np.unique(np.stack([k[pair], k[pair + 1]], axis=1), axis=0)


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
