"""Host runtime/driver calls that returned only after device work finished (the one classifier shared
by the critical path, the Insights and the runtime-calls table). Times are µs.

- **Always blocking** (:func:`always_blocks`): stream/device/event/context synchronize calls and the
  synchronous copies ``cudaMemcpy``/``hipMemcpy`` (exact names; the ``…Async`` forms are not).
- **Blocking copy**: an asynchronous copy call (``cudaMemcpyAsync``, ``hipMemcpyAsync``,
  ``hipMemcpyWithStream``, ``cuMemcpy…Async``) whose correlated device copy ended inside the call
  (a device-to-host copy into pageable memory returns only when the copy is done).
- **Stream wait**: ``cudaStreamWaitEvent``/``hipStreamWaitEvent`` calls that lasted until device work
  they correlate with ended (rare: they normally return at once).

``waited_end_us`` is the end of the device work the call waited for: its correlated device work, else
the last device work that ended inside the call (any stream), else NaN.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..trace.categories import LAUNCH_KINDS
from ..trace.links import device_mask, launch_of
from ..trace.model import Trace

BLOCKING_KINDS = ("synchronize", "blocking_copy", "event_poll", "stream_wait")
SYNCHRONIZE, BLOCKING_COPY, EVENT_POLL, STREAM_WAIT = range(4)

_SYNC_NAMES = frozenset(
    f"{p}{s}" for p in ("cuda", "hip") for s in ("StreamSynchronize", "DeviceSynchronize", "EventSynchronize"))
_DRIVER_SYNC_NAMES = frozenset(("cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize"))
_SYNC_COPY_NAMES = frozenset(("cudaMemcpy", "hipMemcpy", "cudaMemcpy2D", "hipMemcpy2D", "cudaMemcpyFromSymbol",
                              "cudaMemcpyToSymbol", "hipMemcpyDtoH", "hipMemcpyHtoD", "cuMemcpyDtoH_v2",
                              "cuMemcpyHtoD_v2", "cuMemcpyDtoH", "cuMemcpyHtoD"))
_ASYNC_COPY_NAMES = frozenset(("cudaMemcpyAsync", "hipMemcpyAsync", "hipMemcpyWithStream", "cuMemcpyAsync",
                               "cuMemcpyDtoHAsync_v2", "cuMemcpyHtoDAsync_v2", "cudaMemcpy2DAsync",
                               "hipMemcpyDtoHAsync", "hipMemcpy2DAsync"))
_WAIT_NAMES = frozenset(("cudaStreamWaitEvent", "hipStreamWaitEvent", "cuStreamWaitEvent"))


@dataclasses.dataclass(frozen=True)
class BlockingCalls:
    rows: np.ndarray  # int64 event rows of host calls that returned only after device work finished
    kind: np.ndarray  # int8 per row: index into BLOCKING_KINDS
    waited_end_us: np.ndarray  # float64 per row: end (µs) of the device work waited for; NaN when unknown


def always_blocks(name: str) -> bool:
    """Calls that block the host by definition: synchronize calls and synchronous copies."""
    return name in _SYNC_NAMES or name in _DRIVER_SYNC_NAMES or name in _SYNC_COPY_NAMES


def blocking_calls(trace: Trace) -> BlockingCalls:
    """Every host call that returned only after device work ended (module docstring), in row order."""
    return trace.memo("blocking_calls", lambda: _blocking_calls(trace))


def _blocking_calls(trace: Trace) -> BlockingCalls:
    ev = trace.events
    calls = np.isin(ev.kind, LAUNCH_KINDS)
    sync = calls & trace.name_mask(lambda s: s in _SYNC_NAMES or s in _DRIVER_SYNC_NAMES)
    sync_copy = calls & trace.name_mask(lambda s: s in _SYNC_COPY_NAMES)
    async_copy = calls & trace.name_mask(lambda s: s in _ASYNC_COPY_NAMES)
    wait = calls & trace.name_mask(lambda s: s in _WAIT_NAMES)
    # the latest end of the device work each call launched (NaN without any)
    corr_end = np.full(len(ev), np.nan)
    dev = np.flatnonzero(device_mask(trace))
    src = launch_of(trace)[dev]
    has = src >= 0
    if has.any():
        ends = ev.ts[dev[has]] + ev.dur[dev[has]]
        acc = np.full(len(ev), -np.inf)
        np.maximum.at(acc, src[has], ends)
        corr_end = np.where(np.isfinite(acc), acc, np.nan)
    start, end = ev.ts, ev.ts + ev.dur
    waited_inside = np.isfinite(corr_end) & (corr_end > start) & (corr_end <= end)
    kind = np.full(len(ev), -1, dtype=np.int8)
    kind[sync] = SYNCHRONIZE
    kind[sync_copy | (async_copy & waited_inside)] = BLOCKING_COPY
    kind[wait & waited_inside] = STREAM_WAIT
    rows = np.flatnonzero(kind >= 0)
    waited = corr_end[rows]
    unknown = ~np.isfinite(waited)
    if unknown.any() and len(dev):
        # the last device work (any stream) that ended inside the call
        dev_end = np.sort(ev.ts[dev] + ev.dur[dev])
        r = rows[unknown]
        k = np.searchsorted(dev_end, end[r], side="right") - 1
        ok = (k >= 0) & (dev_end[np.maximum(k, 0)] > start[r])
        waited[unknown] = np.where(ok, dev_end[np.maximum(k, 0)], np.nan)
    return BlockingCalls(rows.astype(np.int64), kind[rows], waited.astype(np.float64))
