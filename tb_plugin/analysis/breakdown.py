"""Step time breakdown: where every microsecond of every step goes.

Definition: each µs of a step is assigned to exactly one category, the first one in this priority
order that has an event active at that moment (on any thread, process or device):

1. ``kernel``: GPU kernels, except communication kernels;
2. ``memcpy``: device memory copies;
3. ``memset``: device memory sets;
4. ``communication``: communication kernels (:func:`trace.categories.is_comm_kernel_name`: NCCL,
   RCCL, MSCCL, NVSHMEM, vLLM's ``cross_device_reduce*``, custom ``*all_reduce*``/``*all_gather*``/
   ``*reduce_scatter*``/``*all_to_all*`` kernels; we differ from torch-tb-profiler, which knows only
   ``nccl``), kernels launched by a communication op, plus the host communication ops themselves
   (:func:`trace.categories.is_comm_op_name`: ``nccl:*``, ``gloo:*``, ``c10d::*``, ``record_param_comms``…);
5. ``runtime``: CUDA/HIP runtime calls and driver calls (``cuLaunchKernel`` from Triton and
   torch.compile — we differ from torch-tb-profiler, which ignores driver calls);
6. ``dataloader``: ``enumerate(DataLoader)…`` / ``enumerate(DataPipe)…`` ranges;
7. ``cpu_exec``: any other operator, ``user_annotation`` or ``python_function`` event (and events of
   unrecognized category in generic Chrome traces), except the ``ProfilerStep#`` markers. The
   ``gpu_user_annotation`` copies are device-side labels and excluded (we differ from the incumbent,
   which counts them);
8. ``other``: what is left.

The categories of a step add up to the step's length exactly (µs), and none exceeds the union of its
own events in the step (:func:`category_unions`), exactly: the arithmetic is done in integer ticks
counted from the steps window's start (:mod:`.ticks`), not on absolute float64 µs, whose midpoints of
1-ULP segments near 7e12 µs round onto the next edge (a matter of arithmetic: the
definition is torch-tb-profiler's).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..trace.categories import (
    DATALOADER_PREFIXES,
    HOST_WORK_KINDS,
    PROFILER_STEP_PREFIX,
    Kind,
    is_comm_kernel_name,
    is_comm_op_name,
)
from ..trace.links import launch_of
from ..trace.model import Trace
from ..trace.uniques import unique_values
from .intervals import ascending, covered_before, cumulative_lengths, first_cover, merge
from .steps import Steps
from .ticks import tick_scale

CATEGORIES = ("kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec", "other")
#: The one table of the categories' display names, by ``<category>_us`` key: served in the Overview's
#: ``category_labels`` for the UI, printed by ``kinetoscope report|diff``, named by the recommendations.
CATEGORY_LABELS: dict[str, str] = {
    "kernel_us": "Kernel",
    "memcpy_us": "Memcpy",
    "memset_us": "Memset",
    "communication_us": "Communication",
    "runtime_us": "Runtime",
    "dataloader_us": "DataLoader",
    "cpu_exec_us": "CPU Exec",
    "other_us": "Other",
}
#: What a label leaves unsaid, where a sentence needs it ("Runtime (CUDA/HIP API calls)").
CATEGORY_NOTES: dict[str, str] = {"runtime_us": "CUDA/HIP API calls", "other_us": "host idle or unprofiled work"}
#: Category interval edges the breakdown counts segments of at once: its arrays are a chunk's segments
#: long (8 bytes each), not the whole trace's (the 4.5 GB trace's ~10^7 segments: +530 MB of temporaries
#: in its section child, where the process tree peaked)
CHUNK_EDGES = 1 << 21


def category_phrase(key: str) -> str:
    """A category's label with its note in parentheses, for sentences: ``"Runtime (CUDA/HIP API calls)"``."""
    note = CATEGORY_NOTES.get(key)
    return f"{CATEGORY_LABELS[key]} ({note})" if note else CATEGORY_LABELS[key]


@dataclasses.dataclass
class Breakdown:
    """``per_step[i, c]`` is the µs of step ``i`` assigned to ``CATEGORIES[c]``."""

    per_step: np.ndarray

    def step(self, i: int) -> dict[str, float]:
        return {f"{c}_us": float(self.per_step[i, j]) for j, c in enumerate(CATEGORIES)}

    def average(self) -> dict[str, float]:
        if len(self.per_step) == 0:
            return {f"{c}_us": 0.0 for c in CATEGORIES}
        mean = self.per_step.mean(axis=0)
        return {f"{c}_us": float(mean[j]) for j, c in enumerate(CATEGORIES)}


def category_masks(trace: Trace) -> dict[str, np.ndarray]:
    """Boolean event masks of the seven active categories (``other`` is what none covers). Worked out
    once per trace (five analyses ask) and kept as one byte of flags per event (bit ``j``: category
    ``CATEGORIES[j]``), unpacked per call: fresh arrays, a byte an event held instead of seven."""
    flags = trace.memo("category_flags", lambda: _category_flags(trace))
    return {c: (flags & np.uint8(1 << j)) != 0 for j, c in enumerate(CATEGORIES[:-1])}


_BIT = {c: 1 << j for j, c in enumerate(CATEGORIES[:-1])}
#: per kind, the categories of its events whatever their names (the names then correct the flags)
_KIND_BITS = {
    Kind.KERNEL: _BIT["kernel"],
    Kind.MEMCPY: _BIT["memcpy"],
    Kind.MEMSET: _BIT["memset"],
    Kind.RUNTIME: _BIT["runtime"],
    Kind.DRIVER: _BIT["runtime"],
    **{kind: _BIT["cpu_exec"] for kind in HOST_WORK_KINDS},
}


def _category_flags(trace: Trace) -> np.ndarray:
    """The flags byte per event: the kind's categories (one lookup per event), then the names' corrections
    read on the rows they can change (host work, kernels) rather than as ~15 masks over every event, each
    fresh memory on a large trace.
    A communication kernel (by name, or launched under a communication operator) is not a kernel; host
    work named as a DataLoader is the DataLoader's, not CPU execution, and a profiler step marker neither;
    a communication operator is communication (and CPU execution)."""
    ev = trace.events
    table = np.zeros(256, dtype=np.uint8)
    for kind, bits in _KIND_BITS.items():
        table[kind] = bits
    flags = table[ev.kind]
    host = np.flatnonzero(flags & _BIT["cpu_exec"])  # host work: every host kind, and only them
    names = ev.name[host]
    loader = trace.name_table(lambda s: s.startswith(DATALOADER_PREFIXES))[names]
    marker = trace.name_table(lambda s: s.startswith(PROFILER_STEP_PREFIX))[names]
    flags[host[loader]] |= _BIT["dataloader"]
    flags[host[loader | marker]] &= ~np.uint8(_BIT["cpu_exec"])
    host_kind = ev.kind[host]
    host_op = (host_kind == Kind.CPU_OP) | (host_kind == Kind.USER_ANNOTATION)
    comm_ops = host[host_op & trace.name_table(is_comm_op_name)[names]]
    del host, names, loader, marker, host_kind, host_op
    flags[comm_ops] |= _BIT["communication"]
    kernels = np.flatnonzero(ev.kind == Kind.KERNEL)
    comm = trace.name_table(is_comm_kernel_name)[ev.name[kernels]] | _launched_by(trace, comm_ops, kernels)
    flags[kernels[comm]] ^= np.uint8(_BIT["kernel"] | _BIT["communication"])  # (kernel set, communication not)
    return flags


def compute_breakdown(trace: Trace, steps: Steps) -> Breakdown:
    """Assign each µs of each step to one category (see the module docstring).

    Exact: times are integer ticks counted from the steps window's start (:mod:`.ticks`), and each
    elementary segment between consecutive edges is owned by the categories active at its start (every
    segment lies wholly inside or outside each merged interval, so its start decides; no midpoints).
    So each category ≤ the union of its own intervals in the step (:func:`category_unions`), and the
    categories add up to the step, with no rounding at any timestamp (µs).
    """
    n = len(steps)
    per_step = np.zeros((n, len(CATEGORIES)))
    if n == 0:
        return Breakdown(per_step)
    scale, step_start, step_end, merged = _category_ticks(trace, steps)
    ticks = np.zeros(n * len(CATEGORIES))
    bounds = _chunk_bounds(step_start, merged)
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        # integer tick counts below 2^52: float64 sums of them are exact, in any order
        ticks += _chunk_ticks(step_start, step_end, merged, lo, hi)
    return Breakdown(scale.us(ticks.reshape(n, -1)))


def _chunk_bounds(step_start: np.ndarray, merged: list[tuple[np.ndarray, np.ndarray]]) -> list[float]:
    """The time chunks the segments are counted in, ``[bounds[i], bounds[i + 1])`` ticks: −inf, some step
    starts (each an edge, so no segment straddles two chunks), +inf; about :data:`CHUNK_EDGES` category
    edges each (one chunk for a small trace, or steps out of start order)."""
    edges = 2 * sum(len(s) for s, _ in merged)
    if edges <= CHUNK_EDGES or not ascending(step_start):
        return [-np.inf, np.inf]
    before = 2 * sum(np.searchsorted(s, step_start, side="left") for s, _ in merged)  # edges before each step
    cut = np.flatnonzero(np.diff(before // CHUNK_EDGES)) + 1
    return [-np.inf, *unique_values(step_start[cut]).tolist(), np.inf]


def _chunk_ticks(
    step_start: np.ndarray, step_end: np.ndarray, merged: list[tuple[np.ndarray, np.ndarray]], lo: float, hi: float
) -> np.ndarray:
    """Per step and category (flattened), the ticks of the elementary segments that start in ``[lo, hi)``:
    each segment between consecutive edges (step bounds, category interval bounds) owned by the first
    category active at its start (every segment lies wholly inside or outside each merged interval)."""
    n = len(step_start)
    whole = lo == -np.inf and hi == np.inf  # (every value, as they are: a NaN too)
    merged_edges = [a if whole else _within(a, lo, hi) for pair in merged for a in pair]
    steps_in = [step_start, step_end] if whole else [a[(a >= lo) & (a <= hi)] for a in (step_start, step_end)]
    bounds = [np.array([x for x in (lo, hi) if np.isfinite(x)])]
    edges = unique_values(np.concatenate(bounds + steps_in + merged_edges))
    del merged_edges, steps_in
    if len(edges) < 2:
        return np.zeros(n * len(CATEGORIES))
    seg_start, seg_len = edges[:-1], np.diff(edges)
    # the category intervals that reach into the chunk (sorted, disjoint: as first_cover takes them)
    near = merged if whole else [(s[a:b], e[a:b]) for s, e in merged for a, b in [_overlapping(s, e, lo, hi)]]
    owner = first_cover(near, seg_start)  # the first category in priority order, else "other"
    # (in place where they can be: each array is a chunk's segments long)
    step_idx = np.searchsorted(step_start, seg_start, side="right")
    step_idx -= 1
    inside = step_idx >= 0
    np.maximum(step_idx, 0, out=step_idx)  # (the segments before the first step: outside, any step will do)
    inside &= seg_start < step_end[step_idx]
    flat = step_idx[inside]
    del step_idx
    flat *= len(CATEGORIES)
    flat += owner[inside]
    return np.bincount(flat, weights=seg_len[inside], minlength=n * len(CATEGORIES))


def _within(values: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """The values of the sorted ``values`` in ``[lo, hi]``."""
    return values[np.searchsorted(values, lo, side="left") : np.searchsorted(values, hi, side="right")]


def _overlapping(starts: np.ndarray, ends: np.ndarray, lo: float, hi: float) -> tuple[int, int]:
    """The index range of the sorted, disjoint intervals that reach into ``[lo, hi)``."""
    return int(np.searchsorted(ends, lo, side="right")), int(np.searchsorted(starts, hi, side="left"))


def category_unions(trace: Trace, steps: Steps) -> np.ndarray:
    """``out[i, c]``: µs of step ``i`` covered by the union of category ``CATEGORIES[c]``'s own events
    (on any thread or device), ignoring the priority order; for ``other``, the step's length. In the
    same exact ticks as :func:`compute_breakdown`, so ``breakdown.per_step <= out`` holds exactly and
    ``out[:, -1]`` is the length the categories add up to."""
    n = len(steps)
    out = np.zeros((n, len(CATEGORIES)))
    if n == 0:
        return out
    scale, step_start, step_end, merged = _category_ticks(trace, steps)
    for c, (s, e) in enumerate(merged):
        cum = cumulative_lengths(s, e)
        out[:, c] = covered_before(s, e, step_end, cum) - covered_before(s, e, step_start, cum)
    out[:, -1] = step_end - step_start
    return scale.us(out)


def _category_ticks(trace: Trace, steps: Steps):
    """``(scale, step starts, step ends, [(starts, ends) merged per active category])`` in ticks,
    every event clipped to the steps window."""
    ev = trace.events
    lo, hi = steps.window
    scale = tick_scale(lo, hi)
    masks = category_masks(trace)
    merged = []
    for name in CATEGORIES[:-1]:
        rows = masks.pop(name)
        # (in place where they can be: a 4.5 GB trace's host work is ~4.5 M events, 36 MB an array)
        start = ev.ts[rows]
        end = ev.dur[rows]
        del rows
        end += start
        s = scale.ticks_in_place(np.clip(start, lo, hi, out=start))
        e = scale.ticks_in_place(np.clip(end, lo, hi, out=end))
        del start, end
        s, e = merge(s, e)
        keep = e > s
        merged.append((s[keep], e[keep]))
        del s, e, keep
    return scale, scale.ticks(steps.start), scale.ticks(steps.end), merged


def _launched_by(trace: Trace, ops: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Per device event of ``rows``: whether its launch carries the External id of one of the ``ops``
    events (rows)."""
    ev = trace.events
    ids = unique_values(ev.external_id[ops])
    ids = ids[ids >= 0]
    out = np.zeros(len(rows), dtype=bool)
    if len(ids) == 0:
        return out
    launcher = launch_of(trace)[rows]
    linked = launcher >= 0
    out[linked] = np.isin(ev.external_id[launcher[linked]], ids)
    return out
