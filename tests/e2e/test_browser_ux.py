"""What a new user trips over, in headless Debian chromium against a real TensorBoard, one check per
item: names without object addresses (and the frame where two alike stacks part), cards that do not
contradict each other, a single rank's missing distributedInfo as a note, the layout at 1,500 px
(the whole width, action links on one line, no cell spilling into its neighbour, the memory-artifact
picker showing its whole text), and one device naming.

Logdir (copies of samples): ``cnn`` (samples/torch_cpu_cnn: one rank without distributedInfo, Python
frames with object addresses), ``cudagraph`` (samples/gpu_cudagraph: the one list of
recommendations), ``bert`` (tracelens/h100 BERT: memory events, long kernel names), ``composer``
(trainer events) and ``snapshot`` (samples/gpu_snapshot: two allocator snapshots).
"""

from __future__ import annotations

import re
import shutil

import pytest
from conftest import REPO, sample

from tests.e2e.conftest import BERT_H100, tensorboard
from tests.e2e.helpers import api, enable_test_hooks, plugin_frame, wait_spans_ready

WIDTH = 1500

pytestmark = pytest.mark.corpus  # the BERT and Composer runs come from the sample corpus


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("ux")
    for run, src, name in (
        ("cnn", next((REPO / "samples" / "torch_cpu_cnn").glob("*.gz")), None),
        ("cudagraph", next((REPO / "samples" / "gpu_cudagraph").glob("*.gz")), None),
        ("bert", sample(BERT_H100), "bert.1.pt.trace.json.gz"),
        ("composer", sample("composer/rank_0.trace.json"), "rank0.1.pt.trace.json"),
    ):
        (root / run).mkdir()
        shutil.copy(src, root / run / (name or src.name))
    shutil.copytree(REPO / "samples" / "gpu_snapshot", root / "snapshot", ignore=shutil.ignore_patterns("*.json"))
    return root


def _sel(runs: dict, run: str) -> dict:
    w = runs[run]["workers"][0]
    return {"run": run, "worker": w["worker"], "span": w["spans"][0]["span"]}


def _go(frame, view: str | None = None, **sel) -> None:
    params = dict(sel, **({"view": view} if view else {}))
    frame.evaluate("(h) => { location.hash = h; }", "#" + "&".join(f"{k}={v}" for k, v in params.items()))


# per visible table cell whose content spills past its right edge (not clipped): its text
_SPILLS_JS = """() => [...document.querySelectorAll('td')].filter((td) => td.offsetParent
  && getComputedStyle(td).overflowX === 'visible' && td.scrollWidth > td.clientWidth + 1)
  .map((td) => td.innerText.slice(0, 80))"""
# per visible action link (a link-styled button or anchor): its height over its line height
_LINK_LINES_JS = """() => [...document.querySelectorAll('.link-button, a')].filter((a) => a.offsetParent)
  .map((a) => { const cs = getComputedStyle(a); const lh = parseFloat(cs.lineHeight) || 1.4 * parseFloat(cs.fontSize);
                return [a.innerText.slice(0, 40), a.getBoundingClientRect().height / lh]; })"""


def test_new_user_items_in_the_browser(browser, logdir, tmp_path, artifacts):
    with tensorboard(logdir, tmp_path) as base:
        runs = wait_spans_ready(base, 4)
        page = enable_test_hooks(browser.new_page(viewport={"width": WIDTH, "height": 1000}))
        page.goto(base + "/#kinetoscope")
        frame = plugin_frame(page)
        frame.wait_for_selector('[data-testid="run-select"]', timeout=60_000)

        # layout: the content uses the page's width (no fixed maximum leaving a fifth of it empty)
        _go(frame, "operator", **_sel(runs, "bert"))
        frame.locator('[data-testid="show-in-trace"]').first.wait_for(timeout=60_000)
        content, body = frame.evaluate(
            "() => [document.querySelector('.content').getBoundingClientRect().width,"
            " document.documentElement.clientWidth]"
        )
        assert content >= body - 1, (content, body)
        # action links on one line, here and on a narrower page where the columns are squeezed
        for width in (WIDTH, 1000):
            page.set_viewport_size({"width": width, "height": 1000})
            page.wait_for_timeout(300)
            tall = [(t, h) for t, h in frame.evaluate(_LINK_LINES_JS) if h > 1.6]
            assert not tall, (width, tall[:5])
        page.set_viewport_size({"width": WIDTH, "height": 1000})

        # long kernel names: elided in the middle, the whole name on hover, no cell spills into the next
        _go(frame, "kernel", **_sel(runs, "bert"))
        frame.locator('[data-testid="kernel-table"] [data-testid="elided-name"]').first.wait_for(timeout=60_000)
        names = frame.eval_on_selector_all(
            '[data-testid="kernel-table"] [data-testid="elided-name"]', "els => els.map(e => [e.title, e.textContent])"
        )
        assert names and all(title == text for title, text in names)
        assert frame.evaluate(_SPILLS_JS) == []

        # names: no object address in any stack, and alike stacks say where they part
        q = dict(_sel(runs, "cnn"), group_by="operator")
        rows = api(base, "operators", **q, limit=200)["rows"]
        conv = next(r for r in rows if r["name"] == "aten::conv2d")
        stacks = api(base, "operator_stacks", **q, key=conv["key"])["stacks"]
        assert not [f for s in stacks for f in s["frames"] if " at 0x" in f["text"]]
        parts = [s["frames"][s["differs_at"]]["text"] for s in stacks if s.get("differs_at") is not None]
        assert len(parts) == 2 and parts[0] != parts[1], stacks
        _go(frame, "operator", **_sel(runs, "cnn"))
        frame.fill('[data-testid="op-search"]', "conv2d")
        row = frame.locator(
            '[data-testid="table-row"]', has=frame.locator('td[data-col="name"]', has_text="aten::conv2d")
        ).first
        row.wait_for(timeout=30_000)
        row.locator('[data-testid="op-expand"]').click()
        frame.locator('[data-testid="stack-differs"]').first.wait_for(timeout=30_000)
        shown = frame.eval_on_selector_all('[data-testid="stack-differs"] code', "els => els.map(e => e.textContent)")
        assert sorted(shown) == sorted(parts)
        assert " at 0x" not in frame.evaluate("() => document.body.innerText")
        _go(frame, "operator", **_sel(runs, "cnn"))
        frame.select_option('[data-testid="op-group-by"]', "call_stack")
        frame.locator("pre.cell-stack").first.wait_for(timeout=30_000)
        assert " at 0x" not in frame.evaluate("() => document.body.innerText")

        # one rank without distributedInfo: a note, not a warning
        _go(frame, "distributed", run="cnn")
        frame.locator('[data-testid="distributed-null"]').wait_for(timeout=60_000)
        alerts = frame.eval_on_selector_all('[role="alert"]', "els => els.map(e => e.textContent)")
        assert not [a for a in alerts if "distributedInfo" in a], alerts
        notes = frame.eval_on_selector_all('[role="status"]', "els => els.map(e => e.textContent)")
        assert [n for n in notes if "no distributedInfo; rank 0 taken from the position" in n], notes

        # one list of recommendations: the Overview's card shows the file's list (the Insights card has none
        # of its own), so "No recommendations" appears exactly when the list is empty, and only once
        _go(frame, None, **_sel(runs, "cudagraph"))
        frame.locator('[data-testid="insights-card"]').wait_for(timeout=60_000)
        frame.locator('[data-testid="recommendations"]').wait_for(timeout=60_000)
        recs = api(base, "overview", **_sel(runs, "cudagraph"))["recommendations"]
        text = frame.evaluate("() => document.body.innerText")
        assert text.count("No recommendations") == (0 if recs else 1)
        assert frame.locator('[data-testid="insights-recommendations"]').count() == 0

        # trainer events: event/epoch's mean per step is the average step, not more
        ov = api(base, "overview", **_sel(runs, "composer"))
        epoch = next(e for e in ov["trainer_events"] if e["name"] == "event/epoch")
        assert epoch["mean_per_step_us"] == pytest.approx(ov["average"]["total_us"])
        _go(frame, None, **_sel(runs, "composer"))
        frame.locator('[data-testid="trainer-event-row"]').first.wait_for(timeout=60_000)

        # one device naming: the memory view says "GPU 0", as the GPU summary does
        _go(frame, "memory", **_sel(runs, "bert"))
        select = frame.locator('[data-testid="memory-device-select"]')
        select.wait_for(timeout=60_000)
        assert select.input_value() == "GPU0"  # the key sent to the server
        label = frame.evaluate(
            "() => { const s = document.querySelector('[data-testid=memory-device-select]');"
            " return s.options[s.selectedIndex].text; }"
        )
        assert label == "GPU 0"
        assert re.search(r"Memory curve: GPU 0\b", frame.evaluate("() => document.body.innerText"))

        # the memory-artifact picker shows its whole text
        _go(frame, "snapshots", run="snapshot")
        picker = frame.locator('[data-testid="artifact-select"]')
        picker.wait_for(timeout=60_000)
        text, text_w, box_w = frame.evaluate("""() => {
          const s = document.querySelector('[data-testid=artifact-select]');
          const ctx = document.createElement('canvas').getContext('2d');
          ctx.font = getComputedStyle(s).font;
          const text = s.options[s.selectedIndex].text;
          return [text, ctx.measureText(text).width, s.clientWidth];
        }""")
        assert picker.get_attribute("title") == text and "snapshot" in text
        assert text_w + 24 <= box_w, (text, text_w, box_w)  # the text, the padding and the arrow fit
        page.screenshot(path=str(artifacts / "ux_snapshot_picker.png"))
        page.close()
