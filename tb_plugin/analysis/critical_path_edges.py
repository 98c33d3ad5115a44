"""Edges of the critical path's graph that are not program or stream order (see
:mod:`analysis.critical_path`): threads linked by autograd, and recorded cross-stream waits."""

from __future__ import annotations

import numpy as np

from ..trace.model import Trace
from .blocking import recorded_waits


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
