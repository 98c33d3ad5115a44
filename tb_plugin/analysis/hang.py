"""Why a job hung: per process group, which ranks reached which collective, from the flight-recorder
dumps of its ranks (:mod:`tb_plugin.artifacts.flight_recorder` records).

Definitions (docs/METRICS.md, "Hang"):

- A **group** is identified by its **name** (``process_group[0]``, the ``pg_config`` key); ``pg_id`` is a
  per-process counter, shown per rank. Its **ranks**: ``pg_config``'s when a dump lists them, else the
  ranks whose dumps hold entries of the group.
- Per rank and group, **last enqueued** is the highest ``collective_seq_id`` of its collective (not
  point-to-point) entries; **last started** / **last completed** the highest of those in state
  ``started``/``completed``, raised to ``pg_status`` where the dump tracks states (some entry started
  or completed, or ``pg_status`` has a started collective; Gloo dumps record neither, so states are
  not judged for them, and its ``pg_status`` also counts point-to-point ops); last started is at
  least last completed (without timing, ``pg_status`` never records a start: ``last_started_collective``
  stays −1 while collectives complete, as in the dump PyTorch's flight-recorder docs print).
- **Stuck instance** of a group: the lowest sequence number that some ranks enqueued and others did
  not (the lowest last enqueued, plus one). Its **missing ranks** are the ranks that did not; a rank
  whose ring buffer wrapped (its oldest entry's ``record_id`` above 0) and holds no entry of the group
  is **unknown**, not missing; a rank of the group without a readable dump is ``no_dump``.
- **Mismatch**: one instance (group, sequence number) entered with different ops, dtypes or sizes
  (sizes are not compared for all_to_all, gather and scatter, whose sizes differ by rank).
- **Not started / not completed**: the lowest instance that every rank of the group enqueued but
  some never started (or started and never completed), where states are tracked; **time since** is
  from that instance's creation (or start) to the latest time recorded in any dump (s).
- **Point-to-point**: sends from rank a to rank b (``send a->b`` in the op's name) and receives of b
  from a are paired in order per pair; the extra ones are unmatched (only when neither rank's buffer
  wrapped: older ops may be gone).
"""

from __future__ import annotations

import numpy as np

from .hang_finding import finding, rank_list
from .hang_mismatch import mismatches
from .hang_p2p import p2p_findings
from .hang_records import DumpRankRow
from .hang_table import Cells, Table, per_key

NS_PER_S = 1e9


def analyse(records: list[dict], unreadable: list[dict] | None = None) -> dict:
    """The hang document (see docs/METRICS.md): ``ranks``, ``groups``, ``findings`` (unranked; see
    :mod:`.hang_verdict`), ``unreadable``, ``latest_ns``. ``records``: readable dumps with a rank
    (each a :mod:`~tb_plugin.artifacts.flight_recorder` record with numpy columns,
    :func:`~tb_plugin.artifacts.flight_recorder.to_columns`, plus ``path``); ``unreadable``:
    ``{"path", "rank", "error"}``."""
    unreadable = list(unreadable or [])
    seen: dict[int, dict] = {}
    for rec in records:
        if rec["rank"] in seen:
            first = seen[rec["rank"]].get("path")
            error = f"a second dump of rank {rec['rank']} (the first is {first})"
            unreadable.append({"path": rec.get("path"), "rank": rec["rank"], "error": error})
        else:
            seen[rec["rank"]] = rec
    records = [seen[r] for r in sorted(seen)]
    t = Table(records)
    cells = Cells(t)
    ends = [int(c.max()) for c in (t.created_ns, t.started_ns, t.completed_ns) if c.size]
    latest = max(ends) if ends and max(ends) >= 0 else None
    ranks = _rank_rows(records, t)
    job = _Job(t, cells, records, ranks, unreadable, latest)
    groups = [job.group(g, name) for g, name in enumerate(t.names["pg_name"])]
    desync = mismatches(t, dict(enumerate(groups)))
    findings = []
    for g, group in enumerate(groups):
        findings.extend(job.missing(g, group))
        findings.extend(desync.get(g, []))
        findings.extend(job.states(g, group))
    findings.extend(p2p_findings(t, job.wrapped, job.dumped))
    known = set().union(*(set(gr["ranks"]) for gr in groups)) if groups else set()
    world = known | job.dumped | job.bad
    # ranks numbered between dumped ones, when they are not many more than the ranks known
    guessed = set(range(max(world) + 1)) - world if world and max(world) < 2 * len(world) + 64 else set()
    nodump = sorted((known | guessed) - job.dumped - job.bad)
    if nodump:  # one finding for all of them
        detail = f"no dump of {rank_list(nodump)} (members of the groups, or numbered between dumped ranks)"
        findings.append(finding("no_dump", missing=nodump, detail=detail))
    for group in groups:
        del group["_last"], group["_unknown"]
    return {"ranks": ranks, "groups": groups, "findings": findings, "unreadable": unreadable, "latest_ns": latest}


def _rank_rows(records: list[dict], t: Table) -> list[DumpRankRow]:
    """One row per dump read: where its rank came from, its entries, whether it tracks states and
    timing and whether its ring buffer wrapped (its oldest ``record_id`` above 0)."""
    started = t.per_rank_any(t.started)
    timing = t.per_rank_any((t.started_ns >= 0) | (t.completed_ns >= 0))
    big = np.iinfo(np.int64).max
    oldest = t.per_rank_min(np.where(t.record_id >= 0, t.record_id.astype(np.int64), big), big)
    rows: list[DumpRankRow] = []
    for rec in records:
        r, status = rec["rank"], rec.get("pg_status", {})
        rows.append(
            {
                "rank": r,
                "path": rec.get("path"),
                "rank_from": rec.get("rank_from"),
                "version": rec.get("version"),
                "entries": t.bounds[r].stop - t.bounds[r].start,
                "states_tracked": started[r] or any(v[1] >= 0 for v in status.values()),
                "timing": timing[r],
                "wrapped": bool(0 < oldest[r] < big),
                "pg_status": status,
            }
        )
    return rows


class _Job:
    """What the per-group questions share: the table, its cells, the ranks' dumps and states."""

    def __init__(
        self, t: Table, cells: Cells, records: list[dict], ranks: list[DumpRankRow], unreadable, latest
    ) -> None:
        self.t, self.cells, self.latest = t, cells, latest
        self.tracked = {r["rank"]: r["states_tracked"] for r in ranks}
        self.wrapped = {r["rank"] for r in ranks if r["wrapped"]}
        self.dumped = {r["rank"] for r in ranks}
        self.bad = {u["rank"] for u in unreadable if u.get("rank") is not None} - self.dumped
        self.status_of = {rec["rank"]: rec.get("pg_status", {}) for rec in records}
        self.config: dict[str, tuple[set, str]] = {}  # group name → (its ranks in any pg_config, a description)
        for rec in records:
            for name, cfg in rec.get("pg_config", {}).items():
                ranks_of, desc = self.config.get(name, (set(), ""))
                self.config[name] = (ranks_of | set(cfg.get("ranks") or ()), desc or cfg.get("desc") or "")
        named = np.array([bool(d) for d in t.names["pg_desc"]] or [False])
        has_desc = np.flatnonzero(named[t.pg_desc])
        self.desc = per_key(np.minimum, max(len(t.names["pg_name"]), 1), t.pg_name[has_desc], t.pg_desc[has_desc])

    def group(self, g: int, name) -> dict:
        """Group ``g``'s record: name, description, ranks, ``pg_id`` and per rank its last enqueued,
        started and completed instance (``_last``: rank → (those sequence numbers, has entries))."""
        t, cells = self.t, self.cells
        code = int(self.desc[g])
        desc = t.names["pg_desc"][code] if code < len(t.names["pg_desc"]) else ""
        cfg_ranks, cfg_desc = self.config.get(name, (set(), "")) if name is not None else (set(), "")
        desc = desc or cfg_desc or ""
        members = sorted(cfg_ranks or cells.ranks_in(g))
        pg_ids = {}
        for r in cells.ranks_in(g):
            c = cells.of(r, g)
            lo, hi = int(cells.pg_id_lo[c]), int(cells.pg_id_hi[c])
            if lo == hi:
                pg_ids[r] = lo
            else:  # the rank gave the group several ids (rare): list them
                mine = t.bounds[r]
                pg_ids[r] = np.unique(t.pg_id[mine][t.pg_name[mine] == g]).tolist()
        one = len({str(v) for v in pg_ids.values()}) == 1
        group = {
            "pg_name": name,
            "pg_desc": desc,
            "ranks": members,
            "ranks_from": "pg_config" if cfg_ranks else "dumps",
            "pg_id": next(iter(pg_ids.values())) if one else {str(r): v for r, v in pg_ids.items()},
        }
        per_rank, last = [], {}
        for r in members:  # one row per rank of the group
            if r not in self.dumped:
                per_rank.append({"rank": r, "dump": "unreadable" if r in self.bad else "none"})
                continue
            c = cells.of(r, g)
            rows = (-1, -1, -1) if c is None else (cells.enqueued[c], cells.started[c], cells.completed[c])
            enq, st, done = (self._seq_op(int(row)) for row in rows)
            if not self.tracked[r]:
                st = done = None
            pid = pg_ids.get(r)
            status = self.status_of[r].get(str(pid)) if pid is not None and not isinstance(pid, list) else None
            if self.tracked[r] and status is not None:  # pg_status outlives the ring buffer
                enq, st, done = (_raise(enq, status[0]), _raise(st, status[1]), _raise(done, status[2]))
            if done is not None and (st is None or st["collective_seq_id"] < done["collective_seq_id"]):
                st = done  # completed implies started (without timing, pg_status never records a start)
            seqs = tuple(None if x is None else x["collective_seq_id"] for x in (enq, st, done))
            last[r] = seqs + (rows[0] >= 0,)
            per_rank.append(
                {
                    "rank": r,
                    "dump": "read",
                    "last_enqueued": enq,
                    "last_started": st,
                    "last_completed": done,
                    "pg_status": status,
                }
            )
        # a rank whose buffer wrapped past every entry of the group (and no pg_status says more) is unknown
        unknown = sorted(r for r, v in last.items() if r in self.wrapped and not v[3] and v[0] is None)
        group["per_rank"], group["stuck"], group["_last"], group["_unknown"] = per_rank, None, last, unknown
        return group

    @staticmethod
    def _enqueued(group: dict) -> dict[int, int]:
        """rank → its last enqueued sequence number in ``group`` (−1: none), the unknown ranks left out."""
        unknown = set(group["_unknown"])
        return {r: v[0] if v[0] is not None else -1 for r, v in group["_last"].items() if r not in unknown}

    def _seq_op(self, row: int) -> dict | None:
        if row < 0:
            return None
        return {"collective_seq_id": int(self.t.seq[row]), "op": self.t.op_short[self.t.op[row]]}

    def missing(self, g: int, group: dict) -> list[dict]:
        """Group ``g``'s stuck instance (set on ``group``) and, when ranks never enqueued it, its finding."""
        last, enq, unknown = group["_last"], self._enqueued(group), group["_unknown"]
        if not enq or min(enq.values()) == max(enq.values()):
            return []
        without = [r for r in group["ranks"] if r not in self.dumped]
        seq = min(enq.values()) + 1
        present = sorted(r for r, v in enq.items() if v >= seq)
        missing = sorted(r for r, v in enq.items() if v < seq)
        info = _instance(self.t, g, seq, present)
        group["stuck"] = {
            "collective_seq_id": seq,
            "op": info["op"],
            "ranks_present": present,
            "missing_ranks": missing,
            "unknown_ranks": unknown,
            "ranks_without_dump": without,
        }
        waiting = [r for r in present if not self.tracked[r] or last[r][2] is None or last[r][2] < seq]
        unknown_text = f"; {rank_list(unknown)} unknown (ring buffer wrapped)" if unknown else ""
        return [
            finding(
                "missing_ranks",
                group,
                seq,
                info["op"],
                present,
                missing,
                sizes=info["sizes"],
                dtype=info["dtype"],
                waiting_ranks=waiting,
                unknown_ranks=unknown,
                ranks_without_dump=without,
                created_ns=info["created_ns"],
                detail=f"{rank_list(missing)} never enqueued {info['op'] or 'collective'} #{seq}; "
                f"{rank_list(present)} did{unknown_text}",
            )
        ]

    def states(self, g: int, group: dict) -> list[dict]:
        """The lowest instance of group ``g`` every rank enqueued but some never started (or never completed)."""
        last, t = group["_last"], self.t
        judged = {r: v for r, v in last.items() if self.tracked[r]}
        if len(judged) < len(last) or not judged:
            return []
        judged = {r: v for r, v in judged.items() if v[0] is not None}
        enq = self._enqueued(group)
        if not judged or not enq:
            return []
        low = min(enq.values())
        for kind, pos, since_col in (("not_started", 1, "created_ns"), ("not_completed", 2, "started_ns")):
            seq = min((v[pos] if v[pos] is not None else -1) for v in judged.values()) + 1
            if seq > low:  # not every rank enqueued it: the missing ranks say more
                continue
            stuck = sorted(r for r, v in judged.items() if (v[pos] if v[pos] is not None else -1) < seq)
            info = _instance(t, g, seq, stuck)
            hit = info["rows"]
            since_at = getattr(t, since_col)[hit]
            if not (since_at >= 0).any():  # timing off: no start time, the creation time is known
                since_at = t.created_ns[hit]
            since_at = since_at[since_at >= 0]
            latest = self.latest
            since = (latest - int(since_at.min())) / NS_PER_S if latest is not None and since_at.size else None
            verb = "started" if kind == "not_started" else "completed"
            when = f" ({since:.1f} s before the latest time in the dumps)" if since is not None else ""
            return [
                finding(
                    kind,
                    group,
                    seq,
                    info["op"],
                    sorted(judged),
                    stuck,
                    sizes=info["sizes"],
                    dtype=info["dtype"],
                    since_s=since,
                    detail=f"{rank_list(stuck)} enqueued {info['op'] or 'collective'} #{seq} but never {verb} it{when}",
                )
            ]
        return []


def _raise(got: dict | None, status_seq: int) -> dict | None:
    """``got`` raised to ``pg_status``'s sequence number (its op unknown when the buffer lost it)."""
    if status_seq is None or status_seq < 0 or (got is not None and got["collective_seq_id"] >= status_seq):
        return got
    return {"collective_seq_id": status_seq, "op": None}


def _instance(t: Table, g: int, seq: int, ranks: list) -> dict:
    """The rows of instance ``seq`` of group ``g`` on ``ranks``; the op, sizes, dtypes and earliest
    creation (ns) of the instance."""
    rows = t.rows_of(g)
    hit = rows[(t.seq[rows] == seq) & ~t.is_p2p[rows] & np.isin(t.rank[rows], ranks)]
    if not hit.size:
        return {"rows": hit, "op": None, "sizes": None, "dtype": None, "created_ns": None}
    known = hit[t.created_ns[hit] >= 0]
    first = known[np.argmin(t.created_ns[known])] if known.size else hit[0]
    created = t.created_ns[first]
    return {
        "rows": hit,
        "op": t.op_short[t.op[first]],
        "sizes": t.names["sizes"][t.sizes[first]],
        "dtype": t.names["dtypes"][t.dtypes[first]],
        "created_ns": int(created) if created >= 0 else None,
    }
