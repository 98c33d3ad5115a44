"""Links between events: launch ↔ device work (``correlation``).

The launch (runtime or driver call) may appear before or after its device work in the file; one
launch can start several device events (``cudaGraphLaunch`` replays a whole graph under one
correlation id).
"""

from __future__ import annotations

import numpy as np

from .categories import DEVICE_KINDS, LAUNCH_KINDS
from .model import Trace
from .sparse import row_dtype


def device_mask(trace: Trace) -> np.ndarray:
    """Events that are device work: kernels, memcpy and memset."""
    return trace.memo("device_mask", lambda: np.isin(trace.events.kind, DEVICE_KINDS))


def launch_mask(trace: Trace) -> np.ndarray:
    """Events that launch device work: runtime (``cuda_runtime``/``Runtime``/HIP) and driver calls."""
    return trace.memo("launch_mask", lambda: np.isin(trace.events.kind, LAUNCH_KINDS))


def launch_of(trace: Trace) -> np.ndarray:
    """For every event, the row of the launch with the same correlation id, or -1.

    Only device events get a value; when several launches share an id, the first one wins. int32
    rows where the trace has under 2³¹ events (:func:`.sparse.row_dtype`), else int64.
    """
    return trace.memo("launch_of", lambda: _launch_of(trace))


def _launch_of(trace: Trace) -> np.ndarray:
    ev = trace.events
    out: np.ndarray = np.full(len(ev), -1, dtype=row_dtype(len(ev)))
    launches = np.flatnonzero(launch_mask(trace) & (ev.correlation >= 0))
    devices = np.flatnonzero(device_mask(trace) & (ev.correlation >= 0))
    if len(launches) == 0 or len(devices) == 0:
        return out
    corr = ev.correlation[launches]
    order = np.argsort(corr, kind="stable")
    sorted_corr = corr[order]
    pos = np.searchsorted(sorted_corr, ev.correlation[devices])
    pos = np.minimum(pos, len(sorted_corr) - 1)
    hit = sorted_corr[pos] == ev.correlation[devices]
    out[devices[hit]] = launches[order[pos[hit]]]
    return out
