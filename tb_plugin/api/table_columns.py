"""The Operator, GPU Kernel and Memory tables' groupings and columns, and which columns a grouping shows:
the routes, their CSV, MCP and the notebook all take them from here (one selection, not one per interface)."""

from __future__ import annotations

from ..registry.report import KERNEL_KEYS, OPERATOR_KEYS

KERNEL_GROUPS = ("kernel", "kernel_op_config", "graph")
#: The launch configuration, shown only grouped per op and config.
KERNEL_CONFIG_COLUMNS = ("op", "grid", "block", "registers_per_thread", "shared_memory_bytes", "tc_eligible")
#: The report's kernel keys (name first) with the graph and the launch configuration after the name.
KERNEL_COLUMNS = [KERNEL_KEYS[0], "graph", *KERNEL_CONFIG_COLUMNS, *KERNEL_KEYS[1:]]


def kernel_columns(group_by: str) -> list[str]:
    """The GPU Kernel tab's columns for a grouping: the launch configuration only per op and config, the
    graph only per graph."""
    return [
        c
        for c in KERNEL_COLUMNS
        if (c not in KERNEL_CONFIG_COLUMNS or group_by == "kernel_op_config") and (c != "graph" or group_by == "graph")
    ]


OPERATOR_GROUPS = ("operator", "input_shape", "call_stack")
#: The Operator tab's Tensor Core shares (%) and FLOP counts, after the report's keys.
OPERATOR_TC_FLOP_COLUMNS = ("tc_self_pct", "tc_total_pct", "flops", "tflops_per_s")
#: The report's operator keys (name first) with the groupings' own columns after the name.
OPERATOR_COLUMNS = [OPERATOR_KEYS[0], "input_shape", "call_stack", *OPERATOR_KEYS[1:], *OPERATOR_TC_FLOP_COLUMNS]
MEMORY_EVENT_COLUMNS = ["op", "device", "size_bytes", "alloc_us", "free_us", "duration_us", "addr"]
MEMORY_STAT_COLUMNS = [
    "name",
    "calls",
    "size_increase_bytes",
    "self_size_increase_bytes",
    "allocations",
    "self_allocations",
    "allocation_bytes",
    "self_allocation_bytes",
    "self_not_freed_bytes",
]


def operator_columns(group_by: str) -> list[str]:
    """The Operator tab's columns for a grouping: ``input_shape``/``call_stack`` only when grouped by them."""
    return [
        c
        for c in OPERATOR_COLUMNS
        if not (c == "input_shape" and group_by != "input_shape")
        and not (c == "call_stack" and group_by != "call_stack")
    ]
