"""The report's ``graphs`` section, and the run's other traces for a CUDA graph whose capture is not in
its own trace (:mod:`tb_plugin.analysis.graph_elsewhere`): their capture tables, in lookup order."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ..analysis.graph_elsewhere import LOOKED_UP, attribute_elsewhere
from .interface import Registry
from .states import READY

if TYPE_CHECKING:
    from .records import GraphsReport
    from .states import FileState
    from .views import FileViews

# ``(path, capture table)`` of the run's other traces, in lookup order
SiblingTables = list[tuple[str, list[dict[str, Any]]]]

MAX_REPLAYS = 200  # graph replays listed one by one in the report (all are counted)
MAX_SIBLINGS = 8  # other traces looked at (each loaded if it is not): the same worker's spans first


def sibling_capture_tables(registry: Registry, state: FileState) -> SiblingTables:
    """``(path, capture table)`` of up to :data:`MAX_SIBLINGS` other traces of ``state``'s run: the same
    worker's other spans (by span), then the other workers' (by worker, span); a trace that fails to
    load is skipped."""
    others = [st for st in registry.files() if st.run == state.run and st is not state]
    others.sort(key=lambda st: (st.worker != state.worker, st.worker, st.span))
    out: SiblingTables = []
    for st in others[:MAX_SIBLINGS]:
        registry.ensure_loaded(st)
        if st.state != READY:
            continue
        table = registry.views(st).capture_table()
        if table:
            out.append((st.entry.rel, table))
    return out


def graphs_report(
    views: FileViews, max_replays: int = MAX_REPLAYS, others: Callable[[], SiblingTables] | None = None
) -> GraphsReport:
    """CUDA graphs and compiled regions (:meth:`FileViews.graphs`) with the first ``max_replays``
    replays listed (``replays`` counts them all). ``others``: a callable giving the run's other traces'
    capture tables (:func:`~tb_plugin.registry.graph_siblings.sibling_capture_tables`), called only when
    a graph has no matched capture in this trace, to attribute it from theirs
    (:func:`~tb_plugin.analysis.graph_elsewhere.attribute_elsewhere`)."""
    found = views.graphs()
    cuda = found["cuda_graphs"]
    if others is not None and any(g["status"] in LOOKED_UP for g in cuda["graph_list"]):
        cuda = attribute_elsewhere(views.trace, cuda, others())
    cuda = cuda.copy()
    cuda["replay_list"] = cuda["replay_list"][:max_replays]  # in its place: the JSON's key order is the document's
    return {"cuda_graphs": cuda, "compiled": found["compiled"]}


def report_graphs(registry: Registry, state: FileState, graphs: GraphsReport | None) -> GraphsReport | None:
    """The report's ``graphs`` of ``state`` (its aggregate's ``graphs``), redone as the routes, MCP and the
    notebook do it (:func:`graphs_report` with the run's other traces) when one of its graphs has no matched
    capture and the run has other traces: so every interface names the same capture. Loads ``state`` in
    this process only then."""
    if graphs is None or not any(g["status"] in LOOKED_UP for g in graphs["cuda_graphs"]["graph_list"]):
        return graphs
    if not any(st.run == state.run and st is not state for st in registry.files()):
        return graphs
    registry.ensure_loaded(state)
    if state.state != READY:
        return graphs
    return graphs_report(registry.views(state), others=lambda: sibling_capture_tables(registry, state))
