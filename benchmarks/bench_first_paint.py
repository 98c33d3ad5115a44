"""The Trace view's first paint in a real browser: from clicking the Trace tab to the first canvas
draw with data, on the resnet50 V100 sample served by a real TensorBoard (the figure the browser test
of the Trace view prints; tests hold no timings).

    python benchmarks/bench_first_paint.py [--repeat 5]

Needs Debian's chromium ($KINETOSCOPE_CHROMIUM, else /usr/bin/chromium), playwright's Python package
and the sample corpus (../shared/samples or $KINETOSCOPE_SAMPLES). Each repeat opens a fresh page on
the same server (the file is loaded once, the first time the Overview shows). Last line:
``first_paint_ms_best= first_paint_ms_median= load=``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from conftest import SAMPLES  # noqa: E402

from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, build_logdir, tensorboard  # noqa: E402
from tests.e2e.helpers import enable_test_hooks, plugin_frame, select_file  # noqa: E402

HOOK = "window.__kinetoscopeTimeline"


def first_paint_ms(browser, base: str) -> float:
    """One fresh page: open the Overview of the resnet50 file, then the Trace tab; its first paint (ms)."""
    page = enable_test_hooks(browser.new_page(viewport={"width": 1500, "height": 1100}))
    try:
        page.goto(base + "/#kinetoscope")
        frame = plugin_frame(page)
        select_file(frame, run="resnet50")
        frame.locator('[data-testid="gpu-utilization"]').first.wait_for(timeout=300_000)
        frame.click('[data-testid="trace-tab"]')
        frame.wait_for_function(f"() => {HOOK} && {HOOK}.firstPaintMs !== null", timeout=60_000)
        return float(frame.evaluate(f"{HOOK}.firstPaintMs"))
    finally:
        page.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        logdir = build_logdir(root / "logdir", SAMPLES)
        cache = root / "cache"
        cache.mkdir()
        with tensorboard(logdir, cache) as base, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            times = []
            for i in range(args.repeat):
                times.append(first_paint_ms(browser, base))
                print(f"run {i + 1}: first paint {times[-1]:.0f} ms")
            browser.close()
    load_after = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"first_paint_ms_best={min(times):.0f} first_paint_ms_median={statistics.median(times):.0f} "
        f"load={load_before}/{load_after}"
    )


if __name__ == "__main__":
    main()
