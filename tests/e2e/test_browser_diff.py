"""Drive the Diff tab and the Composer Overview additions in headless Debian chromium.

Logdir: ``nw0`` and ``nw4`` (the resnet50 runs with num_workers 0 and 4) and ``composer`` (the Composer
sample as ``composer/rank0.1.pt.trace.json``).
(1) Diff nw0 (baseline) against nw4: the DataLoader Δ shown is the ``diff`` route's
``steps.delta.dataloader_us`` as the UI formats it; the operator table drills down two levels
(ProfilerStep → enumerate(DataLoader)) and the breadcrumbs name both.
(2) The Composer run's Overview shows the trainer event rows and its one system-metric sample as a value.
"""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import SAMPLES

from tests.e2e.conftest import tensorboard
from tests.e2e.helpers import api, format_duration, plugin_frame, ready_diff, select_file, wait_all_ready

pytestmark = pytest.mark.corpus  # reads the external sample corpus (docs/TESTING.md)


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("difflog")
    for run, src in (("nw0", "resnet50_num_workers_0"), ("nw4", "resnet50_num_workers_4")):
        (root / run).mkdir()
        for f in sorted((SAMPLES / "kineto" / src).glob("*.pt.trace.json*")):
            shutil.copy(f, root / run / f.name)
    (root / "composer").mkdir()
    shutil.copy(SAMPLES / "composer" / "rank_0.trace.json", root / "composer" / "rank0.1.pt.trace.json")
    return root


def _signed(us: float) -> str:
    """diff/model.ts signed(formatDuration(us))."""
    text = format_duration(us)
    if us > 0:
        return "+" + text
    if us < 0:
        return "\u2212" + text.lstrip("-")
    return text


def _open(page, base: str, run: str):
    page.goto(base + "/#kinetoscope")
    frame = plugin_frame(page)
    select_file(frame, run)
    return frame


def _row(frame, name: str):
    return frame.locator(f'[data-testid="diff-op-row"][data-name="{name}"]')


def test_diff_drill_down_and_composer_overview(browser, logdir, tmp_path, artifacts):
    cache = tmp_path / "cache"
    cache.mkdir()
    with tensorboard(logdir, cache) as base:
        wait_all_ready(base, "composer", 1)
        sides, doc = ready_diff(base, "nw0", "nw4")
        delta = doc["steps"]["delta"]["dataloader_us"]
        assert delta < -50_000, "the DataLoader category shrinks with 4 workers"
        expected = _signed(delta)

        # (1) the Diff tab: baseline = the current selection (nw0), experiment = the other run (nw4)
        page = browser.new_page(viewport={"width": 1500, "height": 1400})
        frame = _open(page, base, "nw0")
        frame.select_option('[data-testid="span-select"]', "1")
        frame.locator('[data-testid="diff-tab"]').click()
        steps = frame.locator('[data-testid="diff-steps"]')
        steps.wait_for(timeout=120_000)
        assert frame.locator('[data-testid="diff-base-run"]').input_value() == "nw0"
        assert frame.locator('[data-testid="diff-exp-run"]').input_value() == "nw4"
        dl = steps.locator('[data-testid="diff-step-row"][data-key="dataloader_us"]')
        assert dl.locator('[data-testid="diff-step-delta"]').inner_text().strip() == expected
        chart = frame.locator('[data-testid="diff-steps-chart"]')
        assert chart.locator("canvas").count() >= 1
        # the defaults follow the main selection and are not written to the URL; a pick is (below)
        assert "base_run=" not in frame.url and "diff_for=" not in frame.url
        assert (
            frame.locator('[data-testid="diff-rule"]')
            .inner_text()
            .startswith("Baseline: the main selection (nw0 \u00b7 worker0 \u00b7 span 1)")
        )
        frame.locator('[data-testid="diff-kernels"] [data-testid="diff-kernel-row"]').first.wait_for(timeout=30_000)
        page.screenshot(path=str(artifacts / "diff_steps.png"), full_page=True)

        # drill down: ProfilerStep -> enumerate(DataLoader) -> its children
        _row(frame, "ProfilerStep").click()
        _row(frame, "enumerate(DataLoader)").wait_for(timeout=60_000)
        _row(frame, "enumerate(DataLoader)").click()
        level2 = json.loads(
            json.dumps(api(base, "diff", path=json.dumps(["ProfilerStep", "enumerate(DataLoader)"]), **sides))
        )
        child_names = [op["name"] for op in level2["operators"]]
        assert child_names, level2
        _row(frame, child_names[-1]).wait_for(timeout=60_000)
        shown = frame.locator('[data-testid="diff-op-row"]').evaluate_all("rs => rs.map(r => r.dataset.name)")
        assert shown == child_names
        crumbs = frame.locator('[data-testid="diff-breadcrumbs"] [data-testid="diff-crumb"]').all_inner_texts()
        assert crumbs == ["All operators", "ProfilerStep", "enumerate(DataLoader)"]
        badge = _row(frame, "aten::stack").locator('[data-testid="diff-status"]')
        assert badge.inner_text() == next(op["status"] for op in level2["operators"] if op["name"] == "aten::stack")
        assert "diff_path=" in frame.url and "base_run=nw0" in frame.url and "exp_run=nw4" in frame.url
        assert "diff_for=" in frame.url
        wf = frame.locator('[data-testid="diff-waterfall"]')
        wf.scroll_into_view_if_needed()
        box = wf.bounding_box()
        assert box and box["height"] > 150 and wf.locator("canvas").count() >= 1
        frame.locator('[data-testid="diff-operators"]').scroll_into_view_if_needed()
        page.screenshot(path=str(artifacts / "diff_drilldown.png"), full_page=True)
        # back to the top level with the first crumb
        frame.locator('[data-testid="diff-breadcrumbs"] [data-testid="diff-crumb"]').first.click()
        _row(frame, "ProfilerStep").wait_for(timeout=60_000)
        # the drill-down was a pick under nw0; with nw4 as the main selection the Diff tab compares nw4
        # (it kept comparing the old pair: the trial's torch_cpu_cnn Diff showed synthetic_ddp vs kineto2021)
        frame.locator('[data-testid="tab-overview"]').click()
        select_file(frame, "nw4", "worker0", "1")
        frame.locator('[data-testid="diff-tab"]').click()
        frame.locator('[data-testid="diff-steps"]').wait_for(timeout=120_000)
        assert frame.locator('[data-testid="diff-base-run"]').input_value() == "nw4"
        assert frame.locator('[data-testid="diff-exp-run"]').input_value() == "nw0"
        # and back on nw0, the pick made there applies again (it is kept for its main selection)
        frame.locator('[data-testid="tab-overview"]').click()
        select_file(frame, "nw0", "worker0", "1")
        frame.locator('[data-testid="diff-tab"]').click()
        frame.locator('[data-testid="diff-follow-main"]').wait_for(timeout=60_000)
        assert frame.locator('[data-testid="diff-base-run"]').input_value() == "nw0"
        page.close()

        # (2) the Composer Overview: trainer events and system metrics
        overview = api(base, "overview", run="composer", worker="rank0", span=1)
        events = [e["name"] for e in overview["trainer_events"]]
        assert "event/forward" in events and overview["system_metrics"]
        page = browser.new_page(viewport={"width": 1400, "height": 2200})
        frame = _open(page, base, "composer")
        card = frame.locator('[data-testid="trainer-events"]')
        card.wait_for(timeout=120_000)
        rows = card.locator('[data-testid="trainer-event-row"]')
        assert rows.count() == len(events)
        names = [t.split("\t")[0].strip() for t in rows.all_inner_texts()]
        assert names == events
        assert "event/forward" in names and "event/backward" in names
        # the sample's one cpu sample is shown as a value, not drawn
        assert [len(m["ts_us"]) for m in overview["system_metrics"]] == [1]
        metrics = frame.locator('[data-testid="system-metrics-values"]')
        metrics.wait_for(timeout=30_000)
        assert metrics.inner_text().split("\t")[0].strip() == overview["system_metrics"][0]["name"]
        assert frame.locator('[data-testid="system-metrics-chart"]').count() == 0
        page.screenshot(path=str(artifacts / "composer_overview.png"), full_page=True)
        page.close()
