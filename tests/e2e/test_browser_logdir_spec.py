"""Every view of the plugin under ``tensorboard --logdir_spec a:DIR1,b:DIR2`` (two logdirs, one
MultiRegistry), in headless Debian chromium against a real TensorBoard.

Each logdir holds a run ``paired`` (a trace and an allocator snapshot of the same process,
tests/synth/snapshot_trace.py) and a two-rank run ``job`` (the slow-data-loader job of
tests/synth/critical.py); the second also holds ``hang``, the repository's flight-recorder dumps
(samples/fr_gloo_skip). Every tab of every file of both logdirs is opened through the iframe's hash; no
plugin request may answer HTTP ≥ 500, and each view shows its content: the Trace view draws its
tracks with the snapshot's counter track (timeline requests, snapshot attribution) and, on ``job``,
the critical-path overlay across ranks; the Snapshots tab the alive-at-the-peak card; Distributed its
ranks; Hang its sentence.
"""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

from conftest import REPO
from synth.critical import dataloader_docs
from synth.snapshot_trace import paired_snapshot, paired_trace

from tests.e2e.conftest import tensorboard
from tests.e2e.helpers import enable_test_hooks, plugin_frame
from tests.e2e.test_browser_no_null import _go, _hits, _InFlight, _settle, _wait_all_loaded

HOOK = "window.__kinetoscopeTimeline"
FILE_VIEWS = ("overview", "operator", "kernel", "module", "trace", "memory", "insights", "distributed", "diff")
SNAPSHOT = "rank0_memory_snapshot.pickle"
# what each view shows once rendered (a test id in the plugin's frame); the others: their text
SHOWN = {
    "insights": "insights-page",
    "distributed": "distributed-page",
    "snapshots": "snapshot-alive-row",
    "hang": "hang-sentence",
}


def _logdir(root: Path, dumps: bool) -> Path:
    (root / "paired").mkdir(parents=True)
    (root / "paired" / "host.pt.trace.json").write_text(json.dumps(paired_trace()))
    (root / "paired" / SNAPSHOT).write_bytes(pickle.dumps(paired_snapshot(), protocol=5))
    (root / "job").mkdir()
    for rank, doc in enumerate(dataloader_docs([[60, 50], [50, 500]])):
        (root / "job" / f"rank{rank}.pt.trace.json").write_text(json.dumps(doc))
    if dumps:
        (root / "hang").mkdir()
        for dump in sorted((REPO / "samples" / "fr_gloo_skip").glob("nccl_trace_rank_*")):
            shutil.copyfile(dump, root / "hang" / dump.name)
    return root


def test_every_view_of_two_logdirs(browser, tmp_path, artifacts):
    a, b = _logdir(tmp_path / "dir1", dumps=False), _logdir(tmp_path / "dir2", dumps=True)
    cache = tmp_path / "cache"
    cache.mkdir()
    failures: list[str] = []
    plugin_requests: list[tuple[int, str]] = []
    with tensorboard(None, cache, extra_args=["--logdir_spec", f"a:{a},b:{b}"]) as base:
        runs = {r["name"]: r for r in _wait_all_loaded(base)["runs"]}
        assert sorted(runs) == ["a/job", "a/paired", "b/hang", "b/job", "b/paired"]
        page = enable_test_hooks(browser.new_page(viewport={"width": 1500, "height": 1100}))
        page.on(
            "response",
            lambda r: plugin_requests.append((r.status, r.url)) if "/data/plugin/kinetoscope/" in r.url else None,
        )
        inflight = _InFlight(page)
        page.goto(base + "/#kinetoscope")
        frame = plugin_frame(page)
        frame.wait_for_selector('[data-testid="run-select"]', timeout=60_000)

        def visit(where: str, view: str, **sel: str) -> str:
            _go(frame, **sel, view=view)
            if view in SHOWN:
                frame.locator(f'[data-testid="{SHOWN[view]}"]').first.wait_for(timeout=90_000)
            text, settled = _settle(page, frame, inflight)
            if not settled:
                failures.append(f"{where} [{view}]: did not finish loading")
            if len(text.strip()) < 40:
                failures.append(f"{where} [{view}]: shows almost nothing: {text!r}")
            failures.extend(f"{where} [{view}]: {hit}" for hit in _hits(text))
            return text

        for name in ("a", "b"):
            for run in (f"{name}/paired", f"{name}/job"):
                for w in runs[run]["workers"]:
                    for s in w["spans"]:
                        sel = {"run": run, "worker": w["worker"], "span": s["span"]}
                        where = f"{run}/{w['worker']}"
                        for view in FILE_VIEWS:
                            visit(where, view, **sel)
                            if view == "trace":  # its tracks drawn from the timeline requests
                                frame.wait_for_function(f"() => {HOOK} && {HOOK}.settled()", timeout=90_000)
            paired = {"run": f"{name}/paired", "worker": "host", "span": "1"}
            # the Trace view of the paired trace: the snapshot's active memory is a counter track
            visit(f"{name}/paired", "trace", **paired)
            frame.wait_for_function(f"() => {HOOK} && {HOOK}.settled()", timeout=90_000)
            rows = {r["name"] for r in frame.evaluate(f"{HOOK}.counterRows()")}
            assert f"GPU 0 snapshot active ({SNAPSHOT})" in rows, (name, rows)
            # the Snapshots tab: the alive-at-the-peak card names the matched trace of this logdir
            visit(f"{name}/paired", "snapshots", **paired)
            matched = frame.locator('[data-testid="snapshot-alive-trace"]').inner_text()
            assert f"{name}/paired/host.pt.trace.json" in matched, matched
            # the critical-path overlay across the job's two ranks
            visit(f"{name}/job", "trace", run=f"{name}/job", worker="rank1", span="1")
            frame.wait_for_function(f"() => {HOOK} && {HOOK}.settled()", timeout=90_000)
            frame.check('[data-testid="critical-path-toggle"]')
            count = frame.locator('[data-testid="path-overlay-count"]')
            count.wait_for(timeout=90_000)
            assert "Critical path across ranks" in count.inner_text(), count.inner_text()
            frame.uncheck('[data-testid="critical-path-toggle"]')
        hang = visit("b/hang", "hang", run="b/hang")
        assert frame.locator('[data-testid="hang-sentence"]').first.inner_text().strip(), hang
        page.screenshot(path=str(artifacts / "logdir_spec_hang.png"), full_page=True)
        page.close()
    errors = [f"HTTP {code} {url}" for code, url in plugin_requests if code >= 500]
    routes = {url.split("/data/plugin/kinetoscope/", 1)[1].split("?", 1)[0] for _, url in plugin_requests}
    assert {"timeline", "timeline_meta", "critical_path", "snapshot_attribution", "distributed"} <= routes, routes
    assert not errors and not failures, "\n".join(errors + failures)
