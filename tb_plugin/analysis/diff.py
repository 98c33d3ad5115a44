"""Diff of two traces: baseline vs experiment (delta = experiment − baseline; µs per average step).

- **Steps**: the Overview's average step breakdown of each side, and their delta per category.
- **Operator tree**: every operator call is placed by its *path*, the names of its enclosing
  operators from the thread's root (``ProfilerStep#N`` becomes ``ProfilerStep``, so all steps fold
  together; ``enumerate(DataLoader)#<iterator class>…`` becomes ``enumerate(DataLoader)``, so a
  single- and a multi-process DataLoader align). Calls with the same path form one node; its times are summed and divided by the side's
  step count (per average step). Nodes are aligned by path. A node is *added* (only in the
  experiment), *removed* (only in the baseline), *slower*/*faster* when its time changes by more than
  :data:`CHANGE_PCT` % and :data:`CHANGE_US` µs, else *unchanged*. The time compared is device total
  when either side has device time there, else host total.
- **Kernels**: per kernel name, calls and total time on each side, per average step, and the delta.
  Names are compared as they are, so kernels of different GPU models simply show as added/removed.
"""

from __future__ import annotations

import numpy as np

from ..trace.categories import DATALOADER_PREFIXES, PROFILER_STEP_PREFIX, Kind
from ..trace.model import Trace
from .op_tree import op_tree, path_nodes
from .operators import op_times
from .steps import compute_steps

CHANGE_PCT = 5.0
CHANGE_US = 10.0
_FIELDS = ("calls", "host_self_us", "host_total_us", "device_self_us", "device_total_us")


def _label(name: str) -> str:
    """Names that differ only by step number or DataLoader iterator class are one node."""
    if name.startswith(PROFILER_STEP_PREFIX):
        return "ProfilerStep"
    for prefix in DATALOADER_PREFIXES:
        if name.startswith(prefix):
            return prefix
    return name


def op_path_tree(trace: Trace) -> dict[tuple, dict]:
    """path → summed times (per average step) for every operator node."""
    def build():
        ev = trace.events
        tree = op_tree(trace)
        times = op_times(trace)
        steps = max(len(compute_steps(trace)), 1)
        order = tree.order[times.is_op[tree.order]]  # parents before children
        index_of = np.full(len(ev), -1, dtype=np.int64)
        index_of[order] = np.arange(len(order))
        up = tree.op_parent[order]
        parent = np.where(up >= 0, index_of[np.maximum(up, 0)], -1)
        names, name_of_call = np.unique(ev.name[order], return_inverse=True)
        labels: dict[str, int] = {}
        label_ids = [labels.setdefault(_label(trace.strings[k]), len(labels)) for k in names.tolist()]
        label = np.asarray(label_ids, dtype=np.int64)[name_of_call.reshape(-1)]
        node, _, node_parent, node_label = path_nodes(parent, label)
        size = len(node_parent)
        # sums in call order, as a running total adds them (bincount adds each bin's weights in input order)
        sums = [np.bincount(node, weights=w, minlength=size).tolist() for w in (
            np.ones(len(order)), times.host_self[order], ev.dur[order], times.device_self[order],
            times.device_total[order])]
        text = list(labels)
        path_of: list[tuple] = [()] * size
        nodes: dict[tuple, dict] = {}
        _, first = np.unique(node, return_index=True)
        for g in np.argsort(first, kind="stable").tolist():  # first call first (parents before children)
            path_of[g] = path_of[node_parent[g]] + (text[node_label[g]],) if node_parent[g] >= 0 else (
                text[node_label[g]],)
            nodes[path_of[g]] = {key: sums[k][g] / steps for k, key in enumerate(_FIELDS)}
        return nodes

    return trace.memo("op_path_tree", build)


def thresholds() -> dict[str, float]:
    """The verdict rule's thresholds, for the client to word (it never copies them)."""
    return {"change_pct": CHANGE_PCT, "change_us": CHANGE_US}


def _compared(base: dict | None, exp: dict | None) -> str:
    """The time a verdict compares: device total when either side has device time, else host total."""
    return "device_total_us" if any(side and side["device_total_us"] for side in (base, exp)) else "host_total_us"


def _status(base: dict | None, exp: dict | None) -> tuple[str, float]:
    if base is None:
        return "added", 0.0
    if exp is None:
        return "removed", 0.0
    key = _compared(base, exp)
    delta = exp[key] - base[key]
    pct = 100.0 * delta / base[key] if base[key] else (100.0 if delta else 0.0)
    if abs(delta) > CHANGE_US and abs(pct) > CHANGE_PCT:
        return ("slower" if delta > 0 else "faster"), pct
    return "unchanged", pct


def op_diff(base: Trace, exp: Trace, path: tuple = ()) -> list[dict]:
    """The children of ``path`` on either side, aligned by name, with both sides and the delta."""
    b_nodes, e_nodes = op_path_tree(base), op_path_tree(exp)
    depth = len(path) + 1
    names = sorted({p[-1] for p in b_nodes if len(p) == depth and p[:-1] == path}
                   | {p[-1] for p in e_nodes if len(p) == depth and p[:-1] == path})
    rows = []
    for name in names:
        key = path + (name,)
        b, e = b_nodes.get(key), e_nodes.get(key)
        status, pct = _status(b, e)
        zero = dict.fromkeys(_FIELDS, 0.0)
        bb, ee = b or zero, e or zero
        rows.append({
            "name": name, "path": list(key), "status": status, "change_pct": pct, "compared": _compared(b, e),
            "has_children": any(len(p) == depth + 1 and p[:depth] == key for p in (*b_nodes, *e_nodes)),
            "baseline": {k: bb[k] for k in _FIELDS}, "experiment": {k: ee[k] for k in _FIELDS},
            "delta": {k: ee[k] - bb[k] for k in _FIELDS},
        })
    rows.sort(key=lambda r: -abs(r["delta"]["device_total_us"] or r["delta"]["host_total_us"]))
    running = 0.0
    for r in rows:  # cumulative delta, largest changes first, for the waterfall chart
        running += r["delta"][r["compared"]]
        r["cumulative_delta_us"] = running
    return rows


def _kernel_table(trace: Trace) -> dict[str, tuple[int, float]]:
    ev = trace.events
    rows = np.flatnonzero(ev.kind == Kind.KERNEL)
    names, inv = np.unique(ev.name[rows], return_inverse=True)
    calls = np.bincount(inv, minlength=len(names))
    total = np.bincount(inv, weights=ev.dur[rows], minlength=len(names))
    return {trace.strings[n]: (int(c), float(t)) for n, c, t in zip(names, calls, total)}


def kernel_diff(base: Trace, exp: Trace) -> list[dict]:
    b, e = _kernel_table(base), _kernel_table(exp)
    b_steps, e_steps = max(len(compute_steps(base)), 1), max(len(compute_steps(exp)), 1)
    out = []
    for name in sorted(set(b) | set(e)):
        bc, bt = b.get(name, (0, 0.0))
        ec, et = e.get(name, (0, 0.0))
        out.append({"name": name, "baseline_calls": bc, "experiment_calls": ec, "baseline_us": bt, "experiment_us": et,
                    "baseline_per_step_us": bt / b_steps, "experiment_per_step_us": et / e_steps,
                    "delta_per_step_us": et / e_steps - bt / b_steps,
                    "status": "added" if name not in b else "removed" if name not in e else "present"})
    out.sort(key=lambda r: -abs(r["delta_per_step_us"]))
    return out


def step_diff(base_overview: dict, exp_overview: dict) -> dict:
    b, e = base_overview["average"], exp_overview["average"]
    return {"baseline": b, "experiment": e, "delta": {k: e[k] - b[k] for k in b},
            "relative_pct": {k: (100.0 * (e[k] - b[k]) / b[k] if b[k] else None) for k in b}}


def op_diff_flat(base: Trace, exp: Trace, max_nodes: int = 5000) -> list[dict]:
    """Every aligned node, depth first (largest change first among siblings), for the headless report."""
    out: list[dict] = []
    stack = [()]
    while stack and len(out) < max_nodes:
        path = stack.pop()
        children = op_diff(base, exp, path)
        out.extend(children)
        stack.extend(tuple(c["path"]) for c in reversed(children) if c["has_children"])
    return out[:max_nodes]
