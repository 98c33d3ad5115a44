"""The memory budget: the parsed files kept in memory for the detail views, their measured size, the
eviction of the least recently used, and giving what an eviction freed back to the operating system.

Giving memory back: the budget drops the views of least recently used files. Their large numpy
columns are unmapped at once, but the many medium and small allocations (string tables, derived
indexes, memoized rows) go back to glibc's malloc arenas, one per request thread, which keep them:
browsing 20 runs of a 0.9 GB trace twice under a 4 GB budget grew the server to 10.9 GB although the
kept views stayed under 4 GB. ``malloc_trim(0)`` returns the free pages of every arena. Elsewhere
(not glibc) this does nothing.
"""

from __future__ import annotations

import collections
import sys
import threading
import time
from typing import Any, Callable

import numpy as np

from ..logs import module_logger
from ..settings import current
from ..trace.heap import release_freed_memory
from ..trace.model import Trace, held_bytes
from .views import FileViews

logger = module_logger(__name__)
# Parsed traces kept in memory for the detail views (least recently used evicted; reloaded from the
# parse cache on demand), unless the registry was given its own (Settings.memory_budget_mb). Set
# KINETOSCOPE_MEMORY_BUDGET_MB to change it.
TRACE_MEMORY_BUDGET_BYTES = current().memory_budget_bytes
REMEASURE_S = 1.0  # a kept file's memory is measured again at most this often (requests grow its indexes)


class ViewCache:
    """The views of the files kept in memory, least recently used first, within
    ``budget_bytes``, else :data:`TRACE_MEMORY_BUDGET_BYTES` (read at every accounting). ``lock`` is
    the registry's lock."""

    def __init__(self, lock: threading.RLock, budget_bytes: int | None = None) -> None:
        self._lock = lock
        self._budget_bytes = budget_bytes
        self._views: collections.OrderedDict[str, FileViews] = collections.OrderedDict()
        self._sizes: dict[str, tuple[float, int]] = {}  # rel -> (measured at, bytes)
        self._shapes: dict[str, tuple[int, int]] = {}  # rel -> _shape() when measured
        self._reload_locks: dict[str, threading.Lock] = {}  # one reload of an evicted file at a time
        self._total = 0  # bytes of self._views, per self._sizes

    def budget_bytes(self) -> int:
        """The bytes of views kept in memory before the least recently used are evicted."""
        return TRACE_MEMORY_BUDGET_BYTES if self._budget_bytes is None else self._budget_bytes

    def remember(self, rel: str, views: FileViews) -> None:
        with self._lock:
            self._views[rel] = views
            self._views.move_to_end(rel)
        self.account(rel)

    def account(self, rel: str) -> None:
        """Measure one kept file's memory (columns + derived indexes + memoized views), then evict
        least recently used files until the total fits :data:`TRACE_MEMORY_BUDGET_BYTES`."""
        with self._lock:
            views = self._views.get(rel)
        if views is None:
            return
        shape = _shape(views)  # before measuring: an entry added meanwhile is measured next time
        size = view_bytes(views)  # outside the lock: walks the derived arrays
        with self._lock:
            if self._views.get(rel) is not views:
                return
            old = self._sizes.get(rel, (0.0, 0))[1]
            self._sizes[rel] = (time.monotonic(), size)
            self._shapes[rel] = shape
            self._total += size - old
            evicted = []
            while len(self._views) > 1 and self._total > self.budget_bytes():
                dropped, gone = self._views.popitem(last=False)
                evicted.append(gone)
                self._total -= self._sizes.pop(dropped, (0.0, 0))[1]
                self._shapes.pop(dropped, None)
                logger.info("evicted %s from memory (budget %d MB)", dropped, self.budget_bytes() >> 20)
        if evicted:
            del evicted, views  # the last references this thread holds
            release_freed_memory()  # malloc arenas keep what the evicted views freed (see above)

    def grown(self) -> list[str]:
        """Kept files whose derived indexes or memoized views gained entries since they were
        measured (a request computed a view after the file was accounted)."""
        with self._lock:
            kept = list(self._views.items())
            shapes = dict(self._shapes)
        return [rel for rel, views in kept if _shape(views) != shapes.get(rel)]

    def forget(self, rel: str, reload_lock: bool = False) -> None:
        """Drop a file's views (under the lock): it changed or disappeared (``reload_lock``: for good)."""
        if self._views.pop(rel, None) is not None:
            self._total -= self._sizes.pop(rel, (0.0, 0))[1]
            self._shapes.pop(rel, None)
        if reload_lock:
            self._reload_locks.pop(rel, None)

    def clear(self) -> None:
        """Drop every kept file (they are read back from the parse cache on the next request)."""
        with self._lock:
            self._views.clear()
            self._sizes.clear()
            self._shapes.clear()
            self._total = 0

    def memory_in_use(self) -> dict[str, int]:
        """Bytes of each file kept in memory, as the budget counts them (most recently used last)."""
        with self._lock:
            return {rel: self._sizes.get(rel, (0.0, 0))[1] for rel in self._views}

    def get(self, rel: str, reload: Callable[[], FileViews]) -> FileViews:
        """The kept views of ``rel``, else ``reload()`` (once: concurrent callers wait for one reload)."""
        for grown in self.grown():  # what earlier requests added to any kept file counts now
            self.account(grown)
        with self._lock:
            views = self._views.get(rel)
            if views is not None:
                self._views.move_to_end(rel)
                measured = self._sizes.get(rel, (0.0, 0))[0]
                if time.monotonic() - measured > REMEASURE_S:  # requests grow the derived indexes
                    self._sizes[rel] = (time.monotonic(), self._sizes.get(rel, (0.0, 0))[1])
                    views = None
                    remeasure = True
                else:
                    return views
            else:
                remeasure = False
            reload_lock = self._reload_locks.setdefault(rel, threading.Lock())
        if remeasure:
            self.account(rel)
            with self._lock:
                views = self._views.get(rel)
                if views is not None:
                    return views
        with reload_lock:
            with self._lock:
                views = self._views.get(rel)
                if views is not None:
                    self._views.move_to_end(rel)
                    return views
            views = reload()
            self.remember(rel, views)
        return views


def _trace_bytes(trace: Trace) -> int:
    """The parsed columns of a trace (events, memory, flows, counters)."""
    return sum(
        held_bytes(a)
        for table in (trace.events, trace.memory, trace.flows, trace.counters)
        for a in table.columns.values()
    )


def _shape(views: FileViews) -> tuple[int, int]:
    """Cheap change detector for :func:`view_bytes`: the number of derived indexes and memoized views."""
    return len(views.trace.derived), len(getattr(views, "_memo", {}))


def view_bytes(views: FileViews) -> int:
    """What one kept file holds: the columns, the string table, the derived indexes of
    ``trace.derived`` (timeline index, op tree, counters, …) and the memoized view rows."""
    trace = views.trace
    strings = views.strings_bytes
    if strings is None:  # measured once: the string table does not change
        strings = views.strings_bytes = 8 * len(trace.strings) + sum(sys.getsizeof(s) for s in trace.strings)
    total = _trace_bytes(trace) + strings
    seen: set[int] = set()
    for holder in (trace.derived, getattr(views, "_memo", {})):
        try:
            total += _deep_nbytes(holder, seen, 0)
        except RuntimeError:  # a request added an entry meanwhile: measured again next time
            pass
    return total


def _deep_nbytes(obj: Any, seen: set[int], depth: int) -> int:
    """Bytes of the numpy arrays (and, roughly, the Python containers) reachable from ``obj``."""
    if id(obj) in seen or depth > 8:
        return 0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        return obj.nbytes if obj.base is None or id(obj.base) not in seen else 0
    if isinstance(obj, dict):
        return sys.getsizeof(obj) + sum(_deep_nbytes(v, seen, depth + 1) for v in list(obj.values()))
    if isinstance(obj, (list, tuple)):
        items = list(obj)
        if len(items) > 256 and not any(isinstance(x, np.ndarray) for x in items[:16]):
            sample = items[:: len(items) // 64]  # long row lists: measure a sample, scale it up
            part = sum(_deep_nbytes(x, set(), depth + 1) for x in sample)
            return sys.getsizeof(obj) + part * len(items) // max(len(sample), 1)
        return sys.getsizeof(obj) + sum(_deep_nbytes(x, seen, depth + 1) for x in items)
    if isinstance(obj, (str, bytes, int, float, bool)) or obj is None:
        return sys.getsizeof(obj)
    fields = getattr(obj, "__dict__", None)
    if fields is None and hasattr(obj, "__slots__"):
        fields = {k: getattr(obj, k, None) for k in obj.__slots__}
    return sys.getsizeof(obj) + (_deep_nbytes(fields, seen, depth + 1) if fields else 0)
