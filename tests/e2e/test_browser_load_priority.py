"""In headless Debian chromium: on a cold logdir of many 35 MB traces, the file the page
shows is parsed ahead of the queue, its bar moves while it parses, and the notice says where it is.

Logdir: ``r00``…``r29``, each a copy of the resnet50 num_workers_0 trace, and ``r99``, that trace
repeated twelve times (``benchmarks/rank_job.py``'s ``write_repeated``; it parses in about 2 s, so a poll every 0.5 s
sees the bar move; six copies, as before, parsed in about 1 s once the parse got faster, and the bar was
seen at one value only), with a cold parse cache: the background loader puts them all in one
process-pool batch. The page picks ``r99``, the last by path, which must turn ready while some of the
30 files before it are still loading. Before: the UI asked nothing for a file not ready, so it waited
its turn in the pool and then behind the other cached loads, its bar at 0 % ("Parsing …: 0 %" for
15–20 s on a cold 54-file logdir).
"""

from __future__ import annotations

import re
import shutil
import time

import pytest
from conftest import SAMPLES

from benchmarks.rank_job import write_repeated
from tests.e2e.conftest import tensorboard
from tests.e2e.helpers import api, plugin_frame

pytestmark = pytest.mark.corpus  # reads the external sample corpus (docs/TESTING.md)

SRC = SAMPLES / "kineto" / "resnet50_num_workers_0" / "worker0.1623143089861.pt.trace.json.gz"
LAST = "r99"
OTHERS = 30
TEXT = re.compile(
    rf"^(Parsing {LAST}/\S+: \d+ %|Waiting to parse {LAST}/\S+(: it is next|: \d+ files? (is|are) queued before it|\u2026))$"
)


def test_selected_file_jumps_the_queue_and_its_bar_moves(browser, tmp_path, artifacts):
    logdir = tmp_path / "logs"
    for i in range(OTHERS):
        (logdir / f"r{i:02d}").mkdir(parents=True)
        shutil.copy(SRC, logdir / f"r{i:02d}" / SRC.name)
    (logdir / LAST).mkdir()
    write_repeated(str(SRC), str(logdir / LAST / SRC.name), 12)
    cache = tmp_path / "cache"
    cache.mkdir()
    with tensorboard(logdir, cache) as base:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(base + "/#kinetoscope")
        frame = plugin_frame(page)
        frame.wait_for_selector(f'[data-testid="run-select"] option[value="{LAST}"]', state="attached", timeout=60_000)
        frame.select_option('[data-testid="run-select"]', LAST)
        notice = frame.locator('[data-testid="parse-progress"]')
        texts, values, others_at_ready = [], [], None
        shot = False
        t0, timeline = time.monotonic(), []
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            states = {r["name"]: r["workers"][0]["spans"][0]["state"] for r in api(base, "runs")["runs"]}
            timeline.append((round(time.monotonic() - t0, 1), "".join(v[0] for _, v in sorted(states.items()))))
            if states.get(LAST) == "ready":
                others_at_ready = states
                break
            try:
                if notice.count():
                    texts.append(notice.locator('[data-testid="parse-progress-text"]').inner_text(timeout=500))
                    values.append(int(notice.get_by_role("progressbar").get_attribute("aria-valuenow", timeout=500)))
                    if not shot and 20 < values[-1] < 90:
                        page.screenshot(path=str(artifacts / "load_priority_progress.png"))
                        shot = True
            except Exception:  # the notice went away between two reads: the file is ready
                pass
            time.sleep(0.1)
        assert others_at_ready is not None, f"{LAST} never became ready"
        # the last by path was ready before the files ahead of it by path were all loaded
        assert any(others_at_ready[f"r{i:02d}"] != "ready" for i in range(OTHERS)), (others_at_ready, timeline)
        assert texts and all(TEXT.match(t) for t in texts), set(texts)
        moving = sorted({v for v in values if 0 < v < 100})
        assert len(moving) >= 2, values  # the bar moved (it sat at 0 % before)
        assert values == sorted(values), values
        frame.locator('[data-testid="parse-progress"]').wait_for(state="detached", timeout=60_000)
        page.close()
