"""The Trace view's CUDA graph replay bands, in headless chromium against a real TensorBoard.

A synthesized trace (tests/synth/graphs.py ``captured_replays``: one capture, three replays on streams
7 and 20): the toggle draws one band per replay and stream (six), each on its stream's track; hovering a
band says its graph, replay, kernels, busy time and status; clicking it pins that line.
"""

from __future__ import annotations

import json

from synth import graphs as G

from tests.e2e.conftest import tensorboard
from tests.e2e.helpers import api, enable_test_hooks, open_tab, plugin_frame, select_file

HOOK = "window.__kinetoscopeTimeline"


def test_replay_bands(browser, tmp_path, artifacts):
    logdir, cache = tmp_path / "logdir", tmp_path / "cache"
    (logdir / "graphs").mkdir(parents=True)
    cache.mkdir()
    (logdir / "graphs" / "w.pt.trace.json").write_text(json.dumps(G.captured_replays(True)))
    with tensorboard(logdir, cache) as base:
        page = enable_test_hooks(browser.new_page(viewport={"width": 1500, "height": 1000}))
        page.goto(base + "/#kinetoscope")
        frame = plugin_frame(page)
        select_file(frame, "graphs", "w")
        open_tab(frame, "trace-tab")
        frame.wait_for_function(f"() => {HOOK} && {HOOK}.settled()", timeout=90_000)
        assert frame.evaluate(f"{HOOK}.replayRects().length") == 0  # off until asked
        frame.check('[data-testid="graph-replays-toggle"]')
        frame.wait_for_function(f"() => {HOOK}.replayRects().length === 6", timeout=60_000)
        summary = frame.locator('[data-testid="graph-replays-summary"]').inner_text()
        assert summary.startswith("6 replay bands"), summary
        doc = api(base, "graph_replays", run="graphs", worker="w", span=1)
        assert doc["total"] == 6 and doc["graphs"][0]["status"] == "attributed"
        rects = frame.evaluate(f"{HOOK}.replayRects()")
        assert sorted(r["i"] for r in rects) == list(range(6)) and {r["status"] for r in rects} == {"attributed"}
        assert len({r["y"] for r in rects}) == 2  # two stream tracks
        r = max(rects, key=lambda r: r["w"])
        box = frame.locator('[data-testid="timeline-canvas"]').bounding_box()
        x, y = box["x"] + r["x"] + r["w"] / 2, box["y"] + r["y"] + 2
        page.mouse.move(x, y)
        tip = frame.locator('[data-testid="graph-replay-tooltip"]').first
        tip.wait_for(timeout=10_000)
        replay = doc["bands"]["replay"][r["i"]]
        assert tip.inner_text() == f"CUDA graph 0 · replay {replay}"
        page.mouse.down()
        page.mouse.up()
        pinned = frame.locator('[data-testid="graph-replay-pinned"]').inner_text()
        assert f"replay {replay}" in pinned and "4 kernels" in pinned and "attributed" in pinned, pinned
        page.screenshot(path=str(artifacts / "graph_replay_bands.png"), full_page=True)
