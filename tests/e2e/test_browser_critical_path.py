"""The Distributed tab's critical-path panel in headless chromium against a real TensorBoard.

(1) The synthesized job of tests/synth/critical.py (``dataloader_docs``): in step 2 rank 1 loads its
batch for 500 µs; the panel lists its data loader first and says rank 0 waited 450 µs for rank 1 at the
all-reduce, late after its data loader. (2) The 8 DLRM ranks: one step; the summary shows the path's
length (the step's span over the ranks) and the late-rank notice names rank 7; "show in trace" opens
that rank's Trace view with the segment's event selected.
"""

from __future__ import annotations

import pytest
from synth.critical import DATALOADER, dataloader_docs

from tests.e2e.helpers import api, dlrm_ranks, format_duration, job_tensorboard, open_distributed_tab


def _panel(frame):
    panel = frame.locator('[data-testid="critical-path"]')
    panel.wait_for(timeout=90_000)
    return panel


def test_critical_path_panel_on_a_slow_dataloader_job(browser, tmp_path, artifacts):
    with job_tensorboard(tmp_path, docs=dataloader_docs([[60, 50], [50, 500]])) as base:
        paths = api(base, "distributed", run="job", span=1)["view"]["critical_path"]
        assert [(p["step"], p["length_us"]) for p in paths] == [("1", 230.0), ("2", 670.0)]

        page, frame = open_distributed_tab(browser, base, 3200)
        panel = _panel(frame)
        assert panel.locator('[data-testid="path-summary"]').inner_text().startswith(format_duration(230.0))
        panel.locator('[data-testid="path-step-select"]').select_option("2")
        rows = panel.locator('[data-testid="path-segment-row"]')
        first = [rows.first.locator("td").nth(i).inner_text().strip() for i in range(5)]
        assert first == ["1", "Launch / CPU", DATALOADER, format_duration(0.0), format_duration(500.0)]
        notice = panel.locator('[data-testid="path-late-rank"]')
        assert notice.count() == 1
        text = notice.inner_text()
        assert (
            f"Rank 0 waited {format_duration(450.0)}" in text
            and "for rank 1, late after" in text
            and DATALOADER in text
        )
        frame.locator('[data-testid="path-card"]').screenshot(path=str(artifacts / "critical_path_dataloader.png"))
        page.close()


@pytest.mark.corpus
def test_critical_path_panel_on_dlrm(browser, tmp_path, artifacts):
    with job_tensorboard(tmp_path, samples=dlrm_ranks()) as base:
        (path,) = api(base, "distributed", run="job", span=1)["view"]["critical_path"]
        assert sum(path["by_category"].values()) == path["length_us"]

        page, frame = open_distributed_tab(browser, base, 3200)
        panel = _panel(frame)
        assert panel.locator('[data-testid="path-summary"]').inner_text().startswith(format_duration(path["length_us"]))
        assert panel.locator('[data-testid="path-segment-row"]').count() == len(path["segments"]) == 10
        late = {c["late_rank"] for c in path["collectives"]}
        notices = panel.locator('[data-testid="path-late-rank"]')
        assert notices.count() == len(path["collectives"]) >= 1
        assert all(
            f"for rank {r}" in notices.nth(i).inner_text()
            for i, r in enumerate(c["late_rank"] for c in path["collectives"])
        )
        assert late == {7}
        frame.locator('[data-testid="path-card"]').screenshot(path=str(artifacts / "critical_path_dlrm.png"))
        # "show in trace" on the longest segment with an event: that rank's file, the event selected
        seg = next(s for s in path["segments"] if s["row"] >= 0)
        worker = {r["rank"]: r["worker"] for r in api(base, "distributed", run="job", span=1)["view"]["ranks"]}[
            seg["rank"]
        ]
        event = api(base, "timeline_event", run="job", worker=worker, span=1, row=seg["row"])
        assert event["name"] == seg["name"]
        i = path["segments"].index(seg)
        panel.locator('[data-testid="path-segment-row"]').nth(i).locator('[data-testid="path-show-in-trace"]').click()
        details = frame.locator('[data-testid="timeline-details"]')
        details.locator('[data-testid="event-name"]').wait_for(timeout=60_000)
        assert details.locator('[data-testid="event-name"]').inner_text() == seg["name"]
        assert "view=trace" in frame.url and worker in frame.url
        # the path is overlaid: the toggle is on, and a band lies over the segment's event
        assert frame.locator('[data-testid="critical-path-toggle"]').is_checked()
        frame.locator('[data-testid="path-overlay-count"]').wait_for(timeout=60_000)
        hook = "window.__kinetoscopeTimeline"
        frame.wait_for_function(
            f"(row) => {hook} && {hook}.rectOf(row) !== null && {hook}.pathRects().length > 0",
            arg=seg["row"],
            timeout=60_000,
        )
        ev = frame.evaluate(f"(row) => {hook}.rectOf(row)", seg["row"])
        assert any(
            b["y"] <= ev["y"] <= b["y"] + b["h"] and b["category"] == seg["category"]
            for b in frame.evaluate(f"{hook}.pathRects()")
        )
        page.close()
