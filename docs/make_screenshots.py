"""Refresh the screenshots in docs/screenshots/ from the real TensorBoard in headless Debian chromium.

Run from the repository root after building the bundle (``cd frontend && npm run build``)::

    python docs/make_screenshots.py            # all four
    python docs/make_screenshots.py diff       # one of: readme, first_screen, diff, memory_range

- ``docs/screenshot.png`` (the README's picture): the Overview of resnet50 num_workers 0
  (../shared/samples/kineto), the whole page.

- ``first_screen.png``: ``tensorboard --logdir samples`` as a new user opens it (no selection).
- ``diff_tab.png``: the Diff tab, resnet50 num_workers 0 (baseline) against 4 (../shared/samples/kineto).
- ``memory_range.png``: the Memory tab of the bert-small H100 trace with a range dragged on the curve.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from conftest import SAMPLES  # noqa: E402  (tests/conftest.py: ../shared/samples)

from tests.e2e.conftest import BERT_H100, CHROMIUM, CHROMIUM_ARGS, tensorboard  # noqa: E402
from tests.e2e.helpers import api, drag_across, enable_test_hooks, plugin_frame  # noqa: E402

OUT = REPO / "docs" / "screenshots"
VIEWPORT = {"width": 1500, "height": 1000}  # the page width the layout is checked at


def _wait_ready(base: str, spans: int) -> None:
    import time

    for _ in range(1200):
        runs = api(base, "runs")["runs"]
        states = [s["state"] for r in runs for w in r["workers"] for s in w["spans"]]
        if len(states) >= spans and all(s in ("ready", "error") for s in states):
            return
        time.sleep(0.25)
    raise TimeoutError("files did not load")


def _settle(frame, selector: str) -> None:
    frame.locator(selector).first.wait_for(timeout=120_000)
    frame.wait_for_timeout(1500)  # charts draw after their data


def first_screen(browser, tmp: Path) -> None:
    with tensorboard(REPO / "samples", tmp) as base:
        _wait_ready(base, 5)
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(base + "/#kinetoscope")
        frame = plugin_frame(page)
        _settle(frame, '[data-testid="step-chart"]')
        page.screenshot(path=str(OUT / "first_screen.png"))
        page.close()


def _copy_runs(tmp: Path, runs: dict[str, str]) -> Path:
    """A logdir of the V100 samples' runs: run name → folder under kineto/."""
    logdir = tmp / "logdir"
    for run, src in runs.items():
        (logdir / run).mkdir(parents=True)
        for f in sorted((SAMPLES / "kineto" / src).glob("*.pt.trace.json*")):
            shutil.copy(f, logdir / run / f.name)
    return logdir


def _shoot_hash(
    browser,
    logdir: Path,
    tmp: Path,
    files: int,
    state: str,
    settle: list[str],
    out: Path,
    viewport: dict,
    full_page: bool = False,
) -> None:
    """Open the tab at the hash ``state`` once ``files`` traces are ready, wait for ``settle``, shoot."""
    with tensorboard(logdir, tmp) as base:
        _wait_ready(base, files)
        page = browser.new_page(viewport=viewport)
        page.goto(base + "/#kinetoscope")
        frame = plugin_frame(page)
        frame.wait_for_selector('[data-testid="run-select"]', timeout=60_000)
        frame.evaluate(f"() => {{ location.hash = '#{state}'; }}")
        for selector in settle:
            _settle(frame, selector)
        page.screenshot(path=str(out), full_page=full_page)
        page.close()


def readme(browser, tmp: Path) -> None:
    _shoot_hash(
        browser,
        _copy_runs(tmp, {"resnet50": "resnet50_num_workers_0"}),
        tmp,
        2,
        "run=resnet50&worker=worker0&span=1",
        ['[data-testid="insights-card"] [data-testid="exposed-bar"]', '[data-testid="step-chart"]'],
        REPO / "docs" / "screenshot.png",
        VIEWPORT,
        full_page=True,
    )


def diff(browser, tmp: Path) -> None:
    _shoot_hash(
        browser,
        _copy_runs(tmp, {"nw0": "resnet50_num_workers_0", "nw4": "resnet50_num_workers_4"}),
        tmp,
        4,
        "run=nw0&worker=worker0&span=1&view=diff",
        ['[data-testid="diff-steps"]'],
        OUT / "diff_tab.png",
        dict(VIEWPORT, height=1400),
    )


def memory_range(browser, tmp: Path) -> None:
    logdir = tmp / "logdir"
    (logdir / "bert").mkdir(parents=True)
    shutil.copy(SAMPLES / BERT_H100, logdir / "bert" / "w.1.pt.trace.json.gz")
    with tensorboard(logdir, tmp) as base:
        _wait_ready(base, 1)
        page = enable_test_hooks(browser.new_page(viewport=dict(VIEWPORT, height=1100)))
        page.goto(base + "/#kinetoscope")
        frame = plugin_frame(page)
        frame.wait_for_selector('[data-testid="run-select"]', timeout=60_000)
        frame.evaluate("() => { location.hash = '#run=bert&worker=w&span=1&view=memory'; }")
        _settle(frame, '[data-testid="memory-curve"] canvas')
        curve = frame.locator('[data-testid="memory-curve"]')
        drag_across(page, curve)
        frame.locator('[data-testid="memory-reset-range"]:enabled').wait_for(timeout=30_000)
        frame.wait_for_timeout(1500)
        page.screenshot(path=str(OUT / "memory_range.png"))
        page.close()


SHOTS = {"readme": readme, "first_screen": first_screen, "diff": diff, "memory_range": memory_range}


def main(names: list[str]) -> None:
    from playwright.sync_api import sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for name in names or list(SHOTS):
            with tempfile.TemporaryDirectory() as tmp:
                SHOTS[name](browser, Path(tmp))
                print(f"wrote {name}")
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1:])
