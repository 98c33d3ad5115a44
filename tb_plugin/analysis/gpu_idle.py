"""GPU idle time and what ended each idle gap, per GPU (all its streams together). Times are µs.

Definitions:

- **Window**: the steps window ``[lo, hi]`` (:func:`~tb_plugin.analysis.steps.compute_steps`).
- **Busy** time of a GPU: the union of its device work (kernels, memcpy, memset) over ALL its
  streams, clipped to the window. **Idle** = window − busy, so a GPU's idle is never more than the
  window. Each maximal idle interval is a **gap** (the leading and trailing ones included).
- A gap is *ended* by the device work that starts first at or after the gap's end, on that GPU (for
  the trailing gap, that work may lie after the window; when there is none, the gap is *other*).
- **Host wait**: a gap ended by work on a *compute stream* whose launch call (runtime/driver call with
  the same correlation id) returned late: in the second half of the gap (at or after its midpoint) —
  the GPU had nothing queued and waited for the host to launch it. Work whose launch returned early in
  the gap (or before it) could have started sooner: the GPU waited for something else (a stream wait,
  work outside the trace), not for the host. A compute stream carries at least one non-communication kernel; a stream that
  carries only communication kernels (NCCL/RCCL…, :func:`~tb_plugin.analysis.breakdown.category_masks`)
  and/or copies (memcpy, memset) is not waiting for the host, so its work never makes a host wait.
- Otherwise **short gap** when shorter than :data:`SHORT_GAP_US`, else **other**.
  host wait + short gap + other = idle, per GPU.
- **Per stream** the same split is made over that stream alone (window − that stream's busy time).
  Streams overlap, so per-stream idle is never summed into a GPU or total idle.
- A gap is **launch-bound** when it is a host wait and the work that ended it includes a kernel shorter
  than its own launch call whose launch returned late (the same rule) (the GPU idled waiting for the
  launch of a kernel that runs for less time than it takes to launch).
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypedDict, cast

import numpy as np

from ..trace.categories import Kind
from ..trace.links import device_mask, launch_of
from ..trace.model import Trace
from ..trace.uniques import unique_values
from .breakdown import category_masks
from .intervals import covered_before, cumulative_lengths, merge
from .steps import compute_steps

SHORT_GAP_US = 10.0


@dataclasses.dataclass
class Busy:
    """Merged (sorted, disjoint) busy intervals and their cumulative length, for :meth:`before`."""

    start: np.ndarray
    end: np.ndarray
    cum: np.ndarray  # cum[i] = total length of intervals 0..i-1

    @classmethod
    def of(cls, starts: np.ndarray, ends: np.ndarray) -> Busy:
        s, e = merge(starts, ends)
        keep = e > s
        s, e = s[keep], e[keep]
        return cls(s, e, cumulative_lengths(s, e))

    def before(self, t: np.ndarray) -> np.ndarray:
        """Busy length in ``(-inf, t]`` for each ``t`` (µs)."""
        return covered_before(self.start, self.end, t, self.cum)

    def idle_in(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Idle (not busy) length of each interval ``[a, b]``; 0 where ``b <= a`` (µs)."""
        b = np.maximum(a, b)
        return (b - a) - (self.before(b) - self.before(a))


@dataclasses.dataclass
class Gaps:
    """Idle gaps of one GPU (or one stream) inside the window."""

    start: np.ndarray
    end: np.ndarray
    host: np.ndarray  # bool: host wait
    launch_bound: np.ndarray  # bool: host wait ended by a kernel shorter than its launch call

    @property
    def length(self) -> np.ndarray:
        return self.end - self.start

    def split(self) -> dict[str, float]:
        """``idle_us`` and its parts ``host_wait_us``, ``short_gap_us``, ``other_us`` (they add up)."""
        length = self.length
        short = ~self.host & (length < SHORT_GAP_US)
        host = float(length[self.host].sum())
        short_us = float(length[short].sum())
        idle = float(length.sum())
        return {
            "idle_us": idle,
            "host_wait_us": host,
            "short_gap_us": short_us,
            "other_us": max(idle - host - short_us, 0.0),
        }


@dataclasses.dataclass
class GpuIdle:
    """One GPU: its window, busy intervals (inside the window and over the whole trace), gaps."""

    device: int
    lo: float
    hi: float
    busy: Busy  # clipped to the window
    busy_all: Busy  # whole trace, for launch-overhead splits
    gaps: Gaps


def window(trace: Trace) -> tuple[float, float]:
    """The steps window (µs); all events' extent when there are no steps."""
    lo, hi = compute_steps(trace).window
    if hi <= lo:
        ev = trace.events
        return (float(ev.ts.min()), float((ev.ts + ev.dur).max())) if len(ev) else (0.0, 0.0)
    return lo, hi


def _work_rows(trace: Trace) -> dict:
    """Device rows (device ≥ 0), their launch end (-inf without launch), compute-stream and short flags."""

    def build():
        ev = trace.events
        rows = np.flatnonzero(device_mask(trace) & (ev.device >= 0))
        launcher = launch_of(trace)[rows]
        has = launcher >= 0
        src = np.maximum(launcher, 0)
        launch_end = np.where(has, ev.ts[src] + ev.dur[src], -np.inf)
        launch_dur = np.where(has, ev.dur[src], 0.0)
        masks = category_masks(trace)
        compute_kernel = masks["kernel"][rows]
        stream_key = ev.device[rows].astype(np.int64) << 32 | (ev.stream[rows] & 0xFFFFFFFF)
        keys, inverse = np.unique(stream_key, return_inverse=True)
        compute_stream = np.bincount(inverse, weights=compute_kernel, minlength=len(keys)) > 0
        short_kernel = (ev.kind[rows] == Kind.KERNEL) & has & (ev.dur[rows] < launch_dur)
        return {
            "rows": rows,
            "launch_end": launch_end,
            "eligible": compute_stream[inverse],
            "short_kernel": short_kernel,
            "stream_key": stream_key,
            "stream_keys": keys,
            "stream_of": inverse,
            "compute_stream": compute_stream,
        }

    return trace.memo("gpu_idle_work_rows", build)


def _gaps(
    start: np.ndarray,
    end: np.ndarray,
    launch_end: np.ndarray,
    eligible: np.ndarray,
    short_kernel: np.ndarray,
    lo: float,
    hi: float,
) -> tuple[Busy, Gaps]:
    """Busy intervals and classified gaps of one set of device work inside ``[lo, hi]``."""
    busy = Busy.of(np.clip(start, lo, hi), np.clip(end, lo, hi))
    g0 = np.concatenate([[lo], busy.end])
    g1 = np.concatenate([busy.start, [hi]])
    keep = g1 > g0
    g0, g1 = g0[keep], g1[keep]
    # what ended each gap: the work that starts first at or after its end (ties: all of them)
    order = np.argsort(start, kind="stable")
    st = start[order]
    uniq, first = sorted_unique(st)
    host_end = np.where(eligible, launch_end, -np.inf)[order]
    bound_end = np.where(eligible & short_kernel, launch_end, -np.inf)[order]
    host_max = np.maximum.reduceat(host_end, first) if len(st) else np.zeros(0)
    bound_max = np.maximum.reduceat(bound_end, first) if len(st) else np.zeros(0)
    g = np.searchsorted(uniq, g1, side="left")
    found = g < len(uniq)
    gi = np.minimum(g, max(len(uniq) - 1, 0))
    late = np.maximum(0.5 * (g0 + g1), np.nextafter(g0, np.inf))  # the launch returned in the gap's second half
    host = found & (host_max[gi] >= late) if len(uniq) else np.zeros(len(g0), dtype=bool)
    bound = found & (bound_max[gi] >= late) if len(uniq) else np.zeros(len(g0), dtype=bool)
    return busy, Gaps(g0, g1, host, bound)


def sorted_unique(st: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(st, return_index=True)`` of ascending ``st``: each run of equal values' first index,
    read from neighbours' differences, not from a second (stable) sort of the whole array (at 4.5 GB its
    1.4·10⁶ device starts: 0.42 s for two calls in a profiled overview, 38× the 0.9 GB trace's). NaNs
    (sorted last) take numpy's, which makes them one value."""
    if len(st) == 0 or np.isnan(st[-1]):
        return np.unique(st, return_index=True)
    new_run = np.empty(len(st), dtype=bool)
    new_run[0] = True
    np.not_equal(st[1:], st[:-1], out=new_run[1:])
    first = np.flatnonzero(new_run)
    return st[first], first


def gpu_idle(trace: Trace) -> list[GpuIdle]:
    """Per GPU (device index ≥ 0 with device work), busy time and classified idle gaps (module docstring)."""

    def build():
        ev = trace.events
        lo, hi = window(trace)
        w = _work_rows(trace)
        rows = w["rows"]
        out = []
        dev_of = ev.device[rows]
        for d in unique_values(dev_of):
            on = dev_of == d
            r = rows[on]
            s, e = ev.ts[r], ev.ts[r] + ev.dur[r]
            busy, gaps = _gaps(s, e, w["launch_end"][on], w["eligible"][on], w["short_kernel"][on], lo, hi)
            out.append(GpuIdle(int(d), lo, hi, busy, Busy.of(s, e), gaps))
        return out

    return trace.memo("gpu_idle", build)


def device_busy(trace: Trace) -> Busy:
    """All device work of the trace (every device, the device mask's rows) merged (µs): the one GPU's
    whole-trace busy intervals when that GPU holds every device row (the same rows in the same order,
    so the same arrays, with no copy held), else merged here."""
    ev = trace.events
    dev = device_mask(trace)
    gpus = gpu_idle(trace)
    if len(gpus) == 1 and len(_work_rows(trace)["rows"]) == int(np.count_nonzero(dev)):
        return gpus[0].busy_all
    return Busy.of(ev.ts[dev], ev.ts[dev] + ev.dur[dev])


class StreamIdleRow(TypedDict):
    """One stream's busy time and the split of the window's rest (:func:`stream_idle_split`; µs)."""

    device: int
    stream: int
    carries: str  # "compute", "communication" or "copy"
    busy_us: float
    idle_us: float  # = host_wait_us + short_gap_us + other_us
    host_wait_us: float
    short_gap_us: float
    other_us: float


def stream_idle_split(trace: Trace) -> list[StreamIdleRow]:
    """Per stream: its busy time and the host wait / short / other split of window − its busy time."""
    ev = trace.events
    lo, hi = window(trace)
    w = _work_rows(trace)
    rows = w["rows"]
    out: list[StreamIdleRow] = []
    keys = w["stream_keys"]
    # a device's only stream holds all its work, in the same order: its busy time and gaps are the GPU's
    devices, streams_on = np.unique(keys >> 32, return_counts=True)
    one_stream = set(devices[streams_on == 1].tolist())
    alone = {g.device: g for g in gpu_idle(trace) if g.device in one_stream}
    for i, key in enumerate(keys.tolist()):
        on = w["stream_of"] == i
        r = rows[on]
        s, e = ev.ts[r], ev.ts[r] + ev.dur[r]
        inside = (e > lo) & (s < hi)
        if not inside.any():
            continue
        whole = alone.get(key >> 32)
        if whole is not None:
            busy, gaps = whole.busy, whole.gaps
        else:
            busy, gaps = _gaps(s, e, w["launch_end"][on], w["eligible"][on], w["short_kernel"][on], lo, hi)
        kinds = ev.kind[r]
        carries = "compute" if w["compute_stream"][i] else ("communication" if (kinds == Kind.KERNEL).any() else "copy")
        row: dict[str, Any] = {
            "device": int(key >> 32),
            "stream": int(key & 0xFFFFFFFF),
            "carries": carries,
            "busy_us": float(busy.cum[-1]),
            **gaps.split(),
        }
        out.append(cast(StreamIdleRow, row))  # the split's keys come from Gaps.split
    return out
