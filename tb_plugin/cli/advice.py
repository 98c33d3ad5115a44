"""The text report's advice block for one file: its "About this trace" warnings, the first rows of its
runtime-calls table and its one list of recommendations, each with its rule id, the time it addresses
and its threshold (the same list ``report --json``, the routes, MCP and the notebook serve); the advice
that holds on several ranks of a run is printed once for the run."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from ..analysis.advice_ranks import RunAdvice, advice_key
from ..analysis.numfmt import fixed
from ..analysis.overview import Overview
from ..registry import report

if TYPE_CHECKING:
    from ..registry.records import RunReport


def bytes_text(n: float) -> str:
    """Bytes as MiB (one decimal) below 1 GiB, else GiB (two decimals); 1 MiB = 2**20 bytes."""
    return f"{fixed(n / 2**30, 2)} GiB" if n >= 2**30 else f"{fixed(n / 2**20, 1)} MiB"


TOP_RUNTIME_CALLS = 5  # rows of the runtime-calls table in the text report
_BASIS = {
    "average_step": "per average step",
    "steps_window": "in the steps window",
    "median_step": "over the median step",
}


def print_run_advice(run: RunReport, out: TextIO) -> None:
    """The advice that holds on several ranks of a run, once for the run (``run["recommendations"]``)."""
    recs = run.get("recommendations") or []
    if recs:
        out.write(f"\n== run {run['name']}: advice that holds on several ranks\n")
    for rec in recs:
        out.write(f"   * [{rec['rule']}] {rec['text']}\n")


def print_advice(ov: Overview, out: TextIO, run_recs: list[RunAdvice] | None = None) -> None:
    """The file's "About this trace" warnings, its runtime calls (most time first) and its one list of
    recommendations, each with its rule, the time it addresses and its threshold; advice said once for
    the run (``run_recs``, :func:`print_run_advice`) is not repeated here."""
    doc = report.advice_document(ov, TOP_RUNTIME_CALLS)
    said = {r["key"] for r in run_recs or []}
    for about in doc["about"]:
        out.write(f"   about this trace: {about['text']}\n")
    calls = doc["runtime_calls"]
    if calls["rows"]:
        out.write(f"   {'Runtime call':<28}{'calls':>9}{'total ms':>12}{'% of steps':>11}  blocks  issued by\n")
        for r in calls["rows"]:
            pct = "–" if r["window_pct"] is None else f"{fixed(r['window_pct'], 1)}%"
            issuer = r["operators"][0]["name"] if r["operators"] else "–"
            out.write(
                f"   {r['api'][:27]:<28}{r['calls']:>9,}{fixed(r['total_us'] / 1000, 3):>12}{pct:>11}  "
                f"{'yes' if r['blocks'] else 'no':<6}  {issuer}\n"
            )
    for rec in doc["recommendation_details"]:
        if advice_key(rec) in said:
            continue
        if "addressed_us" in rec:
            basis = _BASIS.get(rec["basis"], rec["basis"])
            why = (
                f"addresses {fixed(rec['addressed_us'] / 1000, 3)} ms {basis}, threshold "
                f"{fixed(rec['threshold_us'] / 1000, 3)} ms"
            )
        else:
            why = f"addresses {bytes_text(rec['addressed_bytes'])}, threshold {bytes_text(rec['threshold_bytes'])}"
        out.write(f"   * [{rec['rule']}] {rec['text']} ({why})\n")
