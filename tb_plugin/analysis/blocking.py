"""Blocking host calls: the one classifier of host runtime/driver calls that returned only after device
work finished (µs). The critical path, Insights and the runtime-calls table all read it.

Four kinds (:data:`BLOCKING_KINDS`):

- **synchronize**: ``cuda``/``hip`` ``Stream``/``Device``/``Event``/``Thread``/``Ctx`` ``Synchronize``,
  ``cuStreamSynchronize``, ``cuCtxSynchronize``, ``cuEventSynchronize`` (:func:`always_blocks`);
- **blocking_copy**: the synchronous copies (``cudaMemcpy``, ``cudaMemcpy2D``, ``hipMemcpy``,
  ``hipMemcpyDtoH``, ``cuMemcpyDtoH_v2``…: every ``cudaMemcpy*``/``hipMemcpy*``/``cuMemcpy*`` name without
  ``Async`` and without ``WithStream``), and the asynchronous ones (``cudaMemcpyAsync``,
  ``hipMemcpyAsync``, ``hipMemcpyWithStream``, ``cuMemcpy*Async``) whose correlated device copy ended
  inside the call (a D2H copy to pageable memory returns only after the copy);
- **event_poll**: a polling loop of ``cudaEventQuery``/``hipEventQuery`` (two or more queries in a row on
  one thread, no other runtime call between): its last query is the one that first saw the event
  complete, so it waited for the device work that ended since the previous query started;
- **stream_wait**: the recorded waits of one stream on another's event (CUPTI's ``cuda_sync``
  "Stream Wait Event" with ``wait_on_cuda_event_record_corr_id``): they hold a *stream*, not the host, so
  a consumer that counts host stalls keeps ``kind != stream_wait``.

``blocked_from_us``: when the wait began: the call's start; for a poll, its loop's first query's start.
``waited_end_us``: the end of the device work the call waited for. For a copy it is its own device
copy's end when correlated; for a synchronize, a synchronous copy without a correlated copy and a poll,
the latest end of any device work inside the call (a poll: since the previous query started); for a
stream wait, the end of the last device work launched on the recorded stream before the record. NaN
when nothing ended inside the call (the call returned without waiting on traced work).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..trace.links import device_mask, launch_mask, launch_of
from ..trace.model import Table, Trace
from .op_tree import by_thread_and_start

BLOCKING_KINDS = ("synchronize", "blocking_copy", "event_poll", "stream_wait")
SYNCHRONIZE, BLOCKING_COPY, EVENT_POLL, STREAM_WAIT = range(4)

_SYNCHRONIZE = frozenset(
    f"{api}{what}Synchronize" for api in ("cuda", "hip") for what in ("Stream", "Device", "Event", "Thread", "Ctx")
) | {"cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize"}
_COPY_PREFIXES = ("cudaMemcpy", "hipMemcpy", "cuMemcpy")
_EVENT_QUERY = frozenset({"cudaEventQuery", "hipEventQuery", "cuEventQuery"})


@dataclass(frozen=True)
class BlockingCalls:
    """Host calls that returned only after device work finished (see the module docstring)."""

    rows: np.ndarray  # int64 event rows, ascending
    kind: np.ndarray  # int8 per row: index into BLOCKING_KINDS
    waited_end_us: np.ndarray  # float64 per row: end (µs) of the device work waited for; NaN when unknown
    blocked_from_us: np.ndarray  # float64 per row: when the wait began (µs): the call's start, a poll's first query's


def _base(name: str) -> str:
    """An API name without its ABI suffixes (``cuMemcpyDtoH_v2``, ``cudaMemcpy_ptds``)."""
    return name.split("_", 1)[0]


def always_blocks(name: str) -> bool:
    """Calls that block by definition: the synchronize calls and the synchronous copies."""
    base = _base(name)
    return base in _SYNCHRONIZE or _sync_copy(base)


def _sync_copy(base: str) -> bool:
    return base.startswith(_COPY_PREFIXES) and "Async" not in base and "WithStream" not in base


def _async_copy(name: str) -> bool:
    base = _base(name)
    return base.startswith(_COPY_PREFIXES) and not _sync_copy(base)


def blocking_calls(trace: Trace) -> BlockingCalls:
    """Every host call that returned only after device work ended (kept per trace)."""
    return trace.memo("blocking_calls", lambda: _blocking_calls(trace))


def _blocking_calls(trace: Trace) -> BlockingCalls:
    # every step reads only the launches and the device work, never a column of every event: such a
    # temporary (6.7 M events: 54 MB a float column) is fresh memory each time it is made, and made these
    # calls grow much faster than the trace (docs/PERFORMANCE.md, twenty-third session)
    ev = trace.events
    calls = _finite(ev, np.flatnonzero(launch_mask(trace)))
    dev = _finite(ev, np.flatnonzero(device_mask(trace)))
    dev_end = ev.ts[dev] + ev.dur[dev]
    sorted_ends = np.sort(dev_end)

    def latest_end_in(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """The latest device end in ``(lo, hi]`` per pair (NaN: none)."""
        k = np.searchsorted(sorted_ends, hi, side="right") - 1
        got = sorted_ends[np.maximum(k, 0)] if len(sorted_ends) else np.zeros(len(hi))
        return np.where((k >= 0) & (got > lo), got, np.nan)

    rows_out, kind_out, waited_out, from_out = [], [], [], []
    names = ev.name[calls]
    blocks = trace.name_table(always_blocks)[names]
    async_copy = trace.name_table(_async_copy)[names]
    copies = calls[blocks | async_copy]  # the calls whose own device copy may be what they waited for
    own = _own_copy_end(trace, dev, dev_end, copies)

    # synchronize calls and synchronous copies: by name
    named = calls[blocks]
    sync_kind = np.where(
        trace.name_table(lambda s: _base(s) in _SYNCHRONIZE)[names[blocks]], SYNCHRONIZE, BLOCKING_COPY
    )
    waited = latest_end_in(ev.ts[named], ev.ts[named] + ev.dur[named])
    # a synchronous copy waited for its own device copy when it has one (launch ↔ copy by correlation)
    own_named = own[np.searchsorted(copies, named)]
    has_own = (sync_kind == BLOCKING_COPY) & np.isfinite(own_named)
    waited = np.where(has_own, own_named, waited)
    rows_out.append(named)
    kind_out.append(sync_kind)
    waited_out.append(waited)
    from_out.append(ev.ts[named])

    # asynchronous copies whose device copy ended inside the call
    async_rows = calls[async_copy]
    a_end = own[np.searchsorted(copies, async_rows)]
    a_start = ev.ts[async_rows]
    inside = np.isfinite(a_end) & (a_end > a_start) & (a_end <= a_start + ev.dur[async_rows])
    rows_out.append(async_rows[inside])
    kind_out.append(np.full(int(inside.sum()), BLOCKING_COPY))
    waited_out.append(a_end[inside])
    from_out.append(a_start[inside])

    # polling loops of event queries: the last query of each run of two or more on one thread
    poll, poll_waited, poll_from = _event_polls(trace, calls, names, latest_end_in)
    rows_out.append(poll)
    kind_out.append(np.full(len(poll), EVENT_POLL))
    waited_out.append(poll_waited)
    from_out.append(poll_from)

    # recorded stream waits
    w_rows, src, _ = recorded_waits(trace, dev)
    rows_out.append(w_rows)
    kind_out.append(np.full(len(w_rows), STREAM_WAIT))
    waited_out.append(dev_end[src] if len(src) else np.zeros(0))
    from_out.append(ev.ts[w_rows])

    rows = np.concatenate(rows_out).astype(np.int64)
    order = np.argsort(rows, kind="stable")
    return BlockingCalls(
        rows=rows[order],
        kind=np.concatenate(kind_out).astype(np.int8)[order],
        waited_end_us=np.concatenate(waited_out).astype(np.float64)[order],
        blocked_from_us=np.concatenate(from_out).astype(np.float64)[order],
    )


def _finite(ev: Table, rows: np.ndarray) -> np.ndarray:
    """The rows of ``rows`` whose start and duration are finite."""
    return rows[np.isfinite(ev.ts[rows]) & np.isfinite(ev.dur[rows])]


def _own_copy_end(trace: Trace, dev: np.ndarray, dev_end: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Per launch row of ``rows`` (ascending), the latest end of the device work it launched (NaN: none)."""
    out = np.full(len(rows), np.nan)
    if not len(rows):
        return out
    lau = launch_of(trace)[dev]
    at = np.minimum(np.searchsorted(rows, lau), len(rows) - 1)
    hit = rows[at] == lau  # (no launch: -1, never a row)
    if hit.any():
        ends = dev_end[hit]
        order = np.argsort(ends, kind="stable")  # later ends written last win
        out[at[hit][order]] = ends[order]
    return out


def _event_polls(
    trace: Trace, calls: np.ndarray, names: np.ndarray, latest_end_in
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The last query of each polling run, the device end it saw (see the module docstring) and the
    start of the run's first query (``names``: the calls' name ids)."""
    ev = trace.events
    if not len(calls):
        return calls, np.zeros(0), np.zeros(0)
    thread = ev.pid[calls].astype(np.int64) * (1 << 32) + ev.tid[calls].astype(np.int64)
    order = by_thread_and_start(thread, ev.ts[calls], ())  # per thread in time order
    calls, thread = calls[order], thread[order]
    query = trace.name_table(lambda s: s in _EVENT_QUERY)[names[order]]
    same = np.zeros(len(calls), bool)
    same[1:] = query[1:] & query[:-1] & (thread[1:] == thread[:-1])  # follows a query of its thread
    last = same & ~np.concatenate([same[1:], [False]])  # ends a run of two or more
    at = np.flatnonzero(last)
    first = np.maximum.accumulate(np.where(query & ~same, np.arange(len(calls)), 0))[at]
    waited = latest_end_in(ev.ts[calls[at - 1]], ev.ts[calls[at]] + ev.dur[calls[at]])
    keep = np.isfinite(waited)
    return calls[at][keep], waited[keep], ev.ts[calls[first[keep]]]


def recorded_waits(trace: Trace, dev: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Recorded cross-stream waits: ``(wait rows, recorded node, waiting node)``, the nodes as
    positions in ``dev`` (device-work rows sorted by device, stream, start, or any order). The recorded
    node is the last device work launched on ``wait_on_stream`` before the record (highest correlation
    below the record's); the waiting node the first one launched on the waiting stream after the wait.
    A stream id found on several devices is ambiguous and not used (a wait event names streams only)."""
    ev = trace.events
    empty = np.zeros(0, dtype=np.int64)
    if "wait_event_correlation" not in ev.columns or not len(dev):
        return empty, empty, empty
    w = np.flatnonzero((ev.wait_event_correlation >= 0) & (ev.wait_stream >= 0) & (ev.stream >= 0))
    if not len(w):
        return empty, empty, empty
    corr = ev.correlation[dev]
    lanes = np.stack([ev.device[dev].astype(np.int64), ev.stream[dev]], axis=1)
    uniq, lane = np.unique(lanes, axis=0, return_inverse=True)
    lane = lane.reshape(-1)
    key = lane * (1 << 40) + np.where(corr >= 0, corr, 0)  # (lane, correlation) in one sortable int
    order = np.argsort(key, kind="stable")
    skey = key[order]
    ids, first, count = np.unique(uniq[:, 1], return_index=True, return_counts=True)

    def lane_of(stream):
        pos = np.minimum(np.searchsorted(ids, stream), len(ids) - 1)
        return np.where((ids[pos] == stream) & (count[pos] == 1), first[pos], -1)

    src_lane, dst_lane = lane_of(ev.wait_stream[w].astype(np.int64)), lane_of(ev.stream[w])
    k = np.searchsorted(skey, src_lane * (1 << 40) + ev.wait_event_correlation[w], side="left") - 1
    src = order[np.maximum(k, 0)]
    j = np.searchsorted(skey, dst_lane * (1 << 40) + ev.correlation[w], side="right")
    dst = order[np.minimum(j, len(order) - 1)]
    ok = (src_lane >= 0) & (dst_lane >= 0) & (k >= 0) & (lane[src] == src_lane) & (j < len(order))
    ok &= (lane[dst] == dst_lane) & (corr[src] >= 0) & (ev.correlation[w] >= 0)
    return w[ok], src[ok], dst[ok]


__all__ = ["BLOCKING_KINDS", "BlockingCalls", "always_blocks", "blocking_calls", "recorded_waits"]
