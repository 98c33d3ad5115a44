"""The hang verdict: :mod:`.hang`'s findings ranked root cause first, one sentence each.

Ranking (docs/METRICS.md, "Hang"): a missing-ranks finding is **explained** when every one of its
missing ranks waits in the stuck instance of another group that is not larger than this one (a rank
held in a subgroup cannot enter the collective of the group layered above it). Findings are ordered:
unexplained missing ranks, then mismatches (a desync explains what follows it), not started, not
completed, missing ranks explained by another finding, dumps that are missing; within a kind, the
smaller group first, then the earlier instance (``created_ns``). The first finding is the root cause.
"""

from __future__ import annotations

from .hang import _list

_ORDER = {"missing_ranks": 0, "mismatch": 1, "not_started": 2, "not_completed": 3, "explained": 4, "no_dump": 5}


def rank_findings(doc: dict) -> dict:
    """``doc`` (:func:`.hang.analyse`) with its findings ranked, each with ``explained_by`` (the index
    of the finding whose group holds its missing ranks, or None), ``root_cause`` and ``sentence``, and
    ``verdict``: the sentences in order, then one for unreadable dumps."""
    findings = doc["findings"]
    # rank → [(finding index, group size)] of the stuck instances it is present in
    waits: dict[int, list[tuple[int, int]]] = {}
    for i, f in enumerate(findings):
        if f["kind"] == "missing_ranks" and f["collective_seq_id"] is not None:
            for r in f.get("waiting_ranks") or f["ranks_present"]:
                waits.setdefault(r, []).append((i, len(f.get("group_ranks") or f["ranks_present"])))
    for i, f in enumerate(findings):
        f["explained_by"] = None
        if f["kind"] != "missing_ranks" or not f["missing_ranks"]:
            continue
        size = len(f.get("group_ranks") or f["ranks_present"] + f["missing_ranks"])
        holders = []
        for r in f["missing_ranks"]:
            held = [j for j, other_size in waits.get(r, []) if j != i and other_size <= size]
            if not held:
                break
            holders.append(held[0])
        else:
            f["explained_by"] = holders[0]

    def key(i: int) -> tuple:
        f = findings[i]
        kind = "explained" if f["explained_by"] is not None else f["kind"]
        created = f.get("created_ns")
        return (
            _ORDER.get(kind, 9),
            len(f.get("group_ranks") or []) or 1 << 30,
            created if created is not None else float("inf"),
            f["collective_seq_id"] or 0,
            i,
        )

    order = sorted(range(len(findings)), key=key)
    new_index = {old: new for new, old in enumerate(order)}
    ranked = [findings[i] for i in order]
    for n, f in enumerate(ranked):
        if f["explained_by"] is not None:
            f["explained_by"] = new_index[f["explained_by"]]
        f["root_cause"] = n == 0 and f["kind"] != "no_dump"
    for f in ranked:
        f["sentence"] = sentence(f, ranked)
    verdict = [f["sentence"] for f in ranked]
    if doc["unreadable"]:
        named = sorted({u["rank"] for u in doc["unreadable"] if u.get("rank") is not None})
        unnamed = sum(1 for u in doc["unreadable"] if u.get("rank") is None)
        parts = ([f"the dumps of {_list(named)} are unreadable"] if named else []) + (
            [f"{unnamed} dump{'s' if unnamed > 1 else ''} of unknown rank unreadable"] if unnamed else []
        )
        verdict.append("; ".join(parts).capitalize() + ": their ranks are not judged.")
    if not verdict:
        verdict.append("No hang found: every group's ranks reached the same collectives.")
    return dict(doc, findings=ranked, verdict=verdict)


def group_label(f: dict) -> str:
    """``pair_b (pg 2, ranks 2–3)``: the description, the name and the ranks of the finding's group."""
    name, desc = f.get("pg_name"), f.get("pg_desc")
    ranks = f.get("group_ranks")
    inner = ", ".join(filter(None, [f"pg {name}" if name not in (None, "") else None, _list(ranks) if ranks else None]))
    head = desc or (f"group {name}" if name not in (None, "") else "an unnamed group")
    return f"{head} ({inner})" if inner and desc else head


def sentence(f: dict, ranked: list[dict]) -> str:
    """One sentence in the job's words for finding ``f`` (``ranked``: all findings, for ``explained_by``)."""
    kind, op, seq = f["kind"], f.get("op") or "a collective", f.get("collective_seq_id")
    instance = f"{op} #{seq}" if seq is not None else op
    where = group_label(f)
    if kind == "no_dump":
        return f"{_list(f['missing_ranks']).capitalize()} left no flight-recorder dump: what it did is unknown."
    if kind == "missing_ranks" and seq is None:  # point to point
        return f"{f['detail'][0].upper()}{f['detail'][1:]} in {where}."
    if kind == "missing_ranks":
        missing, waiting = f["missing_ranks"], f.get("waiting_ranks") or f["ranks_present"]
        text = (
            f"{_list(missing).capitalize()} never entered {instance} of {where}; "
            f"{_list(waiting)} {'waits' if len(waiting) == 1 else 'wait'} in it"
        )
        if f.get("explained_by") is not None:
            cause = ranked[f["explained_by"]]
            text += (
                f" ({_list(missing)} {'is' if len(missing) == 1 else 'are'} held in {cause.get('op') or 'a collective'} "
                f"#{cause.get('collective_seq_id')} of {group_label(cause)})"
            )
        return text + "."
    if kind == "mismatch":
        return (
            f"{instance.capitalize()} of {where} was entered with different {f.get('field', 'arguments')}: "
            f"{f['detail'].split(': ', 1)[-1]}."
        )
    verb = "started" if kind == "not_started" else "completed"
    since = f" ({f['since_s']:.1f} s before the dumps' latest time)" if f.get("since_s") is not None else ""
    return f"{_list(f['missing_ranks']).capitalize()} enqueued {instance} of {where} but never {verb} it{since}."
