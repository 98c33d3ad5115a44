"""Training steps: where each step starts and ends, on the host and on the device.

Definitions (µs):

- **Host steps**: every ``ProfilerStep#N`` event of kind operator or ``user_annotation`` gives the
  interval ``[ts, ts + dur)`` named ``N``. Their ``gpu_user_annotation`` copies are ignored. With no
  markers, Composer traces use their ``event/batch`` ranges: a step is named by its batch number and
  begins where loading its batch begins (the ``dataloader/<split>`` or ``event/dataloader`` range
  with the same ``{epoch, batch}`` that starts before it), so data loading falls inside the step as it
  does inside ``ProfilerStep#N``. Otherwise there is one step named ``"0"`` over all host events, or
  over all events when the trace has no host events (we differ from torch-tb-profiler there: it
  finds no step).
- **Profiler span clip**: a marker step whose host end lies past the end of the trace's own profiler
  span (the ``PyTorch Profiler (N)`` event of category ``Trace``; the union of them when there are
  several) ends at the span's end instead: the profiler recorded nothing after it, so the rest of
  the annotation is not profiled time (a ``ProfilerStep#1`` closed 13 s after a 355 ms profile would
  otherwise read 13 s of Other). Each clipped step is listed in :attr:`Steps.clipped`. We differ from
  torch-tb-profiler there: it keeps the annotation's full length.
- **Device extent** of a step: the device work (kernel, memcpy, memset) launched by the runtime or
  driver calls that lie entirely inside the host step.
- **Step bounds**: ``start = max(previous end, host start)`` and ``end = max(host end, device end)``.
  The first step's "previous end" is its host start, or, when it has device work, the latest end of
  device work not launched from any step that finished before the step's first device work.
- **Prior work in the first step** (:attr:`Steps.first_step_prior_work_us`): the time inside the first
  step during which the GPU ran only device work launched outside every step (before it):
  ``|own ∪ prior| − |own|`` over ``[start, end]`` of the first step, where *own* is the device work
  the first step launched. The unbalanced-steps advice compares the first step without it.
- **Tail trim** (only in a trace with device work): trailing steps with no device work are dropped,
  then the last step is dropped when it has fewer than 0.8× the device events of the step before it
  (the profiler cut its kernels off). A CPU-only trace keeps every step.
- **Steps window**: ``[first step start, last step end]``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..trace.categories import COMPOSER_BATCH, PROFILER_STEP_PREFIX, Kind
from ..trace.links import device_mask, launch_mask, launch_of
from ..trace.model import Trace
from .intervals import covered_length

TAIL_DEVICE_EVENT_RATIO = 0.8


@dataclasses.dataclass
class Steps:
    """Kept steps, in time order. Arrays are µs (absolute trace time)."""

    names: list[str]
    start: np.ndarray
    end: np.ndarray
    host_start: np.ndarray
    host_end: np.ndarray
    device_events: np.ndarray  # number of device events launched inside each step
    has_markers: bool
    has_device_work: bool
    dropped_tail: list[str]
    #: steps cut at the profiler span's end: ``{"step", "host_end_us", "clipped_to_us"}`` (absolute µs)
    clipped: list[dict] = dataclasses.field(default_factory=list)
    #: µs of the first step during which the GPU ran only work launched outside every step (a pipelined
    #: trace: work launched before the first step still runs in it): union(own ∪ prior) − union(own)
    first_step_prior_work_us: float = 0.0

    def __len__(self) -> int:
        return len(self.names)

    @property
    def window(self) -> tuple[float, float]:
        """``[first start, last end]`` of the kept steps (µs)."""
        if not self.names:
            return 0.0, 0.0
        return float(self.start[0]), float(self.end[-1])


def profiler_span(trace: Trace) -> tuple[float, float] | None:
    """``[start, end]`` (µs) of the trace's own ``PyTorch Profiler`` span(s) (category ``Trace``), or None."""
    ev = trace.events
    cats = trace.name_ids(lambda s: s.lower() == "trace")
    if len(cats) == 0:
        return None
    rows = np.isin(ev.cat, cats) & trace.name_mask(lambda s: s.startswith("PyTorch Profiler")) & (ev.dur > 0)
    if not rows.any():
        return None
    return float(ev.ts[rows].min()), float((ev.ts[rows] + ev.dur[rows]).max())


def _clip_to_profiler_span(trace: Trace, names: list[str], h_start: np.ndarray, h_end: np.ndarray):
    """Host ends past the profiler span's end, cut to it (module docstring); returns (h_end, clipped)."""
    span = profiler_span(trace)
    if span is None or not len(names):
        return h_end, []
    end = span[1]
    over = (h_end > end) & (h_start < end)
    clipped = [
        {"step": names[i], "host_end_us": float(h_end[i]), "clipped_to_us": end} for i in np.flatnonzero(over).tolist()
    ]
    return np.where(over, end, h_end), clipped


def host_steps(trace: Trace) -> tuple[list[str], np.ndarray, np.ndarray, bool]:
    """Host-side step intervals from ``ProfilerStep#N`` markers, or the single fallback step."""
    ev = trace.events
    kind = ev.kind
    is_marker = trace.name_mask(lambda s: s.startswith(PROFILER_STEP_PREFIX))
    is_marker &= (kind == Kind.CPU_OP) | (kind == Kind.USER_ANNOTATION)
    rows = np.flatnonzero(is_marker)
    if len(rows):
        # one marker per (name, start): a trace may carry the same range twice
        seen: dict[tuple[int, float], int] = {}
        for r in rows:
            seen.setdefault((int(ev.name[r]), float(ev.ts[r])), int(r))
        rows = np.array(sorted(seen.values(), key=lambda r: (ev.ts[r], r)), dtype=np.int64)
        names = [trace.strings[ev.name[r]][len(PROFILER_STEP_PREFIX) :] for r in rows]
        return names, ev.ts[rows].copy(), (ev.ts[rows] + ev.dur[rows]), True
    composer = _composer_steps(trace)
    if composer is not None:
        return composer
    host = np.isin(
        kind, (Kind.CPU_OP, Kind.USER_ANNOTATION, Kind.PYTHON_FUNCTION, Kind.UNKNOWN_HOST, Kind.RUNTIME, Kind.DRIVER)
    )
    if not host.any():
        host = kind != Kind.IGNORED
    if not host.any():
        return [], np.zeros(0), np.zeros(0), False
    start = float(ev.ts[host].min())
    end = float((ev.ts[host] + ev.dur[host]).max())
    return ["0"], np.array([start]), np.array([end]), False


def _composer_steps(trace: Trace):
    ev = trace.events
    batches = np.flatnonzero(trace.name_mask(lambda s: s == COMPOSER_BATCH) & (ev.dur > 0))
    if len(batches) == 0:
        return None
    batches = batches[np.argsort(ev.ts[batches], kind="stable")]
    loads = np.flatnonzero(trace.name_mask(lambda s: s.startswith(("dataloader/", "event/dataloader"))))
    loads = loads[np.argsort(ev.ts[loads], kind="stable")]
    # each batch's load: the latest-starting load of its (epoch, batch, pid, tid), by one key sort
    rows = np.concatenate([loads, batches])
    key = np.stack(
        [ev.epoch[rows].astype(np.int64), ev.batch[rows], ev.pid[rows].astype(np.int64), ev.tid[rows].astype(np.int64)],
        axis=1,
    )
    _, code = np.unique(key, axis=0, return_inverse=True)
    code = code.reshape(-1)
    last = np.full(len(rows), -1, dtype=np.int64)
    np.maximum.at(last, code[: len(loads)], np.arange(len(loads)))
    load = last[code[len(loads) :]]
    loaded = np.where(load >= 0, ev.ts[loads[np.maximum(load, 0)]] if len(loads) else 0.0, np.nan)
    start, end = ev.ts[batches].astype(np.float64), (ev.ts[batches] + ev.dur[batches]).astype(np.float64)
    previous_end = np.r_[-np.inf, end[:-1]]  # a batch's load may not reach back into the batch before
    start = np.where((load >= 0) & (loaded < start) & (loaded >= previous_end), loaded, start)
    numbers = ev.batch[batches]
    names = [str(b) if b >= 0 else str(i) for i, b in enumerate(numbers.tolist())]
    return names, start, end, True


@dataclasses.dataclass
class HostStepLaunches:
    """The part of the steps that reads no launch link (:func:`host_step_launches`): the host steps, those
    clipped to the profiler span, and the host step that fully contains each launch."""

    names: list[str]
    host_start: np.ndarray  # µs
    host_end: np.ndarray  # µs, clipped
    has_markers: bool
    clipped: list[dict]
    launch_step: np.ndarray  # int32 per event: the step of a launch inside one, else -1 (none: no steps or device work)


def compute_steps(trace: Trace, staged: HostStepLaunches | None = None) -> Steps:
    """Apply the step rules of this module's docstring (once per trace: callers only read the result).
    ``staged``: this trace's :func:`host_step_launches`, when made already (beside its launch links)."""
    return trace.memo("steps", lambda: _compute_steps(trace, staged or host_step_launches(trace)))


def host_step_launches(trace: Trace) -> HostStepLaunches:
    """The steps' first stage, which reads no launch link (:func:`~tb_plugin.trace.links.launch_of`): made
    beside those links where a core is free (``registry/executors/sections.shared_before_fork``)."""
    names, h_start, h_end, has_markers = host_steps(trace)
    clipped: list[dict] = []
    if has_markers:
        h_end, clipped = _clip_to_profiler_span(trace, names, h_start, h_end)
    has_device_work = bool(device_mask(trace).any())
    launch_step = _launch_steps(trace, h_start, h_end) if len(names) and has_device_work else np.zeros(0, np.int64)
    return HostStepLaunches(names, h_start, h_end, has_markers, clipped, launch_step)


def _compute_steps(trace: Trace, staged: HostStepLaunches) -> Steps:
    names, h_start, h_end = staged.names, staged.host_start, staged.host_end
    has_markers, clipped = staged.has_markers, staged.clipped
    ev = trace.events
    is_device = device_mask(trace)
    has_device_work = bool(is_device.any())
    n = len(names)
    dev_start = np.full(n, np.inf)
    dev_end = np.full(n, -np.inf)
    dev_count = np.zeros(n, dtype=np.int64)
    # the device events launched inside a step (rows ascending) and their steps; no per-event column of
    # steps: the rows are what the first step's checks below read (a 4.5 GB trace: 54 MB, faulted in)
    dev_rows, step_of_dev = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if n and has_device_work:
        launch_step = staged.launch_step
        launcher = launch_of(trace)
        dev_rows = np.flatnonzero(is_device & (launcher >= 0))
        step_of_dev = launch_step[launcher[dev_rows]]
        inside = step_of_dev >= 0
        dev_rows, step_of_dev = dev_rows[inside], step_of_dev[inside]
        np.minimum.at(dev_start, step_of_dev, ev.ts[dev_rows])
        np.maximum.at(dev_end, step_of_dev, ev.ts[dev_rows] + ev.dur[dev_rows])
        dev_count = np.bincount(step_of_dev, minlength=n)

    start = np.zeros(n)
    end = np.zeros(n)
    prev_end = h_start[0] if n else 0.0
    prior_work = 0.0
    unmatched = None  # device events launched inside no step (made where the first step has device work)
    if n and dev_count[0] > 0:
        unmatched = is_device.copy()
        unmatched[dev_rows] = False
        ends = ev.ts[unmatched] + ev.dur[unmatched]
        before = ends[ends <= dev_start[0]]
        if len(before):
            prev_end = float(before.max())
    for i in range(n):
        start[i] = max(prev_end, h_start[i])
        end[i] = max(h_end[i], dev_end[i]) if dev_count[i] else h_end[i]
        end[i] = max(end[i], start[i])
        prev_end = end[i]
    if unmatched is not None:
        # GPU time of the first step explained only by device work launched outside every step
        own = dev_rows[step_of_dev == 0]
        both = unmatched  # (the prior work, and the step's own added: read no more as unmatched below)
        both[own] = True
        prior_work = covered_length(ev.ts[both], ev.ts[both] + ev.dur[both], start[0], end[0]) - covered_length(
            ev.ts[own], ev.ts[own] + ev.dur[own], start[0], end[0]
        )

    keep = n
    if has_device_work and has_markers and dev_count.any():
        while keep > 1 and dev_count[keep - 1] == 0:
            keep -= 1
        if keep > 1 and dev_count[keep - 1] < TAIL_DEVICE_EVENT_RATIO * dev_count[keep - 2]:
            keep -= 1
    return Steps(
        names=names[:keep],
        start=start[:keep],
        end=end[:keep],
        host_start=h_start[:keep],
        host_end=h_end[:keep],
        device_events=dev_count[:keep],
        has_markers=has_markers,
        has_device_work=has_device_work,
        dropped_tail=names[keep:],
        clipped=[c for c in clipped if c["step"] in names[:keep]],
        first_step_prior_work_us=prior_work,
    )


def _launch_steps(trace: Trace, h_start: np.ndarray, h_end: np.ndarray) -> np.ndarray:
    """For every event, the index of the host step that fully contains it if it is a launch, else -1."""
    ev = trace.events
    out = np.full(len(ev), -1, dtype=np.int32)  # (step indices: int32 halves the column)
    rows = np.flatnonzero(launch_mask(trace))
    if len(rows) == 0:
        return out
    ts = ev.ts[rows]
    te = ts + ev.dur[rows]
    # Host steps do not overlap; the candidate is the last step starting at or before the launch.
    order = np.argsort(h_start, kind="stable")
    idx = np.searchsorted(h_start[order], ts, side="right") - 1
    ok = idx >= 0
    cand = np.where(ok, order[np.maximum(idx, 0)], 0)
    ok &= (ts >= h_start[cand]) & (te <= h_end[cand])
    out[rows[ok]] = cand[ok]
    return out
