"""Odd real traces (ROCm names, no device, one counter sample, unwinder stacks) in headless Debian
chromium against a real TensorBoard.

Logdir (copies of real samples): ``rocm`` (hta/amd_trace, MI250: ROCm kernel names up to 250
characters), ``cpu`` (torch213_cpu: no device at all), ``composer`` (one ``cpu/cpu_percent`` sample,
722 µs before the first step) and ``snapshots`` (memory_snapshots: stacks that start in the unwinder).
"""

from __future__ import annotations

import shutil

import pytest
from conftest import SAMPLES

from tests.e2e.conftest import tensorboard
from tests.e2e.helpers import api, enable_test_hooks, plugin_frame, wait_spans_ready

pytestmark = pytest.mark.corpus  # reads the external sample corpus (docs/TESTING.md)

ROCM = "mi250_minitoy_train_ROCm6_2_kineto.json.gz"
CPU = "worker0.1795324943899052487.pt.trace.json"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("issue18")
    for run, src in (
        ("rocm", SAMPLES / "hta" / "amd_trace" / ROCM),
        ("cpu", SAMPLES / "torch213_cpu" / CPU),
        ("composer", SAMPLES / "composer" / "rank_0.trace.json"),
    ):
        (root / run).mkdir()
        name = "rank0.1.pt.trace.json" if run == "composer" else src.name
        shutil.copy(src, root / run / name)
    (root / "snapshots").mkdir()
    shutil.copy(SAMPLES / "memory_snapshots" / "mem_snapshot.pickle", root / "snapshots" / "mem_snapshot.pickle")
    return root


def _go(frame, run: str, runs: dict, view: str | None = None) -> None:
    sel = {"run": run}
    if runs[run]["workers"]:
        w = runs[run]["workers"][0]
        sel.update(worker=w["worker"], span=w["spans"][0]["span"])
    if view:
        sel["view"] = view
    frame.evaluate("(h) => { location.hash = h; }", "#" + "&".join(f"{k}={v}" for k, v in sel.items()))


def test_issue18_items_in_the_browser(browser, logdir, tmp_path, artifacts):
    with tensorboard(logdir, tmp_path) as base:
        runs = wait_spans_ready(base, 3)
        page = enable_test_hooks(browser.new_page(viewport={"width": 1400, "height": 1000}))
        page.goto(base + "/#kinetoscope")
        frame = plugin_frame(page)
        frame.wait_for_selector('[data-testid="run-select"]', timeout=60_000)

        # item 13: ROCm kernel names on one line, elided in the middle, the full name as the title
        _go(frame, "rocm", runs, "kernel")
        frame.locator('[data-testid="kernel-table"] [data-testid="elided-name"]').first.wait_for(timeout=60_000)
        names = frame.eval_on_selector_all(
            '[data-testid="kernel-table"] [data-testid="elided-name"]',
            "els => els.map(e => ({title: e.title, text: e.textContent, inner: e.innerText, h: e.getBoundingClientRect().height,"
            " w: e.getBoundingClientRect().width, full: e.scrollWidth, head: e.firstChild.scrollWidth > e.firstChild.clientWidth,"
            " lh: parseFloat(getComputedStyle(e).fontSize)}))",
        )
        w = runs["rocm"]["workers"][0]
        q = {"run": "rocm", "worker": w["worker"], "span": w["spans"][0]["span"], "limit": "100"}
        want = [r["name"] for r in api(base, "kernels", **q)["rows"]]
        assert [n["title"] for n in names] == want[: len(names)]
        assert [n["text"] for n in names] == [n["title"] for n in names]  # the whole name stays in the DOM
        assert [n["inner"] for n in names] == [n["title"] for n in names]  # as one line (copy, innerText)
        longest = max(names, key=lambda n: len(n["title"]))
        assert len(longest["title"]) > 150 and longest["head"], longest  # elided on screen
        assert all(n["h"] < 2 * n["lh"] for n in names), [(n["h"], n["title"][:40]) for n in names]
        table_h = frame.locator('[data-testid="kernel-table"]').bounding_box()["height"]
        assert table_h < 60 + 40 * len(names), table_h  # 27 rows were 4,245 px tall when names wrapped
        page.screenshot(path=str(artifacts / "issue18_rocm_kernels.png"))

        # item 12: a CPU-only trace's Insights tab and Overview card say there is nothing on a device
        _go(frame, "cpu", runs, "insights")
        note = frame.locator('[data-testid="insights-no-device"]')
        note.wait_for(timeout=60_000)
        assert "no device activity to analyse" in note.inner_text()
        assert frame.locator('[data-testid="exposed-bar"]').count() == 0
        _go(frame, "cpu", runs)
        frame.locator('[data-testid="insights-card"] [data-testid="insights-no-device"]').wait_for(timeout=60_000)
        assert frame.locator('[data-testid="exposed-bar"]').count() == 0

        # item 10: Composer's one cpu sample is a value, not a dot on a negative time axis
        _go(frame, "composer", runs)
        values = frame.locator('[data-testid="system-metrics-values"]')
        values.wait_for(timeout=60_000)
        assert values.inner_text().split("\t")[0].strip() == "cpu/cpu_percent"
        assert "722 µs before the first step" in values.inner_text()
        assert frame.locator('[data-testid="system-metrics-chart"]').count() == 0

        # item 8: the snapshot's top allocations name user code or the op, never the unwinder
        _go(frame, "snapshots", runs, "snapshots")
        rows = frame.locator('[data-testid="snapshot-allocation-row"]')
        rows.first.wait_for(timeout=60_000)
        frames = frame.eval_on_selector_all(
            '[data-testid="snapshot-allocations-table"] [data-testid="elided-name"]', "els => els.map(e => e.title)"
        )
        assert frames and not [f for f in frames if "torch::unwind" in f or f.startswith("??")], frames[:5]
        assert any(f.endswith(".py:7:custom_softmax") for f in frames), frames[:10]
        page.close()
