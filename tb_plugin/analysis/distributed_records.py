"""The typed records of the distributed view (analysis/distributed.py ``combine_ranks`` and
``single_rank_view``): plain dicts at run time, so the JSON is unchanged. Their rows (per rank, per
collective, the arrivals, process groups and critical paths) are documented in docs/METRICS.md."""

from __future__ import annotations

from typing import Any, TypedDict


class InstanceCounts(TypedDict):
    """Collective instances matched across the ranks, of all positions."""

    matched: int
    total: int


class MatchingByType(TypedDict):
    """One collective type's matched and unmatched instances."""

    name: str
    matched: int
    unmatched: int


class Matching(TypedDict):
    """How the ranks' collectives were matched: the method, its notes and the counts per type."""

    method: str
    messages: list[str]
    by_type: list[MatchingByType]


class DistributedView(TypedDict):
    """The cross-rank view of a run's ranks (``combine_ranks``; µs, bytes, GB/s)."""

    world_size: int
    ranks_present: int
    ranks: list[dict[str, Any]]  # per rank: step parts, transfer/sync/latency sums, comm_ops, devices
    collectives: list[dict[str, Any]]  # per collective and communicator size
    bandwidth_caveat: str | None  # why algbw/busbw are lower bounds; None when all ranks are loaded
    instances: InstanceCounts
    matching: Matching
    arrivals: list[dict[str, Any]]  # per rank (analysis/stragglers.py)
    stragglers: list[int]  # the straggling ranks
    groups: list[dict[str, Any]]  # analysis/process_groups.py combine_groups
    groups_messages: list[str]
    critical_path: list[dict[str, Any]]  # per step (analysis/critical_path_combine.py); [] without chains


class SingleRankView(TypedDict):
    """A run with one loaded rank (``single_rank_view``): its own process groups and critical path."""

    rank: int
    worker: str
    groups: list[dict[str, Any]]
    groups_messages: list[str]
    critical_path: list[dict[str, Any]]
