"""The cross-rank parts of ``kinetoscope report``'s text. The critical path (the ``critical_path`` of
the JSON report; µs, definitions in docs/METRICS.md "Critical path"): per step its length and shares,
the longest segments, the work on the path grouped by name, the time the host was blocked on the
device, and the collectives that waited for a late rank. The collectives (the
``distributed.collectives`` of the JSON report): bytes and bandwidths, "–" where unknown."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TextIO

from ..analysis.numfmt import fixed

if TYPE_CHECKING:
    from ..registry.records import DistributedSummary

MAX_STEPS = 10  # steps printed; the rest are counted
TOP = 3  # segments and late collectives printed per step
MAX_NAME = 80  # characters of a name printed


def print_critical_path(paths: list[dict[str, Any]], out: TextIO, across: bool) -> None:
    """``paths`` (one entry per step) as text, indented under a worker (``across``: a run's ranks)."""
    if not paths:
        return
    out.write(f"   critical path{' across ranks' if across else ''} (per step: length = step time):\n")
    for p in paths[:MAX_STEPS]:
        # the shares as served (analysis/critical_path_combine.py: by_category_pct, by_rank's pct)
        shares = " · ".join(f"{k} {_pct(v)}%" for k, v in p["by_category_pct"].items())
        out.write(f"     step {p['step']}: {fixed(p['length_us'], 1)} µs ({shares})")
        if across:
            ranks = sorted(p["by_rank"], key=lambda r: -r["us"])
            out.write(" [" + ", ".join(f"rank {r['rank']} {_pct(r['pct'])}%" for r in ranks[:4]) + "]")
        out.write(" (truncated)\n" if p["truncated"] else "\n")
        items = p.get("top_items") or []
        if items:
            out.write(
                "       most time: "
                + "; ".join(
                    f"{_name(i['name'])} {fixed(i['us'], 1)} µs over {i['segments']} segment{'s' * (i['segments'] != 1)}"
                    for i in items[:TOP]
                )
                + "\n"
            )
        if p.get("host_blocked_us"):
            out.write(f"       host blocked on the device: {fixed(p['host_blocked_us'], 1)} µs of the path\n")
        for s in p["segments"][:TOP]:
            where = f"rank {s['rank']} " if across else ""
            ctx = f" in {_name(s['annotation'])}" if s.get("annotation") else ""
            out.write(f"       {where}{s['category']} {_name(s['name'])}{ctx}: {fixed(s['dur_us'], 1)} µs\n")
        for c in p["collectives"][:TOP]:
            work = c.get("late_work")
            ctx = f" in {_name(work['annotation'])}" if work and work.get("annotation") else ""
            after = (
                f", late after {_name(work['name'])}{ctx} ({work['category']}, {fixed(work['dur_us'], 1)} µs)"
                if work
                else ""
            )
            out.write(
                f"       rank {c['rank']} waited {fixed(c['wait_us'], 1)} µs in {_name(c['name'])} "
                f"for rank {c['late_rank']}{after}\n"
            )
    if len(paths) > MAX_STEPS:
        out.write(f"     … {len(paths) - MAX_STEPS} more steps (kinetoscope report --json lists them all)\n")


def _name(text: str) -> str:
    return text if len(text) <= MAX_NAME else text[: MAX_NAME - 1] + "…"


def _or_dash(value, text) -> str:
    return "\u2013" if value is None else text(value)


def print_collectives(summary: DistributedSummary | None, out: TextIO) -> None:
    """A run's collectives (per collective and communicator size n): calls, bytes, algbw/busbw; unknown
    bytes and bandwidths read "–" (never 0 B or 0.0 GB/s); then the k-of-n caveat when there is one."""
    if not summary or not summary["collectives"]:
        return
    out.write("   collectives across ranks (bandwidths in GB/s over transfer time):\n")
    for c in summary["collectives"]:
        nbytes = _or_dash(c["bytes"], lambda b: f"{fixed(b / 2**20, 1)} MiB")
        out.write(
            f"     {c['name']} n={c['group_size']}: {c['calls']} calls, {nbytes}, "
            f"algbw {_or_dash(c['algbw_gbps'], lambda v: fixed(v, 2))}, "
            f"busbw {_or_dash(c['busbw_gbps'], lambda v: fixed(v, 2))}\n"
        )
    if summary["bandwidth_caveat"]:
        out.write(f"     note: {summary['bandwidth_caveat']}\n")


def _pct(value: float | None) -> str:
    """A served share (%) with one decimal; a path of length 0 has none: 0.0."""
    return fixed(value or 0.0, 1)
