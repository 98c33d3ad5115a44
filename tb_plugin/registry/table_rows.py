"""The typed rows of the Operator and GPU Kernel tables as the registry hands them on
(registry/report.py ``operator_table``/``kernel_table``): the report's rows (``OPERATOR_KEYS``,
``KERNEL_KEYS``) and the tab's rows the routes, MCP and the notebook page through (the columns of
api/table_columns.py). Plain dicts at run time; the full rows are analysis/operators.py ``OperatorRow``
and analysis/kernels.py ``KernelRow``."""

from __future__ import annotations

from typing import TypedDict


class OperatorReportRow(TypedDict):
    """One operator row of ``kinetoscope report`` (``OPERATOR_KEYS``; µs)."""

    name: str
    calls: int
    host_self_us: float
    host_total_us: float
    device_self_us: float
    device_total_us: float
    graph_replay_self_us: float  # device self time replayed from CUDA graphs
    tc_eligible: bool  # the operator could run on tensor cores


class OperatorTableRowBase(OperatorReportRow):
    """The Operator tab's row: the report's keys, its tensor-core shares (%) and FLOPs."""

    tc_self_pct: float | None  # None without kernel time
    tc_total_pct: float | None
    flops: float | None  # None when no call reported FLOPs
    tflops_per_s: float | None


class OperatorTableRow(OperatorTableRowBase, total=False):
    """An Operator tab row; the grouping's own column only when grouped by it."""

    input_shape: str | None
    call_stack: str | None


class KernelReportRow(TypedDict):
    """One kernel row of ``kinetoscope report`` (``KERNEL_KEYS``; µs)."""

    name: str
    calls: int
    total_us: float
    mean_us: float
    min_us: float
    max_us: float
    blocks_per_sm: float | None  # duration-weighted mean; None when no call has it
    achieved_occupancy_pct: float | None
    tensor_cores: bool  # the name matches a tensor-core kernel pattern


class KernelTableRow(KernelReportRow, total=False):
    """A GPU Kernel tab row: ``graph`` only grouped per graph, the launch configuration only per op
    and config."""

    graph: int | None
    op: str | None
    grid: str | None
    block: str | None
    registers_per_thread: int | None
    shared_memory_bytes: int | None
    tc_eligible: bool | None
