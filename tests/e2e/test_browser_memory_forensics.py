"""The memory forensics panels in headless Debian chromium against a real TensorBoard:

(1) a run of per-rank snapshots dumped on an OOM opens on the OOM card (requested size, largest free
block of its stream, fragmentation as constructed in ``tests/synth/oom.py``) and the peak-per-rank
table names the outlier rank; (2) a Composer run's ``rank{r}.{batch}.pt.trace.memory.html`` files show
only the PNG extracted from them, and a hostile one (scripts, event handlers, an SVG, a meta refresh,
an iframe) runs nothing: ``window.__xss`` stays undefined in the plugin frame and the top page.
"""

from __future__ import annotations

import pickle

from synth.composer import composer_trace, dumps
from synth.memory_html import hostile_memory_html, png, torch_memory_html
from synth.oom import MIB, oom_snapshot, rank_snapshot

from tests.e2e.conftest import tensorboard
from tests.e2e.helpers import api, enable_test_hooks, open_plugin

PEAKS = {1: 32 * MIB, 2: 33 * MIB, 3: 64 * MIB}  # rank 0 (the OOM snapshot) peaks at 32 MiB


def _logdir(tmp_path):
    logdir, cache = tmp_path / "logdir", tmp_path / "cache"
    (logdir / "oomjob").mkdir(parents=True)
    (logdir / "composer").mkdir()
    (logdir / "late").mkdir()
    (logdir / "late" / "dumped_after_oom.pickle").write_bytes(pickle.dumps(oom_snapshot(after_oom=True)))
    cache.mkdir()
    (logdir / "oomjob" / "rank0_oom.pickle").write_bytes(pickle.dumps(oom_snapshot()))
    for rank, peak in PEAKS.items():
        (logdir / "oomjob" / f"rank{rank}_oom.pickle").write_bytes(pickle.dumps(rank_snapshot(peak, rank)))
    (logdir / "composer" / "rank0.1.pt.trace.json").write_bytes(dumps(composer_trace(rank=0, batches=2)))
    (logdir / "composer" / "rank0.1.pt.trace.memory.html").write_bytes(torch_memory_html(png(9, 4)))
    (logdir / "composer" / "rank1.1.pt.trace.memory.html").write_bytes(hostile_memory_html(png(11, 6)))
    (logdir / "composer" / "rank0.1.pt.trace.memory.raw.json").write_text("[[1000, 2, 64, 5], [2000, 4, -64, 5]]")
    return logdir, cache


def _no_xss(page, frame, where: str) -> None:
    assert frame.evaluate("typeof window.__xss") == "undefined", f"script ran in the plugin frame ({where})"
    assert page.evaluate("typeof window.__xss") == "undefined", f"script ran in the top page ({where})"
    assert frame.locator("iframe, [onerror], [onload], [onclick], object, embed").count() == 0, where


def test_oom_card_rank_table_and_memory_html(browser, tmp_path, artifacts):
    logdir, cache = _logdir(tmp_path)
    with tensorboard(logdir, cache) as base:
        oom = api(base, "snapshot_oom", run="oomjob", path="oomjob/rank0_oom.pickle")
        assert oom["oom"]["requested_bytes"] == 10 * MIB
        page = enable_test_hooks(browser.new_page(viewport={"width": 1400, "height": 1200}))
        frame = open_plugin(page, base, run="oomjob")
        frame.locator('[data-testid="snapshot-oom"]').wait_for(timeout=90_000)
        assert frame.locator('[data-testid="artifact-select"]').input_value() == "oomjob/rank0_oom.pickle"
        # the OOM card comes first: above the snapshot summary
        first = frame.locator('[data-testid="snapshot-view"] section.card').first
        assert first.get_attribute("data-testid") == "snapshot-oom"
        assert "10.0 MiB (10,485,760 B)" in frame.locator('[data-testid="oom-requested"]').inner_text()
        assert frame.locator('[data-testid="oom-largest-free"]').inner_text() == "6.0 MiB"
        assert frame.locator('[data-testid="oom-fragmentation"]').inner_text() == "36.0 %"
        streams = frame.locator('[data-testid="oom-streams"] tbody tr')
        assert streams.count() == 2 and "(OOM)" in streams.first.inner_text()
        live = frame.locator('[data-testid="oom-live"] tbody tr')
        assert "/w/model.py:10:build_weights" in live.first.inner_text()
        assert "/w/model.py:10:build_weights" in frame.locator('[data-testid="oom-growth"] tbody tr').first.inner_text()
        outlier = frame.locator('[data-testid="snapshot-outlier"]')
        outlier.wait_for(timeout=60_000)
        assert outlier.inner_text().startswith("Rank 3 is the outlier"), outlier.inner_text()
        rows = frame.locator('[data-testid="snapshot-rank-row"]')
        assert rows.count() == 4 and "64.0 MiB" in rows.nth(3).inner_text() and "(outlier)" in rows.nth(3).inner_text()
        page.screenshot(path=str(artifacts / "snapshot_oom.png"), full_page=True)
        rows.nth(3).click()  # a rank's row opens its snapshot
        frame.wait_for_function(
            "document.querySelector('[data-testid=\"artifact-select\"]').value === 'oomjob/rank3_oom.pickle'",
            timeout=30_000,
        )

        # dumped after the OOM (three entries later): the state is rebuilt to the OOM's
        frame.select_option('[data-testid="run-select"]', "late")
        frame.locator('[data-testid="oom-reconstructed"]').wait_for(timeout=60_000)
        assert frame.locator('[data-testid="oom-fragmentation"]').inner_text() == "36.0 %"
        assert frame.locator('[data-testid="oom-largest-free"]').inner_text() == "6.0 MiB"
        assert (
            "17.0 MiB free, largest block 10.0 MiB" in frame.locator('[data-testid="oom-reconstructed"]').inner_text()
        )

        # Composer memory timelines: the image, the trace it belongs to, nothing executable
        frame.select_option('[data-testid="run-select"]', "composer")
        frame.locator('[data-testid="tab-snapshots"]').click()
        select = frame.locator('[data-testid="artifact-select"]')
        select.wait_for(timeout=60_000)
        labels = select.locator("option").all_inner_texts()
        assert any("rank 0, batch 1, trace rank0/1" in t for t in labels), labels
        for path, (w, h) in (
            ("composer/rank0.1.pt.trace.memory.html", (9, 4)),
            ("composer/rank1.1.pt.trace.memory.html", (11, 6)),
        ):
            select.select_option(path)
            img = frame.locator('[data-testid="memory-html-image"]')
            img.wait_for(timeout=60_000)
            frame.wait_for_function(
                "(() => { const i = document.querySelector('[data-testid=\"memory-html-image\"]');"
                f" return i && i.complete && i.naturalWidth === {w}; }})()",
                timeout=30_000,
            )
            assert frame.evaluate("document.querySelector('[data-testid=\"memory-html-image\"]').naturalHeight") == h
            assert "memory_html_image?" in img.get_attribute("src")
            page.wait_for_timeout(500)
            _no_xss(page, frame, path)
        assert "no trace of the same rank and batch" in frame.locator('[data-testid="memory-html-about"]').inner_text()
        page.screenshot(path=str(artifacts / "memory_html.png"), full_page=True)
        select.select_option("composer/rank0.1.pt.trace.memory.html")
        frame.locator('[data-testid="memory-html-open-trace"]').click()  # its trace: rank0, span 1, Overview
        frame.locator('[data-testid="memory-html"]').wait_for(state="detached", timeout=30_000)
        assert frame.locator('[data-testid="worker-select"]').input_value() == "rank0"
        assert frame.locator('[data-testid="span-select"]').input_value() == "1"
        # the raw export of the same rank and batch links to the same trace
        frame.locator('[data-testid="tab-snapshots"]').click()
        select.select_option("composer/rank0.1.pt.trace.memory.raw.json")
        frame.locator('[data-testid="memory-timeline-open-trace"]').click()
        frame.locator('[data-testid="memory-timeline-export"]').wait_for(state="detached", timeout=30_000)
        assert frame.locator('[data-testid="worker-select"]').input_value() == "rank0"
        # opened directly, the image route is a PNG with a no-script CSP: still nothing runs
        direct = browser.new_page()
        direct.goto(
            f"{base}/data/plugin/kinetoscope/memory_html_image?run=composer&path="
            "composer%2Frank1.1.pt.trace.memory.html"
        )
        direct.wait_for_timeout(500)
        assert direct.evaluate("typeof window.__xss") == "undefined"
        direct.close()
        page.close()
