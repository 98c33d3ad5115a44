"""What the notebook API and the MCP tools share: picking a file of the registry by run, worker and
span (a bad name raises :class:`Invalid` listing the valid ones), the groupings and columns of the
operator and kernel tables (the tab's, :mod:`tb_plugin.api.table_columns`), and top-N selection.

No number is computed here: rows come from :class:`~tb_plugin.registry.views.FileViews` through
:mod:`tb_plugin.registry.report` (the builder of ``kinetoscope report --json``), and the "rest" of a
top-N is the tab's own ``Other`` slice (:func:`tb_plugin.api.paging.top`).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence, cast

from ..analysis.diff import OPERATOR_FIELDS
from ..analysis.memory import MemoryOperatorRow
from ..analysis.overview import CATEGORY_KEYS
from ..api import paging
from ..api.table_columns import kernel_columns as kernel_columns  # re-exported: the tools' columns
from ..api.table_columns import operator_columns as operator_columns
from ..errors import InvalidArgumentError
from ..registry import report
from ..registry.interface import Registry
from ..registry.states import FileState
from ..registry.table_rows import KernelTableRow, OperatorTableRow
from ..registry.views import FileViews

# user-facing grouping → the views' grouping (the routes' ``group_by``); the views' names work too
OPERATOR_GROUPS = {"name": "operator", "shape": "input_shape", "stack": "call_stack"}
KERNEL_GROUPS = {"name": "kernel", "op": "kernel_op_config", "graph": "graph"}


class Invalid(InvalidArgumentError):
    """A bad argument (an unknown run, worker, span, grouping or column); the message lists what is
    valid. A :class:`~tb_plugin.errors.InvalidArgumentError` (and so a ``ValueError``)."""


def grouping(value: str, groups: dict[str, str], what: str) -> str:
    """The views' grouping that ``value`` names (a key or a value of ``groups``)."""
    if value in groups:
        return groups[value]
    if value in groups.values():
        return value
    raise Invalid(f"{what} must be one of {', '.join(groups)} (got {value!r})")


def operators(views: FileViews, group_by: str = "name") -> list[OperatorTableRow]:
    """The operator rows (µs) of a grouping, in the report's order (:func:`report.operator_table`)."""
    g = grouping(group_by, OPERATOR_GROUPS, "group_by")
    return cast("list[OperatorTableRow]", report.operator_table(views, g, operator_columns(g)))


def kernels(views: FileViews, group_by: str = "name") -> list[KernelTableRow]:
    """The kernel rows (µs) of a grouping, in the report's order (:func:`report.kernel_table`)."""
    g = grouping(group_by, KERNEL_GROUPS, "group_by")
    return cast("list[KernelTableRow]", report.kernel_table(views, g, kernel_columns(g)))


def top_rows(rows: Sequence[Mapping[str, Any]], sort: str, limit: int, columns: list[str]) -> dict[str, Any]:
    """The ``limit`` rows with the largest ``sort`` (missing values last), with ``rows_total`` (all rows)
    and ``rest``: the rows left out and their ``sort`` total as the tab's pie shows it (the ``Other``
    slice of :func:`paging.top`: positive values only)."""
    if sort not in columns:
        raise Invalid(f"sort must be one of {', '.join(columns)} (got {sort!r})")
    table = cast("list[paging.Row]", rows)  # the pager reads rows by column name
    ranked = paging.sort_rows(table, sort, True)[:limit]
    other = [p["value"] for p in paging.top(table, sort, limit) if p["name"] == "Other"] if limit < len(rows) else []
    return {
        "sort": sort,
        "rows_total": len(rows),
        "rows": ranked,
        "rest": {"rows": max(0, len(rows) - limit), sort: other[0] if other else 0},
    }


# the columns of the notebook's other tables, so an empty table still has them (µs, bytes)
STEP_COLUMNS = ["step", "start_us", "end_us", "total_us", *CATEGORY_KEYS]
MEMORY_DEVICE_COLUMNS = ["device", "peak_allocated_bytes", "peak_allocated_ts", "peak_reserved_bytes"]
MEMORY_TOP_COLUMNS = list(MemoryOperatorRow.__annotations__)  # the memory section's operator rows
FILE_COLUMNS = ["worker", "span", "path", "size_bytes", "state"]
DIFF_STEP_COLUMNS = ["category", "baseline_us", "experiment_us", "delta_us", "relative_pct"]
DIFF_OPERATOR_COLUMNS = [
    "name",
    "path",
    "status",
    "change_us",
    "change_pct",
    "reason",
    "compared",
    "has_children",
    *(f"{side}_{k}" for side in ("baseline", "experiment", "delta") for k in OPERATOR_FIELDS),
    "cumulative_delta_us",
]
DIFF_KERNEL_COLUMNS = [
    "name",
    "baseline_calls",
    "experiment_calls",
    "baseline_us",
    "experiment_us",
    "baseline_per_step_us",
    "experiment_per_step_us",
    "delta_per_step_us",
    "status",
]

MODULE_COLUMNS = [
    "path",
    "name",
    "depth",
    "occurrences",
    "operators",
    "host_self_us",
    "host_total_us",
    "device_self_us",
    "device_total_us",
    "graph_replay_self_us",
]


def module_rows(tree: Sequence[Mapping[str, Any]] | None, parent: str = "", depth: int = 0) -> list[dict[str, Any]]:
    """The Module tab's tree (:func:`~tb_plugin.analysis.modules.module_tree`) as rows, parents first:
    ``path`` ("Model/Linear_0"), ``depth`` (0: top level) and the node's own figures (µs)."""
    rows: list[dict[str, Any]] = []
    for node in tree or []:
        path = f"{parent}/{node['name']}" if parent else node["name"]
        rows.append(dict({k: v for k, v in node.items() if k != "children"}, path=path, depth=depth))
        rows.extend(module_rows(node.get("children"), path, depth + 1))
    return rows


# -- picking a file -------------------------------------------------------------------------------
def _span_key(span: str) -> tuple[int, int, str]:
    return (0, int(span), "") if span.isdigit() else (1, 0, span)


def layout(registry: Registry) -> dict[str, dict[str, list[str]]]:
    """run → worker → spans of every trace file the registry lists."""
    out: dict[str, dict[str, list[str]]] = {}
    for st in registry.files():
        out.setdefault(st.run, {}).setdefault(st.worker, []).append(st.span)
    for workers in out.values():
        for spans in workers.values():
            spans.sort(key=_span_key)
    return out


def describe(runs: dict[str, dict[str, list[str]]]) -> str:
    """``run 'a': workers w0 (spans 1, 2), w1 (span 1); run 'b': …`` (at most 20 runs named)."""
    parts = []
    for run, workers in list(runs.items())[:20]:
        ws = ", ".join(f"{w} (span{'s' if len(s) > 1 else ''} {', '.join(s)})" for w, s in workers.items())
        parts.append(f"run {run!r}: workers {ws}")
    more = f"; and {len(runs) - 20} more runs" if len(runs) > 20 else ""
    return "; ".join(parts) + more if parts else "no trace files"


def find_file(registry: Registry, run: str | None, worker: str | None = None, span: str | None = None) -> FileState:
    """The FileState of ``run``/``worker``/``span`` (each None: the first there, the only run when
    there is one). Raises :class:`Invalid` naming the runs, workers and spans there are."""
    runs = layout(registry)
    if not runs:
        raise Invalid(f"no trace files under {registry.logdir}")
    if run is None:
        if len(runs) > 1:
            raise Invalid(f"give a run: {describe(runs)}")
        run = next(iter(runs))
    if run not in runs:
        raise Invalid(f"no run {run!r}; {describe(runs)}")
    workers = runs[run]
    worker = next(iter(workers)) if worker is None else str(worker)
    if worker not in workers:
        raise Invalid(f"no worker {worker!r} in run {run!r}; {describe({run: workers})}")
    spans = workers[worker]
    span = ("1" if "1" in spans else spans[0]) if span is None else str(span)
    if span not in spans:
        raise Invalid(f"no span {span!r} for worker {worker!r} in run {run!r}; {describe({run: {worker: spans}})}")
    found = registry.find(run, worker, span)
    if found is None:  # the listing changed since layout()
        raise Invalid(f"no span {span!r} for worker {worker!r} in run {run!r}; {describe(layout(registry))}")
    return found
