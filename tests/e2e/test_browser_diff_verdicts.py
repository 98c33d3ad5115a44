"""The Diff tab's verdicts and waterfall in headless Debian chromium at a 1500 px viewport.

Logdir: a GPU/CPU pair, ``gpu`` (samples/synthetic_ddp rank 0, one GPU, 864.6 µs steps) as the
baseline and ``cpu`` (samples/torch_cpu_cnn, a real CPU trace, 6.87 ms steps) as the experiment.
(1) Every row's verdict is the server's ``status`` (the UI never recomputes it); ``ProfilerStep`` is
"slower", like the step total (+694.8 %), where it read "faster −100.0 %" before.
(2) The waterfall ends at the step-total Δ: the sum line reads rows + remainder = the Step comparison's
total Δ, the server's numbers, at the top level and one level down.
(3) The operator table fits the card (no column cut off); long names that share the
``autograd::engine::evaluate_function:`` prefix are elided in the middle, stay distinct, and carry the
whole name in their title; hovering a waterfall label shows the whole name in the tooltip.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.e2e.conftest import tensorboard
from tests.e2e.helpers import api, format_duration, plugin_frame, ready_diff, select_file

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
PREFIX = "autograd::engine::evaluate_function: "


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("diffverdicts")
    for run, src in (
        ("gpu", "synthetic_ddp/rank0.1751410900000.pt.trace.json.gz"),
        ("cpu", "torch_cpu_cnn/worker0.1795328811011213031.pt.trace.json.gz"),
    ):
        (root / run).mkdir()
        shutil.copy(SAMPLES / src, root / run / "worker0.1.pt.trace.json.gz")
    return root


def _signed(us: float) -> str:
    text = format_duration(us)
    return "+" + text if us > 0 else "\u2212" + text.lstrip("-") if us < 0 else text


def _check_level(frame, doc) -> None:
    rows = frame.locator('[data-testid="diff-op-row"]')
    rows.first.wait_for(timeout=60_000)
    shown = rows.evaluate_all(
        "rs => rs.map(r => [r.dataset.name, r.querySelector('[data-testid=diff-status]').textContent])"
    )
    assert shown == [[op["name"], op["status"]] for op in doc["operators"]]
    wf = doc["waterfall"]
    assert wf["total_us"] == doc["steps"]["delta"]["total_us"]
    assert wf["rows_us"] + wf["remainder_us"] == pytest.approx(wf["total_us"], abs=1e-6)
    total_row = frame.locator('[data-testid="diff-step-row"][data-key="total_us"] [data-testid="diff-step-delta"]')
    assert (
        frame.locator('[data-testid="diff-wf-total"]').inner_text() == _signed(wf["total_us"]) == total_row.inner_text()
    )
    assert frame.locator('[data-testid="diff-wf-rows"]').inner_text() == _signed(wf["rows_us"])
    assert frame.locator('[data-testid="diff-wf-remainder"]').inner_text() == _signed(wf["remainder_us"])


def test_diff_verdicts_waterfall_and_long_names(browser, logdir, tmp_path, artifacts):
    cache = tmp_path / "cache"
    cache.mkdir()
    with tensorboard(logdir, cache) as base:
        sides, top = ready_diff(base, "gpu", "cpu")
        step = top["steps"]["delta"]["total_us"]
        assert step == pytest.approx(6006.7, abs=0.1) and top["steps"]["relative_pct"]["total_us"] == pytest.approx(
            694.8, abs=0.05
        )
        ps = next(op for op in top["operators"] if op["name"] == "ProfilerStep")
        assert ps["status"] == "slower" and ps["change_us"] == pytest.approx(step)

        page = browser.new_page(viewport={"width": 1500, "height": 1400})
        page.goto(base + "/#kinetoscope")
        frame = plugin_frame(page)
        select_file(frame, "gpu", "worker0", "1")
        frame.locator('[data-testid="diff-tab"]').click()
        frame.locator('[data-testid="diff-steps"]').wait_for(timeout=120_000)
        assert frame.locator('[data-testid="diff-exp-run"]').input_value() == "cpu"
        _check_level(frame, top)
        row = frame.locator('[data-testid="diff-op-row"][data-name="ProfilerStep"]')
        assert row.locator('[data-testid="diff-change"]').inner_text().strip() == f"{_signed(step)} (+694.8 %)"

        # (3) no column cut off: the table is no wider than its scroll box, which fits in the card
        scroll = frame.locator(".diff-op-scroll")
        widths = scroll.evaluate(
            "e => [e.scrollWidth, e.clientWidth, e.getBoundingClientRect().right,"
            " e.closest('[data-testid=diff-operators]').getBoundingClientRect().right]"
        )
        assert widths[0] <= widths[1] and widths[2] <= widths[3], widths
        last = frame.locator('[data-testid="diff-op-row"]').first.locator("td").last
        assert last.bounding_box()["x"] + last.bounding_box()["width"] <= widths[3]

        # one level down: long names with a shared prefix
        row.click()
        level = api(base, "diff", path=json.dumps(["ProfilerStep"]), **sides)
        frame.locator('[data-testid="diff-crumb"][aria-current="page"]').wait_for(timeout=60_000)
        _check_level(frame, level)
        long_names = [op["name"] for op in level["operators"] if op["name"].startswith(PREFIX)]
        assert len(long_names) >= 2
        cells = [
            frame.locator(f'[data-testid="diff-op-row"][data-name="{n}"] [data-testid="diff-op-name"]')
            for n in long_names
        ]
        texts = [c.inner_text().strip().lstrip("\u25b8") for c in cells]
        assert len(set(texts)) == len(texts) and all("\u2026" in t for t in texts), texts
        for name, cell, text in zip(long_names, cells, texts):
            assert cell.get_attribute("title").startswith(name)
            assert text.endswith(name[-10:]) and text.startswith(name[:10])
        widths = frame.locator(".diff-op-scroll").evaluate("e => [e.scrollWidth, e.clientWidth]")
        assert widths[0] <= widths[1], widths

        # hovering a waterfall label shows its whole name
        chart = frame.locator('[data-testid="diff-waterfall"]')
        chart.scroll_into_view_if_needed()
        box = chart.bounding_box()
        n = len(level["operators"]) + 2  # rows, the remainder, the step total
        index = next(i for i, op in enumerate(level["operators"]) if op["name"] in long_names)
        band = (box["height"] - 16 - 28 - 20) / n
        found = False
        for dy in (0.5, 0.3, 0.7):
            y = box["y"] + 16 + (index + dy) * band
            for x in (box["x"] + 40, box["x"] + 80, box["x"] + 140):
                page.mouse.move(x, y)
                page.wait_for_timeout(150)
                tip = chart.locator("div", has_text=level["operators"][index]["name"])
                if tip.count() and tip.first.is_visible():
                    found = True
                    break
            if found:
                break
        page.screenshot(path=str(artifacts / "diff_verdicts.png"), full_page=True)
        assert found, "no tooltip with the whole name on hovering the waterfall label"
        page.close()
