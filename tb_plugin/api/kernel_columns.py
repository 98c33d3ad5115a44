"""The GPU Kernel table's groupings and columns (the route, the CSV, MCP and the notebook show these)."""

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
