"""Desyncs: collective instances (group, sequence number) that the ranks entered with different ops,
dtypes or sizes (docs/METRICS.md, "Hang"). Sizes are not compared for all_to_all, gather and scatter,
whose sizes differ by rank. One pass over the job's rows (:func:`.hang_table.instances`); the ranks
of at most :data:`MAX_PER_GROUP` instances per group are looked at one by one."""

from __future__ import annotations

import re

import numpy as np

from .hang_finding import finding, rank_list
from .hang_table import Table, instances, per_key

_NO_SIZE_CHECK = re.compile(r"to_all|(?<!all_)gather|(?<!reduce_)scatter")
MAX_PER_GROUP = 50  # mismatch findings kept per group
FIELDS = ("op", "dtypes", "sizes")  # compared, in the order their findings come


def mismatches(t: Table, groups: dict[int, dict]) -> dict[int, list[dict]]:
    """group index → its mismatch findings (op ones first, then dtypes, then sizes; each by sequence
    number); ``groups``: group index → its group record (``pg_name``, ``pg_desc``, ``pg_id``, ``ranks``)."""
    rows = np.flatnonzero(~t.is_p2p & (t.seq >= 0))
    inst, n = instances(t, rows)
    if n == 0:
        return {}
    group_of = np.zeros(n, np.int64)
    group_of[inst] = t.pg_name[rows]
    no_size = np.array([bool(_NO_SIZE_CHECK.search(op)) for op in t.op_short] or [False])
    skip_sizes = np.zeros(n, bool)
    np.logical_or.at(skip_sizes, inst, no_size[t.op[rows]])
    chosen: list[tuple[int, int, int]] = []  # (group, field, instance) of the findings to make
    for f, col in enumerate(FIELDS):
        vals = getattr(t, col)[rows]
        lo, hi = per_key(np.minimum, n, inst, vals), per_key(np.maximum, n, inst, vals)
        bad = np.flatnonzero((lo != hi) & ~(skip_sizes if col == "sizes" else np.zeros(n, bool)))
        if not bad.size:
            continue
        bad_group = group_of[bad]  # instances are numbered by (group, sequence number): sorted by group
        first_of_group = np.searchsorted(bad_group, bad_group)
        keep = bad[np.arange(bad.size) - first_of_group < MAX_PER_GROUP]
        chosen.extend(zip(group_of[keep].tolist(), [f] * keep.size, keep.tolist()))
    chosen.sort()
    per_group: dict[int, list] = {}
    for g, f, i in chosen:
        if len(per_group.setdefault(g, [])) < MAX_PER_GROUP:
            per_group[g].append((f, i))
    wanted = np.array(sorted({i for got in per_group.values() for _, i in got}), dtype=np.int64)
    hit = np.isin(inst, wanted)
    hit_rows, hit_inst = rows[hit], inst[hit]
    order = np.argsort(hit_inst, kind="stable")
    hit_rows, hit_inst = hit_rows[order], hit_inst[order]
    cuts = np.searchsorted(hit_inst, wanted)
    rows_of = {int(i): hit_rows[a:b] for i, a, b in zip(wanted.tolist(), cuts, np.r_[cuts[1:], hit_rows.size])}
    return {g: [_finding(t, groups[g], FIELDS[f], rows_of[i]) for f, i in got] for g, got in sorted(per_group.items())}


def _finding(t: Table, group: dict, col: str, rows: np.ndarray) -> dict:
    """The mismatch finding of one instance (``rows``: its rows) on field ``col``."""
    by_value: dict[int, list] = {}
    for value, rank in zip(getattr(t, col)[rows].tolist(), t.rank[rows].tolist()):  # the instance's ranks
        by_value.setdefault(value, []).append(rank)
    common = max(by_value, key=lambda v: (len(by_value[v]), -min(by_value[v])))
    odd = sorted(r for v, rs in by_value.items() if v != common for r in rs)
    names = t.op_short if col == "op" else t.names[col]
    seen = "; ".join(
        f"{rank_list(sorted(rs))}: {names[v]}" for v, rs in sorted(by_value.items(), key=lambda kv: min(kv[1]))
    )
    first = rows[0]
    return finding(
        "mismatch",
        group,
        int(t.seq[first]),
        t.op_short[t.op[first]],
        sorted(int(r) for r in t.rank[rows]),
        odd,
        sizes=t.names["sizes"][t.sizes[first]],
        dtype=t.names["dtypes"][t.dtypes[first]],
        field=col,
        detail=f"{col} differ: {seen}",
    )
