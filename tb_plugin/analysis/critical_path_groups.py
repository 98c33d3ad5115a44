"""The critical path's host side built a few steps at a time (:mod:`analysis.critical_path`), so that its
memory grows with a group of steps, not with the trace.

A step's walks never leave ``[step start, step end]`` and never go forward in time (where a trace could
make them, :func:`walks_stay_behind` says so and the trace is one group). So the host tiles, joins and
enclosing events that a walk of a step reads are those of the host events overlapping the step: built
over the host events that overlap a **group** of consecutive steps, they give the same segments inside
the group's window ``[first start, latest end]`` as built over the whole trace (a tile that reaches past
the window is cut differently there, where no walk of the group reads it). The device side and what is
decided over the whole trace (the main thread, the threads that have tiles, linked threads, the blocking
calls) stay global. Steps are grouped by the host events that start inside them: at most
:data:`GROUP_HOST_EVENTS` per group (and at least one step); a trace with fewer is one group, all its
host events, as before the groups.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ..trace.uniques import unique_values
from .host_tiles import NOT_ANNOTATION_KINDS

GROUP_HOST_EVENTS = 250_000  # host events that start inside one group's steps (a group holds ≥ 1 step)


def step_groups(
    ts: np.ndarray, dur: np.ndarray, host: np.ndarray, start: np.ndarray, end: np.ndarray, budget: int
) -> Iterator[tuple[int, int, np.ndarray]]:
    """Per group of consecutive steps ``[k0, k1)`` (``start``/``end``: the steps' bounds in µs, by start;
    else one group),
    rows of the host events (``host``: a mask per event) that include every one overlapping its window
    (``ts``/``dur``: the events' µs); one group of every host event when they are at most ``budget`` or
    there are no steps. Made one group at a time (the rows of one group held at once). Where the host
    events' rows are in the order of their steps (a trace written in time order), a group's rows are
    those of its range of rows plus the earlier ones that reach its start (carried from the group
    before: no pass over the whole trace per group); else each group is one pass over the events."""
    n = len(start)
    rows = np.flatnonzero(host)
    # steps out of start order (a step's device work that outlasts the next ones) would leave a step
    # outside its group's window: one group
    if len(rows) <= budget or n < 2 or not (start[1:] >= start[:-1]).all():
        yield 0, n, rows
        return
    which = np.searchsorted(start, ts[rows], side="right") - 1  # the step each host event starts in
    per_step = np.bincount(which[which >= 0], minlength=n)
    before = np.cumsum(per_step) - per_step  # host events starting in the earlier steps
    del per_step
    cuts = np.r_[0, np.flatnonzero(np.diff(before // max(budget, 1))) + 1, n]
    if len(cuts) == 2:
        yield 0, n, rows
        return
    in_order = bool((which[1:] >= which[:-1]).all())
    # the first row of each group's steps (the events' count past the last)
    first = np.r_[rows, len(host)][np.searchsorted(which, cuts)].tolist() if in_order else []
    del rows, which
    cuts = cuts.tolist()
    carry = np.flatnonzero(host[: first[0]]) if in_order else np.zeros(0, np.int64)  # before the first step
    for g, (k0, k1) in enumerate(zip(cuts[:-1], cuts[1:])):
        lo, hi = float(start[k0]), float(np.max(end[k0:k1]))
        if in_order:
            carry = carry[ts[carry] + dur[carry] >= lo]  # the earlier events that reach this group
            a, b = first[g], first[g + 1]
            got = np.concatenate([carry, a + np.flatnonzero(host[a:b])])
            carry = got
        else:
            inside = host & (ts <= hi)
            inside &= ts + dur >= lo  # the same sum as the tiles' ends
            got = np.flatnonzero(inside)
        yield k0, k1, got
        del got


def walks_stay_behind(
    ts: np.ndarray, te: np.ndarray, waits_on: np.ndarray, waited: np.ndarray, jump: np.ndarray
) -> bool:
    """Whether no walk can reach a time later than where it stands (then a step's walks stay inside the
    step): every device node ends at or after its start, every recorded wait is on work that starts no
    later than the waiting node, and every blocking call's waited node starts no later than the call's
    jump. Device nodes in device order (``ts``/``te`` µs, ``waits_on``: −1 none); ``waited``/``jump``: the
    blocking calls' nodes and times."""
    if (te < ts).any():
        return False
    w = np.flatnonzero(waits_on >= 0)
    if len(w) and (ts[waits_on[w]] > ts[w]).any():
        return False
    return not (len(waited) and (ts[waited] > jump).any())


def thread_sets(ev, host: np.ndarray, thread_key) -> tuple[np.ndarray, np.ndarray]:
    """Decided over the whole trace: the sorted keys of the threads that have host tiles (a host event of
    positive length among ``host``, a mask per event of ``ev``) and of those with events other than
    annotations (:func:`analysis.host_tiles.host_tiles` keeps annotation tiles on the others only);
    ``thread_key[rows]``: the rows' thread keys."""
    rows = np.flatnonzero(host)
    keys = thread_key[rows]
    known = unique_values(keys[ev.ts[rows] + ev.dur[rows] > ev.ts[rows]])
    return known, unique_values(keys[np.isin(ev.kind[rows], NOT_ANNOTATION_KINDS)])
