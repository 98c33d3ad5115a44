"""Advice that holds on many ranks of a run, said once for the run: "ranks 0–127: …" with the spread of
the time it addresses. Times are µs.

A recommendation *holds* on a rank when that rank's file has a recommendation of the same key: its
``rule``, and for the call rules its ``api`` (``cudaFree`` and ``cudaStreamSynchronize`` are different
advice), for the low-utilization and unbalanced-steps rules the category they name. A key that holds on at least :data:`MIN_RANKS` ranks becomes one run recommendation:
``{"rule", "key", "ranks", "ranks_text", "rank_count", "addressed_us": {"min", "median", "max"},
"threshold_us": {"min", "median", "max"}, "text"}`` whose sentence is the one of the rank with the
median addressed time (the lower median for an even count), prefixed by the ranks and followed by the
spread. Byte-based advice (``memory_peak``) spreads ``addressed_bytes`` instead. Run recommendations are
ordered by how many ranks they hold on, then by their median addressed time.
"""

from __future__ import annotations

from typing import Any, TypedDict, cast

import numpy as np

from .numfmt import duration, fixed
from .recommendations import Recommendation

MIN_RANKS = 2


def ranks_text(ranks: list[int]) -> str:
    """``[0, 1, 2, 3, 5, 7, 8]`` → ``"0–3, 5, 7–8"``."""
    out, start = [], None
    for i, r in enumerate(ranks):
        if start is None:
            start = r
        if i + 1 == len(ranks) or ranks[i + 1] != r + 1:
            out.append(str(start) if start == r else f"{start}–{r}")
            start = None
    return ", ".join(out)


def advice_key(rec: Recommendation) -> str:
    """What makes two ranks' recommendations the same advice: the rule, and what it names (the call
    rules' API, the low-utilization rule's category)."""
    named = rec.get("api") or rec.get("category")
    return f"{rec['rule']}:{named}" if named else rec["rule"]


class RankSpread(TypedDict):
    """The lowest, median and highest of a rule's value over the ranks it holds on (µs or bytes)."""

    min: float
    median: float
    max: float


class RunAdviceBase(TypedDict):
    """A recommendation that holds on several ranks of a run (:func:`across_ranks`)."""

    rule: str
    key: str  # the rule, with the GPU or the name a per-item rule names
    ranks: list[int]
    ranks_text: str  # the ranks as ranges ("0-3, 5")
    rank_count: int
    text: str


class RunAdvice(RunAdviceBase, total=False):
    """A run recommendation with its spread: of ``addressed_us`` (and ``threshold_us``) for a time rule,
    of ``addressed_bytes`` for a memory one."""

    addressed_us: RankSpread
    threshold_us: RankSpread
    addressed_bytes: RankSpread


def _spread(values: list[float]) -> RankSpread:
    v = np.sort(np.asarray(values, dtype=np.float64))
    return {"min": float(v[0]), "median": float(np.median(v)), "max": float(v[-1])}


def across_ranks(per_rank: list[tuple[int, list[Recommendation]]]) -> list[RunAdvice]:
    """The run recommendations (module docstring) of ``[(rank, that rank's recommendation details)]``."""
    found: dict[str, list[tuple[int, Recommendation]]] = {}
    for rank, recs in per_rank:
        seen = set()
        for rec in recs:
            key = advice_key(rec)
            if key not in seen:  # per-GPU rules: the rank's first (largest) one
                seen.add(key)
                found.setdefault(key, []).append((rank, rec))
    out: list[dict[str, Any]] = []
    for key, hits in found.items():
        if len(hits) < MIN_RANKS:
            continue
        hits.sort(key=lambda h: h[0])
        unit = "addressed_us" if "addressed_us" in hits[0][1] else "addressed_bytes"
        values = [
            h[1].get("addressed_us", 0.0) if unit == "addressed_us" else h[1].get("addressed_bytes", 0) for h in hits
        ]
        middle = sorted(range(len(hits)), key=lambda i: values[i])[(len(hits) - 1) // 2]
        ranks = [h[0] for h in hits]
        spread = _spread(values)
        doc: dict[str, Any] = {
            "rule": hits[0][1]["rule"],
            "key": key,
            "ranks": ranks,
            "ranks_text": ranks_text(ranks),
            "rank_count": len(ranks),
            unit: spread,
        }
        if unit == "addressed_us":
            doc["threshold_us"] = _spread([h[1]["threshold_us"] for h in hits])
            said = (
                f"addresses {duration(spread['min'])} to {duration(spread['max'])} per rank "
                f"(median {duration(spread['median'])})"
            )
        else:
            said = (
                f"{fixed(spread['min'] / 2**30, 1)} to {fixed(spread['max'] / 2**30, 1)} GiB per rank "
                f"(median {fixed(spread['median'] / 2**30, 1)} GiB)"
            )
        doc["text"] = (
            f"Ranks {doc['ranks_text']}: {hits[middle][1]['text']} Across these ranks it {said}."
            if unit == "addressed_us"
            else f"Ranks {doc['ranks_text']}: {hits[middle][1]['text']} Peaks: {said}."
        )
        out.append(doc)
    ranked = sorted(out, key=lambda d: (-d["rank_count"], -(d.get("addressed_us") or d["addressed_bytes"])["median"]))
    return cast("list[RunAdvice]", ranked)  # built key by key above
