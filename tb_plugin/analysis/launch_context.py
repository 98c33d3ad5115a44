"""Which operators enclose each launch (runtime/driver call), by time nesting on its thread.

A launch is *inside* a set of host events when one of them on the same (pid, tid) contains the
launch's start time. Device work inherits the answer of the launch that started it.
"""

from __future__ import annotations

import numpy as np

from ..trace.categories import Kind
from ..trace.links import launch_mask, launch_of
from ..trace.model import Trace
from ..trace.uniques import unique_values
from .intervals import merge


def launches_inside(trace: Trace, hosts: np.ndarray) -> np.ndarray:
    """Mask over events: launches whose start lies inside one of the ``hosts`` events' intervals."""
    ev = trace.events
    out = np.zeros(len(ev), dtype=bool)
    launches = np.flatnonzero(launch_mask(trace))
    host_rows = np.flatnonzero(hosts)
    if len(launches) == 0 or len(host_rows) == 0:
        return out
    host_key = ev.pid[host_rows].astype(np.int64) << 32 | ev.tid[host_rows].astype(np.int64)
    launch_key = ev.pid[launches].astype(np.int64) << 32 | ev.tid[launches].astype(np.int64)
    for key in unique_values(launch_key):
        mine = host_rows[host_key == key]
        if len(mine) == 0:
            continue
        s, e = merge(ev.ts[mine], ev.ts[mine] + ev.dur[mine])
        here = launches[launch_key == key]
        # a zero-length launch at an op's very end still belongs to it: compare with <=
        idx = np.searchsorted(s, ev.ts[here], side="right") - 1
        ok = idx >= 0
        inside = np.zeros(len(here), dtype=bool)
        inside[ok] = ev.ts[here][ok] <= e[idx[ok]]
        out[here[inside]] = True
    return out


def device_work_inside(trace: Trace, hosts: np.ndarray) -> np.ndarray:
    """Mask over events: device work whose launch lies inside one of the ``hosts`` events."""
    launcher = launch_of(trace)
    inside = launches_inside(trace, hosts)
    out = np.zeros(len(launcher), dtype=bool)
    linked = launcher >= 0
    out[linked] = inside[launcher[linked]]
    return out


def operator_mask(trace: Trace) -> np.ndarray:
    """Host operators: ``Operator``/``cpu_op`` and ``user_annotation`` ranges."""
    kind = trace.events.kind
    return (kind == Kind.CPU_OP) | (kind == Kind.USER_ANNOTATION)


__all__ = ["launches_inside", "device_work_inside", "operator_mask"]
