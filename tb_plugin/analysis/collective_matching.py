"""Collective matching: which communication kernel of each rank belongs to which collective instance.

A **collective instance** is one call of a collective on one process group; every member rank runs one
kernel for it. Matching is per process group (``Process Group Name``; one unnamed group otherwise), over
the ranks loaded that have kernels in that group (its *participants*):

1. **By sequence number** when every kernel of the group on every participant carries ``Seq`` (the
   per-group collective counter PyTorch records since 2026): kernels with the same ``(p2p?, Seq)`` are
   one instance. Gaps (a kernel missing on one rank) stay gaps.
2. **Else in order, aligned**: each rank's kernels of the group, in time order, form a sequence of keys
   ``(collective, dtype, message bytes)``. Rank ``r``'s sequence is shifted against the reference
   participant's (the one with most kernels) by the offset ``d`` (rank ``r``'s ``j``-th kernel ↔ the
   reference's ``(j − d)``-th) that makes the most keys equal; ties go to the smallest ``|d|``, so windows
   that start at the same collective keep ``d = 0``. Windows that start at different collectives
   (ranks sampled at different times) are recognized when their keys differ; a run of identical keys
   cannot reveal a shift, and then kernels are paired in order.

A position of the aligned sequence is **matched** when every participant has a kernel there and their
keys are equal: a pair whose dtype or size differ is never a match. Every other position is
**unmatched** (outside the common window, missing on a rank, or different keys); counts are per
collective type (the type of the reference's kernel there, else the first rank's that has one).
"""

from __future__ import annotations

import dataclasses

import numpy as np

PAIR_LIMIT = 5_000_000  # equal-key pairs enumerated at once; beyond, per-key FFT correlation
P2P = frozenset({"sendrecv"})


@dataclasses.dataclass
class GroupMatch:
    """The matched instances of one process group: ``index[k, p]`` is the position, in participant
    ``ranks[p]``'s kernel list, of its kernel of matched instance ``k``."""

    group: str
    ranks: list[int]
    index: np.ndarray  # (instances, participants) int64


@dataclasses.dataclass
class Matching:
    groups: list[GroupMatch]
    by_type: dict[str, list[int]]  # collective → [matched, unmatched]
    method: str  # "sequence number", "order", "sequence number and order", or "none"
    messages: list[str]


def match_collectives(kernels: dict[int, dict]) -> Matching:
    """``kernels``: per rank, the ``comm`` lists of :func:`analysis.distributed.rank_reduce`
    (``collective``, ``group``, ``dtype``, ``bytes``, ``seq``…, one entry per kernel in time order)."""
    order = sorted(kernels)
    cat = {
        f: np.concatenate([_column(kernels[r], f) for r in order]) if order else np.zeros(0, dtype=object)
        for f in ("collective", "dtype", "bytes", "group")
    }
    lengths = [len(kernels[r]["collective"]) for r in order]
    bounds = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    type_names, type_code = np.unique(cat["collective"].astype(str), return_inverse=True)
    _, dtype_code = np.unique(cat["dtype"].astype(str), return_inverse=True)  # None reads "None": one more dtype
    # an all-to-all's split sizes may differ per rank (uneven all-to-all): its bytes are not part of its key
    sized = np.where(cat["collective"].astype(str) == "alltoall", "any", cat["bytes"].astype(str))
    _, bytes_code = np.unique(sized, return_inverse=True)
    key = (type_code.astype(np.int64) * (dtype_code.max(initial=0) + 1) + dtype_code) * (
        bytes_code.max(initial=0) + 1
    ) + bytes_code
    p2p = np.isin(type_names, sorted(P2P))[type_code]
    per_rank = {}
    for i, rank in enumerate(order):
        sl = slice(int(bounds[i]), int(bounds[i + 1]))
        per_rank[rank] = {
            "key": key[sl],
            "p2p": p2p[sl],
            "seq": np.asarray(kernels[rank].get("seq") or [-1] * lengths[i], dtype=np.int64),
            "type": type_code[sl],
        }
    out = Matching([], {}, "none", [])
    methods = set()
    for group, members in _members(cat["group"], bounds, order):
        ranks = sorted(members)
        if len(ranks) < 2:
            (only,) = ranks
            _count(out.by_type, type_names, per_rank[only]["type"][members[only]], np.zeros(len(members[only]), bool))
            out.messages.append(
                f"process group {group}: only rank {only} of it is loaded; its "
                f"{len(members[only])} collectives are not compared"
            )
            continue
        data = {r: {k: per_rank[r][k][members[r]] for k in ("key", "p2p", "seq")} for r in ranks}
        if all((d["seq"] >= 0).all() for d in data.values()):
            methods.add("sequence number")
            pos = _positions_by_seq(data, ranks)
            shift_note = None
        else:
            methods.add("order")
            pos, shift_note = _positions_by_alignment(data, ranks)
        # table[p, q]: local index of participant q's kernel at position p (-1: none)
        n_pos = 1 + max(int(p.max()) for p in pos.values())
        table = np.full((n_pos, len(ranks)), -1, dtype=np.int64)
        for q, r in enumerate(ranks):
            table[pos[r], q] = np.arange(len(pos[r]))
        keys = np.full(table.shape, -1, dtype=np.int64)
        for q, r in enumerate(ranks):
            have = table[:, q] >= 0
            keys[have, q] = data[r]["key"][table[have, q]]
        used = (table >= 0).any(axis=1)
        table, keys = table[used], keys[used]
        present = table >= 0
        complete = present.all(axis=1)
        same = (keys == keys[:, :1]).all(axis=1)
        matched = complete & same
        # the type of each position: the first participant's kernel that has one there
        first = np.argmax(present, axis=1)
        local = table[np.arange(len(table)), first]
        types = np.zeros(len(table), dtype=np.int64)
        for q, r in enumerate(ranks):
            here = first == q
            types[here] = per_rank[r]["type"][members[r][local[here]]]
        _count(out.by_type, type_names, types, matched)
        index = (
            np.stack([members[r][table[matched, q]] for q, r in enumerate(ranks)], axis=1)
            if matched.any()
            else np.zeros((0, len(ranks)), dtype=np.int64)
        )
        out.groups.append(GroupMatch(group, ranks, index))
        differ = int((complete & ~same).sum())
        missing = int((~complete).sum())
        label = f"process group {group}" if group != "default" else "the collectives"
        if shift_note:
            out.messages.append(
                f"{label}: the ranks' windows do not line up ({shift_note}); "
                f"{missing} instances outside the common window are unmatched"
            )
        elif missing:
            out.messages.append(f"{label}: {missing} instances are missing on some rank and are unmatched")
        if differ:
            out.messages.append(
                f"{label}: {differ} instances have a dtype or size that differs across ranks and are not matched"
            )
    out.method = " and ".join(sorted(methods)) if methods else "none"
    return out


def _members(group: np.ndarray, bounds: np.ndarray, order: list[int]):
    """Per process group (sorted by name): ``(name, {rank: its kernels' positions in its own list})``
    over the ranks that have kernels in it. One sort of all kernels, so the work grows with the
    kernels and the (group, rank) pairs, not with groups × ranks."""
    if len(group) == 0:
        return
    names, code = np.unique(group.astype(str), return_inverse=True)
    code = code.ravel()
    rank_at = np.repeat(np.arange(len(order)), np.diff(bounds))
    local = np.arange(len(group)) - bounds[rank_at]
    sort = np.lexsort((local, rank_at, code))  # by group, then rank, then the rank's own order
    pair = code[sort].astype(np.int64) * len(order) + rank_at[sort]
    cuts = np.flatnonzero(np.diff(pair)) + 1
    heads = np.concatenate([[0], cuts])
    pieces = np.split(local[sort], cuts)
    group_of, rank_of = code[sort][heads].tolist(), rank_at[sort][heads].tolist()
    members: dict[int, np.ndarray] = {}
    for k, (g, r) in enumerate(zip(group_of, rank_of)):
        members[order[r]] = pieces[k]
        if k + 1 == len(group_of) or group_of[k + 1] != g:
            yield str(names[g]), members
            members = {}


def _column(data: dict, field: str) -> np.ndarray:
    values = data.get(field)
    if values is None:
        values = [None] * len(data["collective"])
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _count(by_type: dict[str, list[int]], names: np.ndarray, types: np.ndarray, matched: np.ndarray) -> None:
    """Add matched / unmatched positions per collective type (``types``: codes into ``names``)."""
    ok = np.bincount(types[matched], minlength=len(names))
    bad = np.bincount(types[~matched], minlength=len(names))
    for i in np.flatnonzero(ok + bad).tolist():
        row = by_type.setdefault(str(names[i]), [0, 0])
        row[0] += int(ok[i])
        row[1] += int(bad[i])


def _positions_by_seq(data: dict, ranks: list[int]) -> dict[int, np.ndarray]:
    """Position of each kernel: the rank of its ``(p2p, seq)`` among all participants' values."""
    codes = {r: d["seq"] * 2 + d["p2p"] for r, d in data.items()}
    universe = np.unique(np.concatenate(list(codes.values())))
    return {r: np.searchsorted(universe, codes[r]) for r in ranks}


def _positions_by_alignment(data: dict, ranks: list[int]) -> tuple[dict[int, np.ndarray], str | None]:
    ref = max(ranks, key=lambda r: (len(data[r]["key"]), -r))
    a = data[ref]["key"]
    shifts = {ref: 0}
    for r in ranks:
        if r != ref:
            shifts[r] = best_offset(a, data[r]["key"])
    low = min(-d for d in shifts.values())
    pos = {r: np.arange(len(data[r]["key"])) - shifts[r] - low for r in ranks}
    moved = [r for r in ranks if shifts[r] != 0]
    note = None
    if moved:
        parts = []
        for r in moved[:3]:
            d = shifts[r]
            if d > 0:
                parts.append(f"rank {r}'s window starts {d} collectives before rank {ref}'s")
            else:
                parts.append(f"rank {r}'s window starts {-d} collectives after rank {ref}'s")
        note = "; ".join(parts) + (f"; and {len(moved) - 3} more ranks" if len(moved) > 3 else "")
    return pos, note


def match_counts(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``counts[d + len(a) − 1]``: the number of ``i`` with ``a[i] == b[i + d]``, for every offset ``d``
    from ``−(len(a) − 1)`` to ``len(b) − 1`` (equal-key pairs counted by offset; no loop over events)."""
    n, m = len(a), len(b)
    size = n + m - 1
    if n == 0 or m == 0:
        return np.zeros(max(size, 0), dtype=np.int64)
    order = np.argsort(b, kind="stable")
    sorted_b = b[order]
    lo = np.searchsorted(sorted_b, a, side="left")
    per = np.searchsorted(sorted_b, a, side="right") - lo
    total = int(per.sum())
    if total <= PAIR_LIMIT:
        i = np.repeat(np.arange(n), per)
        starts = np.cumsum(per) - per
        k = np.arange(total) - np.repeat(starts, per) + np.repeat(lo, per)
        return np.bincount(order[k] - i + n - 1, minlength=size)
    counts = np.zeros(size)
    length = 1 << int(np.ceil(np.log2(size)))
    for v in np.unique(a):  # per distinct key: cross-correlation of the two indicator sequences
        fa = np.fft.rfft((a == v)[::-1].astype(float), length)
        fb = np.fft.rfft((b == v).astype(float), length)
        counts += np.fft.irfft(fa * fb, length)[:size]
    return np.rint(counts).astype(np.int64)


def best_offset(a: np.ndarray, b: np.ndarray) -> int:
    """The offset ``d`` with the most equal keys (see :func:`match_counts`); ties: smallest ``|d|``,
    then the positive one; 0 when no key is equal at any offset."""
    counts = match_counts(a, b)
    if len(counts) == 0 or counts.max() == 0:
        return 0
    offsets = np.arange(len(counts)) - (len(a) - 1)
    best = np.flatnonzero(counts == counts.max())
    return int(offsets[best[np.lexsort((-offsets[best], np.abs(offsets[best])))[0]]])
