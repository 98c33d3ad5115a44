"""Diff of two traces: baseline vs experiment (delta = experiment − baseline; µs per average step).

- **Steps**: the Overview's average step breakdown of each side, and their delta per category.
- **Operator tree**: every operator call is placed by its *path*, the names of its enclosing
  operators from the thread's root (``ProfilerStep#N`` becomes ``ProfilerStep``, so all steps fold
  together; ``enumerate(DataLoader)#<iterator class>…`` becomes ``enumerate(DataLoader)``, so a
  single- and a multi-process DataLoader align). Only calls that start inside one of the side's kept
  steps' host ranges (``ProfilerStep#N``'s own interval, for the Overview's kept steps) count. Calls with the same path form one node; its times are summed
  and divided by the side's step count (per average step). Nodes are aligned by path.
- **Verdict** (one rule, on one quantity, :data:`QUANTITY`): a node's *time per step* is its host
  total (wall-clock µs of its calls on their thread, children included) per average step, and
  ``Δ = experiment − baseline`` of it (``change_us``). The node is *added* / *removed* when it has
  calls on one side only; else *slower* when ``Δ > CHANGE_US`` and ``Δ > CHANGE_PCT % × baseline``,
  *faster* when ``−Δ`` passes both, else *unchanged* (``reason`` says which bound it stayed within).
  A node whose parent changed (``Optimizer.step#AdamW.step`` at the root under torch.compile, under
  ``ProfilerStep`` eagerly) is one node, not a removed and an added one: :func:`moved_nodes` pairs it
  by name, and its row carries ``moved_from`` (the baseline path; the row's ``path`` is the
  experiment's).
  ``change_pct = 100 · Δ / baseline`` (None when the baseline is 0). Host time, because it is the
  time that makes up the step (the step total is wall-clock time); device columns are shown beside
  it, but decide nothing (device work that outlasts the host shows in the remainder below).
- **Waterfall** of one level (:func:`waterfall_totals`): its rows' ``Δ`` plus the *remainder*, the
  step-total Δ minus the rows' sum (time in no row at this level — gaps, device tails past the
  host, other levels — less threads that overlap), add up exactly to the step-total Δ.
- **Kernels**: per kernel name, calls and total time on each side, per average step, and the delta.
  Names are compared as they are, so kernels of different GPU models simply show as added/removed.
"""

from __future__ import annotations

from typing import Any, Sequence, cast

import numpy as np

from ..trace.categories import DATALOADER_PREFIXES, PROFILER_STEP_PREFIX, Kind
from ..trace.model import Trace
from .diff_records import KernelDiffRow, OperatorDiffRow, StepDiff, Waterfall
from .intervals import covers, merge
from .op_tree import op_tree
from .operators import op_times, summed_times
from .overview import Overview
from .steps import compute_steps

CHANGE_PCT = 5.0
CHANGE_US = 10.0
QUANTITY = "host_total_us"  # the one time a verdict and the waterfall compare (µs per average step)
_FIELDS = ("calls", "host_self_us", "host_total_us", "device_self_us", "device_total_us", "graph_replay_self_us")
OPERATOR_FIELDS = _FIELDS  # each side's figures of an operator row (calls; µs per step), for the notebook's columns


def _label(name: str) -> str:
    """Names that differ only by step number or DataLoader iterator class are one node."""
    if name.startswith(PROFILER_STEP_PREFIX):
        return "ProfilerStep"
    for prefix in DATALOADER_PREFIXES:
        if name.startswith(prefix):
            return prefix
    return name


def op_path_tree(trace: Trace) -> dict[tuple, dict]:
    """path → summed times (per average step) for every operator node with calls inside the steps."""

    def build():
        ev = trace.events
        tree = op_tree(trace)
        times = op_times(trace)
        kept = compute_steps(trace)
        steps = max(len(kept), 1)
        rows = tree.order[times.is_op[tree.order]]  # parents before children
        pid, parent_pid, label_of, labels = _path_ids(trace, rows, tree.op_parent[rows])
        counted = covers(*merge(kept.host_start, kept.host_end), ev.ts[rows]) if len(kept) else np.ones(len(rows), bool)
        n = len(parent_pid)
        ids = pid[counted]
        sums = {"calls": np.bincount(ids, minlength=n).astype(float)}
        for key, values in summed_times(trace).items():
            sums[key] = np.bincount(ids, weights=values[rows][counted], minlength=n)
        paths: list[tuple] = []
        for p in range(n):  # one pass per distinct path: a parent's id is always smaller than its child's
            q = int(parent_pid[p])
            paths.append((paths[q] if q >= 0 else ()) + (labels[label_of[p]],))
        return {
            paths[p]: {key: float(sums[key][p]) / steps for key in _FIELDS}
            for p in np.flatnonzero(sums["calls"]).tolist()
        }

    return trace.memo("op_path_tree", build)


def _path_ids(trace: Trace, rows: np.ndarray, parents: np.ndarray):
    """Per operator row (``rows``, parents first) the id of its path, and per path id its parent's
    (−1: a root) and its label (an index into the returned label list). Numbered one nesting level
    at a time (numpy per level, not per event); ids grow with depth."""
    ev = trace.events
    names, name_inv = np.unique(ev.name[rows], return_inverse=True)
    labels, label_inv = np.unique([_label(trace.strings[int(x)]) for x in names], return_inverse=True)
    lab = label_inv[name_inv] if len(rows) else np.zeros(0, np.int64)
    pos = np.full(len(ev.ts), -1, dtype=np.int64)
    pos[rows] = np.arange(len(rows))
    ppos = np.where(parents >= 0, pos[np.maximum(parents, 0)], -1)  # a parent that is no operator row: a root
    pid = np.full(len(rows), -1, dtype=np.int64)
    parent_pid: list[np.ndarray] = []
    label_of: list[np.ndarray] = []
    count = 0
    level = ppos < 0
    while level.any():
        idx = np.flatnonzero(level)
        up = np.where(ppos[idx] >= 0, pid[np.maximum(ppos[idx], 0)], -1)
        keys, inv = np.unique(np.stack([up, lab[idx]]), axis=1, return_inverse=True)
        pid[idx] = count + inv.reshape(-1)
        parent_pid.append(keys[0])
        label_of.append(keys[1])
        count += keys.shape[1]
        done = pid >= 0
        level = ~done & (ppos >= 0) & done[np.maximum(ppos, 0)]
    cat = lambda parts: np.concatenate(parts) if parts else np.zeros(0, np.int64)
    return pid, cat(parent_pid), cat(label_of), [str(x) for x in labels]


def thresholds() -> dict[str, float]:
    """The verdict rule's thresholds, for the client to word (it never copies them)."""
    return {"change_pct": CHANGE_PCT, "change_us": CHANGE_US}


def verdict(base_us: float | None, exp_us: float | None) -> dict:
    """The verdict of one node from its :data:`QUANTITY` on each side (µs per step; None: no calls
    there): ``{"status", "change_us", "change_pct", "reason"}``, the rule of the module docstring.
    ``reason``: ``"one_side"``, ``"changed"``, ``"within_us"`` (``|Δ| ≤ CHANGE_US``) or
    ``"within_pct"`` (``|Δ| ≤ CHANGE_PCT %`` of the baseline)."""
    b, e = base_us or 0.0, exp_us or 0.0
    delta = e - b
    pct = 100.0 * delta / b if b else None
    if base_us is None or exp_us is None:
        status, reason = ("added" if base_us is None else "removed"), "one_side"
    elif abs(delta) <= CHANGE_US:
        status, reason = "unchanged", "within_us"
    elif abs(delta) <= CHANGE_PCT / 100.0 * abs(b):
        status, reason = "unchanged", "within_pct"
    else:
        status, reason = ("slower" if delta > 0 else "faster"), "changed"
    return {"status": status, "change_us": delta, "change_pct": pct, "reason": reason}


def op_diff(base: Trace, exp: Trace, path: tuple = ()) -> list[OperatorDiffRow]:
    """The children of ``path`` on either side, aligned by name (a moved node: by :func:`moved_nodes`),
    with both sides and the delta. ``path`` names an experiment node, or a baseline-only one."""
    return _level(_Sides(base, exp), tuple(path))


class _Sides:
    """Both sides' path trees, their children by parent path, and the moved nodes (worked out once per
    diff, not once per level)."""

    def __init__(self, base: Trace, exp: Trace) -> None:
        self.b, self.e = op_path_tree(base), op_path_tree(exp)
        self.b_kids, self.e_kids = _children(self.b), _children(self.e)
        self.moves = moved_nodes(self.b, self.e, self.b_kids, self.e_kids)
        self.moved_away = set(self.moves.values())


def _children(nodes: dict[tuple, dict]) -> dict[tuple, list[str]]:
    kids: dict[tuple, list[str]] = {}
    for p in nodes:
        kids.setdefault(p[:-1], []).append(p[-1])
    return kids


def moved_nodes(
    b_nodes: dict[tuple, dict],
    e_nodes: dict[tuple, dict],
    b_kids: dict[tuple, list[str]],
    e_kids: dict[tuple, list[str]],
) -> dict[tuple, tuple]:
    """Experiment path → baseline path of every operator node whose parent changed (present at one path
    on each side only). A node is paired with one of the same name: first where its name occurs once
    among the unmatched nodes of each side, else in order (shallowest first, then tree order); the
    descendants of a pair at the same relative path are paired with it."""
    unmatched_b = [p for p in b_nodes if p not in e_nodes]
    unmatched_e = [p for p in e_nodes if p not in b_nodes]
    free_b, free_e = set(unmatched_b), set(unmatched_e)
    pairs: dict[tuple, tuple] = {}

    def pair(pb: tuple, pe: tuple) -> None:
        stack = [(pb, pe)]
        while stack:
            qb, qe = stack.pop()
            pairs[qe] = qb
            free_b.discard(qb)
            free_e.discard(qe)
            stack.extend(
                (qb + (n,), qe + (n,)) for n in b_kids.get(qb, ()) if qb + (n,) in free_b and qe + (n,) in free_e
            )

    def order(paths: list[tuple]) -> list[tuple]:
        return sorted(paths, key=len)  # stable: tree order within a depth

    by_name_b: dict[str, list[tuple]] = {}
    by_name_e: dict[str, list[tuple]] = {}
    for p in order(unmatched_b):
        by_name_b.setdefault(p[-1], []).append(p)
    for p in order(unmatched_e):
        by_name_e.setdefault(p[-1], []).append(p)
    for name, (pb,) in ((n, v) for n, v in by_name_b.items() if len(v) == 1):
        if len(by_name_e.get(name, ())) == 1 and pb in free_b and by_name_e[name][0] in free_e:
            pair(pb, by_name_e[name][0])
    for pb in order(unmatched_b):  # the rest by name and order
        if pb in free_b:
            pe = next((q for q in by_name_e.get(pb[-1], ()) if q in free_e), None)
            if pe is not None:
                pair(pb, pe)
    return pairs


def _level(sides: _Sides, path: tuple) -> list[OperatorDiffRow]:
    b_parent = sides.moves.get(path, path)
    keys: list[tuple[tuple, tuple | None, tuple | None]] = []  # (row path, baseline path, experiment path)
    for name in sides.e_kids.get(path, ()):
        key = path + (name,)
        keys.append((key, sides.moves.get(key, key if key in sides.b else None), key))
    for name in sides.b_kids.get(b_parent, ()):
        b_path = b_parent + (name,)
        if b_path in sides.moved_away or (b_parent == path and b_path in sides.e):
            continue  # shown where it moved to, or already listed as an experiment node
        keys.append((b_path, b_path, None))
    rows: list[dict[str, Any]] = []
    zero = dict.fromkeys(_FIELDS, 0.0)
    for key, bkey, ekey in keys:
        b, e = sides.b.get(bkey) if bkey else None, sides.e.get(ekey) if ekey else None
        bb, ee = b or zero, e or zero
        rows.append(
            {
                "name": key[-1],
                "path": list(key),
                **verdict(b[QUANTITY] if b else None, e[QUANTITY] if e else None),
                "compared": QUANTITY,
                "moved_from": list(bkey) if bkey is not None and ekey is not None and bkey != ekey else None,
                "has_children": bool((ekey and sides.e_kids.get(ekey)) or (bkey and sides.b_kids.get(bkey))),
                "baseline": {k: bb[k] for k in _FIELDS},
                "experiment": {k: ee[k] for k in _FIELDS},
                "delta": {k: ee[k] - bb[k] for k in _FIELDS},
            }
        )
    rows.sort(key=lambda r: (-abs(r["change_us"]), r["name"]))
    running = 0.0
    for r in rows:  # cumulative delta, largest changes first, for the waterfall chart
        running += r["change_us"]
        r["cumulative_delta_us"] = running
    return cast("list[OperatorDiffRow]", rows)  # built with verdict's keys


def waterfall_totals(step_delta_us: float, rows: Sequence[OperatorDiffRow]) -> Waterfall:
    """The waterfall of one level (µs per step): ``rows_us`` (the rows' summed Δ), ``remainder_us``
    (the step-total Δ not in them) and ``total_us`` (the step-total Δ, which the two add up to)."""
    rows_us = float(sum(r["change_us"] for r in rows))
    return {"rows_us": rows_us, "remainder_us": step_delta_us - rows_us, "total_us": step_delta_us}


def _kernel_table(trace: Trace) -> dict[str, tuple[int, float]]:
    ev = trace.events
    rows = np.flatnonzero(ev.kind == Kind.KERNEL)
    names, inv = np.unique(ev.name[rows], return_inverse=True)
    calls = np.bincount(inv, minlength=len(names))
    total = np.bincount(inv, weights=ev.dur[rows], minlength=len(names))
    return {trace.strings[n]: (int(c), float(t)) for n, c, t in zip(names, calls, total)}


def kernel_diff(base: Trace, exp: Trace) -> list[KernelDiffRow]:
    b, e = _kernel_table(base), _kernel_table(exp)
    b_steps, e_steps = max(len(compute_steps(base)), 1), max(len(compute_steps(exp)), 1)
    out: list[KernelDiffRow] = []
    for name in sorted(set(b) | set(e)):
        bc, bt = b.get(name, (0, 0.0))
        ec, et = e.get(name, (0, 0.0))
        out.append(
            {
                "name": name,
                "baseline_calls": bc,
                "experiment_calls": ec,
                "baseline_us": bt,
                "experiment_us": et,
                "baseline_per_step_us": bt / b_steps,
                "experiment_per_step_us": et / e_steps,
                "delta_per_step_us": et / e_steps - bt / b_steps,
                "status": "added" if name not in b else "removed" if name not in e else "present",
            }
        )
    out.sort(key=lambda r: -abs(r["delta_per_step_us"]))
    return out


def step_diff(base_overview: Overview, exp_overview: Overview) -> StepDiff:
    b, e = base_overview["average"], exp_overview["average"]
    return {
        "baseline": b,
        "experiment": e,
        "delta": {k: e[k] - b[k] for k in b},
        "relative_pct": {k: (100.0 * (e[k] - b[k]) / b[k] if b[k] else None) for k in b},
    }


def op_diff_flat(base: Trace, exp: Trace, max_nodes: int = 5000) -> list[OperatorDiffRow]:
    """Every aligned node, depth first (largest change first among siblings), for the headless report."""
    sides = _Sides(base, exp)
    out: list[OperatorDiffRow] = []
    stack: list[tuple[str, ...]] = [()]
    while stack and len(out) < max_nodes:
        path = stack.pop()
        children = _level(sides, path)
        out.extend(children)
        stack.extend(tuple(c["path"]) for c in reversed(children) if c["has_children"])
    return out[:max_nodes]
