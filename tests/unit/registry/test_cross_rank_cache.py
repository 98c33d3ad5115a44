"""The distributed view and the critical-path overlay are combined once per set of loaded ranks and
kept (hardening round three, item 8): repeated requests reuse the answer; a changed rank recombines."""

from __future__ import annotations

import shutil

from conftest import REPO, loaded_registry

from tb_plugin import api
from tb_plugin.analysis import critical_path_overlay
from tb_plugin.analysis import distributed as distributed_analysis


def test_distributed_and_critical_path_are_combined_once(tmp_path, monkeypatch):
    shutil.copytree(REPO / "samples" / "synthetic_ddp", tmp_path / "ddp")
    reg = loaded_registry(tmp_path)
    calls = {"combine": 0, "overlay": 0}
    combine, overlay = distributed_analysis.combine_ranks, critical_path_overlay.rank_overlay

    def counted_combine(*a, **k):
        calls["combine"] += 1
        return combine(*a, **k)

    def counted_overlay(*a, **k):
        calls["overlay"] += 1
        return overlay(*a, **k)

    monkeypatch.setattr(distributed_analysis, "combine_ranks", counted_combine)
    monkeypatch.setattr(critical_path_overlay, "rank_overlay", counted_overlay)
    first = [api.distributed(reg, {"run": "ddp"}) for _ in range(5)]
    assert calls["combine"] == 1 and all(doc == first[0] for doc in first) and first[0][0] == 200
    worker = reg.files()[0].worker
    paths = [api.critical_path(reg, {"run": "ddp", "worker": worker, "span": "1"}) for _ in range(5)]
    assert calls["overlay"] == 1 and all(doc == paths[0] for doc in paths) and paths[0][0] == 200
    st = reg.files()[1]
    st.aggregate = dict(st.aggregate)  # a rank analysed again (reloaded): recombined
    api.distributed(reg, {"run": "ddp"})
    api.critical_path(reg, {"run": "ddp", "worker": worker, "span": "1"})
    assert calls == {"combine": 2, "overlay": 2}
