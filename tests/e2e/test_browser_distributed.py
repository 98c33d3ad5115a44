"""Drive the Distributed and Insights tabs in headless Debian chromium against a real TensorBoard.

(1) The 8 DLRM ranks copied into ``job/``: the Distributed tab lists 8 rank rows, and the straggler
badges sit on exactly the ranks the ``distributed`` route lists.
(2) A single H100 BERT trace: the Insights tab draws its histograms and shows the ``insights`` route's
launch-delay p50, formatted the way the UI formats durations.
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import BERT_H100, sample_logdir, tensorboard
from tests.e2e.helpers import api, dlrm_ranks, format_duration, job_tensorboard, open_distributed_tab, open_plugin

pytestmark = pytest.mark.corpus  # reads the external sample corpus (docs/TESTING.md)


def test_distributed_tab_ranks_and_stragglers(browser, tmp_path, artifacts):
    with job_tensorboard(tmp_path, samples=dlrm_ranks()) as base:
        doc = api(base, "distributed", run="job", span=1)
        assert doc["view"] is not None, doc
        expected = sorted(doc["view"]["stragglers"])
        assert expected, "the DLRM job has stragglers"

        page, frame = open_distributed_tab(browser, base)
        rows = frame.locator('[data-testid="rank-table"] [data-testid="rank-row"]')
        rows.first.wait_for(timeout=90_000)
        assert rows.count() == 8
        badged = sorted(
            int(rows.nth(i).get_attribute("data-rank"))
            for i in range(rows.count())
            if rows.nth(i).locator('[data-testid="straggler-badge"]').count() == 1
        )
        assert badged == expected
        assert frame.locator('[data-testid="straggler-badge"]').count() == len(expected)
        assert frame.locator('[data-testid="collectives-table"] tbody tr').count() == len(doc["view"]["collectives"])
        for chart in ("rank-breakdown-chart", "transfer-sync-chart"):
            assert frame.locator(f'[data-testid="{chart}"]').locator("canvas, svg").count() >= 1
        frame.locator('[data-testid="device-table"]').wait_for(timeout=60_000)
        assert "view=distributed" in frame.url
        page.screenshot(path=str(artifacts / "distributed_tab.png"), full_page=True)
        frame.locator('[data-testid="distributed-page"]').screenshot(path=str(artifacts / "distributed_page.png"))
        page.close()


def test_insights_tab_histograms_and_p50(browser, tmp_path, artifacts):
    logdir, cache = sample_logdir(tmp_path, "h100", BERT_H100, name="w.1.pt.trace.json.gz")
    with tensorboard(logdir, cache) as base:
        doc = api(base, "insights", run="h100", worker="w", span=1)
        assert doc["state"] == "ready", doc
        expected_p50 = format_duration(doc["launch"]["p50"])

        page = browser.new_page(viewport={"width": 1400, "height": 2600})
        frame = open_plugin(page, base, "h100")
        # the Overview's Insights card shows the same p50 and leads to the tab
        card = frame.locator('[data-testid="insights-card"]')
        card.locator('[data-testid="card-launch-p50"]').wait_for(timeout=90_000)
        assert card.locator('[data-testid="card-launch-p50"]').inner_text().strip() == expected_p50
        assert card.locator('[data-testid="exposed-bar"]').count() == 1
        card.screenshot(path=str(artifacts / "insights_card.png"))
        assert frame.locator('[data-testid="distributed-tab"]').count() == 1  # one worker: its own groups and path
        frame.locator('[data-testid="insights-tab"]').click()
        page_el = frame.locator('[data-testid="insights-page"]')
        page_el.wait_for(timeout=60_000)
        p50 = frame.locator('[data-testid="launch-p50"]')
        p50.wait_for(timeout=60_000)
        assert p50.inner_text().strip() == expected_p50
        for hist in ("gap-histogram", "launch-histogram", "duration-histogram"):
            el = frame.locator(f'[data-testid="{hist}"]')
            assert el.locator("canvas, svg").count() >= 1, hist
            box = el.bounding_box()
            assert box and box["width"] > 200 and box["height"] > 100, (hist, box)
        assert frame.locator('[data-testid="exposed-bar"]').count() == 1
        assert "view=insights" in frame.url
        page.screenshot(path=str(artifacts / "insights_tab.png"), full_page=True)
        page_el.screenshot(path=str(artifacts / "insights_page.png"))
        page.close()
