"""Point-to-point ops of a hung job: sends from rank a to rank b (``send a->b`` in the op's name, on rank
a) and receives of b from a (on rank b) paired in order (record id) per pair (docs/METRICS.md, "Hang").
A pair whose k-th send and receive differ in sizes is a mismatch; the extra sends or receives of a
pair are unmatched (judged only when both ranks left a dump and neither ring buffer wrapped: older
ops may be gone). One sort of the point-to-point rows; one finding per pair at most per kind."""

from __future__ import annotations

import numpy as np

from .hang_finding import finding
from .hang_table import RECV, SEND, Table

_PAIR = 1 << 30  # pair key = source × _PAIR + destination (op names carry ranks below 10^9)


def p2p_findings(t: Table, wrapped: set, dumped: set) -> list[dict]:
    """The mismatch and unmatched (``missing_ranks``) findings of every pair, in pair order."""
    rows = np.flatnonzero(t.is_p2p)
    if not rows.size:
        return []
    op = t.op[rows]
    kind, src, dst = t.op_kind[op], t.op_src[op], t.op_dst[op]
    recv = (kind == RECV) & (t.rank[rows] == dst)
    mine = ((kind == SEND) & (t.rank[rows] == src)) | recv
    rows, recv, src, dst = rows[mine], recv[mine], src[mine], dst[mine]
    if not rows.size:
        return []
    pairs, pair = np.unique(src.astype(np.int64) * _PAIR + dst, return_inverse=True)
    pair = pair.reshape(-1)
    side = pair * 2 + recv  # (pair, send 0 / recv 1) segments
    order = np.lexsort((t.record_id[rows], side))
    rows, side, pair = rows[order], side[order], pair[order]
    counts = np.bincount(side, minlength=2 * len(pairs))
    start = np.r_[0, np.cumsum(counts)[:-1]]
    n_send, n_recv = counts[0::2], counts[1::2]
    pos = np.arange(rows.size) - start[side]  # index of the op within its pair and side
    send_at = np.flatnonzero((side % 2 == 0) & (pos < n_recv[pair]))
    recv_at = start[side[send_at] + 1] + pos[send_at]  # its matching receive
    differ = send_at[t.sizes[rows[send_at]] != t.sizes[rows[recv_at]]]
    none = np.iinfo(np.int64).max
    first_bad = np.full(len(pairs), none, np.int64)  # per pair, the index of its first size mismatch
    np.minimum.at(first_bad, pair[differ], pos[differ])
    out = []
    for p in np.flatnonzero((first_bad != none) | (n_send != n_recv)).tolist():  # pairs with a finding
        a, b = int(pairs[p] // _PAIR), int(pairs[p] % _PAIR)
        if a in wrapped or b in wrapped or a not in dumped or b not in dumped:
            continue
        sends = rows[start[2 * p] : start[2 * p] + n_send[p]]
        recvs = rows[start[2 * p + 1] : start[2 * p + 1] + n_recv[p]]
        if first_bad[p] != none:
            k = int(first_bad[p])
            out.append(_size_mismatch(t, a, b, k, sends[k], recvs[k]))
        if sends.size != recvs.size:
            out.append(_unmatched(t, a, b, sends, recvs))
    return out


def _size_mismatch(t: Table, a: int, b: int, k: int, send: int, recv: int) -> dict:
    sizes = t.names["sizes"]
    return finding(
        "mismatch",
        _group(t, send),
        None,
        "send/recv",
        [a, b],
        [b],
        field="sizes",
        sizes=sizes[t.sizes[send]],
        dtype=t.names["dtypes"][t.dtypes[send]],
        p2p_index=k + 1,
        detail=f"send #{k + 1} from rank {a} to rank {b} has sizes {sizes[t.sizes[send]]}, "
        f"the matching recv {sizes[t.sizes[recv]]}",
    )


def _unmatched(t: Table, a: int, b: int, sends: np.ndarray, recvs: np.ndarray) -> dict:
    n = min(sends.size, recvs.size)
    extra, (who, peer, op) = (sends[n:], (a, b, "send")) if sends.size > recvs.size else (recvs[n:], (b, a, "recv"))
    first = int(extra[0])
    return finding(
        "missing_ranks",
        _group(t, first),
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
        f"has no matching {'recv' if op == 'send' else 'send'} on rank {peer} ({extra.size} unmatched)",
    )


def _group(t: Table, row: int) -> dict:
    return {
        "pg_name": t.names["pg_name"][t.pg_name[row]],
        "pg_desc": t.names["pg_desc"][t.pg_desc[row]],
        "pg_id": int(t.pg_id[row]),
        "ranks": None,
    }
