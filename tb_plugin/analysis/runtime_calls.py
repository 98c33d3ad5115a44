"""The runtime-calls table: per runtime/driver API (``cudaLaunchKernel``, ``hipFree``…), its calls, total
time, share of the steps window, whether it blocks on the device, and who issued it. Times are µs.

- **Calls / total**: every host runtime (``cuda_runtime``/``Runtime``) and driver call of that name in
  the trace; ``window_us``: the part of those calls inside the steps window; ``window_pct``: that
  part over the steps window (the average step's share, since the steps tile the window).
- **Blocking** (:mod:`.blocking`): calls that returned only after device work finished;
  ``blocking_calls``/``blocking_us`` count them, ``blocks`` says whether any did.
- **Issued by**: the innermost operator (``cpu_op``) around each call; a call outside any operator is
  credited to the innermost ``record_function`` range that is not a ``ProfilerStep#N``, else to
  "(no operator)". ``frames``: the innermost Python frame (``python_function``, with ``with_stack``).
  The :data:`TOP_ISSUERS` largest by time are listed per API.
- **Outside the trace** (:func:`outside_trace`): blocking calls during which the trace shows the
  waited-on device busy for less than :data:`OUTSIDE_BUSY_SHARE` of the call; their unexplained time
  (call − device busy inside it) is time the device spent on work this trace does not hold.
"""

from __future__ import annotations

from typing import TypedDict

import numpy as np

from ..trace.categories import LAUNCH_KINDS, Kind
from ..trace.links import device_mask, launch_of
from ..trace.model import Trace
from ..trace.uniques import unique_values
from .blocking import BLOCKING_KINDS, STREAM_WAIT, blocking_calls
from .gpu_idle import Busy, window
from .op_tree import op_tree
from .row_keys import dense_codes

TOP_APIS = 50  # rows of the table (most time first); the rest are counted
TOP_ISSUERS = 3  # operators and Python frames listed per API
OUTSIDE_BUSY_SHARE = 0.10  # a blocking call is "outside the trace" when the device was busy < this share of it
OUTSIDE_MIN_CALL_US = 1000.0  # … and the call lasted at least this long (shorter ones are launch noise)
STEP_PREFIX = "ProfilerStep#"


class Issuer(TypedDict):
    """An operator or Python frame that issued an API's calls (µs)."""

    name: str
    calls: int
    total_us: float


class RuntimeCallRow(TypedDict):
    """One runtime/driver API (module docstring; µs)."""

    api: str
    calls: int
    total_us: float
    window_us: float  # inside the steps window
    window_pct: float | None  # of the steps window; None without one
    blocks: bool
    blocking_calls: int
    blocking_us: float
    blocking_kind: str | None  # the kind of most of its blocking time (analysis/blocking.py)
    operators: list[Issuer]  # the TOP_ISSUERS with most time
    frames: list[Issuer]


class RuntimeCalls(TypedDict):
    """The runtime-calls table (:func:`runtime_calls`)."""

    window_us: float  # the steps window (µs)
    apis: int  # the runtime/driver APIs called, counted (the rows are the first TOP_APIS)
    rows: list[RuntimeCallRow]  # per API, most time first


def issuing_operator(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """Per row, the string id of the operator that issued it (module docstring), or -1."""
    ev = trace.events
    parent = op_tree(trace).op_parent
    step_name = trace.name_table(lambda s: s.startswith(STEP_PREFIX))  # read at the few rows visited
    cur = parent[rows].copy()
    fallback = np.full(len(rows), -1, dtype=np.int64)
    todo = np.flatnonzero(cur >= 0)
    while len(todo):  # rounds = nesting depth
        c = cur[todo]
        is_op = ev.kind[c] == Kind.CPU_OP
        ann = ~is_op & (ev.kind[c] == Kind.USER_ANNOTATION) & ~step_name[ev.name[c]] & (fallback[todo] < 0)
        fallback[todo[ann]] = c[ann]
        todo = todo[~is_op]
        cur[todo] = parent[cur[todo]]
        todo = todo[cur[todo] >= 0]
    found = np.where(cur >= 0, cur, fallback)
    return np.where(found >= 0, ev.name[np.maximum(found, 0)].astype(np.int64), -1)


def issuing_frame(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """Per row, the innermost enclosing Python frame that is not a ``<built-in …>`` one (the innermost
    built-in when all are), or -1."""
    py_parent = op_tree(trace).py_parent
    name = trace.events.name
    builtin = trace.name_table(lambda s: s.startswith("<built-in"))  # read at the few rows visited
    cur = py_parent[rows].copy()
    todo = np.flatnonzero((cur >= 0) & builtin[name[np.maximum(cur, 0)]])
    while len(todo):  # rounds = nesting depth of built-in frames
        up = py_parent[cur[todo]]
        move = up >= 0
        cur[todo[move]] = up[move]
        todo = todo[move]
        todo = todo[builtin[name[cur[todo]]]]
    return cur


def _top(trace: Trace, group: np.ndarray, label: np.ndarray, dur: np.ndarray, groups: int) -> list[list[Issuer]]:
    """Per group, the :data:`TOP_ISSUERS` labels with most time: ``{"name", "calls", "total_us"}``."""
    out: list[list[Issuer]] = [[] for _ in range(groups)]
    if len(group) == 0:
        return out
    pairs, inv = dense_codes(group.astype(np.int64) << 32 | (label + 1).astype(np.int64))
    inv = inv.reshape(-1)
    calls = np.bincount(inv, minlength=len(pairs))
    total = np.bincount(inv, weights=dur, minlength=len(pairs))
    for k in np.lexsort((-calls, -total)).tolist():
        g, name = int(pairs[k] >> 32), int(pairs[k] & 0xFFFFFFFF) - 1
        if len(out[g]) < TOP_ISSUERS:
            out[g].append(
                {
                    "name": trace.strings[name] if name >= 0 else "(no operator)",
                    "calls": int(calls[k]),
                    "total_us": float(total[k]),
                }
            )
    return out


def runtime_calls(trace: Trace) -> RuntimeCalls:
    """The table (module docstring): ``window_us``, ``apis`` (counted), ``rows`` (most time first, at
    most :data:`TOP_APIS`), each ``{"api", "calls", "total_us", "window_us", "window_pct", "blocks",
    "blocking_calls", "blocking_us", "blocking_kind", "operators", "frames"}``."""
    return trace.memo("runtime_calls", lambda: _runtime_calls(trace))


def _runtime_calls(trace: Trace) -> RuntimeCalls:
    ev = trace.events
    lo, hi = window(trace)
    span = max(hi - lo, 0.0)
    rows = np.flatnonzero(np.isin(ev.kind, LAUNCH_KINDS) & (ev.name >= 0))
    if len(rows) == 0:
        return {"window_us": span, "apis": 0, "rows": []}
    names, group = dense_codes(ev.name[rows])
    group = group.reshape(-1)
    dur = ev.dur[rows]
    inside = np.clip(ev.ts[rows] + dur, lo, hi) - np.clip(ev.ts[rows], lo, hi)
    calls = np.bincount(group, minlength=len(names))
    total = np.bincount(group, weights=dur, minlength=len(names))
    in_window = np.bincount(group, weights=inside, minlength=len(names))
    blocking = blocking_calls(trace)
    is_blocking = np.zeros(len(ev), dtype=bool)
    is_blocking[blocking.rows] = True
    kind_of = np.full(len(ev), -1, dtype=np.int8)
    kind_of[blocking.rows] = blocking.kind
    b = is_blocking[rows]
    b_calls = np.bincount(group[b], minlength=len(names))
    b_us = np.bincount(group[b], weights=dur[b], minlength=len(names))
    # the kind of most blocking time per API
    kinds = np.zeros((len(names), len(BLOCKING_KINDS)))
    np.add.at(kinds, (group[b], kind_of[rows][b]), dur[b])
    order = np.lexsort((-calls, -total))[:TOP_APIS]
    ops = _top(trace, group, issuing_operator(trace, rows), dur, len(names))
    py = issuing_frame(trace, rows)
    frames = _top(trace, group[py >= 0], ev.name[py[py >= 0]].astype(np.int64), dur[py >= 0], len(names))
    out: list[RuntimeCallRow] = []
    for g in order.tolist():
        out.append(
            {
                "api": trace.strings[int(names[g])],
                "calls": int(calls[g]),
                "total_us": float(total[g]),
                "window_us": float(in_window[g]),
                "window_pct": 100.0 * float(in_window[g]) / span if span > 0 else None,
                "blocks": bool(b_calls[g] > 0),
                "blocking_calls": int(b_calls[g]),
                "blocking_us": float(b_us[g]),
                "blocking_kind": BLOCKING_KINDS[int(np.argmax(kinds[g]))] if b_calls[g] else None,
                "operators": ops[g],
                "frames": frames[g],
            }
        )
    return {"window_us": span, "apis": int(len(names)), "rows": out}


def outside_rows(trace: Trace) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(rows, call_us, busy_us)`` of the blocking calls outside the trace (module docstring): their
    length inside the steps window and the waited-on device's busy time within it."""

    def build():
        ev = trace.events
        lo, hi = window(trace)
        bl = blocking_calls(trace)
        host = bl.rows[bl.kind != STREAM_WAIT]  # a recorded stream wait holds a stream, not the host
        rows = host[ev.dur[host] >= OUTSIDE_MIN_CALL_US]
        if len(rows) == 0:
            return rows, np.zeros(0), np.zeros(0)
        dev = device_mask(trace) & (ev.device >= 0)
        # the device each call waited on: that of its correlated device work, else any device (-1)
        waited_dev = np.full(len(ev), -1, dtype=np.int64)
        d_rows = np.flatnonzero(dev)
        src = launch_of(trace)[d_rows]
        waited_dev[src[src >= 0]] = ev.device[d_rows[src >= 0]]
        a = np.clip(ev.ts[rows], lo, hi)
        z = np.clip(ev.ts[rows] + ev.dur[rows], lo, hi)
        busy = np.zeros(len(rows))
        target = waited_dev[rows]
        for d in unique_values(target).tolist():
            on = target == d
            work = dev if d < 0 else dev & (ev.device == d)
            u = Busy.of(ev.ts[work], ev.ts[work] + ev.dur[work])
            busy[on] = (z[on] - a[on]) - u.idle_in(a[on], z[on])
        length = z - a
        hit = (length > 0) & (busy < OUTSIDE_BUSY_SHARE * length)
        return rows[hit], length[hit], busy[hit]

    return trace.memo("outside_trace_rows", build)


def outside_trace(trace: Trace) -> dict:
    """Blocking calls the trace cannot explain (module docstring): ``calls``, ``call_us`` (their
    time), ``device_busy_us`` (the waited-on device's busy time inside them), ``unexplained_us``
    (call − busy, clipped to the steps window), ``apis`` ({name: calls}, most time first)."""
    ev = trace.events
    rows, length, busy = outside_rows(trace)
    if len(rows) == 0:
        return {"calls": 0, "call_us": 0.0, "device_busy_us": 0.0, "unexplained_us": 0.0, "apis": {}}
    names, counts = np.unique(ev.name[rows], return_counts=True)
    per = np.bincount(np.searchsorted(names, ev.name[rows]), weights=length, minlength=len(names))
    apis = {trace.strings[int(names[k])]: int(counts[k]) for k in np.argsort(-per, kind="stable").tolist()}
    return {
        "calls": int(len(rows)),
        "call_us": float(length.sum()),
        "device_busy_us": float(busy.sum()),
        "unexplained_us": float((length - busy).sum()),
        "apis": apis,
    }
