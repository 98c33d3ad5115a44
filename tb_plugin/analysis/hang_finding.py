"""The record of one hang finding (the keys ``kinetoscope hang --json`` shows) and ranks as words."""

from __future__ import annotations


def finding(
    kind: str,
    group: dict | None = None,
    seq: int | None = None,
    op: str | None = None,
    present: list | None = None,
    missing: list | None = None,
    detail: str = "",
    **extra,
) -> dict:
    """One finding: ``kind`` (missing_ranks, mismatch, not_started, not_completed, no_dump), its
    group's name, description, ``pg_id`` and ranks, the instance (``op``, ``collective_seq_id``,
    ``sizes``, ``dtype``), the ranks present and missing, a ``detail`` text and ``extra`` keys."""
    group = group or {}
    return {
        "kind": kind,
        "pg_name": group.get("pg_name"),
        "pg_desc": group.get("pg_desc"),
        "pg_id": group.get("pg_id"),
        "group_ranks": group.get("ranks"),
        "op": op,
        "collective_seq_id": seq,
        "sizes": extra.pop("sizes", None),
        "dtype": extra.pop("dtype", None),
        "ranks_present": present or [],
        "missing_ranks": missing or [],
        "detail": detail,
        **extra,
    }


def rank_list(ranks) -> str:
    """``[3]`` → "rank 3"; ``[1, 2, 3]`` → "ranks 1–3"; ``[1, 5]`` → "ranks 1, 5"."""
    ranks = sorted(ranks)
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    if len(ranks) > 2 and ranks[-1] - ranks[0] == len(ranks) - 1:
        return f"ranks {ranks[0]}–{ranks[-1]}"
    shown = ", ".join(str(r) for r in ranks[:8])
    return f"ranks {shown}" + (f" and {len(ranks) - 8} more" if len(ranks) > 8 else "")
