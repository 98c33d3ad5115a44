"""Table paging: filter, sort and page rows computed by ``analysis`` (no computation), and CSV.

A table is a list of flat dicts. ``search`` is a case-insensitive substring of ``name`` (and
``op_search`` of ``op``); ``sort`` names a column; ``None`` values sort last in either order.
"""

from __future__ import annotations

import csv
import io
from typing import Any, Sequence

from ..analysis.numfmt import decimal_text

Row = dict[str, Any]  # one table row: column name → value

MAX_LIMIT = 1000
TOP_N = 10


def filter_rows(rows: list[Row], search: str | None, op_search: str | None = None) -> list[Row]:
    if search:
        needle = search.lower()
        rows = [r for r in rows if needle in r["name"].lower()]
    if op_search:
        needle = op_search.lower()
        rows = [r for r in rows if r.get("op") and needle in r["op"].lower()]
    return rows


def sort_rows(rows: list[Row], key: str, descending: bool) -> list[Row]:
    present = [r for r in rows if r.get(key) is not None]
    missing = [r for r in rows if r.get(key) is None]
    present.sort(
        key=lambda r: (r[key], r["name"]) if not isinstance(r[key], str) else (r[key].lower(), r["name"]),
        reverse=descending,
    )
    return present + missing


def selected(rows: list[Row], q: dict[str, Any]) -> list[Row]:
    """The rows a query (:func:`~.params.table_query`) shows, filtered and sorted, before paging."""
    return sort_rows(filter_rows(rows, q["search"], q["op_search"]), q["sort"], q["descending"])


def window(rows: Sequence[Row], q: dict[str, Any]) -> dict[str, Any]:
    """One page of already selected ``rows``: the query's sort, order, offset and the total count."""
    return {
        "state": "ready",
        "sort": q["sort"],
        "order": "desc" if q["descending"] else "asc",
        "total_rows": len(rows),
        "offset": q["offset"],
        "rows": rows[q["offset"] : q["offset"] + q["limit"]],
    }


def page(all_rows: list[Row], q: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """The page of ``all_rows`` that ``q`` asks for, with ``extra`` fields."""
    return {**window(selected(all_rows, q), q), **extra}


def top(rows: list[Row], key: str, n: int = TOP_N) -> list[dict[str, Any]]:
    """The ``n`` largest rows by ``key`` and one ``Other`` entry for the rest (over all rows)."""
    ranked = sorted((r for r in rows if (r.get(key) or 0) > 0), key=lambda r: -r[key])
    out = [{"name": _label(r), "value": r[key]} for r in ranked[:n]]
    rest = sum(r[key] for r in ranked[n:])
    if rest > 0:
        out.append({"name": "Other", "value": rest})
    return out


def _label(row: Row) -> str:
    extra = row.get("input_shape") or ""
    return f"{row['name']} {extra}".strip()


FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet may read as a formula (OWASP)


def csv_cell(value: Any) -> Any:
    """One CSV cell: ``None`` → empty; a string a spreadsheet would run as a formula (it starts with
    ``=``, ``+``, ``-``, ``@``, tab or CR) gets a leading ``'``. Numbers stay numbers (``-3`` is not
    a formula), so only trace strings — names, shapes, stacks — are ever changed. A float is written
    by the one rounding rule (:func:`..analysis.numfmt.decimal_text`: 262422.46700000024 → 262422.467)."""
    if value is None:
        return ""
    if isinstance(value, float):
        return decimal_text(value)
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def to_csv(rows: Sequence[Row], columns: list[str]) -> str:
    """Every CSV the plugin serves: a header line, then one line per row, each cell through
    :func:`csv_cell` (column names too)."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow([csv_cell(c) for c in columns])
    for r in rows:
        writer.writerow([csv_cell(r.get(c)) for c in columns])
    return buf.getvalue()
