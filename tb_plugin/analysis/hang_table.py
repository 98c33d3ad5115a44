"""A job's flight-recorder entries as one table (one row per entry, every rank's rows in rank order)
and the per group × rank and per instance aggregates the hang questions share, all by numpy passes
(no Python loop over entries). Used by :mod:`.hang`, :mod:`.hang_mismatch` and :mod:`.hang_p2p`."""

from __future__ import annotations

import re

import numpy as np

_P2P = re.compile(r"(send|recv)\D*(\d+)\s*->\s*(\d+)")
CODED = ("pg_name", "pg_desc", "op", "state", "sizes", "dtypes")  # columns of indices into ``names``
_INTS = ("record_id", "pg_id", "seq")  # narrowed to int32 when every value fits
_TIMES = ("created_ns", "started_ns", "completed_ns")  # ns since the epoch: int64; −1: not recorded
MAX_CELLS = 1 << 20  # group × rank cells kept dense at most (above: the cells that occur, numbered by a sort)
SEND, RECV = 1, 2  # op_kind


def narrow(values: np.ndarray) -> np.ndarray:
    """``values`` (integers) as int32 when every value fits, else int64."""
    values = np.asarray(values)
    if values.dtype == bool:
        return values
    if values.size and (values.min() < -(1 << 31) or values.max() >= 1 << 31):
        return values.astype(np.int64, copy=False)
    return values.astype(np.int32, copy=False)


def per_key(ufunc: np.ufunc, n: int, keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``ufunc`` (np.minimum or np.maximum) of ``values`` per key in ``range(n)``, in the values' own
    dtype (where ``ufunc.at`` is fast); keys without values hold the dtype's highest (lowest) value."""
    info = np.iinfo(values.dtype)
    out = np.full(n, info.max if ufunc is np.minimum else info.min, dtype=values.dtype)
    ufunc.at(out, keys, values)
    return out


def short_op(op: str | None) -> str:
    """``nccl:all_reduce`` → ``all_reduce``; ``nccl:send 3->0`` → ``send``."""
    if not op:
        return "?"
    op = op.split(":", 1)[-1]
    return op.split(" ", 1)[0]


class Table:
    """All ranks' entries as numpy columns with job-wide vocabularies (``names[column]``).

    Columns: ``rank``, ``record_id``, ``pg_id``, ``seq`` (int32 where they fit), ``is_p2p`` (bool),
    ``created_ns``/``started_ns``/``completed_ns`` (int64 ns, −1: not recorded) and the codes of
    :data:`CODED` (int32). ``bounds``: rank → its rows. Per op of the vocabulary: ``op_short``,
    ``op_kind`` (:data:`SEND`, :data:`RECV`, 0), ``op_src``/``op_dst`` (−1 when not point-to-point)."""

    rank: np.ndarray
    record_id: np.ndarray
    pg_id: np.ndarray
    seq: np.ndarray
    is_p2p: np.ndarray
    created_ns: np.ndarray
    started_ns: np.ndarray
    completed_ns: np.ndarray
    pg_name: np.ndarray
    pg_desc: np.ndarray
    op: np.ndarray
    state: np.ndarray
    sizes: np.ndarray
    dtypes: np.ndarray

    def __init__(self, records: list[dict]) -> None:
        self.vocab: dict[str, dict] = {k: {} for k in CODED}
        parts: dict[str, list] = {k: [] for k in ("rank", "is_p2p", *_INTS, *_TIMES, *CODED)}
        self.bounds: dict[int, slice] = {}
        start = 0
        for rec in records:  # one pass per rank (records come one per rank, in rank order)
            cols, n = rec["entries"], len(rec["entries"]["seq"])
            self.bounds[rec["rank"]], start = slice(start, start + n), start + n
            parts["rank"].append(np.full(n, rec["rank"], dtype=np.int32))
            for k in ("is_p2p", *_INTS, *_TIMES):
                parts[k].append(cols[k])
            for k, job_vocab in self.vocab.items():  # the rank's codes → the job's
                lut = np.array([job_vocab.setdefault(v, len(job_vocab)) for v in rec["vocab"][k]] or [0], np.int32)
                parts[k].append(lut[np.asarray(cols[k], dtype=np.intp)] if n else np.zeros(0, np.int32))
        self.size = start
        for k, chunks in parts.items():
            col = np.concatenate(chunks) if chunks else np.zeros(0, bool if k == "is_p2p" else np.int32)
            setattr(self, k, col if k in _TIMES else narrow(col))
        self.names = {k: list(v) for k, v in self.vocab.items()}
        ops = self.names["op"]
        peers = [_P2P.search(op or "") for op in ops]
        self.op_kind = np.array([(SEND if m.group(1) == "send" else RECV) if m else 0 for m in peers] or [0])
        self.op_src = np.array([int(m.group(2)) if m and len(m.group(2)) < 9 else -1 for m in peers] or [-1])
        self.op_dst = np.array([int(m.group(3)) if m and len(m.group(3)) < 9 else -1 for m in peers] or [-1])
        self.op_short = [short_op(op) for op in ops]
        states = self.vocab["state"]
        self.started = np.isin(self.state, [states.get("started", -1), states.get("completed", -1)])
        self.completed = self.state == states.get("completed", -1)
        self.ranks = np.array(sorted(self.bounds), dtype=np.int64)
        self._group_rows: list[np.ndarray] | None = None

    def rows_of(self, g: int) -> np.ndarray:
        """The rows of group ``g`` (its index in ``names["pg_name"]``), in table order (one sort of the
        group codes, made on the first call)."""
        if self._group_rows is None:
            order = np.argsort(self.pg_name, kind="stable")
            cuts = np.searchsorted(self.pg_name[order], np.arange(len(self.names["pg_name"]) + 1))
            self._group_rows = [order[cuts[i] : cuts[i + 1]] for i in range(len(self.names["pg_name"]))]
        return self._group_rows[g]

    def per_rank_any(self, mask: np.ndarray) -> dict[int, bool]:
        """rank → whether ``mask`` is true on any of its rows."""
        total = np.r_[0, np.cumsum(mask, dtype=np.int64)]
        return {r: bool(total[b.stop] > total[b.start]) for r, b in self.bounds.items()}

    def per_rank_min(self, values: np.ndarray, empty: int) -> dict[int, int]:
        """rank → the lowest of ``values`` on its rows (``empty`` for a rank without rows)."""
        full = [(r, b.start) for r, b in self.bounds.items() if b.stop > b.start]
        lows = np.minimum.reduceat(values, [s for _, s in full]).tolist() if full else []
        out = dict.fromkeys(self.bounds, empty)
        out.update(zip((r for r, _ in full), lows))
        return out


class Cells:
    """Per group × rank (a **cell**), from the collective (not point-to-point) rows: the row of the
    highest sequence number enqueued, started and completed (−1: none), the rows of the group, and
    the lowest and highest ``pg_id`` the rank gives the group."""

    def __init__(self, t: Table) -> None:
        n_groups = max(len(t.names["pg_name"]), 1)
        rank_idx = np.searchsorted(t.ranks, t.rank)
        cell = rank_idx.astype(np.int64) * n_groups + t.pg_name
        n_cells = len(t.ranks) * n_groups
        dense = n_cells <= min(MAX_CELLS, 4 * t.size + 65536)
        if not dense:  # many groups and ranks: number the cells that occur
            keys, cell = np.unique(cell, return_inverse=True)
            n_cells = len(keys)
        self.n_groups = n_groups
        self.rows = np.bincount(cell, minlength=n_cells)
        self.pg_id_lo = per_key(np.minimum, n_cells, cell, t.pg_id)
        self.pg_id_hi = per_key(np.maximum, n_cells, cell, t.pg_id)
        coll = ~t.is_p2p
        self.enqueued = _last_row(t, cell, coll, n_cells)
        self.started = _last_row(t, cell, coll & t.started, n_cells)
        self.completed = _last_row(t, cell, coll & t.completed, n_cells)
        self._index = None if dense else {int(k): i for i, k in enumerate(keys.tolist())}
        self._rank_idx = {int(r): i for i, r in enumerate(t.ranks.tolist())}
        with_rows = np.flatnonzero(self.rows) if dense else keys[self.rows > 0]  # (rank index × groups + group)
        by_group = np.argsort(with_rows % n_groups, kind="stable")
        cuts = np.searchsorted((with_rows % n_groups)[by_group], np.arange(n_groups + 1))
        self._ranks_in = [t.ranks[with_rows[by_group[cuts[g] : cuts[g + 1]]] // n_groups] for g in range(n_groups)]

    def ranks_in(self, g: int) -> list[int]:
        """The ranks with rows of group ``g``, ascending."""
        return self._ranks_in[g].tolist()

    def of(self, rank: int, g: int) -> int | None:
        """The cell of ``rank`` in group ``g``; None when the rank has no rows of it."""
        i = self._rank_idx.get(rank)
        if i is None:
            return None
        key = i * self.n_groups + g
        c = key if self._index is None else self._index.get(key)
        return c if c is not None and self.rows[c] else None


def _last_row(t: Table, cell: np.ndarray, mask: np.ndarray, n_cells: int) -> np.ndarray:
    """Per cell, the last row (in table order) of the highest sequence number among rows ``mask``; −1: none."""
    rows = np.flatnonzero(mask)
    top = per_key(np.maximum, n_cells, cell[rows], t.seq[rows])
    at_top = rows[t.seq[rows] == top[cell[rows]]]
    out = np.full(n_cells, -1, dtype=np.int64)
    np.maximum.at(out, cell[at_top], at_top)
    return out


def instances(t: Table, rows: np.ndarray) -> tuple[np.ndarray, int]:
    """``(instance of each row, number of instances)``: rows (with sequence numbers ≥ 0) of the same
    group and sequence number share an instance, numbered in (group, sequence number) order."""
    if not rows.size:
        return np.zeros(0, np.int64), 0
    g, seq = t.pg_name[rows].astype(np.int64), t.seq[rows].astype(np.int64)
    n_groups = len(t.names["pg_name"])
    lo, hi = per_key(np.minimum, n_groups, g, seq), per_key(np.maximum, n_groups, g, seq)
    limit = 4 * rows.size + 1024
    width = np.where(hi >= lo, hi - lo, -1)  # no overflow: sequence numbers are ≥ 0
    span = np.where(width >= 0, np.minimum(width, limit) + 1, 0)
    if width.max() < limit and span.sum() <= limit:  # dense sequence numbers: an offset per group, no sort
        offset = np.r_[0, np.cumsum(span)[:-1]]
        dense = offset[g] + seq - lo[g]
        used = np.bincount(dense, minlength=int(span.sum())) > 0
        renumber = np.cumsum(used) - 1
        return renumber[dense], int(used.sum())
    key = np.stack([g, seq])
    _, inverse = np.unique(key, axis=1, return_inverse=True)
    inverse = inverse.reshape(-1)
    return inverse, int(inverse.max()) + 1
