"""In headless Debian chromium against a real TensorBoard: a run holding a trace and an
allocator snapshot of the same process (``tests/synth/snapshot_trace.py``). The Snapshots tab's "Alive
at the peak" card groups the peak's bytes by operator (as constructed), by step and by module, names the
matched trace, and opens a row's stack; the Trace view carries the snapshot's active memory as a counter
track of the same rank.
"""

from __future__ import annotations

import json
import pickle

from synth.snapshot_trace import EXPECTED_BY_OPERATOR, EXPECTED_BY_STEP, paired_snapshot, paired_trace

from tests.e2e.conftest import tensorboard
from tests.e2e.helpers import api, enable_test_hooks, open_plugin, open_tab

HOOK = "window.__kinetoscopeTimeline"
MIB = 1 << 20


def _mib(n: int) -> str:
    return f"{n / MIB:.1f} MiB"


def test_alive_at_the_peak_card_and_counter_track(browser, tmp_path, artifacts):
    logdir, cache = tmp_path / "logdir", tmp_path / "cache"
    (logdir / "paired").mkdir(parents=True)
    cache.mkdir()
    (logdir / "paired" / "host.pt.trace.json").write_text(json.dumps(paired_trace()))
    (logdir / "paired" / "rank0_memory_snapshot.pickle").write_bytes(pickle.dumps(paired_snapshot(), protocol=5))
    with tensorboard(logdir, cache) as base:
        doc = api(base, "snapshot_attribution", run="paired", path="paired/rank0_memory_snapshot.pickle")
        assert {r["name"]: r["bytes"] for r in doc["by_operator"]} == EXPECTED_BY_OPERATOR
        page = enable_test_hooks(browser.new_page(viewport={"width": 1400, "height": 1200}))
        frame = open_plugin(page, base, run="paired")
        open_tab(frame, "tab-snapshots", 90_000)
        card = frame.locator('[data-testid="snapshot-alive"]')
        card.wait_for(timeout=90_000)
        frame.locator('[data-testid="snapshot-alive-row"]').first.wait_for(timeout=60_000)
        assert "paired/host.pt.trace.json" in frame.locator('[data-testid="snapshot-alive-trace"]').inner_text()
        rows = frame.locator('[data-testid="snapshot-alive-row"]')
        expected = sorted(EXPECTED_BY_OPERATOR.items(), key=lambda kv: (-kv[1], kv[0]))
        assert rows.count() == len(expected)
        for i, (name, nbytes) in enumerate(expected[:4]):
            text = rows.nth(i).inner_text()
            assert name in text and _mib(nbytes) in text, (i, text)
        card.screenshot(path=str(artifacts / "snapshot_alive_by_operator.png"))
        frame.select_option('[data-testid="snapshot-alive-grouping"]', "by_step")
        frame.wait_for_function(
            "document.querySelector('[data-testid=\"snapshot-alive-row\"]').innerText.includes('ProfilerStep#2')",
            timeout=30_000,
        )
        assert rows.count() == len(EXPECTED_BY_STEP)
        rows.first.click()  # a row opens the stack of its largest allocation
        frames = frame.locator('[data-testid="snapshot-frames"]')
        frames.wait_for(timeout=30_000)
        assert "empty" in frames.inner_text()  # ProfilerStep#2's largest: F, model.py:40 empty
        # the Trace view: the snapshot's active memory is a counter track of the trace
        open_tab(frame, "trace-tab")
        frame.wait_for_function(f"() => {HOOK} && {HOOK}.firstPaintMs !== null", timeout=60_000)
        frame.wait_for_function(f"() => {HOOK}.settled()", timeout=30_000)
        names = {r["name"]: r["unit"] for r in frame.evaluate(f"{HOOK}.counterRows()")}
        assert names.get("GPU 0 snapshot active (rank0_memory_snapshot.pickle)") == "bytes", names
        page.screenshot(path=str(artifacts / "snapshot_counter_track.png"), full_page=True)
        page.close()
