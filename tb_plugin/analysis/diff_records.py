"""The typed rows of the diff of two traces (analysis/diff.py; µs per average step): plain dicts at
run time. Apart from analysis/diff.py so that the registry's records name them without importing
the diff (a report never needs it)."""

from __future__ import annotations

from typing import Literal, TypedDict

#: A name of :class:`DiffFigures` (what ``compared`` names).
DiffField = Literal[
    "calls", "host_self_us", "host_total_us", "device_self_us", "device_total_us", "graph_replay_self_us"
]


class DiffFigures(TypedDict):
    """One side's figures of an operator-tree node, or their difference (``_FIELDS``; per average step)."""

    calls: float
    host_self_us: float
    host_total_us: float
    device_self_us: float
    device_total_us: float
    graph_replay_self_us: float


class OperatorDiffRow(TypedDict):
    """One operator-tree node on both sides (:func:`op_diff`; µs per average step), with its verdict."""

    name: str
    path: list[str]  # the node's names from the root
    status: str  # added, removed, unchanged, slower or faster (:func:`verdict`)
    change_us: float  # experiment − baseline of ``compared``
    change_pct: float | None  # of the baseline; None when it is 0
    reason: str  # one_side, changed, within_us or within_pct
    compared: DiffField  # the figure the verdict compares (QUANTITY)
    moved_from: list[str] | None  # the baseline path of a node that moved; else None
    has_children: bool
    baseline: DiffFigures
    experiment: DiffFigures
    delta: DiffFigures
    cumulative_delta_us: float  # Σ change_us of the level's rows up to this one (the waterfall)


class KernelDiffRow(TypedDict):
    """One kernel name on both sides (:func:`kernel_diff`; µs, and µs per step)."""

    name: str
    baseline_calls: int
    experiment_calls: int
    baseline_us: float
    experiment_us: float
    baseline_per_step_us: float
    experiment_per_step_us: float
    delta_per_step_us: float
    status: str  # added, removed or present


class StepDiff(TypedDict):
    """The Overview's average step on both sides, per ``<category>_us`` and ``total_us`` (:func:`step_diff`)."""

    baseline: dict[str, float]
    experiment: dict[str, float]
    delta: dict[str, float]
    relative_pct: dict[str, float | None]  # of the baseline; None when it is 0


class Waterfall(TypedDict):
    """One level's waterfall (:func:`waterfall_totals`; µs per step)."""

    rows_us: float
    remainder_us: float
    total_us: float
