"""The report's sections drop the per-trace memos no later section reads (registry/report.py
``SECTION_MEMOS``): the aggregate is the one computed with every memo kept, no memo is computed twice,
and none is left once the last section ran, in one process and as the forked sections split them."""

from __future__ import annotations

import json
import os
from collections import Counter
from typing import Any, Callable

import fsspec
import pytest

from tb_plugin.registry import report
from tb_plugin.registry.executors.sections import CHILD_SECTIONS
from tb_plugin.registry.parse import load_trace_file
from tb_plugin.registry.views import FileViews
from tb_plugin.trace import model

SAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "samples")
TRACES = [
    "synthetic_resnet/worker0.1751410836000.pt.trace.json.gz",
    "synthetic_ddp/rank0.1751410900000.pt.trace.json.gz",
    "gpu_cudagraph/h200.1795664852348.pt.trace.json.gz",
    "gpu_transformer_bf16/h200.1795664832269.pt.trace.json.gz",
]


def views(rel: str) -> FileViews:
    path = os.path.join(SAMPLES, rel)
    return FileViews(load_trace_file(path, fs=fsspec.filesystem("file"), size=os.path.getsize(path)))


def text(aggregate: dict) -> str:
    return json.dumps(aggregate, sort_keys=True, default=repr)


@pytest.fixture
def made(monkeypatch) -> Counter:
    """How many times each memo was computed (not read back)."""
    counts: Counter = Counter()
    real = model.Trace.memo

    def memo(self: model.Trace, key: str, make: Callable[[], Any]) -> Any:
        def counted() -> Any:
            counts[key] += 1
            return make()

        return real(self, key, counted)

    monkeypatch.setattr(model.Trace, "memo", memo)
    return counts


def _kept(rel: str) -> dict:
    """The aggregate with every memo kept (run_sections without ``memos``)."""
    return report.rank_aggregate(views(rel), True, run=report.run_sections)


@pytest.mark.parametrize("rel", TRACES)
def test_one_process_drops_memos_and_computes_each_once(rel, made):
    expected = _kept(rel)
    made.clear()
    v = views(rel)
    got = report.rank_aggregate(v, True)
    assert text(got) == text(expected)
    assert made and max(made.values()) == 1, made
    assert v.trace.derived == {}  # nothing is read after the last section


@pytest.mark.parametrize("rel", TRACES)
def test_split_sections_drop_memos_and_compute_each_once(rel, made):
    """Each side of registry/executors/sections.py's split in a process of its own (a fresh trace)."""
    expected = _kept(rel)
    expected = {"distributed": expected["distributed"], "insights": expected["insights"], **expected["tables"]}
    got: dict[str, Any] = {}
    for side in (lambda key: key in CHILD_SECTIONS, lambda key: key not in CHILD_SECTIONS):
        made.clear()
        v = views(rel)

        def run(sections: report.Sections, items: int) -> dict[str, Any]:
            got.update(report.run_sections([s for s in sections if side(s[0])], items, v.trace.derived))
            return {key: got.get(key) for key, _ in sections}

        report.rank_aggregate(v, True, run=run)
        assert made and max(made.values()) == 1, made
        assert v.trace.derived == {}
    assert text(got) == text(expected)


def test_a_section_not_listed_keeps_every_memo():
    memos = {"op_rows": 1, "gpu_idle": 2}
    report.drop_unread(memos, ["memory", "a section nobody listed"])
    assert memos == {"op_rows": 1, "gpu_idle": 2}
    report.drop_unread(memos, ["memory"])
    assert memos == {"op_rows": 1}
    report.drop_unread(memos, [])
    assert memos == {}
