"""Drive the finetuning-scheduler MemProfiler and Composer views in headless Debian chromium against a real TensorBoard.

Logdir:
- ``fts``: a finetuning-scheduler ``memprofiler/`` folder (samples/fts_memprofiler, values known by
  construction in tests/synth/fts.py), no traces;
- ``composer_sample``: the real Composer sample (one rank, a ``cpu/cpu_percent`` counter);
- ``composer_ranks``: three synthetic Composer ranks whose clocks are offset by 0, +2500 and −1300 µs
  (tests/synth/composer.py), with cpu, memory, disk and network counters.

(1) The Snapshots tab of ``fts`` opens the rank 0 stats: the table shows the known start/end/Δ values
and the chart is drawn; the FSDP report shows as text. (2) The Trace view of the Composer runs lays out
the system metric counter tracks, and with all ranks on one clock the offsets vanish.
"""

from __future__ import annotations

import shutil

import pytest
from conftest import SAMPLES
from synth.composer import SERIES, write_ranks
from synth.fts import MiB, snapshot_values

from tests.e2e.conftest import tensorboard
from tests.e2e.helpers import api, enable_test_hooks, open_plugin, wait_all_ready

pytestmark = pytest.mark.corpus  # reads the external sample corpus (docs/TESTING.md)

HOOK = "window.__kinetoscopeTimeline"
REPO_SAMPLES = __import__("pathlib").Path(__file__).resolve().parents[2] / "samples"
OFFSETS = (0.0, 2500.0, -1300.0)


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("fts_composer")
    shutil.copytree(REPO_SAMPLES / "fts_memprofiler", root / "fts")
    (root / "composer_sample").mkdir()
    shutil.copy(SAMPLES / "composer" / "rank_0.trace.json", root / "composer_sample" / "rank0.1.pt.trace.json")
    write_ranks(root / "composer_ranks", offsets=OFFSETS, batches=4)
    return root


def _bytes_text(n: int) -> str:
    """util/format.ts formatBytes for values ≥ 1 KiB."""
    units, v, u = ["B", "KiB", "MiB", "GiB", "TiB"], float(n), 0
    while abs(v) >= 1024 and u < len(units) - 1:
        v, u = v / 1024, u + 1
    return f"{v:.1f} {units[u]}"


def _open_trace(page, base: str, run: str):
    frame = open_plugin(page, base, run)
    frame.click('[data-testid="trace-tab"]')
    frame.wait_for_function(f"() => {HOOK} && {HOOK}.firstPaintMs !== null", timeout=60_000)
    frame.wait_for_function(f"() => {HOOK}.settled()", timeout=30_000)
    return frame


def test_memprofiler_view_and_composer_counter_tracks(browser, logdir, tmp_path, artifacts):
    cache = tmp_path / "cache"
    cache.mkdir()
    with tensorboard(logdir, cache) as base:
        wait_all_ready(base, "composer_sample", 1)
        wait_all_ready(base, "composer_ranks", len(OFFSETS))
        page = enable_test_hooks(browser.new_page(viewport={"width": 1500, "height": 1300}))

        # (1) MemProfiler: the stats YAML of rank 0 is the default artifact of the fts run
        frame = open_plugin(page, base, "fts")
        select = frame.locator('[data-testid="artifact-select"]')
        select.wait_for(timeout=60_000)
        assert select.input_value() == "fts/memprofiler/rank_0_memory_stats.yaml"
        table = frame.locator('[data-testid="memprofiler-table"]')
        table.wait_for(timeout=60_000)
        start, end = snapshot_values(0, 2, "start"), snapshot_values(0, 2, "end")
        for key in ("allocated_bytes.all.current", "reserved_bytes.all.current", "rss", "npp_post_forward"):
            cells = table.locator(f'[data-testid="memprofiler-row"][data-key="{key}"] [data-testid="memprofiler-cell"]')
            values = [int(float(v)) for v in cells.evaluate_all("cs => cs.map(c => c.dataset.value)")]
            assert values == [start[key], end[key], end[key] - start[key]], key
            assert cells.nth(1).inner_text() == _bytes_text(end[key]), key
        assert end["allocated_bytes.all.current"] - start["allocated_bytes.all.current"] == 64 * MiB
        chart = frame.locator('[data-testid="memprofiler-chart"]')
        assert chart.locator("canvas").count() >= 1
        box = chart.bounding_box()
        assert box and box["width"] > 300 and box["height"] > 200
        page.screenshot(path=str(artifacts / "memprofiler_stats.png"), full_page=True)
        select.select_option("fts/memprofiler/fsdp_mem_rank_0_training_step_2.log")
        log = frame.locator('[data-testid="memprofiler-log"]')
        log.wait_for(timeout=30_000)
        assert log.inner_text().startswith("Iteration 2 training_step Peak FSDP memory stats:")
        select.select_option("fts/memprofiler/cuda_alloc_rank_0.training_step.2.end.pickle")
        frame.locator('[data-testid="snapshot-summary"]').wait_for(timeout=60_000)

        # (2a) the real Composer sample: its cpu counter is a counter track of the timeline
        frame = _open_trace(page, base, "composer_sample")
        rows = frame.evaluate(f"{HOOK}.counterRows()")
        assert {"worker": "rank0", "name": "cpu/cpu_percent", "unit": "percent"} in rows, rows

        # (2b) synthetic ranks: every system metric is a track; all ranks on one clock align on clock sync
        frame = _open_trace(page, base, "composer_ranks")
        names = {r["name"] for r in frame.evaluate(f"{HOOK}.counterRows()")}
        assert names >= set(SERIES), names
        frame.locator('[data-testid="all-ranks"]').check()
        frame.wait_for_function(f"() => Object.keys({HOOK}.offsets()).length === {len(OFFSETS)}", timeout=60_000)
        frame.wait_for_function(f"() => {HOOK}.settled()", timeout=30_000)
        offsets = frame.evaluate(f"{HOOK}.offsets()")
        assert all(abs(v) < 1e-6 for v in offsets.values()), offsets  # raw timestamps would differ by 3800 µs
        assert "clock_sync_timestamp_us" in frame.locator('[data-testid="clock-source"]').inner_text()
        by_worker = {}
        for r in frame.evaluate(f"{HOOK}.counterRows()"):
            by_worker.setdefault(r["worker"], set()).add(r["name"])
        assert len(by_worker) == len(OFFSETS) and all(v >= set(SERIES) for v in by_worker.values()), by_worker
        page.screenshot(path=str(artifacts / "composer_ranks_trace.png"), full_page=True)
        raw = [
            api(base, "timeline_meta", run="composer_ranks", worker=f"rank{r}", span=1)["origin_us"]
            for r in range(len(OFFSETS))
        ]
        assert max(raw) - min(raw) == pytest.approx(max(OFFSETS) - min(OFFSETS))
        page.close()
