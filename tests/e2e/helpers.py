"""Helpers shared by the browser tests: find the plugin's iframe, pick a file in it, and call the
plugin's JSON routes the way the frontend does (waiting out "loading"/"queued" answers)."""

from __future__ import annotations

import contextlib
import json
import time
import urllib.parse
import urllib.request
from typing import Callable

API_POLL_S = 0.2
API_POLLS = 3000  # 3000 × 0.2 s: a cold parse of the largest sample fits well inside


TEST_HOOKS_KEY = "kinetoscope.testHooks"  # frontend/src/views/trace/testHooks.ts


def enable_test_hooks(page_or_context):
    """Ask the frontend for its test hooks (``window.__kinetoscopeTimeline``): users' pages never get
    them; a test sets this localStorage flag in every frame before the plugin's script runs."""
    page_or_context.add_init_script(f"try {{ window.localStorage.setItem('{TEST_HOOKS_KEY}', '1') }} catch (e) {{}}")
    return page_or_context


def plugin_frame(page):
    """The Kinetoscope iframe inside TensorBoard's page (waits up to 60 s for it)."""
    page.wait_for_selector("iframe", timeout=60_000)
    for _ in range(600):
        for frame in page.frames:
            if "plugin_entry.html" in frame.url and "kinetoscope" in frame.url:
                return frame
        page.wait_for_timeout(100)
    raise AssertionError(f"no kinetoscope iframe among {[f.url for f in page.frames]}")


def select_file(frame, run: str, worker: str | None = None, span: str | None = None) -> None:
    """Pick a run (and a worker and span when given) in the plugin's Run/Worker/Span selects."""
    frame.wait_for_selector('[data-testid="run-select"]', timeout=60_000)
    frame.select_option('[data-testid="run-select"]', run)
    if worker is not None:
        frame.select_option('[data-testid="worker-select"]', worker)
    if span is not None:
        frame.select_option('[data-testid="span-select"]', span)


def shown_utilization(logdir, run: str, worker: str, span: str) -> str:
    """The first GPU's utilization as the Overview shows it ("55.51 %"), from the same analysis run
    headless over ``logdir``."""
    from tb_plugin.registry.runs import RunRegistry

    reg = RunRegistry(str(logdir))
    reg.scan()
    st = reg.load(reg.find(run, worker, span))
    return f"{st.overview['gpus'][0]['utilization_pct']:.2f} %"


def check_overview(frame, run: str, worker: str, span: str, utilization: str):
    """Pick the file in ``frame`` (a page or the plugin's iframe): the Overview's first GPU utilization
    reads ``utilization`` and its step chart is at least 200 × 100 px; returns the chart's locator."""
    select_file(frame, run, worker, span)
    util = frame.locator('[data-testid="gpu-utilization"]').first
    util.wait_for(timeout=90_000)
    assert util.inner_text().strip() == utilization
    chart = frame.locator('[data-testid="step-chart"]')
    chart.wait_for(timeout=30_000)
    box = chart.bounding_box()
    assert box and box["width"] > 200 and box["height"] > 100
    return chart


def open_plugin(page, base: str, run: str | None = None):
    """Open TensorBoard's Kinetoscope page at ``base``; the plugin's iframe, with ``run`` picked when given."""
    page.goto(base + "/#kinetoscope")
    frame = plugin_frame(page)
    if run is not None:
        select_file(frame, run)
    return frame


def open_tab(frame, testid: str, timeout_ms: int = 60_000) -> None:
    """Click the tab ``[data-testid=testid]`` once it shows (waiting up to ``timeout_ms``)."""
    tab = frame.locator(f'[data-testid="{testid}"]')
    tab.wait_for(timeout=timeout_ms)
    tab.click()


def drag_across(page, locator) -> None:
    """A real mouse drag over ``locator``, at 55 % of its height, from 45 % to 65 % of its width (10 moves)."""
    box = locator.bounding_box()
    y = box["y"] + box["height"] * 0.55
    page.mouse.move(box["x"] + box["width"] * 0.45, y)
    page.mouse.down()
    for i in range(1, 11):
        page.mouse.move(box["x"] + box["width"] * (0.45 + 0.02 * i), y)
    page.mouse.up()


def api(base: str, route: str, **params) -> dict:
    """GET a plugin route as JSON, asking again while the file is still loading or queued."""
    url = f"{base}/data/plugin/kinetoscope/{route}?{urllib.parse.urlencode(params)}"
    for _ in range(API_POLLS):
        with urllib.request.urlopen(url, timeout=120) as r:
            doc = json.load(r)
        if doc.get("state") not in ("loading", "queued"):
            return doc
        time.sleep(API_POLL_S)
    raise TimeoutError(url)


def wait_all_ready(base: str, run: str, count: int) -> None:
    """Wait (up to ~5 min) until `run` lists `count` workers whose spans are all ready."""
    for _ in range(1200):
        runs = api(base, "runs")["runs"]
        r = next((r for r in runs if r["name"] == run), None)
        if r and len(r["workers"]) == count and all(s["state"] == "ready" for w in r["workers"] for s in w["spans"]):
            return
        time.sleep(0.25)
    raise TimeoutError(f"run {run} never had {count} ready workers")


def ready_diff(base: str, base_run: str, exp_run: str) -> tuple[dict, dict]:
    """The Diff of span 1 of ``worker0`` of two one-worker runs, once both are ready: ``(the query's
    sides, the answer)``, the answer asserted ready."""
    for run in (base_run, exp_run):
        wait_all_ready(base, run, 1)
    sides = dict(
        base_run=base_run, base_worker="worker0", base_span=1, exp_run=exp_run, exp_worker="worker0", exp_span=1
    )
    doc = api(base, "diff", **sides)
    assert doc["state"] == "ready", doc
    return sides, doc


def dlrm_ranks() -> list:
    """The 8 DLRM rank files (``dlrm_8ranks/*.pt.trace.json``), relative to the samples folder, sorted."""
    from conftest import SAMPLES

    return [f.relative_to(SAMPLES) for f in sorted((SAMPLES / "dlrm_8ranks").glob("*.pt.trace.json"))]


@contextlib.contextmanager
def job_tensorboard(tmp_path, docs=(), samples=()):
    """A real TensorBoard over one run ``job``: the trace documents ``docs`` written as
    ``rank<i>.pt.trace.json`` and the sample files ``samples`` (relative to the samples folder) copied
    in; yields its base URL once every one of them is ready."""
    from tests.e2e.conftest import sample_logdir, tensorboard

    logdir, cache = sample_logdir(tmp_path, "job", *samples)
    for r, doc in enumerate(docs):
        (logdir / "job" / f"rank{r}.pt.trace.json").write_text(json.dumps(doc))
    with tensorboard(logdir, cache) as base:
        wait_all_ready(base, "job", len(docs) + len(samples))
        yield base


def open_distributed_tab(browser, base: str, height: int = 2600):
    """``(page, frame)``: a new 1400 × ``height`` page on run ``job``'s Distributed tab."""
    page = enable_test_hooks(
        browser.new_page(viewport={"width": 1400, "height": height})
    )  # "show in trace" checks the canvas
    frame = open_plugin(page, base, "job")
    open_tab(frame, "distributed-tab")
    return page, frame


#: A unit ladder: the first step whose bound ``|µs|`` is below gives ``µs × times / per`` in its unit, to
#: ``digits`` decimals; the last step has no bound.
Ladder = tuple[tuple[float, int, int, str, int], ...]
#: formatDuration's ladder (frontend/src/util/format.ts)
DURATION_LADDER: Ladder = (
    (10, 1, 1, "\u00b5s", 2),
    (1000, 1, 1, "\u00b5s", 0),
    (1_000_000, 1, 1000, "ms", 2),
    (float("inf"), 1, 1_000_000, "s", 2),
)
#: the timeline's formatTimeUs ladder (frontend/src/timeline/math.ts)
TIME_LADDER: Ladder = (
    (1, 1000, 1, "ns", 1),
    (1000, 1, 1, "µs", 3),
    (1e6, 1, 1000, "ms", 3),
    (float("inf"), 1, 1e6, "s", 3),
)


def on_ladder(us: float, ladder: Ladder, fixed: Callable[[float, int], str]) -> str:
    """``us`` written on ``ladder``'s first step that takes it, its number by ``fixed(value, digits)``."""
    bound, times, per, unit, digits = next(step for step in ladder if abs(us) < step[0])
    return f"{fixed(us * times / per, digits)} {unit}"


def format_duration(us: float) -> str:
    """The frontend's formatDuration (frontend/src/util/format.ts), for µs, with its rounding rule
    (tb_plugin/analysis/numfmt.py: the shortest decimal rounded half away from zero)."""
    from tb_plugin.analysis.numfmt import fixed

    return on_ladder(us, DURATION_LADDER, fixed)


def wait_spans_ready(base: str, count: int, polls: int = 1200) -> dict:
    """The ``runs`` document by run name once the logdir lists ``count`` spans, all ready (waits up
    to ``polls`` × 0.25 s)."""
    runs: dict = {}
    for _ in range(polls):
        runs = {r["name"]: r for r in api(base, "runs")["runs"]}
        spans = [s for r in runs.values() for w in r["workers"] for s in w["spans"]]
        if len(spans) == count and all(s["state"] == "ready" for s in spans):
            return runs
        time.sleep(0.25)
    raise TimeoutError(runs)
