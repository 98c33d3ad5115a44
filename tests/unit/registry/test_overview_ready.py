"""A cold load shows the file ready as soon as its Overview is computed: the parse-cache write and the
timeline index (which the Overview does not need) follow in the same load, and are done when
``load`` returns (Overview-ready cold)."""

from __future__ import annotations

import shutil

import pytest
from conftest import sample

from tb_plugin.registry import views as views_mod
from tb_plugin.registry.cache import ParseCache
from tb_plugin.registry.runs import READY, RunRegistry

pytestmark = pytest.mark.corpus  # reads the external sample corpus (docs/TESTING.md)

V100 = "kineto/resnet50_num_workers_0"


def test_ready_before_the_cache_write_and_the_timeline_index(tmp_path, monkeypatch):
    logdir = tmp_path / "logdir" / "run"
    logdir.mkdir(parents=True)
    src = sorted(sample(V100).glob("*.gz"))[0]
    shutil.copy(src, logdir / "worker0.1.pt.trace.json.gz")
    cache = ParseCache(str(tmp_path / "cache"))
    reg = RunRegistry(str(tmp_path / "logdir"), cache=cache)
    reg.scan()
    (st,) = reg.files()
    seen = []
    real_write, real_meta = cache.write_prepared, views_mod.FileViews.timeline_meta

    def write_prepared(path, arrays):  # the columns' write, taken at the parse and made after READY
        seen.append(("put", st.state, st.overview is not None))
        return real_write(path, arrays)

    def timeline_meta(self):
        seen.append(("timeline", st.state, st.overview is not None))
        return real_meta(self)

    monkeypatch.setattr(cache, "write_prepared", write_prepared)
    monkeypatch.setattr(views_mod.FileViews, "timeline_meta", timeline_meta)
    reg.load(st)
    assert st.state == READY and not st.from_cache
    assert seen == [("put", READY, True), ("timeline", READY, True)]
    assert 0 < st.ready_seconds <= st.load_seconds
    # both are done when load returns: the parse and the index come back from the cache
    url = reg.fs.unstrip_protocol(st.entry.path)
    assert cache.has(url, st.entry.version) and cache.has_blob(url, st.entry.version, "timeline")
    again = RunRegistry(str(tmp_path / "logdir"), cache=ParseCache(str(tmp_path / "cache")))
    again.scan()
    (st2,) = again.files()
    seen.clear()
    again.load(st2)
    assert st2.state == READY and st2.from_cache and st2.overview == st.overview
    assert seen == []  # nothing written again, no index built
