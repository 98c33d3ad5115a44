"""The acceptance invariants on every trace in ../shared/samples and samples/.

Each file is analysed the way users see it: the headless report (``kinetoscope report --json``, the
same analyses as the tab) for its run, plus the file's Insights document (the ``insights`` route's
``FileViews.insights``) and its parsed columns for the independent interval union. The checks are
in ``tests/invariants.py``. Trace files are found with the project's own listing (``list_files``:
``*.pt.trace.json[.gz]``, and other ``*.json[.gz]`` that sniff as Chrome traces), so allocator
snapshots, memory-timeline exports and ``*.expected.json`` answers are left out.

A file known to break an invariant on the unfixed code is marked ``xfail(strict=True)`` naming the
issue item that fixes it: when the fix is merged the test passes, the strict xfail fails, and the mark
must be removed.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import orjson
import pytest
from conftest import REPO, SAMPLES

from tb_plugin.cli.report import run_report
from tb_plugin.registry.artifacts import MEMPROFILER_KINDS
from tb_plugin.registry.cache import ParseCache
from tb_plugin.registry.runs import READY, RunRegistry
from tb_plugin.storage.fs import list_files, open_logdir
from tb_plugin.storage.sniff import SniffCache
from tests import invariants as inv

pytestmark = pytest.mark.corpus  # reads the external sample corpus (docs/TESTING.md)

ROOTS = {"shared": SAMPLES, "repo": REPO / "samples"}


def _trace_files() -> list[tuple[str, str]]:
    """``(root label, logdir-relative path)`` of every trace file, by the project's own listing."""
    out = []
    for label, root in ROOTS.items():
        if not root.is_dir():
            continue
        fs, path = open_logdir(str(root))
        out += [(label, e.rel) for e in list_files(fs, path, SniffCache()) if e.kind == "trace"]
    return out


FILES = _trace_files()
IDS = [f"{label}/{rel}" for label, rel in FILES]

# Files that break an invariant on the code before their fixes: {file id: the item that fixes it}.
KNOWN: dict[str, dict[str, str]] = {
    "union": {},  # item 17 fixed: breakdown in exact ticks (analysis/ticks.py)
    "gpu_idle": {},  # item 5 fixed: per-GPU idle = window − union of busy over all streams
    "null_number": {},  # item 15 fixed: world_size may be null (unknown), the UI never prints it
    "null_word": {},
    "percentages": {},
    "step_sum": {},
}


def _known(request, check: str, file_id: str) -> None:
    item = KNOWN[check].get(file_id)
    if item:
        request.applymarker(pytest.mark.xfail(strict=True, reason=f"known: {item}"))


class _Samples:
    """Lazy, shared loads: one report per run, one registry per root, all on one parse cache."""

    def __init__(self, cache_dir: Path) -> None:
        self.cache_dir = str(cache_dir)
        self.reports: dict[tuple[str, str], dict] = {}
        self.registries: dict[str, RunRegistry] = {}

    def report(self, label: str, run: str) -> dict:
        key = (label, run)
        if key not in self.reports:
            out, err = io.StringIO(), io.StringIO()
            saved = os.environ.get("KINETOSCOPE_CACHE_DIR")
            os.environ["KINETOSCOPE_CACHE_DIR"] = self.cache_dir  # run_report opens the default cache
            try:
                status = run_report(str(ROOTS[label]), run, True, True, out, err)
            finally:
                if saved is None:
                    os.environ.pop("KINETOSCOPE_CACHE_DIR", None)
                else:
                    os.environ["KINETOSCOPE_CACHE_DIR"] = saved
            assert status == 0, err.getvalue()
            self.reports[key] = orjson.loads(out.getvalue())
        return self.reports[key]

    def registry(self, label: str) -> RunRegistry:
        if label not in self.registries:
            reg = RunRegistry(str(ROOTS[label]), cache=ParseCache(self.cache_dir))
            reg.scan()
            self.registries[label] = reg
        return self.registries[label]


@pytest.fixture(scope="module")
def samples(tmp_path_factory) -> _Samples:
    return _Samples(tmp_path_factory.mktemp("invariants_cache"))


class Loaded:
    """One trace file: its report entry (and its run's), Overview, Insights document and columns."""

    def __init__(self, samples: _Samples, label: str, rel: str) -> None:
        reg = samples.registry(label)
        state = next(st for st in reg.files() if st.entry.rel == rel)
        self.run_doc = next(r for r in samples.report(label, state.run)["runs"] if r["name"] == state.run)
        self.entry = next(w for w in self.run_doc["workers"] if w["path"] == rel)
        assert self.entry["error"] is None, self.entry["error"]
        reg.load(state)
        assert state.state == READY, state.error
        views = reg.views(state)
        self.trace = views.trace
        self.overview = self.entry["overview"]
        self.insights = views.insights()


@pytest.fixture(scope="module", params=FILES, ids=IDS)
def loaded(request, samples) -> Loaded:
    label, rel = request.param
    return Loaded(samples, label, rel)


def _id(request) -> str:
    label, rel = request.node.callspec.params["loaded"]
    return f"{label}/{rel}"


def _fail_if(failures: list[str], what: str) -> None:
    assert not failures, (
        f"{what}:\n  "
        + "\n  ".join(failures[:40])
        + (f"\n  … and {len(failures) - 40} more" if len(failures) > 40 else "")
    )


def test_sample_list_is_complete():
    """Every sample folder the README names is found (a listing bug must not shrink the sweep)."""
    ids = set(IDS)
    for must in (
        "shared/kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
        "shared/tracelens/mi300/gaunernst_bert-small-uncased__1016001.json.gz",
        "shared/dlrm_8ranks/worker7_step_12.1694128201553.pt.trace.json",
        "shared/composer/rank_0.trace.json",
        "shared/lightning/0_trace.json",
        "repo/synthetic_ddp/rank0.1751410900000.pt.trace.json.gz",
    ):
        assert must in ids
    assert not [i for i in ids if i.endswith((".pickle", ".raw.gz", ".expected.json"))]
    assert len(FILES) >= 36


def test_categories_sum_to_step(request, loaded):
    _known(request, "step_sum", _id(request))
    _fail_if(inv.step_sum_failures(loaded.overview), "categories do not add up to the step")


def test_category_within_union_of_its_intervals(request, loaded):
    _known(request, "union", _id(request))
    _fail_if(inv.union_failures(loaded.trace, loaded.overview), "a category exceeds the union of its intervals")


def test_exposed_idle_within_window(request, loaded):
    _fail_if(inv.exposed_idle_failures(loaded.insights), "exposed idle outside the window")


def test_gpu_idle_within_window(request, loaded):
    _known(request, "gpu_idle", _id(request))
    _fail_if(inv.gpu_idle_failures(loaded.insights), "GPU idle exceeds its window")


def test_percentages_in_range(request, loaded):
    _known(request, "percentages", _id(request))
    _fail_if(
        inv.percentage_failures([loaded.entry, loaded.insights, loaded.run_doc.get("distributed")]),
        "percentage out of range",
    )


def test_no_null_in_numbers(request, loaded):
    _known(request, "null_number", _id(request))
    _fail_if(
        inv.null_number_failures([loaded.entry, loaded.insights, loaded.run_doc.get("distributed")]),
        "null/NaN/Infinity where a number is documented",
    )


def test_no_null_words_in_sentences(request, loaded):
    _known(request, "null_word", _id(request))
    _fail_if(
        inv.null_word_failures([loaded.entry, loaded.insights, loaded.run_doc.get("distributed")]),
        "null word in a sentence",
    )


def _artifact_runs() -> list[tuple[str, str]]:
    """``(root label, run)`` of every run holding allocator snapshots or MemProfiler files."""
    out = []
    for label, root in ROOTS.items():
        reg = RunRegistry(str(root))
        reg.scan()
        out += sorted(
            {
                (label, art.run)
                for art in reg.artifacts()
                if art.entry.kind == "snapshot" or art.entry.kind in MEMPROFILER_KINDS
            }
        )
    return out


@pytest.mark.parametrize("label,run", _artifact_runs(), ids=lambda v: str(v))
def test_artifact_report_sections(samples, label, run):
    """The report's allocator-snapshot and MemProfiler sections: percentages, numbers and sentences."""
    doc = next(r for r in samples.report(label, run)["runs"] if r["name"] == run)
    sections = [doc.get("snapshots"), doc.get("memprofiler")]
    assert any(sections)
    _fail_if(
        inv.percentage_failures(sections) + inv.null_number_failures(sections) + inv.null_word_failures(sections),
        f"report of run {run}",
    )


def test_advice_is_material_and_consistent(request, loaded):
    """Every recommendation addresses at least its threshold; no AMP advice where tensor cores already
    run kernels; no CPU-overhead advice for time the host was blocked on the device; the insights route
    serves the Overview's one list."""
    _fail_if(inv.advice_failures(loaded.overview), "advice")
    _fail_if(inv.blocked_overhead_failures(loaded.overview, loaded.insights), "CPU-overhead advice while blocked")
    assert loaded.insights["recommendation_details"] == loaded.overview["recommendation_details"]
