"""Which clock a trace's timestamps can be compared on across the ranks of one job.

- ``clock_sync``: Composer writes ``clock_sync_timestamp_us`` per rank, its clock read (µs) at one
  instant shared by every rank (after a barrier). A time ``t`` of that rank is ``t − clock_sync`` µs
  after the sync instant, on every rank alike, whatever the offsets between their clocks.
- ``base_time``: Kineto's ``baseTimeNanoseconds``, the wall clock of the trace's time base: a time
  ``t`` is ``t + baseTimeNanoseconds / 1000`` µs of wall clock.
- ``raw``: neither; the timestamps as written (µs).

Ranks are aligned by comparing their *shared origin*: the first event's time on the shared clock.
"""

from __future__ import annotations

import math

from ..trace.model import Trace


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def shared_origin(trace: Trace, origin_us: float) -> tuple[float, str]:
    """``(origin on the shared clock in µs, clock)`` for a trace whose first event is at ``origin_us``
    (absolute µs as written); ``clock`` is ``"clock_sync"``, ``"base_time"`` or ``"raw"``."""
    sync = _number((trace.meta.get("metadata_values") or {}).get("clock_sync_timestamp_us"))
    if sync is not None:
        return origin_us - sync, "clock_sync"
    base_ns = _number(trace.meta.get("baseTimeNanoseconds"))
    if base_ns is not None:
        return origin_us + base_ns / 1000.0, "base_time"
    return origin_us, "raw"


def wall_offset_us(trace: Trace) -> float | None:
    """µs to add to a time of ``trace`` (as written) to read it on the wall clock (µs since the Unix
    epoch, the clock of an allocator snapshot's ``time_us``): ``baseTimeNanoseconds / 1000``; None
    when the trace does not write it."""
    base_ns = _number(trace.meta.get("baseTimeNanoseconds"))
    return None if base_ns is None else base_ns / 1000.0
