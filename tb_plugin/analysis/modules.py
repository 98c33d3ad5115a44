"""Module view: the ``nn.Module`` hierarchy of ``with_modules`` traces.

Module calls are ``python_function`` events named ``nn.Module: <Class>_<n>`` (``with_modules``), or
Lightning's ``[pl][module]<class>: <name>`` ranges; a module's parent is the nearest enclosing module
call on the same thread. Calls with the same path from the root are one
node; ``occurrences`` counts them. Per node (µs):

- **host total** = Σ durations of its calls; **host self** = host total − its children's host totals;
- **device self** = device self time of the operators whose innermost module is this one, plus the
  device total of the backward operators linked to those operators by ``fwdbwd`` flows (the module is
  credited with the backward work of its ops); **device total** = self + children's totals;
  **from graph replay** (``graph_replay_self_us``) = the part of device self replayed from CUDA graphs
  whose capture those operators made (:mod:`.graph_capture`);
- **operators** = operator calls whose innermost module is this one.

Modules nested more than :data:`MAX_DEPTH` levels deep are folded into their ancestor at that depth
(its operators and device time include theirs; ``folded_calls`` counts them), so a tree of thousands of
nested calls stays a tree the JSON encoder and the browser can walk.

Returns ``None`` when the trace has no module events.
"""

from __future__ import annotations

from typing import TypedDict, cast

import numpy as np

from ..trace.categories import Kind
from ..trace.model import Trace
from .op_tree import _first_in_chain, ancestor_counts, op_tree, path_nodes
from .operators import op_times

MODULE_PREFIX = "nn.Module: "
MAX_DEPTH = 100  # module levels shown; deeper calls are folded into their depth-100 ancestor
PL_MODULE_PREFIX = "[pl][module]"


class ModuleNodeBase(TypedDict):
    """One node of the module tree (:func:`module_tree`): the calls with one path from the root (µs)."""

    name: str  # the module's name (Lightning: ``name (Class)``)
    occurrences: int  # its calls
    operators: int  # operator calls whose innermost module it is
    host_total_us: float
    host_self_us: float
    device_total_us: float
    device_self_us: float
    graph_replay_self_us: float  # the part of device self replayed from CUDA graphs
    children: list[ModuleNode]  # most host total time first


class ModuleNode(ModuleNodeBase, total=False):
    """A module node; ``folded_calls`` only where deeper calls were folded into it."""

    folded_calls: int  # calls nested past MAX_DEPTH, counted here


def module_tree(trace: Trace) -> list[ModuleNode] | None:
    return trace.memo("module_tree", lambda: _module_tree(trace)) or None


def module_events(trace: Trace) -> tuple[np.ndarray, bool]:
    """``(mask, lightning)``: the events that are modules, ``nn.Module: `` python functions, else
    Lightning's ``[pl][module]`` record_function ranges (``lightning`` True); an all-False mask when
    the trace has neither (it has no module hierarchy)."""
    ev = trace.events
    is_module = (ev.kind == Kind.PYTHON_FUNCTION) & trace.name_mask(lambda s: s.startswith(MODULE_PREFIX))
    if is_module.any():
        return is_module, False
    # Lightning's PyTorchProfiler: "[pl][module]<class>: <name>" record_function ranges, nested like operators
    return (ev.kind == Kind.USER_ANNOTATION) & trace.name_mask(lambda s: s.startswith(PL_MODULE_PREFIX)), True


def _module_inputs(trace: Trace):
    """``(is_module, parent, label, times)``: the module mask, each event's parent row (operator parent
    for Lightning scopes, else python parent; −1: none), the name → label function and the operator
    times; None when the trace has no module."""
    is_module, lightning = module_events(trace)
    if not is_module.any():
        return None
    tree = op_tree(trace)
    py_parent = tree.op_parent if lightning else tree.py_parent
    label = _lightning_module_name if lightning else _python_module_name
    return is_module, py_parent, label, op_times(trace)


def _module_tree(trace: Trace) -> list[ModuleNode]:
    ev = trace.events
    inputs = _module_inputs(trace)
    if inputs is None:
        return []
    is_module, py_parent, label, times = inputs
    # per event: the nearest module call at or above it (itself for a module; −1: none)
    near = np.where(is_module, np.arange(len(ev)), _first_in_chain(py_parent, is_module))
    module_rows = np.flatnonzero(is_module)
    index_of = np.full(len(ev), -1, dtype=np.int64)
    index_of[module_rows] = np.arange(len(module_rows))

    def call_above(rows: np.ndarray) -> np.ndarray:
        """Per row (−1: none): the index of the nearest module call at or above it, or −1."""
        found = np.where(rows >= 0, near[np.maximum(rows, 0)], -1)
        return np.where(found >= 0, index_of[np.maximum(found, 0)], -1)

    parent_call = call_above(py_parent[module_rows])
    names, name_of_call = np.unique(ev.name[module_rows], return_inverse=True)
    labels: dict[str, int] = {}
    label_of_call = (
        np.array([labels.setdefault(label(trace.strings[k]), len(labels)) for k in names.tolist()], dtype=np.int64)[
            name_of_call.reshape(-1)
        ]
        if len(names)
        else np.zeros(0, dtype=np.int64)
    )
    node, folded, node_parent, node_label = path_nodes(parent_call, label_of_call, MAX_DEPTH)
    # operators → innermost module, then the backward ops linked to them: one sum in this order
    op_rows = np.flatnonzero(times.is_op & ~is_module & (py_parent >= 0))
    op_call = call_above(py_parent[op_rows])
    pairs = _forward_backward_pairs(trace)
    fwd, bwd = pairs[:, 0], pairs[:, 1]
    fwd_call = call_above(py_parent[fwd])
    credited = np.concatenate([op_call, fwd_call])
    gain = np.concatenate([times.device_self[op_rows], times.device_total[bwd]])
    replay_gain = np.concatenate([times.replay_self[op_rows], times.replay_total[bwd]])
    has = credited >= 0
    size = len(node_parent)
    shown = ~folded
    dur = ev.dur[module_rows]
    occurrences = np.bincount(node[shown], minlength=size).tolist()
    host_total = np.bincount(node[shown], weights=dur[shown], minlength=size).tolist()
    folded_calls = np.bincount(node[folded], minlength=size).tolist()
    operators = np.bincount(node[op_call[op_call >= 0]], minlength=size).tolist()
    device_self = np.bincount(node[credited[has]], weights=gain[has], minlength=size).tolist()
    replayed = np.bincount(node[credited[has]], weights=replay_gain[has], minlength=size).tolist()
    # nodes in order of their first call (the order the tree lists roots and equal-time children in)
    _, first_call = np.unique(node, return_index=True)
    depth = ancestor_counts(node_parent)
    made: list[dict] = [{} for _ in range(size)]
    roots: list[dict] = []
    label_text = list(labels)
    for g in sorted(np.argsort(first_call, kind="stable").tolist(), key=lambda g: depth[g]):
        made[g] = dict(
            _empty(label_text[node_label[g]]),
            occurrences=occurrences[g],
            operators=operators[g],
            host_total_us=host_total[g],
            device_self_us=device_self[g],
            graph_replay_self_us=replayed[g],
        )
        if folded_calls[g]:
            made[g]["folded_calls"] = folded_calls[g]
        (made[node_parent[g]]["children"] if node_parent[g] >= 0 else roots).append(made[g])
    for g in sorted(range(size), key=lambda g: -depth[g]):  # deepest first: children rolled up before parents
        _roll_up(made[g])
    return cast("list[ModuleNode]", roots)  # nodes built from _empty's keys


def _python_module_name(text: str) -> str:
    return text[len(MODULE_PREFIX) :]


def _lightning_module_name(text: str) -> str:
    """``[pl][module]torch.nn.modules.linear.Linear: layer.0`` → ``layer.0 (Linear)``."""
    body = text[len(PL_MODULE_PREFIX) :]
    cls, _, name = body.partition(": ")
    short = cls.rsplit(".", 1)[-1]
    return f"{name} ({short})" if name else short


def _empty(name: str) -> dict:
    return {
        "name": name,
        "occurrences": 0,
        "operators": 0,
        "host_total_us": 0.0,
        "host_self_us": 0.0,
        "device_total_us": 0.0,
        "device_self_us": 0.0,
        "graph_replay_self_us": 0.0,
        "children": [],
    }


def _roll_up(node: dict) -> None:
    """Self and total times of ``node`` from its children's (already rolled up); children sorted."""
    node["host_self_us"] = max(0.0, node["host_total_us"] - sum(c["host_total_us"] for c in node["children"]))
    node["device_total_us"] = node["device_self_us"] + sum(c["device_total_us"] for c in node["children"])
    node["children"].sort(key=lambda c: -c["host_total_us"])


def _forward_backward_pairs(trace: Trace) -> np.ndarray:
    """(forward op row, backward op row) for each ``fwdbwd`` flow whose ends sit on operators, as an
    ``(n, 2)`` array in order of each flow id's first start. A flow end sits on the operator of its
    thread starting at its timestamp (the innermost one when several do); the last start and the last
    end of an id count. Sorting and searching, no loop over operators or flows."""
    none = np.zeros((0, 2), dtype=np.int64)
    flows = trace.flows
    if len(flows) == 0:
        return none
    ev = trace.events
    is_op = op_times(trace).is_op
    ops = op_tree(trace).order
    ops = ops[is_op[ops]]  # nesting order: the innermost op at a timestamp comes last
    if len(ops) == 0:  # flows with no operator to sit on (a 218-byte trace: one module, one flow start)
        return none
    # one key per (pid, tid, ts) over ops and flows (ts + 0.0: −0.0 and 0.0 are one time; NaN matches nothing)
    op_key = np.stack([ev.pid[ops].astype(np.float64), ev.tid[ops].astype(np.float64), ev.ts[ops] + 0.0], axis=1)
    flow_key = np.stack([flows.pid.astype(np.float64), flows.tid.astype(np.float64), flows.ts + 0.0], axis=1)
    keys, inverse = np.unique(np.concatenate([op_key, flow_key]), axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    last = np.full(len(keys), -1, dtype=np.int64)
    np.maximum.at(last, inverse[: len(ops)], np.arange(len(ops)))
    at = last[inverse[len(ops) :]]
    row = np.where((at >= 0) & ~np.isnan(flows.ts), ops[np.maximum(at, 0)], -1)
    fids, fid = np.unique(flows.id, return_inverse=True)
    fid = fid.reshape(-1)
    position = np.arange(len(flows))

    def last_row(sel: np.ndarray) -> np.ndarray:
        latest = np.full(len(fids), -1, dtype=np.int64)
        np.maximum.at(latest, fid[sel], position[sel])
        return np.where(latest >= 0, row[np.maximum(latest, 0)], -1)

    start = (row >= 0) & (flows.phase == 0)
    end = (row >= 0) & (flows.phase != 0)
    first_start = np.full(len(fids), len(flows), dtype=np.int64)
    np.minimum.at(first_start, fid[start], position[start])
    starts, ends = last_row(np.flatnonzero(start)), last_row(np.flatnonzero(end))
    both = np.flatnonzero((starts >= 0) & (ends >= 0))
    both = both[np.argsort(first_start[both], kind="stable")]
    return np.stack([starts[both], ends[both]], axis=1) if len(both) else none
