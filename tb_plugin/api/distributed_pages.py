"""The ``distributed`` answer held within its 2 MB bound: what grows with ranks × steps is paged.

The registry keeps the whole cross-rank view (:meth:`registry.distributed.Distributed.distributed`);
this module only chooses what one answer carries, computing nothing new:

- each rank row keeps its per-step means and drops its per-step rows (``steps``), replaced by
  ``steps_total``; ``?rank=R`` adds ``view.rank_steps``, one page (``offset``, ``limit``) of that
  rank's per-step rows;
- the critical path keeps one summary per step (length, ``by_category``, the ``by_rank`` of the
  :data:`MAX_PATH_RANKS` ranks of most time and ``by_rank_other`` for the rest), at most
  :data:`MAX_PATH_STEPS` steps (``critical_path_total`` counts them all); the step's ``segments``,
  ``top_items`` and ``collectives`` come with one step only (``detailed`` true): ``?step=S``, else the
  first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..registry.records import DistributedResult

MAX_PATH_RANKS = 16  # ranks listed in a critical-path step's by_rank (those of most time)
MAX_PATH_STEPS = 1000  # critical-path steps in one answer (the first, in step order)
MAX_STEP_ROWS = 1000  # per-step rows of one rank in one page
DETAIL_FIELDS = ("segments", "top_items", "collectives")


def path_summary(step: dict[str, Any], detailed: bool) -> dict[str, Any]:
    """One critical-path step with ``by_rank`` cut to the ranks of most time (the rest summed in
    ``by_rank_other``: ``ranks``, ``us``), and its segment lists only when ``detailed``."""
    ranks = sorted(step.get("by_rank") or [], key=lambda r: -r["us"])
    kept, rest = ranks[:MAX_PATH_RANKS], ranks[MAX_PATH_RANKS:]
    out = {k: v for k, v in step.items() if k != "by_rank" and (detailed or k not in DETAIL_FIELDS)}
    out["by_rank"] = sorted(kept, key=lambda r: r["rank"])
    out["by_rank_other"] = {"ranks": len(rest), "us": float(sum(r["us"] for r in rest))}
    out["detailed"] = detailed
    return out


def bounded_path(steps: list[dict[str, Any]], step: str | None) -> tuple[list[dict[str, Any]], int]:
    """The critical path's steps as one answer carries them (see the module doc) and their total
    count. ``step`` picks the detailed step (unknown or None: the first)."""
    shown = steps[:MAX_PATH_STEPS]
    names = [s["step"] for s in steps]
    chosen = step if step in names else (names[0] if names else None)
    detailed = [s for s in steps if s["step"] == chosen][:1]
    out = [path_summary(s, s["step"] == chosen) for s in shown]
    if detailed and all(s["step"] != chosen for s in shown):  # a step past the cap, asked for by name
        out.append(path_summary(detailed[0], True))
    return out, len(steps)


def bounded_view(doc: DistributedResult, step: str | None, rank: int | None, offset: int, limit: int) -> dict[str, Any]:
    """The registry's ``distributed`` document as the route answers it (see the module doc)."""
    out: dict[str, Any] = {**doc}
    single = doc.get("single_rank")
    if single:
        path, total = bounded_path(single.get("critical_path") or [], step)
        out["single_rank"] = dict(single, critical_path=path, critical_path_total=total)
    view = doc.get("view")
    if not view:
        return out
    rows = [
        {k: v for k, v in r.items() if k != "steps"} | {"steps_total": len(r.get("steps") or [])} for r in view["ranks"]
    ]
    path, total = bounded_path(view.get("critical_path") or [], step)
    page = None
    if rank is not None:
        mine = next((r for r in view["ranks"] if r["rank"] == rank), None)
        steps = (mine or {}).get("steps") or []
        page = {
            "rank": rank,
            "found": mine is not None,
            "total": len(steps),
            "offset": offset,
            "rows": steps[offset : offset + limit],
        }
    out["view"] = dict(view, ranks=rows, critical_path=path, critical_path_total=total, rank_steps=page)
    return out
