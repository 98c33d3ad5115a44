"""Critical path of each step across the loaded ranks, from their chains (µs; definitions in
:mod:`analysis.critical_path` and docs/METRICS.md "Critical path").

The **step window** of a step (matched by name across ranks) is ``[min start, max end]`` over the
ranks that have it, on the common clock; its length is ``length_us``. The walk starts at the end of
the rank whose step ends last, on that rank's end chain. When a chain stops at a communication
kernel ``E = [s, e]`` of rank ``r``:

- if ``E`` belongs to a matched instance whose **late rank** ``q`` (the participant whose kernel
  starts last on the common clock, at ``s_q``) is another rank and ``s < s_q ≤ e``, the path holds
  ``[s_q, e]`` as communication on ``r`` (``late_rank`` = ``q``, ``wait_us`` = ``s_q − s``: how long
  ``r`` waited) and continues on ``q``'s chain from its kernel's start; the longest non-waiting
  segment of that chain is ``late_work``, the work on ``q`` that made it late;
- otherwise ``[s, e]`` is communication on ``r`` and the path continues on ``r``'s chain from ``E``.

Time before a rank's own step start is waiting (on that rank). So the segments tile the window:
``Σ by_category = Σ by_rank = length_us``. One rank is the same walk without cross-rank edges.
"""

from __future__ import annotations

import numpy as np

from .collective_matching import Matching
from .critical_path_chain import CATEGORIES, COMM, TOP, WAIT

MAX_HOPS = 1_000_000  # chains followed per step at most (each moves strictly back in time)


def critical_paths(ranks: list[tuple[int, dict]], matching: Matching | None = None) -> list[dict]:
    """Per step (in the first rank's order, then the others'): ``step``, ``length_us``,
    ``by_category`` {category: µs}, ``by_category_pct`` {category: % of the length}, ``by_rank`` [{``rank``,
    ``us``, ``pct`` (% of the length)}] (the shares every interface shows, computed here once), ``segments`` (the ten longest:
    ``rank``, ``category``, ``name``, ``row`` (its event in the rank's trace, −1 for waiting), ``start_us``
    on the rank's own clock, ``at_us`` from the
    window's start, ``dur_us``; communication ones add ``late_rank``, ``wait_us``, ``late_work``),
    ``collectives`` (the ten on the path that waited longest) and ``truncated``."""
    cps, late, shift, names = _prepare(ranks, matching)
    return [_walk(step, cps, late, shift) for step in names]


def path_trails(ranks: list[tuple[int, dict]], matching: Matching | None = None) -> dict[str, tuple[dict, list]]:
    """Per step, its path (as :func:`critical_paths`) and what the walk followed, in walk order
    (backward): ``("chain", rank,
    key, start_us, end_us)`` for each chain followed (``key`` −1: the rank's step-end chain, else the
    index of the communication kernel it starts at; its step's bounds on the rank's own clock) and
    ``("seg", rank, segment)`` for each segment the combination adds (communication, waiting before a
    rank's step). What the Trace view overlays (:mod:`analysis.critical_path_overlay`)."""
    cps, late, shift, names = _prepare(ranks, matching)
    out = {}
    for step in names:
        trail: list[tuple] = []
        out[step] = (_walk(step, cps, late, shift, trail), trail)
    return out


def _prepare(ranks: list[tuple[int, dict]], matching: Matching | None):
    """Chains by rank, late ranks, clock shifts (common clock − ref, small: no rounding), step names."""
    cps = dict(ranks)
    ref = min((cp["offset_us"] for cp in cps.values()), default=0.0)
    shift = {r: cp["offset_us"] - ref for r, cp in cps.items()}
    late = _late_ranks(cps, matching, shift) if matching is not None else {}
    names: list[str] = []
    for _, cp in ranks:
        names += [s["step"] for s in cp["steps"] if s["step"] not in names]
    return cps, late, shift, names


def _late_ranks(cps: dict[int, dict], matching: Matching, shift: dict[int, float]) -> dict:
    """Per rank: for each of its communication kernels, the late rank of its instance and that rank's
    kernel index (−1 when unmatched)."""
    out = {
        r: (
            np.full(len(cp["comm"]["start"]), -1, dtype=np.int64),
            np.full(len(cp["comm"]["start"]), -1, dtype=np.int64),
        )
        for r, cp in cps.items()
    }
    for gm in matching.groups:
        if len(gm.index) == 0 or any(r not in cps for r in gm.ranks):
            continue
        starts = np.stack(
            [
                np.asarray(cps[r]["comm"]["start"], dtype=np.float64)[gm.index[:, p]] + shift[r]
                for p, r in enumerate(gm.ranks)
            ],
            axis=1,
        )
        last = np.argmax(starts, axis=1)
        late_rank = np.asarray(gm.ranks, dtype=np.int64)[last]
        late_idx = gm.index[np.arange(len(last)), last]
        for p, r in enumerate(gm.ranks):
            out[r][0][gm.index[:, p]] = late_rank
            out[r][1][gm.index[:, p]] = late_idx
    return out


def _walk(step: str, cps: dict[int, dict], late: dict, shift: dict[int, float], trail: list | None = None) -> dict:
    """One step's path; times on the common clock − ref (``shift`` added to each rank's own); what it
    walks goes to ``trail`` when given (see :func:`path_trails`)."""
    here = {
        r: {"start": s["start"] + shift[r], "end": s["end"] + shift[r], "chain": s["chain"]}
        for r, cp in cps.items()
        for s in cp["steps"]
        if s["step"] == step
    }
    own = {r: (s["start"], s["end"]) for r, cp in cps.items() for s in cp["steps"] if s["step"] == step}
    key = -1
    lo = min(s["start"] for s in here.values())
    hi = max(s["end"] for s in here.values())
    r = max(here, key=lambda k: (here[k]["end"], -k))
    by_cat = np.zeros(len(CATEGORIES))
    by_rank: dict[int, float] = {}
    segments: list[dict] = []
    collectives: list[dict] = []
    chain = here[r]["chain"]
    truncated = False
    blocked = 0.0
    items: dict[tuple, list] = {}

    def count(cat: int, name: str, us: float, n: int) -> None:
        it = items.setdefault((cat, name), [0.0, 0])
        it[0] += us
        it[1] += n

    def add(rank: int, cat: int, a: float, b: float, name: str, row: int = -1, **extra) -> dict | None:
        if b <= a:
            return None
        by_cat[cat] += b - a
        by_rank[rank] = by_rank.get(rank, 0.0) + (b - a)
        seg = {
            "rank": rank,
            "category": CATEGORIES[cat],
            "name": name,
            "row": row,
            "start_us": a - shift[rank],
            "at_us": a - lo,
            "dur_us": b - a,
            **extra,
        }
        segments.append(seg)
        if cat != WAIT:
            count(cat, name, b - a, 1)
        if trail is not None:
            trail.append(("seg", rank, seg))
        return seg

    for _ in range(MAX_HOPS):
        if trail is not None and r in own:
            trail.append(("chain", r, key) + own[r])
        truncated |= chain["truncated"]
        by_cat += chain["by_category"]
        blocked += chain.get("host_blocked_us", 0.0)
        for c, n, us, k in chain.get("items", ()):
            count(c, n, us, k)
        by_rank[r] = by_rank.get(r, 0.0) + float(np.sum(chain["by_category"]))
        segments.extend(_segment(s, r, shift[r] - lo) for s in chain["top"])
        e_idx = chain["stop"]
        comm = cps[r]["comm"]
        if e_idx < 0:
            add(r, WAIT, lo, chain["lo"] + shift[r], "before this rank's step")
            break
        # ee: the kernel's end, or where the path met it when work on its stream overlapped it
        es, ee, name = comm["start"][e_idx] + shift[r], chain["lo"] + shift[r], comm["name"][e_idx]
        row = comm["row"][e_idx]
        rank_lo = here[r]["start"] if r in here else lo
        if es <= rank_lo:
            add(r, COMM, rank_lo, ee, name, row)
            add(r, WAIT, lo, rank_lo, "before this rank's step")
            break
        q, qi = (int(late[r][0][e_idx]), int(late[r][1][e_idx])) if r in late else (-1, -1)
        target = cps[q]["comm"]["chain"][qi] if q >= 0 and q != r else None
        sq: float = cps[q]["comm"]["start"][qi] + shift[q] if target is not None else 0.0  # (0: unused)
        if target is not None and es < sq <= ee and target["lo"] + shift[q] >= lo:
            work = target["work"]
            seg = add(
                r,
                COMM,
                sq,
                ee,
                name,
                row,
                late_rank=q,
                wait_us=sq - es,
                late_work=None
                if work is None
                else {
                    "name": work[1],
                    "category": CATEGORIES[work[0]],
                    "dur_us": work[3],
                    "annotation": work[5] if len(work) > 5 else None,
                },
            )
            if seg is not None:
                collectives.append(seg)
            r, chain, key = q, target, qi
            continue
        add(r, COMM, es, ee, name, row, late_rank=q if q >= 0 else None, wait_us=0.0, late_work=None)
        nxt = comm["chain"][e_idx]
        if nxt is None:
            add(r, WAIT, lo, es, "idle")
            break
        chain, key = nxt, e_idx
    else:  # too many hops: the rest of the window, before the chain not followed, is waiting
        truncated = True
        add(r, WAIT, lo, chain["hi"] + shift[r], "not walked (too many collectives)")
    segments.sort(key=lambda s: -s["dur_us"])
    collectives.sort(key=lambda s: -s["wait_us"])
    return {
        "step": step,
        "length_us": float(hi - lo),
        "by_category": dict(zip(CATEGORIES, map(float, by_cat))),
        "by_category_pct": {c: share_pct(float(v), hi - lo) for c, v in zip(CATEGORIES, by_cat)},
        "by_rank": [
            {"rank": k, "us": float(v), "pct": share_pct(float(v), hi - lo)} for k, v in sorted(by_rank.items())
        ],
        "segments": segments[:TOP],
        "collectives": collectives[:TOP],
        "truncated": bool(truncated),
        "host_blocked_us": float(blocked),
        "top_items": [
            {"category": CATEGORIES[c], "name": n, "us": float(v[0]), "segments": int(v[1])}
            for (c, n), v in sorted(items.items(), key=lambda kv: (-kv[1][0], kv[0][1]))[:TOP]
        ],
    }


def share_pct(part_us: float, length_us: float) -> float | None:
    """``part_us`` as a % of the path's length (None for a path of length 0)."""
    return part_us / length_us * 100 if length_us > 0 else None


def _segment(seg: tuple, rank: int, to_window: float) -> dict:
    """A chain's segment ``[category, name, start_us, dur_us, row]`` as the report lists it."""
    cat, name, start, dur, row = seg[:5]
    out = {
        "rank": rank,
        "category": CATEGORIES[cat],
        "name": name,
        "row": row,
        "start_us": start,
        "at_us": start + to_window,
        "dur_us": dur,
    }
    if len(seg) > 6 and (seg[5] is not None or seg[6] is not None):
        out["annotation"], out["python"] = seg[5], seg[6]
    return out
