"""Counter tracks of the timeline, at a resolution that follows the zoom (one value per pixel bin).

For bins of equal width over a window (µs), by the one bin rule of :mod:`.series` (a sample on an
edge belongs to the bin that starts there; per bin, the *held maximum*: the value in force at the
bin's start and every sample inside it):

- **GPU Utilization** of a device, per bin = the fraction of the bin with at least one kernel running
  (0–1), the same definition as the Overview's but per bin;
- **Est. SM Efficiency**, per bin = the bin average of min(1, Σ blocks-per-SM of running kernels)
  over the part of the bin when no kernel without launch geometry runs (the Overview's rule,
  :func:`.gpu.sm_level`); 0 for a bin covered entirely by such kernels;
- **Queue length** of each GPU stream, per bin = the most kernels launched but not yet started;
- **Memory allocated / reserved** per device, per bin = the held maximum of the Memory view's curve
  (:func:`.memory.curves`: ``Total Allocated`` / ``Total Reserved``, or the running sum of ``Bytes``
  without totals), in bytes, 0 before the first event. Named ``<device> Memory Allocated`` with the
  device named as every view names it (``GPU 0``, ``CPU``; the Memory view's key ``GPU0``).
- **Trace counters** (``C`` events, e.g. Composer's system profiler: ``cpu/cpu_percent``,
  ``memory/…``, ``disk/…``, ``network/…``), one track per series named ``<event>/<arg>``, per bin =
  the held maximum of the series (:func:`counter_series`), as recorded (no rates). Unit ``percent`` for
  names ending in ``percent``, ``bytes`` for names with ``bytes`` or under ``memory/``, else
  ``value``. Bins before a series' first sample are 0.
"""

from __future__ import annotations

import numpy as np

from ..trace.categories import Kind
from ..trace.devices import device_name
from ..trace.model import Trace
from .gpu import device_properties, gpu_devices, sm_level
from .intervals import covered_before, cumulative_lengths, merge
from .memory import curves as memory_curves
from .memory import device_rows
from .series import bin_edges, held_max, split_series


def _coverage_function(starts: np.ndarray, ends: np.ndarray):
    """C(t) = length of the union of intervals before t, as (breakpoints, cumulative) arrays."""
    s, e = merge(starts, ends)
    return s, e, cumulative_lengths(s, e)


def _covered_before(fn, t: np.ndarray) -> np.ndarray:
    s, e, cum = fn
    return covered_before(s, e, t, cum)


def _sm_function(trace: Trace, rows: np.ndarray, num_sms):
    """:func:`.gpu.sm_level` as breakpoints plus the cumulative integrals of the estimate over known
    time and of the unknown time (a kernel without launch geometry running)."""
    times, value, known = sm_level(trace, rows, num_sms)
    if len(times) == 0:
        return times, np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0)
    seg = np.diff(times)
    rate = np.append(np.where(known, value, 0.0), 0.0)  # per breakpoint; nothing runs after the last
    unknown = np.append((~known).astype(np.float64), 0.0)
    cum = np.concatenate([[0.0], np.cumsum(rate[:-1] * seg)])
    cum_unknown = np.concatenate([[0.0], np.cumsum(unknown[:-1] * seg)])
    return times, rate, cum, unknown, cum_unknown


def _integral_before(times, rate, cum, t: np.ndarray) -> np.ndarray:
    """∫ of the step function ``rate`` (held from each breakpoint to the next) from the first
    breakpoint to each t."""
    if len(times) == 0:
        return np.zeros(len(t))
    i = np.searchsorted(times, t, side="right") - 1
    ok = i >= 0
    j = np.maximum(i, 0)
    return np.where(ok, cum[j] + rate[j] * (t - times[j]), 0.0)


def _functions(trace: Trace) -> dict:
    def build():
        ev = trace.events
        out = {}
        for dev in gpu_devices(trace):
            rows = np.flatnonzero((ev.kind == Kind.KERNEL) & (ev.device == dev))
            info = device_properties(trace, dev)
            out[dev] = (
                _coverage_function(ev.ts[rows], ev.ts[rows] + ev.dur[rows]),
                _sm_function(trace, rows, info.num_sms if info else None),
            )
        return out

    return trace.memo("counter_functions", build)


MAX_BINS = 4000  # counter bins of one timeline window at most (one per pixel up to this)


def counter_bins(width_px: int) -> int:
    """Bins of a window's counter tracks (the trace's own and matched snapshots'): one per pixel of
    ``width_px``, at most :data:`MAX_BINS`."""
    return min(width_px, MAX_BINS)


def counters(trace: Trace, a0: float, a1: float, bins: int) -> list[dict]:
    """Counter series over absolute ``[a0, a1]`` in ``bins`` bins. Values are per bin."""
    bins = max(1, int(bins))
    edges = bin_edges(a0, a1, bins)
    width = max(a1 - a0, 1e-9) / bins
    out = []
    for dev, (cover, sm) in _functions(trace).items():
        busy = np.diff(_covered_before(cover, edges)) / width
        out.append({"name": f"GPU {dev} Utilization", "unit": "fraction", "values": np.round(busy, 4).tolist()})
        times, rate, cum, unknown, cum_unknown = sm
        if len(times):
            known_width = width - np.diff(_integral_before(times, unknown, cum_unknown, edges))
            integral = np.diff(_integral_before(times, rate, cum, edges))
            eff = np.where(known_width > 1e-9 * width, integral / np.maximum(known_width, 1e-300), 0.0)
            out.append(
                {"name": f"GPU {dev} Est. SM Efficiency", "unit": "fraction", "values": np.round(eff, 4).tolist()}
            )
    out += _memory(trace, a0, a1, bins)
    out += _queues(trace, a0, a1, bins)
    out += _trace_counters(trace, a0, a1, bins)
    return out


def counter_unit(name: str) -> str:
    """The unit of a ``C`` counter series by its name (see the module docstring)."""
    low = name.lower()
    if low.endswith("percent"):
        return "percent"
    if "bytes" in low or low.startswith("memory/"):
        return "bytes"
    return "value"


def counter_series(trace: Trace) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """``(name, ts µs, values)`` of each ``C`` counter series, ascending by series id, each by time;
    non-finite samples dropped (:func:`.series.split_series`). The one split of ``trace.counters``:
    the Trace view's counter tracks and the Overview's system metrics both read it."""

    def build():
        c = trace.counters
        return [(trace.strings[sid], ts, values) for sid, ts, values in split_series(c.ts, c.series, c.value)]

    return trace.memo("counter_series", build)


def _trace_counters(trace: Trace, a0: float, a1: float, bins: int) -> list[dict]:
    return [
        {"name": name, "unit": counter_unit(name), "values": np.round(held_max(ts, values, a0, a1, bins), 4).tolist()}
        for name, ts, values in counter_series(trace)
        if len(ts)
    ]


def _queues(trace: Trace, a0: float, a1: float, bins: int) -> list[dict]:
    """Per stream, the longest queue of launched-but-not-started kernels in each bin."""
    from .insights import queue_length

    return [
        {
            "name": f"GPU {q['device']} stream {q['stream']} queue",
            "unit": "kernels",
            "values": np.maximum(held_max(q["times"], q["lengths"].astype(np.int64), a0, a1, bins), 0).tolist(),
        }
        for q in queue_length(trace)
    ]


def memory_tracks(trace: Trace) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """``(name, ts µs absolute, bytes)`` of the allocated/reserved curve of each memory device: the
    Memory view's :func:`.memory.curves`, on the trace's clock."""
    out = []
    for (_, _, rows), c in zip(device_rows(trace), memory_curves(trace)):
        ts = trace.memory.ts[rows]  # the curve's times on the trace's clock
        if (c["allocated_bytes"] >= 0).any():
            out.append((f"{device_name(c['device'])} Memory Allocated", ts, c["allocated_bytes"]))
        if c["reserved_bytes"] is not None:
            out.append((f"{device_name(c['device'])} Memory Reserved", ts, c["reserved_bytes"]))
    return out


def _memory(trace: Trace, a0: float, a1: float, bins: int) -> list[dict]:
    return [
        {"name": name, "unit": "bytes", "values": np.maximum(held_max(ts, series, a0, a1, bins), 0).tolist()}
        for name, ts, series in memory_tracks(trace)
    ]


def warm_counter_inputs(trace: Trace) -> None:
    """Precompute the per-device functions and memory series that every counter request uses."""
    from .insights import queue_length

    _functions(trace)
    memory_curves(trace)
    counter_series(trace)
    queue_length(trace)
