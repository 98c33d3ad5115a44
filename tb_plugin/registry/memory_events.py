"""The Memory view's allocation/free table, filtered and sorted on columns (no loop over its rows per
request): :func:`select` gives the rows a query shows, in order, as a lazy sequence that builds a row
only when a page (or the CSV) reads it. The rows are those of
:func:`~tb_plugin.analysis.memory.allocation_pairs`; the rule is :func:`reference_select`'s (kept as
the reference the tests compare with, and used when a sort column holds NaN, whose Python order
numpy cannot reproduce)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, overload

import numpy as np


@dataclasses.dataclass
class PairsIndex:
    """Columns of the pairs' rows (built once per file). ``*_none``: the row's value is None."""

    rows: list[dict[str, Any]]
    size: np.ndarray
    addr: np.ndarray
    numbers: dict[str, tuple[np.ndarray, np.ndarray]]  # alloc_us, free_us, duration_us: (values, none)
    device_code: np.ndarray
    devices: dict[str, int]
    op_code: np.ndarray  # code of the op text (None: code 0, text "")
    op_texts: list[str]
    op_none: np.ndarray
    texts: dict[str, tuple[np.ndarray, np.ndarray]]  # op, device: (rank of value.lower(), none)
    name_rank: np.ndarray  # rank of the row's name (op or "") among the names, in Python's string order


def _codes(values: list[Any]) -> tuple[np.ndarray, list[Any]]:
    """Per value a code into the distinct values (first-seen order)."""
    table: dict[Any, int] = {}
    return np.fromiter((table.setdefault(v, len(table)) for v in values), dtype=np.int64, count=len(values)), list(
        table
    )


def _ranks(distinct: list[str]) -> np.ndarray:
    """Per distinct text, its rank in Python's sorted order (equal texts share a rank)."""
    order = sorted(set(distinct))
    where = {t: k for k, t in enumerate(order)}
    return np.array([where[t] for t in distinct], dtype=np.int64)


def build_index(rows: list[dict[str, Any]]) -> PairsIndex:
    n = len(rows)

    def column(key: str, dtype: type[np.generic], fill: float) -> tuple[np.ndarray, np.ndarray]:
        values = [r[key] for r in rows]
        none = np.fromiter((v is None for v in values), dtype=bool, count=n)
        return np.array([fill if v is None else v for v in values], dtype=dtype).reshape(n), none

    numbers = {k: column(k, np.float64, np.nan) for k in ("alloc_us", "free_us", "duration_us")}
    op_code, op_texts = _codes([r["op"] or "" for r in rows])
    op_none = np.fromiter((r["op"] is None for r in rows), dtype=bool, count=n)
    device_code, devices = _codes([r["device"] for r in rows])
    lower_op = _ranks([t.lower() for t in op_texts])[op_code] if n else np.zeros(0, dtype=np.int64)
    lower_dev = _ranks([str(d).lower() for d in devices])[device_code] if n else np.zeros(0, dtype=np.int64)
    return PairsIndex(
        rows,
        column("size_bytes", np.int64, 0)[0],
        column("addr", np.int64, 0)[0],
        numbers,
        device_code,
        {d: k for k, d in enumerate(devices)},
        op_code,
        op_texts,
        op_none,
        {"op": (lower_op, op_none), "device": (lower_dev, np.zeros(n, dtype=bool))},
        _ranks(op_texts)[op_code] if n else np.zeros(0, dtype=np.int64),
    )


class Rows(Sequence[dict[str, Any]]):
    """The selected rows, in order; each built (a copy with ``name``) when read."""

    def __init__(self, rows: list[dict[str, Any]], order: np.ndarray) -> None:
        self._rows, self._order = rows, order

    def __len__(self) -> int:
        return len(self._order)

    @overload
    def __getitem__(self, k: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, k: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, k: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(k, slice):
            return [_named(self._rows[i]) for i in self._order[k].tolist()]
        return _named(self._rows[int(self._order[k])])


def _named(row: dict[str, Any]) -> dict[str, Any]:
    return dict(row, name=row["op"] or "")


@dataclasses.dataclass(frozen=True)
class PairsQuery:
    """What the Memory events table shows: pairs on ``device`` (None or "": all) whose lifetime overlaps
    ``[lo, hi]`` (µs; None: open), with ``min_bytes ≤ size ≤ max_bytes`` and ``search`` in the op name
    (case-insensitive), sorted by ``sort`` then name."""

    device: str | None
    lo: float | None
    hi: float | None
    min_bytes: int
    max_bytes: int
    search: str
    sort: str
    descending: bool


def select(index: PairsIndex, q: PairsQuery) -> Sequence[dict[str, Any]]:
    """The rows :func:`reference_select` gives, from the columns."""
    keep = (index.size >= q.min_bytes) & (index.size <= q.max_bytes)
    if q.device:
        keep &= index.device_code == index.devices.get(q.device, -1)
    alloc, alloc_none = index.numbers["alloc_us"]
    free, free_none = index.numbers["free_us"]
    if q.lo is not None:
        keep &= ~(np.where(free_none, np.inf, free) < q.lo)
    if q.hi is not None:
        keep &= ~(np.where(alloc_none, -np.inf, alloc) > q.hi)
    if q.search:
        needle = q.search.lower()
        keep &= np.array([needle in t.lower() for t in index.op_texts], dtype=bool)[index.op_code]
    if q.sort in index.texts:
        value, none = index.texts[q.sort]
    elif q.sort in index.numbers:
        value, none = index.numbers[q.sort]
    else:
        value, none = (index.size if q.sort == "size_bytes" else index.addr), np.zeros(len(keep), dtype=bool)
    present = np.flatnonzero(keep & ~none)
    if value.dtype.kind == "f" and np.isnan(value[present]).any():  # NaN keys: Python's own order
        return reference_select(index.rows, q)
    v, name = value[present], index.name_rank[present]
    order = np.lexsort((-name, -v) if q.descending else (name, v))  # stable: ties keep row order, as sort() does
    return Rows(index.rows, np.concatenate([present[order], np.flatnonzero(keep & none)]))


def reference_select(rows: list[dict[str, Any]], q: PairsQuery) -> list[dict[str, Any]]:
    """The pairs ``q`` shows, by a loop over the rows (rows without a ``sort`` value last, in row order)."""
    needle = q.search.lower()
    out = []
    for r in rows:
        if q.device and r["device"] != q.device:
            continue
        if not q.min_bytes <= r["size_bytes"] <= q.max_bytes:
            continue
        start = r["alloc_us"] if r["alloc_us"] is not None else float("-inf")
        end = r["free_us"] if r["free_us"] is not None else float("inf")
        if (q.lo is not None and end < q.lo) or (q.hi is not None and start > q.hi):
            continue
        if needle and needle not in (r["op"] or "").lower():
            continue
        out.append(dict(r, name=r["op"] or ""))
    present = [r for r in out if r.get(q.sort) is not None]
    missing = [r for r in out if r.get(q.sort) is None]
    sort = q.sort
    present.sort(
        key=lambda r: (r[sort], r["name"]) if not isinstance(r[sort], str) else (r[sort].lower(), r["name"]),
        reverse=q.descending,
    )
    return present + missing
