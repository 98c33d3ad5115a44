"""Counter tracks of the timeline, at a resolution that follows the zoom (one value per pixel bin).

For bins of equal width over a window (µs):

- **GPU Utilization** of a device, per bin = the fraction of the bin with at least one kernel running
  (0–1), the same definition as the Overview's but per bin;
- **Est. SM Efficiency**, per bin = the bin average of min(1, Σ blocks-per-SM of running kernels)
  over the part of the bin when no kernel without launch geometry runs (the Overview's rule,
  :func:`.gpu.sm_level`); 0 for a bin covered entirely by such kernels;
- **Queue length** of each GPU stream, per bin = the most kernels launched but not yet started;
- **Memory allocated / reserved** per device, per bin = the largest ``Total Allocated`` /
  ``Total Reserved`` seen in the bin, or the value carried in from before it (bytes). Without totals
  the allocated curve is the running sum of ``Bytes``.
- **Trace counters** (``C`` events, e.g. Composer's system profiler: ``cpu/cpu_percent``,
  ``memory/…``, ``disk/…``, ``network/…``), one track per series named ``<event>/<arg>``, per bin =
  the largest value of the series held from each sample to the next, as recorded (no rates). Unit
  ``percent`` for names ending in ``percent``, ``bytes`` for names with ``bytes`` or under
  ``memory/``, else ``value``. Bins before a series' first sample are 0.
"""

from __future__ import annotations

import numpy as np

from ..trace.categories import Kind
from ..trace.devices import memory_device_label
from ..trace.model import Trace
from .gpu import device_properties, gpu_devices, sm_level
from .intervals import merge


def _coverage_function(starts: np.ndarray, ends: np.ndarray):
    """C(t) = length of the union of intervals before t, as (breakpoints, cumulative) arrays."""
    s, e = merge(starts, ends)
    cum = np.concatenate([[0.0], np.cumsum(e - s)])
    return s, e, cum


def _covered_before(fn, t: np.ndarray) -> np.ndarray:
    s, e, cum = fn
    if len(s) == 0:
        return np.zeros(len(t))
    i = np.searchsorted(s, t, side="right") - 1
    out = np.where(i >= 0, cum[np.maximum(i, 0)], 0.0)
    inside = np.where(i >= 0, np.clip(t - s[np.maximum(i, 0)], 0, (e - s)[np.maximum(i, 0)]), 0.0)
    return out + inside


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
            out[dev] = (_coverage_function(ev.ts[rows], ev.ts[rows] + ev.dur[rows]),
                        _sm_function(trace, rows, info.num_sms if info else None))
        return out

    return trace.memo("counter_functions", build)


def counters(trace: Trace, a0: float, a1: float, bins: int) -> list[dict]:
    """Counter series over absolute ``[a0, a1]`` in ``bins`` bins. Values are per bin."""
    bins = max(1, int(bins))
    edges = np.linspace(a0, a1, bins + 1)
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
            out.append({"name": f"GPU {dev} Est. SM Efficiency", "unit": "fraction",
                        "values": np.round(eff, 4).tolist()})
    out += _memory(trace, edges)
    out += _queues(trace, edges)
    out += _trace_counters(trace, edges)
    return out


def counter_unit(name: str) -> str:
    """The unit of a ``C`` counter series by its name (see the module docstring)."""
    low = name.lower()
    if low.endswith("percent"):
        return "percent"
    if "bytes" in low or low.startswith("memory/"):
        return "bytes"
    return "value"


def _counter_series(trace: Trace) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """``(name, ts, values)`` of each ``C`` counter series, by time; non-finite samples dropped."""
    def build():
        c = trace.counters
        out = []
        if len(c) == 0:
            return out
        for sid in np.unique(c.series).tolist():
            rows = np.flatnonzero(c.series == sid)
            rows = rows[np.argsort(c.ts[rows], kind="stable")]
            ts, values = c.ts[rows].astype(np.float64), c.value[rows].astype(np.float64)
            ok = np.isfinite(ts) & np.isfinite(values)
            out.append((trace.strings[sid], ts[ok], values[ok]))
        return out

    return trace.memo("counter_series", build)


def _trace_counters(trace: Trace, edges: np.ndarray) -> list[dict]:
    return [{"name": name, "unit": counter_unit(name), "values": np.round(_held_max(ts, values, edges), 4).tolist()}
            for name, ts, values in _counter_series(trace) if len(ts)]


def _held_max(ts: np.ndarray, values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Per bin ``[a, b)``: max of the step function holding each sample until the next (0 before the
    first): the sample in force at ``a`` and every sample after ``a`` and before ``b``."""
    before = np.searchsorted(ts, edges[:-1], side="right") - 1
    out = np.where(before >= 0, values[np.maximum(before, 0)], 0.0)
    first = np.searchsorted(ts, edges[:-1], side="right")
    last = np.searchsorted(ts, edges[1:], side="left")
    for k in np.flatnonzero(last > first).tolist():
        out[k] = max(out[k], float(values[first[k]:last[k]].max()))
    return out


def _queues(trace: Trace, edges: np.ndarray) -> list[dict]:
    """Per stream, the longest queue of launched-but-not-started kernels in each bin."""
    from .insights import queue_length

    return [{"name": f"GPU {q['device']} stream {q['stream']} queue", "unit": "kernels",
             "values": _step_max(q["times"], q["lengths"].astype(np.int64), edges).tolist()}
            for q in queue_length(trace)]


def _memory_series(trace: Trace) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """``(name, ts, bytes)`` step series of allocated/reserved memory per device, built once."""
    def build():
        mem = trace.memory
        out = []
        if len(mem) == 0:
            return out
        pairs = np.unique(np.stack([mem.device_type.astype(np.int64), mem.device_id.astype(np.int64)], axis=1), axis=0)
        for dtype, did in pairs.tolist():
            label = memory_device_label(dtype, did, sep=" ")
            if label is None:  # a type the tool cannot place (the file carries a warning)
                continue
            rows = np.flatnonzero((mem.device_type == dtype) & (mem.device_id == did))
            allocated = mem.total_allocated[rows]
            if not (allocated >= 0).any():
                allocated = np.cumsum(mem.bytes[rows])
            for name, series in ((f"{label} Memory Allocated", allocated),
                                 (f"{label} Memory Reserved", mem.total_reserved[rows])):
                if (series >= 0).any():
                    out.append((name, mem.ts[rows], series))
        return out

    return trace.memo("memory_series", build)


def _memory(trace: Trace, edges: np.ndarray) -> list[dict]:
    return [{"name": name, "unit": "bytes", "values": _step_max(ts, series, edges).tolist()}
            for name, ts, series in _memory_series(trace)]


def _step_max(ts: np.ndarray, values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Per bin: max of the step function (value held from each event to the next) over the bin."""
    before = np.searchsorted(ts, edges[:-1], side="right") - 1  # last event at or before the bin start
    carried = np.where(before >= 0, values[np.maximum(before, 0)], 0)
    first = np.searchsorted(ts, edges[:-1], side="right")
    last = np.searchsorted(ts, edges[1:], side="right")
    out = carried.astype(np.int64)
    for k in np.flatnonzero(last > first).tolist():
        out[k] = max(out[k], int(values[first[k]:last[k]].max()))
    return np.maximum(out, 0)


def warm_counter_inputs(trace: Trace) -> None:
    """Precompute the per-device functions and memory series that every counter request uses."""
    from .insights import queue_length

    _functions(trace)
    _memory_series(trace)
    _counter_series(trace)
    queue_length(trace)
