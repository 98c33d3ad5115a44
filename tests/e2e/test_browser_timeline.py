"""Drive the Trace view in headless Debian chromium against a real TensorBoard.

On the resnet50 sample: open the Trace view and time its first canvas paint with data (the view's own
``window.__kinetoscopeTimeline`` hook), zoom ×1000 onto one kernel of the GPU stream track, click it on
the canvas, and check the details panel names it with its duration. ``KINETOSCOPE_BIG_TRACE`` (a path to
a large trace) runs the same on that file as a manual benchmark; without it that variant is skipped.
"""

from __future__ import annotations

import os
import shutil
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from conftest import SAMPLES

from tests.e2e.conftest import build_logdir, tensorboard
from tests.e2e.helpers import TIME_LADDER, api, enable_test_hooks, on_ladder, plugin_frame, select_file

HOOK = "window.__kinetoscopeTimeline"


def format_time_us(us: float) -> str:
    """The view's formatTimeUs (frontend/src/timeline/math.ts)."""
    return on_ladder(us, TIME_LADDER, lambda v, digits: f"{v:.{digits}f}")


def _pick_kernel(base: str, sel: dict, meta: dict) -> dict:
    """A real (unmerged) kernel on the first GPU stream track, long enough to click after a ×1000 zoom."""
    stream = next(t for t in meta["tracks"] if t["kind"] == "stream")
    best = None
    # look step by step (or at the whole file) with fine bins, so kernels come back unmerged
    windows = [(s["start_us"], s["end_us"]) for s in meta["steps"][:3]] or [(0, meta["end_us"])]
    for start, end in windows:
        doc = api(base, "timeline", **sel, start_us=start, end_us=end, width_px=4000, tracks=stream["id"])
        items = next(t for t in doc["tracks"] if t["id"] == stream["id"])["items"]
        for i, row in enumerate(items["row"]):
            if items["count"][i] == 1 and row >= 0 and (best is None or items["dur"][i] > best[1]):
                best = (row, items["dur"][i])
    assert best is not None, "no unmerged kernel on the stream track"
    event = api(base, "timeline_event", **sel, row=best[0])
    assert event["track"] == stream["id"]
    return event


def _open_trace(browser, base: str, sel: dict, artifacts: Path, tag: str) -> None:
    """Opens the Trace view the moment the Overview shows (no API request warms anything first)."""
    page = enable_test_hooks(browser.new_page(viewport={"width": 1500, "height": 1100}))
    page.goto(base + "/#kinetoscope")
    frame = plugin_frame(page)
    select_file(frame, **sel)
    frame.locator('[data-testid="gpu-utilization"]').first.wait_for(timeout=300_000)

    # first paint: from opening the view to the first canvas draw with data
    frame.click('[data-testid="trace-tab"]')
    frame.wait_for_function(f"() => {HOOK} && {HOOK}.firstPaintMs !== null", timeout=60_000)
    first_paint = frame.evaluate(f"{HOOK}.firstPaintMs")
    meta = api(base, "timeline_meta", **sel)
    print(f"[{tag}] Trace view first paint: {first_paint:.0f} ms ({meta['end_us'] / 1000:.1f} ms of trace)")
    # the figure is printed; its timing is benchmarks/bench_first_paint.py's (tests hold no timings)
    assert first_paint > 0, first_paint
    assert "view=trace" in frame.url
    frame.wait_for_function(f"() => {HOOK}.settled()", timeout=30_000)
    page.screenshot(path=str(artifacts / f"trace_{tag}_full.png"), full_page=True)

    # zoom ×1000 around the kernel
    kernel = _pick_kernel(base, sel, meta)
    full = frame.evaluate(f"{HOOK}.getWindow()")
    span = (full["end"] - full["start"]) / 1000
    mid = kernel["start_us"] + kernel["dur_us"] / 2
    span = max(span, kernel["dur_us"] * 1.5)
    frame.evaluate(f"([s, e]) => {HOOK}.setWindow(s, e)", [mid - span / 2, mid + span / 2])
    frame.wait_for_function(f"() => {HOOK}.settled()", timeout=30_000)
    frame.wait_for_function(f"(row) => {HOOK}.rectOf(row) !== null", arg=kernel["row"], timeout=30_000)
    rect = frame.evaluate(f"(row) => {HOOK}.rectOf(row)", kernel["row"])
    assert rect["w"] >= 3, rect
    x, y = rect["x"] + rect["w"] / 2, rect["y"] + rect["h"] / 2
    hit = frame.evaluate(f"([x, y]) => {HOOK}.itemAt(x, y)", [x, y])
    assert hit and hit["row"] == kernel["row"] and hit["count"] == 1, hit

    canvas = frame.locator('[data-testid="timeline-canvas"]')
    canvas.scroll_into_view_if_needed()
    canvas.click(position={"x": x, "y": y})
    details = frame.locator('[data-testid="timeline-details"]')
    details.locator('[data-testid="event-name"]').wait_for(timeout=30_000)
    text = details.inner_text()
    assert kernel["name"] in text, text
    assert format_time_us(kernel["dur_us"]) in details.locator('[data-testid="event-duration"]').inner_text()
    page.screenshot(path=str(artifacts / f"trace_{tag}_kernel.png"), full_page=True)

    # the launch partner is listed; clicking it jumps and selects it
    if any(f["type"] == "launch" for f in kernel["flows"]):
        launch = next(f for f in kernel["flows"] if f["type"] == "launch")
        details.locator('[data-testid="event-flow"]').first.click()
        frame.wait_for_function(
            "(name) => document.querySelector('[data-testid=event-name]')?.textContent === name",
            arg=launch["name"],
            timeout=30_000,
        )
        page.screenshot(path=str(artifacts / f"trace_{tag}_launch.png"), full_page=True)

    # search: highlights and "N matches" (then "n of N"); next zooms to the first match
    frame.fill('[data-testid="timeline-search"]', "sgemm" if tag == "resnet50" else kernel["name"][:12])
    frame.wait_for_function(
        "() => /^[0-9,]+ match(es)?/.test(document.querySelector('[data-testid=match-count]').textContent)",
        timeout=30_000,
    )
    frame.click('[data-testid="match-next"]')
    frame.wait_for_function(
        "() => document.querySelector('[data-testid=match-count]').textContent.startsWith('1 of')", timeout=30_000
    )
    frame.locator('[data-testid="timeline-details"] [data-testid="event-name"]').wait_for(timeout=30_000)

    # step selector zooms to the step
    if meta["steps"]:
        frame.select_option('[data-testid="step-select"]', "0")
        frame.wait_for_function(
            f"(s) => Math.abs({HOOK}.getWindow().start - s) < 1", arg=meta["steps"][0]["start_us"], timeout=10_000
        )
        assert (
            frame.eval_on_selector('[data-testid="step-select"]', "e => e.value") == "0"
        )  # the picked step stays shown
        frame.wait_for_function(f"() => {HOOK}.settled()", timeout=30_000)
        page.screenshot(path=str(artifacts / f"trace_{tag}_step.png"), full_page=True)
    page.close()


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    return build_logdir(tmp_path_factory.mktemp("logdir"), SAMPLES)


@pytest.mark.corpus
def test_trace_view_resnet(browser, logdir, tmp_path, artifacts):
    with tensorboard(logdir, tmp_path) as base:
        _open_trace(browser, base, {"run": "resnet50", "worker": "worker0", "span": "1"}, artifacts, "resnet50")


@pytest.mark.corpus
def test_show_in_trace_from_kernel_table(browser, logdir, tmp_path, artifacts):
    """The kernel table's "show in trace" opens the Trace view on that kernel, selected."""
    with tensorboard(logdir, tmp_path) as base:
        sel = {"run": "resnet50", "worker": "worker0", "span": "1"}
        top = api(base, "kernels", **sel)["rows"][0]
        event = api(base, "timeline_event", **sel, row=top["longest_row"])
        page = enable_test_hooks(browser.new_page(viewport={"width": 1500, "height": 1100}))
        page.goto(base + "/#kinetoscope")
        frame = plugin_frame(page)
        select_file(frame, **sel)
        frame.click('[data-testid="tab-kernel"]')
        frame.locator('[data-testid="kernel-table"] [data-testid="show-in-trace"]').first.click()
        details = frame.locator('[data-testid="timeline-details"]')
        details.locator('[data-testid="event-name"]').wait_for(timeout=30_000)
        assert details.locator('[data-testid="event-name"]').inner_text() == event["name"]
        assert "view=trace" in frame.url
        win = frame.evaluate(f"{HOOK}.getWindow()")
        assert win["start"] <= event["start_us"] and event["start_us"] + event["dur_us"] <= win["end"]
        assert (win["end"] - win["start"]) == pytest.approx(max(3 * event["dur_us"], 1), rel=1e-6)
        frame.wait_for_function(f"() => {HOOK}.settled()", timeout=30_000)
        page.screenshot(path=str(artifacts / "trace_show_in_trace.png"), full_page=True)
        page.close()


@pytest.mark.corpus
def test_users_pages_carry_no_test_hook(browser, logdir, tmp_path):
    """Without the test flag the Trace view draws, and window.__kinetoscopeTimeline is not installed."""
    with tensorboard(logdir, tmp_path) as base:
        sel = {"run": "resnet50", "worker": "worker0", "span": "1"}
        api(base, "timeline_meta", **sel)
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        page.goto(base + "/#kinetoscope")
        frame = plugin_frame(page)
        select_file(frame, **sel)
        frame.click('[data-testid="trace-tab"]')
        frame.locator('[data-testid="timeline-canvas"]').wait_for(timeout=60_000)
        frame.wait_for_function("() => !document.body.innerText.includes('Loading the timeline')", timeout=60_000)
        assert frame.evaluate(f"typeof {HOOK}") == "undefined"
        assert frame.evaluate("typeof window.__kinetoscopeMemory") == "undefined"
        page.close()


@pytest.mark.skipif(not os.environ.get("KINETOSCOPE_BIG_TRACE"), reason="manual benchmark: set KINETOSCOPE_BIG_TRACE")
def test_trace_view_big_trace(browser, tmp_path, artifacts):
    src = Path(os.environ["KINETOSCOPE_BIG_TRACE"])
    root = tmp_path / "logdir" / "big"
    root.mkdir(parents=True)
    name = src.name if ".pt.trace.json" in src.name else "big.1.pt.trace.json" + (".gz" if src.suffix == ".gz" else "")
    shutil.copy(src, root / name)
    cache = tmp_path / "cache"
    cache.mkdir()
    with tensorboard(tmp_path / "logdir", cache) as base:
        runs = api(base, "runs")
        for _ in range(3000):
            run = next(r for r in runs["runs"] if r["name"] == "big")
            span = run["workers"][0]["spans"][0]
            if span["state"] in ("ready", "error"):
                break
            time.sleep(0.5)
            runs = api(base, "runs")
        assert span["state"] == "ready", span
        sel = {"run": "big", "worker": run["workers"][0]["worker"], "span": span["span"]}
        _open_trace(browser, base, sel, artifacts, "big")


@pytest.mark.corpus
def test_trace_interaction(browser, logdir, tmp_path, artifacts):
    """Wheel zooms around the cursor, drag pans, W/S/A/D on the focused canvas, shift-drag box-selects."""
    with tensorboard(logdir, tmp_path) as base:
        page = enable_test_hooks(browser.new_page(viewport={"width": 1500, "height": 1100}))
        page.goto(base + "/#kinetoscope")
        frame = plugin_frame(page)
        frame.wait_for_selector('[data-testid="run-select"]', timeout=60_000)
        frame.select_option('[data-testid="run-select"]', "resnet50")
        frame.select_option('[data-testid="worker-select"]', "worker0")
        frame.select_option('[data-testid="span-select"]', "1")
        frame.click('[data-testid="trace-tab"]')
        frame.wait_for_function(f"() => {HOOK} && {HOOK}.firstPaintMs !== null", timeout=60_000)
        canvas = frame.locator('[data-testid="timeline-canvas"]')
        box = canvas.bounding_box()
        win0 = frame.evaluate(f"{HOOK}.getWindow()")

        # wheel up at 60 % of the plot: zooms in, the time under the cursor stays put
        x_plot0 = 190
        plot_w = box["width"] - 190 - 8
        cx = x_plot0 + plot_w * 0.6
        t_before = win0["start"] + (cx - x_plot0) / plot_w * (win0["end"] - win0["start"])
        page.mouse.move(box["x"] + cx, box["y"] + 200)
        for _ in range(5):
            page.mouse.wheel(0, -100)
        frame.wait_for_function(
            f"(s) => ({HOOK}.getWindow().end - {HOOK}.getWindow().start) < s * 0.6",
            arg=win0["end"] - win0["start"],
            timeout=10_000,
        )
        win1 = frame.evaluate(f"{HOOK}.getWindow()")
        t_after = win1["start"] + (cx - x_plot0) / plot_w * (win1["end"] - win1["start"])
        assert t_after == pytest.approx(t_before, abs=(win1["end"] - win1["start"]) * 0.01)

        # drag right by 100 px: the view moves to earlier times by 100 px worth
        page.mouse.move(box["x"] + cx, box["y"] + 200)
        page.mouse.down()
        page.mouse.move(box["x"] + cx + 50, box["y"] + 200, steps=3)
        page.mouse.move(box["x"] + cx + 100, box["y"] + 200, steps=3)
        page.mouse.up()
        win2 = frame.evaluate(f"{HOOK}.getWindow()")
        per_px = (win1["end"] - win1["start"]) / plot_w
        assert win2["start"] == pytest.approx(win1["start"] - 100 * per_px, rel=0.02)

        # keys on the focused canvas
        canvas.focus()
        page.keyboard.press("w")
        win3 = frame.evaluate(f"{HOOK}.getWindow()")
        assert win3["end"] - win3["start"] == pytest.approx((win2["end"] - win2["start"]) * 0.8, rel=1e-6)
        page.keyboard.press("d")
        win4 = frame.evaluate(f"{HOOK}.getWindow()")
        assert win4["start"] > win3["start"]

        # shift-drag: a time range with its duration and the slices' stats
        frame.evaluate(f"([s, e]) => {HOOK}.setWindow(s, e)", [win0["start"], win0["end"]])
        frame.wait_for_function(f"() => {HOOK}.settled()", timeout=30_000)
        page.keyboard.down("Shift")
        page.mouse.move(box["x"] + x_plot0 + plot_w * 0.2, box["y"] + 150)
        page.mouse.down()
        page.mouse.move(box["x"] + x_plot0 + plot_w * 0.4, box["y"] + box["height"] - 5, steps=5)
        page.mouse.up()
        page.keyboard.up("Shift")
        rng = frame.locator('[data-testid="timeline-range"]')
        rng.wait_for(timeout=10_000)
        assert "Selected range:" in rng.inner_text() and rng.locator("tbody tr").count() == 10
        page.screenshot(path=str(artifacts / "trace_resnet50_range.png"), full_page=True)
        page.close()


PERFETTO_STUB = """<!doctype html><title>perfetto stub</title><script>
window.received = null;
window.addEventListener("message", (e) => {
  if (e.data === "PING") { e.source.postMessage("PONG", e.origin); return; }
  if (e.data && e.data.perfetto) {
    const p = e.data.perfetto;
    window.received = {bytes: p.buffer.byteLength, title: p.title, fileName: p.fileName, head: Array.from(new Uint8Array(p.buffer, 0, 2))};
    document.title = "got " + p.buffer.byteLength;
  }
});
</script>"""


@pytest.mark.corpus
def test_download_and_open_in_perfetto(browser, logdir, tmp_path):
    """ "Download trace" serves the original file; "Open in Perfetto" does the documented handshake (PING until
    PONG, then the ArrayBuffer with title and file name). ui.perfetto.dev is played by a local stub page that the
    browser serves for that origin, so the test runs offline and checks what Perfetto would receive."""
    src = sorted((SAMPLES / "kineto" / "resnet50_num_workers_0").glob("worker0.*.gz"))[0]  # span 1: the earliest
    with tensorboard(logdir, tmp_path) as base:
        sel = {"run": "resnet50", "worker": "worker0", "span": "1"}
        api(base, "timeline_meta", **sel)
        context = enable_test_hooks(browser.new_context(viewport={"width": 1500, "height": 1100}))
        context.route(
            "https://ui.perfetto.dev/**",
            lambda route: route.fulfill(status=200, content_type="text/html", body=PERFETTO_STUB),
        )
        page = context.new_page()
        page.goto(base + "/#kinetoscope")
        frame = plugin_frame(page)
        frame.wait_for_selector('[data-testid="run-select"]', timeout=60_000)
        for key in ("run", "worker", "span"):
            frame.select_option(f'[data-testid="{key}-select"]', sel[key])
        frame.click('[data-testid="trace-tab"]')
        frame.wait_for_function(f"() => {HOOK} && {HOOK}.firstPaintMs !== null", timeout=60_000)

        url = frame.eval_on_selector('[data-testid="trace-download"]', "a => a.href")  # as the browser resolves it
        with urllib.request.urlopen(url, timeout=60) as r:
            assert r.read() == src.read_bytes()  # the original file, byte for byte

        with context.expect_page() as popup_info:
            frame.click('[data-testid="open-perfetto"]')
        popup = popup_info.value
        popup.wait_for_function("() => window.received !== null", timeout=30_000)
        got = popup.evaluate("window.received")
        assert got["bytes"] == src.stat().st_size and got["head"] == [0x1F, 0x8B]
        assert got["title"] == "resnet50 / worker0 / 1" and got["fileName"] == src.name
        context.close()
