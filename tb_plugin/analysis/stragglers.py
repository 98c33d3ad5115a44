"""Stragglers: the ranks the others wait for at collectives (µs).

**Arrival order without clocks.** The kernels of one collective instance end together on every rank
(no rank can finish before the last one has contributed), so a rank's kernel starts when that rank
arrives and its duration is *common end − arrival*. The rank with the **shortest** kernel arrived
**last**; the others waited ``their duration − the shortest`` for it. This uses durations only, so it is
robust to clock offsets between the ranks' traces (their timestamps are never compared).

Per matched instance (see :mod:`analysis.collective_matching`) with ``p`` participants: the **last**
rank is the unique one with the shortest kernel (ties: no last rank), and the others' **wait** for it
is the mean over the other ``p − 1`` ranks of ``duration − shortest`` (µs). Per rank: ``instances`` it
took part in, ``last`` (how many it was last at), ``wait_total_us`` (sum of the others' wait at those)
and ``wait_mean_us`` (that ÷ ``last``; 0 when never last).

A rank is a **straggler** when all of these hold:

- it took part in at least ``MIN_INSTANCES`` (3) matched instances;
- it was last at ≥ ``MIN_LAST_SHARE`` (50 %) of them;
- being last that often is unlikely by chance: with each participant equally likely to be last
  (probability ``1/p``, averaged over its instances), the binomial probability of ``last`` or more is
  below ``MAX_CHANCE`` (1 %), e.g. 2 ranks need 7 of 7 or 18 of 20, 8 ranks 3 of 3 or 5 of 8;
- the others' mean wait for it is ≥ ``MIN_WAIT_SHARE`` (5 %) of the median instance duration (the mean
  kernel duration across ranks, median over matched instances) and ≥ ``MIN_WAIT_US`` (5 µs): being
  last by a hair is launch jitter, not a straggler.

We differ from torch-tb-profiler (and from our own earlier rule), which flagged ranks whose step time
exceeds the median by 10 %: those are typically the ranks that *waited* (their steps contain the wait).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .numfmt import duration

MIN_INSTANCES = 3
MIN_LAST_SHARE = 0.5
MAX_CHANCE = 0.01
MIN_WAIT_SHARE = 0.05
MIN_WAIT_US = 5.0


@dataclass
class _RankArrivals:
    """One rank's arrival counts over every collective instance it took part in."""

    instances: int = 0  # instances the rank took part in
    last: int = 0  # instances where it alone arrived last
    wait_total_us: float = 0.0  # the others' wait for it at those, summed (µs)
    chance: float = 0.0  # instances it would be last in by chance (sum of 1/participants)
    by_type: dict[str, list[int]] = field(default_factory=dict)  # collective → [last, instances]


def arrivals(instances: list[tuple[list[int], np.ndarray, list[str]]], all_ranks: list[int]) -> list[dict]:
    """Per rank (``all_ranks`` order) the arrival evidence and the straggler verdict.

    ``instances``: per process group ``(participant ranks, durations[k, p] µs, collective of each k)``."""
    stats = {r: _RankArrivals() for r in all_ranks}
    means = []
    for ranks, dur, types in instances:
        if len(dur) == 0 or len(ranks) < 2:
            continue
        p = len(ranks)
        shortest = dur.min(axis=1)
        unique = (dur == shortest[:, None]).sum(axis=1) == 1
        last = np.argmin(dur, axis=1)
        wait = (dur.sum(axis=1) - p * shortest) / (p - 1)
        means.append(dur.mean(axis=1))
        counts = np.bincount(last[unique], minlength=p)
        waits = np.bincount(last[unique], weights=wait[unique], minlength=p)
        type_of = np.asarray(types, dtype=object)
        for q, r in enumerate(ranks):
            s = stats[r]
            s.instances += len(dur)
            s.last += int(counts[q])
            s.wait_total_us += float(waits[q])
            s.chance += len(dur) / p
            for t in np.unique(type_of).tolist():
                of_type = type_of == t
                row = s.by_type.setdefault(t, [0, 0])
                row[0] += int((unique & (last == q) & of_type).sum())
                row[1] += int(of_type.sum())
    median_dur = float(np.median(np.concatenate(means))) if means else 0.0
    out = []
    for r in all_ranks:
        s = stats[r]
        n, k = s.instances, s.last
        mean_wait = s.wait_total_us / k if k else 0.0
        chance = binomial_tail(k, n, s.chance / n) if n else 1.0
        straggler = (
            n >= MIN_INSTANCES
            and k >= MIN_LAST_SHARE * n
            and chance < MAX_CHANCE
            and mean_wait >= max(MIN_WAIT_SHARE * median_dur, MIN_WAIT_US)
        )
        by_type = [
            {"name": t, "last": v[0], "instances": v[1]} for t, v in sorted(s.by_type.items(), key=lambda kv: -kv[1][1])
        ]
        out.append(
            {
                "rank": r,
                "instances": n,
                "last": k,
                "last_share": k / n if n else 0.0,
                "wait_total_us": s.wait_total_us,
                "wait_mean_us": mean_wait,
                "chance": chance,
                "straggler": bool(straggler),
                "by_type": by_type,
                "text": evidence_text(r, n, k, mean_wait, s.wait_total_us, by_type),
            }
        )
    return out


def binomial_tail(k: int, n: int, q: float) -> float:
    """P(X ≥ k) for X ~ Binomial(n, q) (vectorized over the terms)."""
    if k <= 0:
        return 1.0
    if q <= 0:
        return 0.0
    if q >= 1:
        return 1.0
    log_fact = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, n + 1)))])
    ks = np.arange(k, n + 1)
    log_pmf = log_fact[n] - log_fact[ks] - log_fact[n - ks] + ks * math.log(q) + (n - ks) * math.log1p(-q)
    return float(min(1.0, np.exp(log_pmf).sum()))


def evidence_text(rank: int, n: int, k: int, mean_wait: float, total_wait: float, by_type: list[dict]) -> str:
    """``rank 3: last at 18 of 20 allreduce instances; the others waited 4.2 ms on average for it (…)``."""
    if n == 0:
        return f"rank {rank}: took part in no matched collective"
    if len(by_type) == 1:
        what = f"{by_type[0]['name']} instances"
    else:
        what = (
            "collective instances (" + ", ".join(f"{t['name']} {t['last']} of {t['instances']}" for t in by_type) + ")"
        )
    head = f"rank {rank}: last at {k} of {n} {what}"
    if k == 0:
        return head
    return f"{head}; the others waited {duration(mean_wait)} on average for it ({duration(total_wait)} in all)"
