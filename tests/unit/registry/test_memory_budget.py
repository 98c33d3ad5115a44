"""Memory budget: kept files are evicted least-recently-used and reloaded from the parse
cache on demand, with the same answers; the accounting covers the derived indexes, not only columns."""

from __future__ import annotations

import shutil
import threading

import numpy as np
import pytest
from conftest import sample

from tb_plugin.registry import budget as budget_mod
from tb_plugin.registry import loader, parse
from tb_plugin.registry.budget import _trace_bytes, view_bytes
from tb_plugin.registry.cache import ParseCache
from tb_plugin.registry.runs import READY, RunRegistry

pytestmark = pytest.mark.corpus  # reads the external sample corpus (docs/TESTING.md)

FILES = {
    "a": "kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
    "b": "kineto/resnet50_num_workers_0/worker0.1623143566756.pt.trace.json.gz",
    "c": "tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz",
}


def _registry(tmp_path):
    for run, rel in FILES.items():
        (tmp_path / "logdir" / run).mkdir(parents=True)
        shutil.copy(sample(rel), tmp_path / "logdir" / run / "worker0.1.pt.trace.json.gz")
    reg = RunRegistry(str(tmp_path / "logdir"), cache=ParseCache(str(tmp_path / "cache")))
    reg.scan()
    return reg


def _answers(views) -> dict:
    meta = views.timeline_meta()
    window = views.timeline_window(0.0, meta["end_us"] / 3, 500)
    return {
        "operators": views.operators("operator"),
        "kernels": views.kernels("kernel"),
        "modules": views.modules(),
        "meta": meta,
        "window": {t["id"]: {k: np.asarray(v).tolist() for k, v in t["items"].items()} for t in window["tracks"]},
        "event": views.event(10),
    }


def test_accounting_covers_derived_indexes(tmp_path):
    reg = _registry(tmp_path)
    st = reg.find("a", "worker0", "1")
    reg.load(st)
    views = reg.views(st)
    before = view_bytes(views)
    views.compute_all()
    views.timeline_window(0.0, views.timeline_meta()["end_us"], 1000)
    after = view_bytes(views)
    derived = after - before
    assert after > _trace_bytes(views.trace)
    assert "timeline_index" in views.trace.derived and derived > 0
    reg._loader.view_cache.account(st.entry.rel)
    assert reg.memory_in_use()[st.entry.rel] == after


def test_lru_eviction_and_transparent_reload(tmp_path, monkeypatch):
    reg = _registry(tmp_path)
    states = [reg.find(run, "worker0", "1") for run in FILES]
    for st in states:
        reg.load(st)
        assert st.state == READY, st.error
    first = {st.entry.rel: _answers(reg.views(st)) for st in states}
    sizes = {st.entry.rel: view_bytes(reg.views(st)) for st in states}

    # a budget that holds the two biggest files but not all three: the least recently used goes
    budget = sum(sorted(sizes.values())[1:]) + 1
    monkeypatch.setattr(budget_mod, "TRACE_MEMORY_BUDGET_BYTES", budget)
    for st in states:
        reg._loader.view_cache.account(st.entry.rel)
    kept = reg.memory_in_use()
    assert sum(kept.values()) <= budget and len(kept) < len(states)

    monkeypatch.setattr(budget_mod, "TRACE_MEMORY_BUDGET_BYTES", 1)  # one file at a time
    reg._loader.view_cache.account(states[-1].entry.rel)
    assert list(reg.memory_in_use()) == [states[-1].entry.rel]

    parses = []
    real_parse = reg._loader._parse
    monkeypatch.setattr(
        reg._loader,
        "_parse",
        lambda state, report, *rest: parses.append(state.entry.rel) or real_parse(state, report, *rest),
    )
    evicted = states[0]
    evicted.from_cache = False
    got = []
    threads = [threading.Thread(target=lambda: got.append(reg.views(evicted))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert parses == [evicted.entry.rel], "concurrent requests for an evicted file reload it once"
    assert len({id(v) for v in got}) == 1
    assert evicted.from_cache, "reloaded from the parse cache, not parsed again"
    assert list(reg.memory_in_use()) == [evicted.entry.rel]
    for st in states:  # every file, evicted and reloaded in turn, answers exactly as before
        assert _answers(reg.views(st)) == first[st.entry.rel]
        assert list(reg.memory_in_use()) == [st.entry.rel]


def test_hard_links_share_one_parse_cache_entry(tmp_path, monkeypatch):
    """Hard links to one trace (the memory-budget demo's 20 runs) are parsed once: the cache keys a
    file with several links by device + inode + size + mtime, not by path. Distinct files never share."""
    import os

    from tb_plugin.registry.cache import INODE_MARK

    logdir = tmp_path / "logdir"
    for run in ("r0", "r1", "r2", "other"):
        (logdir / run).mkdir(parents=True)
    shutil.copy(sample(FILES["a"]), logdir / "r0" / "worker0.1.pt.trace.json.gz")
    for run in ("r1", "r2"):
        os.link(logdir / "r0" / "worker0.1.pt.trace.json.gz", logdir / run / "worker0.1.pt.trace.json.gz")
    shutil.copy(sample(FILES["b"]), logdir / "other" / "worker0.1.pt.trace.json.gz")  # one link: keyed by path
    parses = []
    real = parse.load_trace_file
    monkeypatch.setattr(parse, "load_trace_file", lambda path, **kw: parses.append(path) or real(path, **kw))
    reg = RunRegistry(str(logdir), cache=ParseCache(str(tmp_path / "cache")))
    reg.scan()
    states = {st.run: st for st in reg.files()}
    assert all(INODE_MARK in states[r].entry.version for r in ("r0", "r1", "r2"))
    assert INODE_MARK not in states["other"].entry.version
    for run in ("r0", "r1", "r2", "other"):
        reg.load(states[run])
        assert states[run].state == READY, states[run].error
    assert len(parses) == 2 and [states[r].from_cache for r in ("r0", "r1", "r2")] == [False, True, True]
    assert reg.views(states["r2"]).operators("operator") == reg.views(states["r0"]).operators("operator")
    assert reg.views(states["other"]).operators("operator") != reg.views(states["r0"]).operators("operator")
    # the parallel pre-parse submits one job per distinct content
    for run in ("r0", "other"):  # "rewritten": new identities, not in the cache
        os.utime(logdir / run / "worker0.1.pt.trace.json.gz", (1, 1))
    reg2 = RunRegistry(str(logdir), cache=ParseCache(str(tmp_path / "cache")))
    reg2.scan()
    submitted = []
    monkeypatch.setattr(loader, "parallel_workers", lambda sizes: submitted.extend(sizes) or 0)
    reg2.parse_in_parallel(reg2.files())
    assert len(submitted) == 2  # r0/r1/r2 are one content, "other" the second (4 jobs without the sharing)


def test_views_computed_after_loading_count_against_the_budget(tmp_path, monkeypatch):
    """Browsing a file (operators, kernels, timeline) builds derived indexes after it was accounted;
    the next request, to any file, measures them, and evicts if the budget is exceeded (on the 0.9 GB
    trace a browsed file holds 758 MB against 285 MB when loaded: without this, 20 browsed runs
    reached 13 GB under a 4 GB budget)."""
    # no time-based re-measure: on a loaded machine more than REMEASURE_S can pass between two requests
    monkeypatch.setattr(budget_mod, "REMEASURE_S", 1e9)
    reg = _registry(tmp_path)
    a, b = reg.find("a", "worker0", "1"), reg.find("b", "worker0", "1")
    for st in (a, b):
        reg.load(st)
    loaded = reg.memory_in_use()[a.entry.rel]
    views = reg.views(a)
    views.operators("operator")
    views.kernels("kernel")
    meta = views.timeline_meta()
    views.timeline_window(0.0, meta["end_us"], 1000)
    browsed = view_bytes(views)
    # the load already builds what the Overview needs (operator tree, graphs): browsing adds the tables'
    # and the timeline's indexes on top (~120 KB on these small traces)
    assert browsed > loaded + (64 << 10), (browsed, loaded)
    assert reg.memory_in_use()[a.entry.rel] == loaded  # not measured yet
    reg.views(b)  # a request for another file
    assert reg.memory_in_use()[a.entry.rel] == browsed
    # with a budget below both, the next request evicts the least recently used one
    monkeypatch.setattr(budget_mod, "TRACE_MEMORY_BUDGET_BYTES", browsed)
    views_b = reg.views(b)
    views_b.operators("operator")
    views_b.kernels("kernel")
    reg.views(b)
    assert list(reg.memory_in_use()) == [b.entry.rel]


def test_eviction_returns_freed_memory_to_the_os(tmp_path, monkeypatch):
    """An eviction asks malloc to give the freed pages back (without it, browsing 20 runs of the
    0.9 GB trace twice under a 4 GB budget grew the server to 10.9 GB; with it, 5.3 GB at peak)."""
    import sys

    if sys.platform.startswith("linux"):
        assert budget_mod.release_freed_memory() is True  # glibc's malloc_trim was found and called
    calls = []
    monkeypatch.setattr(budget_mod, "release_freed_memory", lambda: calls.append(1) or True)
    reg = _registry(tmp_path)
    states = [reg.find(run, "worker0", "1") for run in FILES]
    reg.load(states[0])
    assert calls == []  # nothing evicted, nothing to release
    monkeypatch.setattr(budget_mod, "TRACE_MEMORY_BUDGET_BYTES", 1)
    reg.load(states[1])
    assert calls == [1] and list(reg.memory_in_use()) == [states[1].entry.rel]
