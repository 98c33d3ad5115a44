"""The Operator, GPU Kernel and Memory tables' groupings and columns, and which columns a grouping shows:
the routes, their CSV, MCP and the notebook all take them from here (one selection, not one per interface)."""

from __future__ import annotations

KERNEL_GROUPS = ("kernel", "kernel_op_config", "graph")
KERNEL_COLUMNS = [
    "name",
    "graph",
    "op",
    "grid",
    "block",
    "registers_per_thread",
    "shared_memory_bytes",
    "tc_eligible",
    "calls",
    "total_us",
    "mean_us",
    "min_us",
    "max_us",
    "blocks_per_sm",
    "achieved_occupancy_pct",
    "tensor_cores",
]


def kernel_columns(group_by: str) -> list[str]:
    """The GPU Kernel tab's columns for a grouping: the launch configuration only per op and config, the
    graph only per graph."""
    config = ("op", "grid", "block", "registers_per_thread", "shared_memory_bytes", "tc_eligible")
    return [
        c
        for c in KERNEL_COLUMNS
        if (c not in config or group_by == "kernel_op_config") and (c != "graph" or group_by == "graph")
    ]


OPERATOR_GROUPS = ("operator", "input_shape", "call_stack")
OPERATOR_COLUMNS = [
    "name",
    "input_shape",
    "call_stack",
    "calls",
    "host_self_us",
    "host_total_us",
    "device_self_us",
    "device_total_us",
    "graph_replay_self_us",
    "tc_eligible",
    "tc_self_pct",
    "tc_total_pct",
    "flops",
    "tflops_per_s",
]
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
