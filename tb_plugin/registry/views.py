"""The detail views of one loaded trace: cached access to analysis/ results, computed once and kept
(rows are small; the trace is not). No arithmetic here: every number comes from analysis/."""

from __future__ import annotations

import threading
from collections.abc import Collection
from typing import TYPE_CHECKING, Any, Callable, TypeVar, cast

from ..analysis import distributed as distributed_analysis
from ..analysis import memory as memory_analysis
from ..analysis import timeline_query
from ..analysis.clock import shared_origin
from ..analysis.compiled_regions import compiled_regions
from ..analysis.counters import counter_bins, counters, warm_counter_inputs
from ..analysis.graph_bands import ReplayBands, replay_bands
from ..analysis.graph_elsewhere import capture_table
from ..analysis.graphs import graphs_document
from ..analysis.kernels import kernel_rows, tensor_core_split
from ..analysis.modules import module_tree
from ..analysis.operators import operator_rows, operator_stacks
from ..analysis.overview import Overview, compute_overview
from ..analysis.steps import compute_steps
from ..analysis.timeline import pack_index, timeline_index, track_of_events, unpack_index
from ..analysis.timeline_range import range_stats
from ..trace.args import args_of_raw, event_args
from ..trace.links import device_mask
from ..trace.model import Trace
from .raw_events import read_raw_event

if TYPE_CHECKING:
    import numpy as np

    from ..analysis.kernels import KernelRow
    from ..analysis.modules import ModuleNode
    from ..analysis.operators import OperatorRow
    from . import memory_events
    from .records import GraphsReport, InsightsDocument
    from .results import ResultCache

T = TypeVar("T")
# a derived index's header (JSON) and arrays, as the parse cache stores them
Blob = tuple[dict[str, Any], dict[str, "np.ndarray"]]
# ``(get(kind), put(kind, header, arrays))``: where the derived indexes are kept (the parse cache)
IndexStore = tuple[
    Callable[[str], "Blob | None"],
    Callable[[str, dict[str, Any], dict[str, "np.ndarray"]], None],
]


def _full_args(trace: Trace, row: int) -> dict[str, Any]:
    """Every arg of event ``row``: read back from the raw events (checked: :mod:`.raw_events`) when there
    are some, else the columns the decoder kept."""
    raw = read_raw_event(trace, row)
    full = args_of_raw(raw) if raw is not None else None
    return full if full is not None else event_args(trace, row)


def warm_timeline_inputs(trace: Trace) -> None:
    """Build what every timeline request reuses (counter functions, launch pairs) ahead of time."""
    warm_counter_inputs(trace)
    timeline_query.launch_pairs(trace)


# views computed once per file and kept in the analysis cache (registry/results.py) when there is one;
# the timeline's meta is not (building it loads the timeline index, which the Trace view needs)
PERSISTED = ("ops:", "kernels:", "modules", "tc", "insights", "memory_", "overview", "rank_reduce", "graphs")


class FileViews:
    """Operator, Kernel and Module views of one trace, memoized per grouping. Thread-safe."""

    def __init__(self, trace: Trace, store: IndexStore | None = None, results: ResultCache | None = None) -> None:
        """``store``: optional ``(get(kind), put(kind, header, arrays))`` for derived indexes (parse cache);
        ``results``: optional :class:`~tb_plugin.registry.results.ResultCache` of this file, where the
        views are read back instead of computed (and stored once computed)."""
        self.trace = trace
        self._store = store
        self._results = results
        self.has_device = bool(device_mask(trace).any())
        self._memo: dict[str, object] = {}
        self._lock = threading.Lock()
        self._key_locks: dict[str, threading.Lock] = {}
        self._index_lock = threading.Lock()
        self.strings_bytes: int | None = None  # bytes of the trace's string table, once the budget measured it

    def _get(self, key: str, make: Callable[[], T]) -> T:
        """The memoized value of ``key``, built once. One lock per key: a view being built (seconds on a
        large trace) never blocks requests for views that are already built or built by another key."""
        try:
            return cast(T, self._memo[key])  # the value ``make`` built for this key
        except KeyError:
            pass
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            if key not in self._memo:
                if self._results is not None and key.startswith(PERSISTED):
                    self._memo[key] = self._results.get_or_make("view:" + key, make)
                else:
                    self._memo[key] = make()
            return cast(T, self._memo[key])

    def operators(self, group_by: str = "operator") -> list[OperatorRow]:
        return self._get("ops:" + group_by, lambda: operator_rows(self.trace, group_by))

    def kernels(self, group_by: str = "kernel") -> list[KernelRow]:
        return self._get("kernels:" + group_by, lambda: kernel_rows(self.trace, group_by))

    def modules(self) -> list[ModuleNode] | None:
        return self._get("modules", lambda: module_tree(self.trace))

    def graphs(self) -> GraphsReport:
        """``{"cuda_graphs": …, "compiled": … | None}``: CUDA graph replays and their captures
        (:func:`~tb_plugin.analysis.graphs.graphs_document`) and torch.compile regions
        (:func:`~tb_plugin.analysis.compiled_regions.compiled_regions`)."""

        def make() -> GraphsReport:
            return {"cuda_graphs": graphs_document(self.trace), "compiled": compiled_regions(self.trace)}

        return self._get("graphs", make)

    def capture_table(self) -> list[dict[str, Any]]:
        """The trace's complete CUDA graph captures with their launches' operators and frames
        (:func:`~tb_plugin.analysis.graph_elsewhere.capture_table`), for the run's other traces."""
        return self._get("graphs_captures", lambda: capture_table(self.trace))

    def replay_bands(self) -> ReplayBands:
        """CUDA graph replays as bands on the timeline's stream tracks
        (:func:`~tb_plugin.analysis.graph_bands.replay_bands`, from :meth:`graphs`)."""
        return self._get("replay_bands", lambda: replay_bands(self.trace, self.graphs()["cuda_graphs"]))

    def tensor_core_split(self) -> dict[str, float]:
        return self._get("tc", lambda: tensor_core_split(self.trace))

    def overview(self) -> Overview:
        """The file's Overview (:func:`~tb_plugin.analysis.overview.compute_overview`)."""
        return self._get("overview", lambda: compute_overview(self.trace))

    def rank_reduce(self) -> dict[str, Any]:
        """This rank's part of the distributed view (:func:`~tb_plugin.analysis.distributed.rank_reduce`)."""
        return self._get("rank_reduce", lambda: distributed_analysis.rank_reduce(self.trace))

    def compute_all(self) -> None:
        """Warm the default views (the loader calls this, so table requests only page and sort).
        The timeline index goes first: it is the slowest to build and the Trace view waits on it."""
        self.timeline_meta()
        self.operators("operator")
        self.kernels("kernel")
        self.modules()
        self.tensor_core_split()

    def stacks(self, group_by: str, key: int) -> list[dict[str, Any]] | None:
        """Distinct call stacks of one operator row (:func:`operator_stacks`); None past the table."""
        if key >= len(self.operators(group_by)):
            return None
        with self._lock:
            return operator_stacks(self.trace, group_by, key)

    # -- timeline -------------------------------------------------------------------------------
    def timeline_meta(self) -> dict[str, Any]:
        def build() -> dict[str, Any]:
            with self._lock_index():
                self._load_or_build_index()
                warm_timeline_inputs(self.trace)
            base = timeline_query.origin(self.trace)
            steps = compute_steps(self.trace)
            base_ns = self.trace.meta.get("baseTimeNanoseconds")
            shared, clock = shared_origin(self.trace, base)
            return {
                "origin_us": base,
                "base_time_ns": base_ns,
                # the origin on the clock shared by the job's ranks (analysis/clock.py), for aligning them
                "wall_origin_us": shared,
                "clock": clock,
                "end_us": timeline_query.extent(self.trace)[1],
                "tracks": timeline_query.tracks_meta(self.trace),
                "steps": [
                    {"step": n, "start_us": float(a - base), "end_us": float(b - base)}
                    for n, a, b in zip(steps.names, steps.start, steps.end)
                ],
            }

        return self._get("timeline_meta", build)

    def _load_or_build_index(self) -> None:
        if "timeline_index" in self.trace.derived:
            return
        if self._store is not None:
            got = self._store[0]("timeline")
            if got is not None and unpack_index(self.trace, *got):
                return
        timeline_index(self.trace)
        if self._store is not None:
            self._store[1]("timeline", *pack_index(self.trace))

    def _lock_index(self) -> threading.Lock:
        return self._index_lock

    def timeline_window(
        self, t0: float, t1: float, width_px: int, track_ids: Collection[int] | None = None
    ) -> dict[str, Any]:
        self.timeline_meta()
        base = timeline_query.origin(self.trace)
        doc = timeline_query.window(self.trace, t0, t1, width_px, track_ids)
        doc["counters"] = counters(self.trace, t0 + base, t1 + base, counter_bins(width_px))
        return doc

    def timeline_range(self, t0: float, t1: float, track_ids: set[int] | None = None, top: int = 10) -> dict[str, Any]:
        self.timeline_meta()
        return range_stats(self.trace, t0, t1, track_ids, top)

    def timeline_search(self, pattern: str, regex: bool) -> dict[str, Any]:
        self.timeline_meta()
        return timeline_query.search(self.trace, pattern, regex)

    def event(self, row: int) -> dict[str, Any] | None:
        self.timeline_meta()
        ev = self.trace.events
        if not 0 <= row < len(ev):
            return None
        base = timeline_query.origin(self.trace)
        return {
            "row": row,
            "name": self.trace.strings[ev.name[row]],
            "category": self.trace.strings[ev.cat[row]] or None,
            "start_us": round(float(ev.ts[row] - base), 3),
            "dur_us": round(float(ev.dur[row]), 3),
            "track": int(track_of_events(self.trace)[row]),
            "args": _full_args(self.trace, row),
            "parents": timeline_query.parents(self.trace, row),
            "flows": timeline_query.flow_partners(self.trace, row),
        }

    # -- insights -------------------------------------------------------------------------------
    def insights(self) -> InsightsDocument:
        def build() -> InsightsDocument:
            from ..analysis.insights import insights

            overview = self.overview()  # the file's one list of recommendations
            return {
                **insights(self.trace),
                "recommendations": overview["recommendations"],
                "recommendation_details": overview["recommendation_details"],
                "about": overview["about"],
                "runtime_calls": overview["runtime_calls"],
            }

        return self._get("insights", build)

    # -- memory ---------------------------------------------------------------------------------
    def memory_curves(self) -> list[dict[str, Any]]:
        return self._get("memory_curves", lambda: memory_analysis.curves(self.trace))

    def memory_pairs(self) -> dict[str, Any]:
        return self._get("memory_pairs", lambda: memory_analysis.allocation_pairs(self.trace))

    def memory_pairs_index(self) -> memory_events.PairsIndex:
        """The pairs' rows as columns, for filtering and sorting the table per request."""
        from . import memory_events  # the Memory view's pairs only: a report never builds them

        return self._get("pairs_index", lambda: memory_events.build_index(self.memory_pairs()["rows"]))

    def memory_devices(self) -> list[str]:
        """The trace's memory devices ("GPU0", "CPU", …): the only ``device`` values worth computing."""
        return [c["device"] for c in self.memory_curves()]

    def memory_stats(
        self, device: str, start_us: float | None = None, end_us: float | None = None
    ) -> list[dict[str, Any]]:
        """Per-operator memory statistics of one device; no rows for a device without memory events,
        checked before anything is computed or memoized (the memo holds one entry per real device)."""
        if device not in self.memory_devices():
            return []
        if start_us is None and end_us is None:
            return self._get("memory_stats:" + device, lambda: memory_analysis.operator_stats(self.trace, device))
        return memory_analysis.operator_stats(self.trace, device, start_us, end_us)

    def memory_summary(self) -> memory_analysis.MemorySummary:
        return self._get("memory_summary", lambda: memory_analysis.memory_summary(self.trace))
