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
  not judged for them, and its ``pg_status`` also counts point-to-point ops).
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

import re

import numpy as np

_P2P = re.compile(r"(send|recv)\D*(\d+)\s*->\s*(\d+)")
_NO_SIZE_CHECK = re.compile(r"to_all|(?<!all_)gather|(?<!reduce_)scatter")
NS_PER_S = 1e9


class Table:
    """All ranks' entries as numpy columns (one row per entry), with global vocabularies."""

    # the columns __init__ sets (int64, −1 unknown; times in ns; is_p2p bool): the entries' numbers ...
    rank: np.ndarray
    record_id: np.ndarray
    pg_id: np.ndarray
    seq: np.ndarray
    is_p2p: np.ndarray
    created_ns: np.ndarray
    started_ns: np.ndarray
    completed_ns: np.ndarray
    stack: np.ndarray
    # ... and the codes of the texts (indices into ``names[column]``)
    pg_name: np.ndarray
    pg_desc: np.ndarray
    op: np.ndarray
    state: np.ndarray
    sizes: np.ndarray
    dtypes: np.ndarray

    def __init__(self, records: list[dict]) -> None:
        self.vocab: dict[str, dict] = {k: {} for k in ("pg_name", "pg_desc", "op", "state", "sizes", "dtypes")}
        parts: dict[str, list] = {
            k: []
            for k in (
                "rank",
                "record_id",
                "pg_id",
                "seq",
                "is_p2p",
                "created_ns",
                "started_ns",
                "completed_ns",
                "stack",
                *self.vocab,
            )
        }
        self.bounds: dict[int, slice] = {}  # rank → its rows (records come one per rank, in order)
        start = 0
        for rec in records:  # one pass per rank; each column is converted whole
            cols, n = rec["entries"], len(rec["entries"]["seq"])
            self.bounds[rec["rank"]], start = slice(start, start + n), start + n
            parts["rank"].append(np.full(n, rec["rank"], dtype=np.int64))
            for k in ("record_id", "pg_id", "seq", "stack", "created_ns", "started_ns", "completed_ns", "is_p2p"):
                parts[k].append(cols[k])
            for k, global_vocab in self.vocab.items():
                lut = np.array(
                    [global_vocab.setdefault(v, len(global_vocab)) for v in rec["vocab"][k]] or [0], dtype=np.int64
                )
                parts[k].append(lut[np.asarray(cols[k], dtype=np.int64)] if n else np.zeros(0, np.int64))
        for k, chunks in parts.items():
            setattr(self, k, np.concatenate(chunks) if chunks else np.zeros(0))
        self.names = {k: list(v) for k, v in self.vocab.items()}
        ops = self.names["op"]
        peers = [_P2P.search(op or "") for op in ops]
        self.op_kind = np.array([m.group(1) if m else "" for m in peers] or [""], dtype=object)
        self.op_src = np.array([int(m.group(2)) if m and len(m.group(2)) < 9 else -1 for m in peers] or [-1])
        self.op_dst = np.array([int(m.group(3)) if m and len(m.group(3)) < 9 else -1 for m in peers] or [-1])
        self.op_short = [_short(op) for op in ops]
        state = self.vocab["state"]
        self.started = np.isin(self.state, [state.get("started", -1), state.get("completed", -1)])
        self.completed = self.state == state.get("completed", -1)
        order = np.argsort(self.pg_name, kind="stable")  # each group's rows, in table order
        cuts = np.searchsorted(self.pg_name[order], np.arange(len(self.names["pg_name"]) + 1))
        self._group_rows = [order[cuts[g] : cuts[g + 1]] for g in range(len(self.names["pg_name"]))]

    def rows_of(self, g: int) -> np.ndarray:
        """The rows of group ``g`` (its index in ``names["pg_name"]``), in table order."""
        return self._group_rows[g]


def _short(op: str | None) -> str:
    """``nccl:all_reduce`` → ``all_reduce``; ``nccl:send 3->0`` → ``send``."""
    if not op:
        return "?"
    op = op.split(":", 1)[-1]
    return op.split(" ", 1)[0]


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
            unreadable.append(
                {
                    "path": rec.get("path"),
                    "rank": rec["rank"],
                    "error": f"a second dump of rank {rec['rank']} (the first is {seen[rec['rank']].get('path')})",
                }
            )
        else:
            seen[rec["rank"]] = rec
    records = [seen[r] for r in sorted(seen)]
    t = Table(records)
    times = np.concatenate([t.created_ns, t.started_ns, t.completed_ns])
    latest = int(times.max()) if times.size and times.max() >= 0 else None
    ranks = [_rank_row(rec, t) for rec in records]
    tracked = {r["rank"]: r["states_tracked"] for r in ranks}
    wrapped = {r["rank"] for r in ranks if r["wrapped"]}
    dumped = set(seen)
    bad = {u["rank"] for u in unreadable if u.get("rank") is not None} - dumped
    groups, findings = [], []
    for g, name in enumerate(t.names["pg_name"]):
        group, found = _group(t, g, name, records, tracked, wrapped, dumped, bad, latest)
        groups.append(group)
        findings.extend(found)
    findings.extend(_p2p(t, wrapped, dumped))
    known = set().union(*(set(gr["ranks"]) for gr in groups)) if groups else set()
    world = known | dumped | bad
    # ranks numbered between dumped ones, when they are not many more than the ranks known
    guessed = set(range(max(world) + 1)) - world if world and max(world) < 2 * len(world) + 64 else set()
    nodump = sorted((known | guessed) - dumped - bad)
    if nodump:  # one finding for all of them
        findings.append(
            _finding(
                "no_dump",
                missing=nodump,
                detail=(f"no dump of {_list(nodump)}" + (" (members of the groups, or numbered between dumped ranks)")),
            )
        )
    return {"ranks": ranks, "groups": groups, "findings": findings, "unreadable": unreadable, "latest_ns": latest}


def _rank_row(rec: dict, t: Table) -> dict:
    mine = t.bounds[rec["rank"]]
    status = rec.get("pg_status", {})
    tracked = bool(t.started[mine].any()) or any(v[1] >= 0 for v in status.values())
    rid = t.record_id[mine]
    return {
        "rank": rec["rank"],
        "path": rec.get("path"),
        "rank_from": rec.get("rank_from"),
        "version": rec.get("version"),
        "entries": mine.stop - mine.start,
        "states_tracked": tracked,
        "timing": bool((t.started_ns[mine] >= 0).any() or (t.completed_ns[mine] >= 0).any()),
        "wrapped": bool(rid.size and rid[rid >= 0].size and rid[rid >= 0].min() > 0),
        "pg_status": status,
    }


def _finding(
    kind: str,
    group: dict | None = None,
    seq: int | None = None,
    op: str | None = None,
    present: list | None = None,
    missing: list | None = None,
    detail: str = "",
    **extra,
) -> dict:
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


def _group(t: Table, g: int, name, records, tracked, wrapped, dumped, bad, latest) -> tuple[dict, list]:
    rows = t.rows_of(g)
    coll = rows[~t.is_p2p[rows]]
    desc = next((t.names["pg_desc"][c] for c in np.unique(t.pg_desc[rows]) if t.names["pg_desc"][c]), "") or ""
    cfg_ranks: set = set()
    for rec in records:
        cfg = rec.get("pg_config", {}).get(name) if name is not None else None
        if cfg and cfg.get("ranks"):
            cfg_ranks.update(cfg["ranks"])
            desc = desc or cfg.get("desc") or ""
    in_entries = set(np.unique(t.rank[rows]).tolist())
    members = sorted(cfg_ranks or in_entries)
    pg_ids: dict[int, list] = {}
    if rows.size:  # the distinct (rank, pg_id) pairs, as one integer each (a 1-D unique is a fast sort)
        ids = t.pg_id[rows]
        base, span = int(ids.min()), int(ids.max()) - int(ids.min()) + 1
        pairs = np.unique(t.rank[rows] * span + (ids - base))
        for r, i in zip((pairs // span).tolist(), (pairs % span + base).tolist()):
            pg_ids.setdefault(r, []).append(i)
    pg_ids = {r: v[0] if len(v) == 1 else v for r, v in pg_ids.items()}
    id_values = {str(v) for v in pg_ids.values()}
    group = {
        "pg_name": name,
        "pg_desc": desc,
        "ranks": members,
        "ranks_from": "pg_config" if cfg_ranks else "dumps",
        "pg_id": (next(iter(pg_ids.values())) if len(id_values) == 1 else {str(r): v for r, v in pg_ids.items()}),
    }
    enq_rows = _last_rows(t, coll)
    st_rows = _last_rows(t, coll[t.started[coll]])
    done_rows = _last_rows(t, coll[t.completed[coll]])
    status_of = {rec["rank"]: rec.get("pg_status", {}) for rec in records}
    per_rank, last = [], {}
    for r in members:  # one row per rank of the group
        if r not in dumped:
            per_rank.append({"rank": r, "dump": "unreadable" if r in bad else "none"})
            continue
        enq = _seq_op(t, enq_rows.get(r))
        st = _seq_op(t, st_rows.get(r)) if tracked[r] else None
        done = _seq_op(t, done_rows.get(r)) if tracked[r] else None
        pid = pg_ids.get(r)
        status = status_of[r].get(str(pid)) if pid is not None and not isinstance(pid, list) else None
        if tracked[r] and status is not None:  # pg_status outlives the ring buffer
            enq, st, done = (_raise(enq, status[0]), _raise(st, status[1]), _raise(done, status[2]))
        last[r] = tuple(None if x is None else x["collective_seq_id"] for x in (enq, st, done)) + (r in enq_rows,)
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
    group["per_rank"] = per_rank
    findings: list[dict] = []
    group["stuck"] = None
    if not last:
        return group, findings
    # a rank whose buffer wrapped past every entry of the group (and no pg_status says more) is unknown
    unknown = sorted(r for r, v in last.items() if r in wrapped and not v[3] and v[0] is None)
    enq = {r: v[0] if v[0] is not None else -1 for r, v in last.items() if r not in unknown}
    without = [r for r in members if r not in dumped]
    if not enq:
        return group, findings
    low, high = min(enq.values()), max(enq.values())
    if low < high:
        seq = low + 1
        present = sorted(r for r, v in enq.items() if v >= seq)
        missing = sorted(r for r, v in enq.items() if v < seq)
        info = _instance(t, g, seq, present)
        group["stuck"] = {
            "collective_seq_id": seq,
            "op": info["op"],
            "ranks_present": present,
            "missing_ranks": missing,
            "unknown_ranks": unknown,
            "ranks_without_dump": without,
        }
        if missing:
            waiting = [r for r in present if not tracked[r] or last[r][2] is None or last[r][2] < seq]
            findings.append(
                _finding(
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
                    detail=(
                        f"{_list(missing)} never enqueued {info['op'] or 'collective'} #{seq}; "
                        f"{_list(present)} did"
                        + (f"; {_list(unknown)} unknown (ring buffer wrapped)" if unknown else "")
                    ),
                )
            )
    findings.extend(_mismatches(t, g, group))
    findings.extend(_states(t, g, group, last, tracked, low, latest))
    return group, findings


def _last_rows(t: Table, rows: np.ndarray) -> dict[int, int]:
    """rank → the row of its highest sequence number among ``rows``."""
    if not rows.size:
        return {}
    order = rows[np.lexsort((t.seq[rows], t.rank[rows]))]
    ranks = t.rank[order]
    ends = np.flatnonzero(np.r_[ranks[1:] != ranks[:-1], True])
    return dict(zip(ranks[ends].tolist(), order[ends].tolist()))


def _seq_op(t: Table, row: int | None) -> dict | None:
    return None if row is None else {"collective_seq_id": int(t.seq[row]), "op": t.op_short[t.op[row]]}


def _raise(got: dict | None, status_seq: int) -> dict | None:
    """``got`` raised to ``pg_status``'s sequence number (its op unknown when the buffer lost it)."""
    if status_seq is None or status_seq < 0 or (got is not None and got["collective_seq_id"] >= status_seq):
        return got
    return {"collective_seq_id": status_seq, "op": None}


def _instance(t: Table, g: int, seq: int, ranks: list) -> dict:
    """The op, sizes, dtypes and earliest creation (ns) of instance ``seq`` of group ``g`` on ``ranks``."""
    rows = t.rows_of(g)
    hit = rows[(t.seq[rows] == seq) & ~t.is_p2p[rows] & np.isin(t.rank[rows], ranks)]
    if not hit.size:
        return {"op": None, "sizes": None, "dtype": None, "created_ns": None}
    known = hit[t.created_ns[hit] >= 0]
    first = known[np.argmin(t.created_ns[known])] if known.size else hit[0]
    created = t.created_ns[first]
    return {
        "op": t.op_short[t.op[first]],
        "sizes": t.names["sizes"][t.sizes[first]],
        "dtype": t.names["dtypes"][t.dtypes[first]],
        "created_ns": int(created) if created >= 0 else None,
    }


def _mismatches(t: Table, g: int, group: dict) -> list[dict]:
    """Instances of group ``g`` whose ranks disagree on op, dtypes or sizes (one finding per instance)."""
    idx = t.rows_of(g)
    idx = idx[~t.is_p2p[idx] & (t.seq[idx] >= 0)]
    if idx.size < 2:
        return []
    out = []
    seqs = t.seq[idx]
    order = np.argsort(seqs, kind="stable")
    idx, seqs = idx[order], seqs[order]
    starts = np.flatnonzero(np.r_[True, seqs[1:] != seqs[:-1]])
    ends = np.r_[starts[1:], seqs.size]
    for col, what in (("op", "op"), ("dtypes", "dtypes"), ("sizes", "sizes")):
        vals = getattr(t, col)[idx]
        lo = np.minimum.reduceat(vals, starts)
        hi = np.maximum.reduceat(vals, starts)
        for k in np.flatnonzero(lo != hi):
            rows = idx[starts[k] : ends[k]]
            if col == "sizes" and any(_NO_SIZE_CHECK.search(t.op_short[o]) for o in np.unique(t.op[rows])):
                continue
            by_value: dict[int, list] = {}
            for row in rows:  # the ranks of one instance
                by_value.setdefault(int(getattr(t, col)[row]), []).append(int(t.rank[row]))
            common = max(by_value, key=lambda v: (len(by_value[v]), -min(by_value[v])))
            odd = sorted(r for v, rs in by_value.items() if v != common for r in rs)
            names = t.op_short if col == "op" else t.names[col]
            seen = "; ".join(
                f"{_list(sorted(rs))}: {names[v]}" for v, rs in sorted(by_value.items(), key=lambda kv: min(kv[1]))
            )
            first = rows[0]
            out.append(
                _finding(
                    "mismatch",
                    group,
                    int(seqs[starts[k]]),
                    t.op_short[t.op[first]],
                    sorted(int(r) for r in t.rank[rows]),
                    odd,
                    sizes=t.names["sizes"][t.sizes[first]],
                    dtype=t.names["dtypes"][t.dtypes[first]],
                    field=what,
                    detail=f"{what} differ: {seen}",
                )
            )
            if len(out) >= 50:
                return out
    return out


def _states(t: Table, g: int, group: dict, last: dict, tracked: dict, low: int, latest) -> list[dict]:
    """The lowest instance every rank enqueued but some never started (or never completed)."""
    judged = {r: v for r, v in last.items() if tracked[r]}
    if len(judged) < len(last) or not judged:
        return []
    judged = {r: v for r, v in judged.items() if v[0] is not None}
    for kind, pos, since_col in (("not_started", 1, "created_ns"), ("not_completed", 2, "started_ns")):
        seq = min((v[pos] if v[pos] is not None else -1) for v in judged.values()) + 1
        if seq > low:  # not every rank enqueued it: the missing ranks say more
            continue
        stuck = sorted(r for r, v in judged.items() if (v[pos] if v[pos] is not None else -1) < seq)
        info = _instance(t, g, seq, stuck)
        rows = t.rows_of(g)
        hit = rows[(t.seq[rows] == seq) & ~t.is_p2p[rows] & np.isin(t.rank[rows], stuck)]
        since_at = getattr(t, since_col)[hit]
        if not (since_at >= 0).any():  # timing off: no start time, the creation time is known
            since_at = t.created_ns[hit]
        since_at = since_at[since_at >= 0]
        since = (latest - int(since_at.min())) / NS_PER_S if latest is not None and since_at.size else None
        present = sorted(judged)
        verb = "started" if kind == "not_started" else "completed"
        return [
            _finding(
                kind,
                group,
                seq,
                info["op"],
                present,
                stuck,
                sizes=info["sizes"],
                dtype=info["dtype"],
                since_s=since,
                detail=f"{_list(stuck)} enqueued {info['op'] or 'collective'} #{seq} but never "
                f"{verb} it" + (f" ({since:.1f} s before the latest time in the dumps)" if since is not None else ""),
            )
        ]
    return []


def _p2p(t: Table, wrapped: set, dumped: set) -> list[dict]:
    """Sends a→b and receives of b from a, paired in order per pair; one finding per pair with extras."""
    rows = np.flatnonzero(t.is_p2p)
    if not rows.size:
        return []
    kind, src, dst = t.op_kind[t.op[rows]], t.op_src[t.op[rows]], t.op_dst[t.op[rows]]
    out = []
    sends = rows[(kind == "send") & (t.rank[rows] == src)]
    recvs = rows[(kind == "recv") & (t.rank[rows] == dst)]
    pairs = {(int(s), int(d)) for s, d in zip(t.op_src[t.op[np.r_[sends, recvs]]], t.op_dst[t.op[np.r_[sends, recvs]]])}
    for a, b in sorted(pairs):
        if a in wrapped or b in wrapped or a not in dumped or b not in dumped:
            continue
        s = sends[(t.op_src[t.op[sends]] == a) & (t.op_dst[t.op[sends]] == b)]
        r = recvs[(t.op_src[t.op[recvs]] == a) & (t.op_dst[t.op[recvs]] == b)]
        s, r = s[np.argsort(t.record_id[s], kind="stable")], r[np.argsort(t.record_id[r], kind="stable")]
        n = min(s.size, r.size)
        bad = np.flatnonzero(t.sizes[s[:n]] != t.sizes[r[:n]])
        if bad.size:
            k = int(bad[0])
            out.append(
                _finding(
                    "mismatch",
                    _p2p_group(t, s[k]),
                    None,
                    "send/recv",
                    [a, b],
                    [b],
                    field="sizes",
                    sizes=t.names["sizes"][t.sizes[s[k]]],
                    dtype=t.names["dtypes"][t.dtypes[s[k]]],
                    p2p_index=k + 1,
                    detail=f"send #{k + 1} from rank {a} to rank {b} has sizes "
                    f"{t.names['sizes'][t.sizes[s[k]]]}, the matching recv {t.names['sizes'][t.sizes[r[k]]]}",
                )
            )
        if s.size != r.size:
            extra, (who, peer, op) = (s[n:], (a, b, "send")) if s.size > r.size else (r[n:], (b, a, "recv"))
            first = extra[0]
            out.append(
                _finding(
                    "missing_ranks",
                    _p2p_group(t, first),
                    None,
                    op,
                    [who],
                    [peer],
                    sizes=t.names["sizes"][t.sizes[first]],
                    dtype=t.names["dtypes"][t.dtypes[first]],
                    p2p_index=n + 1,
                    created_ns=int(t.created_ns[first]),
                    waiting_ranks=[who],
                    detail=f"rank {who}'s {op} #{n + 1} {'to' if op == 'send' else 'from'} rank {peer} "
                    f"has no matching {'recv' if op == 'send' else 'send'} on rank {peer} "
                    f"({extra.size} unmatched)",
                )
            )
    return out


def _p2p_group(t: Table, row: int) -> dict:
    return {
        "pg_name": t.names["pg_name"][t.pg_name[row]],
        "pg_desc": t.names["pg_desc"][t.pg_desc[row]],
        "pg_id": int(t.pg_id[row]),
        "ranks": None,
    }


def _list(ranks: list) -> str:
    """``[3]`` → "rank 3"; ``[1, 2, 3]`` → "ranks 1–3"; ``[1, 5]`` → "ranks 1, 5"."""
    ranks = sorted(ranks)
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    if len(ranks) > 2 and ranks[-1] - ranks[0] == len(ranks) - 1:
        return f"ranks {ranks[0]}–{ranks[-1]}"
    shown = ", ".join(str(r) for r in ranks[:8])
    return f"ranks {shown}" + (f" and {len(ranks) - 8} more" if len(ranks) > 8 else "")
