"""The typed rows of the Operator and GPU Kernel tables as the registry hands them on
(registry/report.py ``operator_table``/``kernel_table``): the report's rows (``OPERATOR_KEYS``,
``KERNEL_KEYS``: analysis/operators.py ``OperatorFigures``, analysis/kernels.py ``KernelFigures``) and
the tab's rows the routes, MCP and the notebook page through (the columns of api/table_columns.py).
Plain dicts at run time; the full rows are ``OperatorRow`` and ``KernelRow``."""

from __future__ import annotations

from ..analysis.kernels import KernelFigures
from ..analysis.operators import OperatorFigures

OperatorReportRow = OperatorFigures  # one operator row of ``kinetoscope report`` (µs)
KernelReportRow = KernelFigures  # one kernel row of ``kinetoscope report`` (µs)


class OperatorTableRowBase(OperatorFigures):
    """The Operator tab's row: the report's keys, its tensor-core shares (%) and FLOPs."""

    tc_self_pct: float | None  # None without kernel time
    tc_total_pct: float | None
    flops: float | None  # None when no call reported FLOPs
    tflops_per_s: float | None


class OperatorTableRow(OperatorTableRowBase, total=False):
    """An Operator tab row; the grouping's own column only when grouped by it."""

    input_shape: str | None
    call_stack: str | None


class KernelTableRow(KernelFigures, total=False):
    """A GPU Kernel tab row: ``graph`` only grouped per graph, the launch configuration only per op
    and config."""

    graph: int | None
    op: str | None
    grid: str | None
    block: str | None
    registers_per_thread: int | None
    shared_memory_bytes: int | None
    tc_eligible: bool | None
