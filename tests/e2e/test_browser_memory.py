"""Drive the Memory tab and the snapshot view in headless Debian chromium against a real TensorBoard.

(1) A BERT trace with [memory] events: open the Memory tab on GPU0, drag across the memory curve with
the mouse, and check the events table now holds exactly the allocations whose lifetime overlaps the
selected range (the ``memory_events`` route for the same range, and a local overlap count of all rows).
(2) A directory holding only an allocator snapshot: the run opens on the snapshot view, its timeline
draws bands, and the peak active bytes shown equal the ``snapshot`` route's.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.conftest import BERT_H100, sample_logdir, tensorboard
from tests.e2e.helpers import api, drag_across, enable_test_hooks, open_plugin, open_tab

pytestmark = pytest.mark.corpus  # reads the external sample corpus (docs/TESTING.md)

HOOK = "window.__kinetoscopeMemory"


def _ms(us: float) -> str:
    """The range as the frontend sends it (fmtUs: 3 decimals)."""
    return repr(round(us * 1000) / 1000)


def _row_total(frame) -> int:
    text = (
        frame.locator('[data-testid="memory-events-table"]')
        .locator("xpath=ancestor::div[contains(@class,'table-wrap')]")
        .locator('[data-testid="row-count"]')
        .inner_text()
    )
    return int(re.search(r"of ([\d,]+) rows", text).group(1).replace(",", ""))


def _wait_total(frame, expected: int) -> None:
    for _ in range(300):
        try:
            if _row_total(frame) == expected:
                return
        except Exception:  # table re-rendering
            pass
        frame.wait_for_timeout(100)
    raise AssertionError(f"events table shows {_row_total(frame)} rows, expected {expected}")


def test_memory_tab_drag_selects_range(browser, tmp_path, artifacts):
    logdir, cache = sample_logdir(tmp_path, "bert", BERT_H100, name="w.1.pt.trace.json.gz")
    sel = {"run": "bert", "worker": "w", "span": "1"}
    with tensorboard(logdir, cache) as base:
        everything = api(base, "memory_events", **sel, device="GPU0", limit=1000)
        assert everything["reason"] is None and everything["total_rows"] > 20
        page = enable_test_hooks(browser.new_page(viewport={"width": 1400, "height": 1100}))
        frame = open_plugin(page, base)
        frame.wait_for_selector('[data-testid="run-select"]', timeout=60_000)
        open_tab(frame, "memory-tab", 90_000)
        frame.locator('[data-testid="memory-events-table"]').wait_for(timeout=60_000)
        assert frame.locator('[data-testid="memory-device-select"]').input_value() == "GPU0"
        _wait_total(frame, everything["total_rows"])
        assert frame.locator('[data-testid="memory-stats-table"] [data-testid="memory-stat-row"]').count() > 0
        curve = frame.locator('[data-testid="memory-curve"]')
        assert curve.locator("canvas").count() >= 1
        page.screenshot(path=str(artifacts / "memory_tab.png"), full_page=True)
        frame.locator('[data-testid="memory-stats-table"]').screenshot(path=str(artifacts / "memory_stats_table.png"))

        # a real mouse drag across the middle of the curve
        curve.scroll_into_view_if_needed()
        drag_across(page, curve)
        rng = None
        for _ in range(100):
            rng = frame.evaluate(f"{HOOK} && {HOOK}.range()")
            if rng:
                break
            frame.wait_for_timeout(100)
        assert rng and rng["end_us"] > rng["start_us"], rng
        start, end = float(_ms(rng["start_us"])), float(_ms(rng["end_us"]))
        expected = api(base, "memory_events", **sel, device="GPU0", start_us=_ms(start), end_us=_ms(end), limit=1000)[
            "total_rows"
        ]
        overlapping = sum(
            1
            for r in everything["rows"]
            if not (
                (r["free_us"] if r["free_us"] is not None else float("inf")) < start
                or (r["alloc_us"] if r["alloc_us"] is not None else float("-inf")) > end
            )
        )
        assert expected == overlapping
        assert expected < everything["total_rows"]
        _wait_total(frame, expected)
        assert frame.locator('[data-testid="memory-event-row"]').count() == min(expected, 100)
        assert frame.locator('[data-testid="memory-reset-range"]').is_enabled()
        # selecting a row highlights its lifetime; the CSV link carries the range
        if expected:
            frame.locator('[data-testid="memory-event-row"]').first.click()
            assert frame.locator('[data-testid="memory-event-row"][aria-selected="true"]').count() == 1
        csv = frame.locator('[data-testid="memory-events-csv"]').get_attribute("href")
        assert "memory_events.csv?" in csv and "start_us=" in csv and "end_us=" in csv
        page.screenshot(path=str(artifacts / "memory_tab_range.png"), full_page=True)

        # the test hook selects an exact range; reset goes back to the whole trace
        a, b = everything["rows"][0]["alloc_us"], everything["rows"][0]["free_us"]
        frame.evaluate(f"{HOOK}.selectRange({a}, {b})")
        _wait_total(
            frame, api(base, "memory_events", **sel, device="GPU0", start_us=_ms(a), end_us=_ms(b))["total_rows"]
        )
        frame.locator('[data-testid="memory-reset-range"]').click()
        _wait_total(frame, everything["total_rows"])
        page.close()


def test_snapshot_only_run(browser, tmp_path, artifacts):
    logdir, cache = sample_logdir(tmp_path, "snap", Path("memory_snapshots") / "memory_forward_bf16_128.pickle")
    with tensorboard(logdir, cache) as base:
        path = "snap/memory_forward_bf16_128.pickle"
        summary = api(base, "snapshot", run="snap", path=path)
        peak = summary["devices"][0]["peak_active_bytes"]
        page = enable_test_hooks(browser.new_page(viewport={"width": 1400, "height": 1100}))
        frame = open_plugin(page, base)
        select = frame.locator('[data-testid="artifact-select"]')
        select.wait_for(timeout=90_000)
        assert select.input_value() == path
        timeline = frame.locator('[data-testid="snapshot-timeline"]')
        timeline.wait_for(timeout=60_000)
        assert timeline.locator("canvas, svg").count() >= 1
        assert int(timeline.get_attribute("data-bands")) > 0
        box = timeline.bounding_box()
        assert box and box["width"] > 300 and box["height"] > 200
        shown = frame.locator('[data-testid="snapshot-peak-GPU0"]').inner_text()
        assert f"({peak:,} B)" in shown, shown
        segs = frame.locator('[data-testid="snapshot-segments"] [data-testid="snapshot-segment"]')
        segs.first.wait_for(timeout=30_000)
        assert segs.count() == len(api(base, "snapshot_segments", run="snap", path=path, device=0)["segments"])
        frame.locator('[data-testid="snapshot-allocation-row"]').first.wait_for(timeout=30_000)
        page.screenshot(path=str(artifacts / "snapshot_view.png"), full_page=True)
        frame.locator('[data-testid="snapshot-segments"]').screenshot(path=str(artifacts / "snapshot_segments.png"))
        frame.locator('[data-testid="snapshot-allocations-table"]').screenshot(
            path=str(artifacts / "snapshot_allocations.png")
        )
        page.close()
