"""The distributed sections of the report documents (``kinetoscope report``, the notebook API, the MCP
tools): a run's ``distributed`` summary, its critical path, the advice that holds across its ranks,
and a single-rank worker's own process groups. Numbers come from analysis/ through
:meth:`~.interface.Registry.distributed`; this module selects and nests them (µs, bytes, GB/s)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple, cast

from ..analysis import advice_ranks
from ..analysis import distributed as distributed_analysis
from ..analysis.advice_ranks import RunAdvice
from .interface import Registry
from .states import FileState

if TYPE_CHECKING:  # (types only: a report without a process group never imports the records, ~3 ms)
    from .records import (
        ArrivalSummaryRow,
        CollectiveSummaryRow,
        DistributedResult,
        DistributedSummary,
        GroupSummary,
        RankOverview,
        RankSummaryRow,
        ReportDocument,
    )


def run_advice(workers: Sequence[RankOverview]) -> list[RunAdvice] | None:
    """The advice that holds on several ranks of a run, once for the run
    (:func:`~tb_plugin.analysis.advice_ranks.across_ranks`), from its workers' ``{"worker", "overview"}``
    (a worker's first span stands for its rank); None for fewer than two ranks."""
    per_rank, seen = [], set()
    for position, w in enumerate(workers):
        if w["overview"] is None or w["worker"] in seen:
            continue
        seen.add(w["worker"])
        info = w["overview"]["configuration"]["distributed"]
        rank, _ = distributed_analysis.rank_of_info(info, w["worker"], position)
        per_rank.append((rank, w["overview"]["recommendation_details"]))
    return advice_ranks.across_ranks(per_rank) if len(per_rank) >= 2 else None


class SummaryColumns(NamedTuple):
    """The distributed section's tables' columns (µs, bytes, GB/s): their records' keys, in order."""

    ranks: tuple[str, ...]
    collectives: tuple[str, ...]
    arrivals: tuple[str, ...]
    groups: tuple[str, ...]


@functools.cache
def summary_columns() -> SummaryColumns:
    """:class:`SummaryColumns`, read off the records (registry/records.py) when first asked."""
    from .records import ArrivalSummaryRow, CollectiveSummaryRow, GroupSummary, RankSummaryRow

    return SummaryColumns(
        tuple(RankSummaryRow.__annotations__),
        tuple(CollectiveSummaryRow.__annotations__),
        tuple(ArrivalSummaryRow.__annotations__),
        tuple(GroupSummary.__annotations__),
    )


def distributed_summary(result: DistributedResult) -> DistributedSummary | None:
    """The report's ``distributed`` section from :meth:`RunRegistry.distributed` (None without a view)."""
    view = result["view"]
    if view is None:
        return None
    columns = summary_columns()
    return {
        "world_size": view["world_size"],
        "ranks": [cast("RankSummaryRow", {k: r[k] for k in columns.ranks}) for r in view["ranks"]],
        "collectives": [
            cast("CollectiveSummaryRow", {k: c.get(k) for k in columns.collectives}) for c in view["collectives"]
        ],
        "bandwidth_caveat": view.get("bandwidth_caveat"),
        "matching": {"method": view["matching"]["method"], "by_type": view["matching"]["by_type"]},
        "stragglers": view["stragglers"],
        "groups": [group_summary(g) for g in view["groups"]],
        # the evidence: per rank, how often it arrived last and how long the others waited for it
        "arrivals": [cast("ArrivalSummaryRow", {k: e[k] for k in columns.arrivals}) for e in view["arrivals"]],
        "messages": result["messages"],
    }


def group_summary(group: dict[str, Any]) -> GroupSummary:
    """One process group of the report (see analysis.process_groups.combine_groups)."""
    return cast("GroupSummary", {k: group[k] for k in summary_columns().groups})


def run_critical_path(result: DistributedResult) -> list[dict[str, Any]]:
    """The critical path per step of a ``registry.distributed`` result: across the ranks with a view,
    the one rank's own without (``single_rank``), else [] (see analysis.critical_path_combine)."""
    path: list[dict[str, Any]]
    view = result["view"]
    if view is not None:
        path = view["critical_path"]
    else:
        single: Mapping[str, Any] = result.get("single_rank") or {}
        path = single.get("critical_path", [])
    return path


def add_distributed(registry: Registry, doc: ReportDocument, files: list[FileState]) -> None:
    """Runs with more than one rank gain ``distributed`` and ``critical_path`` (span 1, across ranks);
    the workers of a single-rank run gain ``distributed.groups``, their own process groups, and their
    own ``critical_path`` (see analysis.critical_path_combine)."""
    by_path = {st.entry.rel: st for st in files}
    for entry in doc["runs"]:
        workers = {w["worker"] for w in entry["workers"] if w["error"] is None}
        if len(workers) < 2:
            for w in entry["workers"]:
                st = by_path.get(w["path"])
                if (
                    w["overview"] is not None
                    and st is not None
                    and st.aggregate
                    and "groups" in st.aggregate["distributed"]
                ):
                    agg = st.aggregate["distributed"]
                    rank, _ = distributed_analysis.rank_of_info(agg["distributed_info"], st.worker, 0)
                    own = distributed_analysis.single_rank_view(rank, st.worker, agg)
                    w["distributed"] = {
                        "groups": [group_summary(g) for g in own["groups"]],
                        "messages": own["groups_messages"],
                    }
                    if "critical_path" in agg:  # the same walk, without cross-rank edges
                        w["critical_path"] = own["critical_path"]
            continue
        result = registry.distributed(entry["name"], "1")
        summary, view = distributed_summary(result), result["view"]
        if summary is not None and view is not None:  # a summary comes with a view
            entry["distributed"] = summary
            entry["critical_path"] = view["critical_path"]
