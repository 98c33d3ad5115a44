"""The sections of a small trace on two cores: which ones a forked child computes, and from what size.

Below :data:`~.sections.FORK_ABOVE_ITEMS` events the large traces' split (the child computing the
distributed, insights and overview sections) does not pay: the child's copy-on-write page faults and the
memos both sides compute cost about what it saves. The distributed section alone (the critical path, about
half of the sections' CPU) does pay from :data:`SPLIT_ABOVE_ITEMS` events: a cold report of the 35 MB V100
sample (57 500 events) computes it and the graphs section (a few ms, with no memo the others read) in the
child, ~0.1 s of CPU, while this process computes the others and the parse cache's writes run on their
thread beside both. This module holds only the small traces' choice (size and sections) and what the
fork needs first; the fork itself is :class:`~.sections.SectionFork`.
"""

from __future__ import annotations

from typing import Any

from ...trace.decode_stream import default_workers
from . import memo_swap
from .sections import FORK_ABOVE_ITEMS, SectionFork, can_fork_beside

#: the sections a small trace's child computes
SMALL_CHILD_SECTIONS = frozenset({"distributed", "graphs"})
#: from this many events and memory events a small trace's distributed section pays for a child
SPLIT_ABOVE_ITEMS = 50_000


def worth_splitting(items: int) -> bool:
    """Whether a trace of ``items`` events and memory events, too small for the large traces' split, has
    :data:`SMALL_CHILD_SECTIONS` computed in a child: the large split's conditions, and a core idle now."""
    return SPLIT_ABOVE_ITEMS <= items < FORK_ABOVE_ITEMS and can_fork_beside() and a_core_idle()


def a_core_idle() -> bool:
    """Whether fewer threads are runnable on the machine now than this process may use cores (this one
    among them; ``/proc/loadavg``'s fourth field): the child's CPU (its copy-on-write page faults and the
    memos both sides compute, ~0.05 s here) pays only where it runs beside this process. On a machine
    whose cores are all busy it would queue behind the others' work and this process would wait for it
    (2 cores at load 4: the whole process's CPU +0.07 s, its wall no shorter). Without the file: True."""
    try:
        with open("/proc/loadavg") as f:
            runnable = int(f.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return True
    return runnable < default_workers()


def split(views: Any, tables: bool) -> SectionFork:
    """The child forked for :data:`SMALL_CHILD_SECTIONS` of ``rank_aggregate(views, tables)``, the memos
    both sides read made half by each (:mod:`.memo_swap`, where memory files exist). Neither side
    imports numpy's masked arrays (``trace/uniques`` stands in for the numpy calls that would)."""
    return SectionFork(views, tables, child=SMALL_CHILD_SECTIONS, swap=memo_swap.available(), leave=True)
