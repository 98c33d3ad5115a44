"""The Trace view's critical-path overlay, and a single-rank run's own groups and path in the
Distributed tab, in headless chromium against a real TensorBoard.

(1) The 8 DLRM ranks: on rank 7 (worker7, on the path) the toggle draws one band per path segment of
the step, each on its track, colored by category, and says how much of the step's path lies on this
rank; with all ranks on one clock every rank's part is drawn; on rank 0 (off the path) it draws none. (2) A synthesized single-rank trace
(tests/synth/critical.py ``chain_doc``): the ten segments of the known chain, the kernels' bands on
the stream track over the kernels themselves. (3) A single-rank run of the FSDP + TP job (rank 3):
the Distributed tab shows its own two process groups and its critical path.
"""

from __future__ import annotations

import json

import pytest
from synth.comm import fsdp_tp_docs
from synth.critical import chain_doc

from tests.e2e.conftest import sample_logdir, tensorboard
from tests.e2e.helpers import (
    api,
    dlrm_ranks,
    enable_test_hooks,
    format_duration,
    open_tab,
    plugin_frame,
    select_file,
    wait_all_ready,
)

pytestmark = pytest.mark.corpus  # reads the external sample corpus (docs/TESTING.md)

HOOK = "window.__kinetoscopeTimeline"


def _trace_with_path(browser, base: str, run: str, worker: str):
    """``(page, frame)``: the Trace view of ``run``/``worker`` at its first step, the overlay on."""
    page = enable_test_hooks(browser.new_page(viewport={"width": 1500, "height": 1400}))
    page.goto(base + "/#kinetoscope")
    frame = plugin_frame(page)
    select_file(frame, run, worker)
    open_tab(frame, "trace-tab")
    frame.wait_for_function(f"() => {HOOK} && {HOOK}.settled()", timeout=90_000)
    frame.select_option('[data-testid="step-select"]', "0")
    frame.wait_for_function(f"() => {HOOK}.settled()", timeout=30_000)
    assert frame.evaluate(f"{HOOK}.pathRects().length") == 0  # off until asked
    frame.check('[data-testid="critical-path-toggle"]')
    frame.locator('[data-testid="path-overlay-count"]').wait_for(timeout=90_000)
    return page, frame


def _in_window(segs: dict, win: dict) -> int:
    return sum(1 for s, d in zip(segs["start_us"], segs["dur_us"]) if s + d >= win["start"] and s <= win["end"])


def test_overlay_on_dlrm_ranks(browser, tmp_path, artifacts):
    logdir, cache = sample_logdir(tmp_path, "job", *dlrm_ranks())
    with tensorboard(logdir, cache) as base:
        wait_all_ready(base, "job", 8)
        ranks = api(base, "distributed", run="job", span=1)["view"]
        (path,) = ranks["critical_path"]
        by_rank = {b["rank"]: b["us"] for b in path["by_rank"]}
        worker = {r["rank"]: r["worker"] for r in ranks["ranks"]}
        on = max(by_rank, key=by_rank.get)
        doc = api(base, "critical_path", run="job", worker=worker[on], span=1)
        (step,) = doc["steps"]
        assert step["on_rank_us"] == by_rank[on] and step["shown"] == step["total"] > 0

        page, frame = _trace_with_path(browser, base, "job", worker[on])
        count = frame.locator('[data-testid="path-overlay-count"]').inner_text()
        assert count.startswith(f"Critical path across ranks: {step['shown']:,} segments on rank {on}"), count
        here = frame.locator('[data-testid="path-overlay-step"]').inner_text()
        assert f"{format_duration(by_rank[on])} of {format_duration(path['length_us'])}" in here, here
        win = frame.evaluate(f"{HOOK}.getWindow()")
        shown = _in_window(step["segments"], win)
        assert shown >= step["shown"] // 2, (shown, step["shown"])  # the first step's window holds the path
        frame.wait_for_function(f"(n) => {HOOK}.pathRects().length === n", arg=shown, timeout=30_000)
        rects = frame.evaluate(f"{HOOK}.pathRects()")
        drawn = sorted(r["category"] for r in rects)
        assert drawn == sorted(
            c
            for c, s, d in zip(step["segments"]["category"], step["segments"]["start_us"], step["segments"]["dur_us"])
            if s + d >= win["start"] and s <= win["end"]
        )
        # the longest kernel or cpu segment's band lies over its event
        i = max(
            (k for k, r in enumerate(step["segments"]["row"]) if r >= 0), key=lambda k: step["segments"]["dur_us"][k]
        )
        frame.evaluate(
            f"([s, e]) => {HOOK}.setWindow(s, e)",
            [step["segments"]["start_us"][i], step["segments"]["start_us"][i] + step["segments"]["dur_us"][i]],
        )
        frame.wait_for_function(f"() => {HOOK}.settled()", timeout=30_000)
        ev = frame.evaluate(f"(row) => {HOOK}.rectOf(row)", step["segments"]["row"][i])
        bands = frame.evaluate(f"{HOOK}.pathRects()")
        assert ev is not None and any(
            b["y"] <= ev["y"] <= b["y"] + b["h"] and b["category"] == step["segments"]["category"][i] for b in bands
        ), (ev, bands)
        page.screenshot(path=str(artifacts / "critical_path_overlay_dlrm.png"), full_page=True)
        # all ranks on one clock: every rank's part of the path is drawn (ranks 4 and 7 here)
        frame.check('[data-testid="all-ranks"]')
        frame.wait_for_function(
            "() => document.querySelector('[data-testid=path-overlay-ranks]')?.textContent === ' · drawn on the 8 ranks shown'",
            timeout=90_000,
        )
        frame.wait_for_function(f"() => {HOOK}.settled()", timeout=60_000)
        everyone = sum(
            api(base, "critical_path", run="job", worker=worker[r], span=1)["steps"][0]["shown"] for r in by_rank
        )
        frame.wait_for_function(f"(n) => {HOOK}.pathRects().length === n", arg=everyone, timeout=30_000)
        page.screenshot(path=str(artifacts / "critical_path_overlay_all_ranks.png"), full_page=True)
        page.close()

        off = next(r for r in sorted(worker) if r not in by_rank)
        page, frame = _trace_with_path(browser, base, "job", worker[off])
        assert (
            frame.locator('[data-testid="path-overlay-count"]')
            .inner_text()
            .startswith(f"Critical path across ranks: 0 segments on rank {off}")
        )
        assert frame.evaluate(f"{HOOK}.pathRects().length") == 0
        page.close()


def test_overlay_and_groups_on_single_rank_runs(browser, tmp_path, artifacts):
    logdir, cache = sample_logdir(tmp_path, "chain")
    (logdir / "chain" / "w.pt.trace.json").write_text(json.dumps(chain_doc()))
    (logdir / "one").mkdir()
    (logdir / "one" / "rank3.pt.trace.json").write_text(json.dumps(fsdp_tp_docs()[3]))
    with tensorboard(logdir, cache) as base:
        wait_all_ready(base, "chain", 1)
        wait_all_ready(base, "one", 1)
        doc = api(base, "critical_path", run="chain", worker="w", span=1)
        (step,) = doc["steps"]
        assert doc["cross_rank"] is False and step["shown"] == 10

        page, frame = _trace_with_path(browser, base, "chain", "w")
        count = frame.locator('[data-testid="path-overlay-count"]').inner_text()
        assert count.startswith("Critical path: 10 segments on rank 0"), count
        frame.wait_for_function(f"() => {HOOK}.pathRects().length === 10", timeout=30_000)
        bands = frame.evaluate(f"{HOOK}.pathRects()")
        assert sorted(b["category"] for b in bands) == sorted(step["segments"]["category"])
        segs = step["segments"]
        for name in ("gemm_A", "relu_B"):  # each kernel's band covers the kernel on its stream row
            k = segs["name"].index(name)
            ev = frame.evaluate(f"(row) => {HOOK}.rectOf(row)", segs["row"][k])
            assert any(
                b["category"] == "kernel"
                and b["y"] <= ev["y"] <= b["y"] + b["h"]
                and abs(b["x"] - ev["x"]) <= 1.5
                and abs(b["w"] - ev["w"]) <= 1.5
                for b in bands
            ), (name, ev, bands)
        page.screenshot(path=str(artifacts / "critical_path_overlay_single.png"), full_page=True)
        page.close()

        # the single-rank run's Distributed tab: its own groups and critical path
        page = browser.new_page(viewport={"width": 1400, "height": 2400})
        page.goto(base + "/#kinetoscope")
        frame = plugin_frame(page)
        select_file(frame, "one")
        open_tab(frame, "distributed-tab")
        own = frame.locator('[data-testid="single-rank"]')
        own.wait_for(timeout=90_000)
        assert "Process groups of rank 3" in own.locator('[data-testid="groups-card"]').inner_text()
        single = api(base, "distributed", run="one", span=1)["single_rank"]
        assert len(single["groups"]) == 2
        assert own.locator('[data-testid="groups-card"] tbody tr').count() >= 2
        (path,) = single["critical_path"]
        assert own.locator('[data-testid="path-summary"]').inner_text().startswith(format_duration(path["length_us"]))
        page.screenshot(path=str(artifacts / "single_rank_distributed.png"), full_page=True)
        page.close()
