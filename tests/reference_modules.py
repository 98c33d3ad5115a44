"""The Module view as it was before vectorizing (Python loops over module calls, operators and flows): the
reference tests/unit/analysis/test_vectorized.py compares the vectorized tb_plugin.analysis.modules with."""

from __future__ import annotations

import numpy as np

# unchanged helpers (module detection and inputs, node rollup) are the module's own: only the loops differ
from tb_plugin.analysis.modules import MAX_DEPTH, _empty, _module_inputs, _roll_up
from tb_plugin.analysis.op_tree import op_tree
from tb_plugin.analysis.operators import op_times
from tb_plugin.trace.model import Trace


def module_tree(trace: Trace) -> list[dict] | None:
    return _module_tree(trace) or None


def _module_tree(trace: Trace) -> list[dict]:
    inputs = _module_inputs(trace)  # the module's own inputs; the loops below are the reference
    if inputs is None:
        return []
    is_module, py_parent, label, times = inputs
    ev = trace.events

    nearest: dict[int, int] = {}  # python row → nearest module row at or above it (-1: none)

    def module_at(row: int) -> int:
        path = []
        while row >= 0 and row not in nearest:
            path.append(row)
            row = row if is_module[row] else int(py_parent[row])
            if path[-1] == row:  # a module: itself
                break
        found = nearest.get(row, -1) if row >= 0 and not is_module[row] else row
        for r in path:
            nearest[r] = found
        return found

    module_rows = np.flatnonzero(is_module)
    parent_module = {int(r): (module_at(int(py_parent[r])) if py_parent[r] >= 0 else -1) for r in module_rows}
    node_of, folded = _module_paths(module_rows.tolist(), parent_module, lambda row: label(trace.strings[ev.name[row]]))

    def path_of(row: int) -> tuple:
        return node_of[row]

    nodes: dict[tuple, dict] = {}
    for r in module_rows.tolist():
        node = nodes.setdefault(path_of(r), _empty(path_of(r)[-1]))
        if r in folded:  # a call below MAX_DEPTH: its time is inside its shown ancestor's already
            node["folded_calls"] = node.get("folded_calls", 0) + 1
            continue
        node["occurrences"] += 1
        node["host_total_us"] += float(ev.dur[r])

    # operators → innermost module
    op_rows = np.flatnonzero(times.is_op & ~is_module & (py_parent >= 0))
    op_module = np.array([module_at(int(p)) for p in py_parent[op_rows]], dtype=np.int64) if len(op_rows) else op_rows
    for r, m in zip(op_rows.tolist(), op_module.tolist()):
        if m >= 0:
            node = nodes[path_of(m)]
            node["operators"] += 1
            node["device_self_us"] += float(times.device_self[r])
            node["graph_replay_self_us"] += float(times.replay_self[r])
    for fwd, bwd in _forward_backward_pairs(trace):
        p = py_parent[fwd]
        m = module_at(int(p)) if p >= 0 else -1
        if m >= 0:
            nodes[path_of(m)]["device_self_us"] += float(times.device_total[bwd])
            nodes[path_of(m)]["graph_replay_self_us"] += float(times.replay_total[bwd])

    roots: list[dict] = []
    by_depth = sorted(nodes, key=len)
    for path in by_depth:
        node = nodes[path]
        (nodes[path[:-1]]["children"] if len(path) > 1 else roots).append(node)
    for path in reversed(by_depth):  # deepest first: every child is rolled up before its parent
        _roll_up(nodes[path])
    return roots


def _module_paths(rows: list[int], parent_module: dict[int, int], name_of) -> tuple[dict[int, tuple], set[int]]:
    """Per module row its node's path of names from the root, and the rows nested more than
    MAX_DEPTH modules deep (folded: their path is their depth-MAX_DEPTH ancestor's). Iterative: a
    chain of thousands of nested modules never recurses."""
    node_of: dict[int, tuple] = {}
    folded: set[int] = set()
    for row in rows:
        chain, on_chain = [], set()
        while row >= 0 and row not in node_of and row not in on_chain:  # (a cycle would end at a root)
            chain.append(row)
            on_chain.add(row)
            row = parent_module[row]
        above = node_of.get(row, ())
        for r in reversed(chain):  # outermost first
            if len(above) >= MAX_DEPTH:
                folded.add(r)
            else:
                above = above + (name_of(r),)
            node_of[r] = above
    return node_of, folded


def _forward_backward_pairs(trace: Trace) -> list[tuple[int, int]]:
    """(forward op row, backward op row) for each ``fwdbwd`` flow whose ends sit on operators."""
    flows = trace.flows
    if len(flows) == 0:
        return []
    ev = trace.events
    is_op = op_times(trace).is_op
    at: dict[tuple, int] = {}
    for r in op_tree(trace).order.tolist():  # nesting order: the innermost op at a timestamp wins
        if is_op[r]:
            at[(int(ev.pid[r]), int(ev.tid[r]), float(ev.ts[r]))] = r
    starts: dict[int, int] = {}
    ends: dict[int, int] = {}
    for fid, phase, ts, pid, tid in zip(
        flows.id.tolist(), flows.phase.tolist(), flows.ts.tolist(), flows.pid.tolist(), flows.tid.tolist()
    ):
        row = at.get((pid, tid, ts))
        if row is not None:
            (starts if phase == 0 else ends)[fid] = row
    return [(starts[f], ends[f]) for f in starts if f in ends]
