"""The run's other traces, for a CUDA graph whose capture is not in its own trace
(:mod:`tb_plugin.analysis.graph_elsewhere`): their capture tables, in lookup order."""

from __future__ import annotations

from .states import READY

MAX_SIBLINGS = 8  # other traces looked at (each loaded if it is not): the same worker's spans first


def sibling_capture_tables(registry, state) -> list[tuple[str, list[dict]]]:
    """``(path, capture table)`` of up to :data:`MAX_SIBLINGS` other traces of ``state``'s run: the same
    worker's other spans (by span), then the other workers' (by worker, span); a trace that fails to
    load is skipped."""
    others = [st for st in registry.files() if st.run == state.run and st is not state]
    others.sort(key=lambda st: (st.worker != state.worker, st.worker, st.span))
    out = []
    for st in others[:MAX_SIBLINGS]:
        registry.ensure_loaded(st)
        if st.state != READY:
            continue
        table = registry.views(st).capture_table()
        if table:
            out.append((st.entry.rel, table))
    return out
