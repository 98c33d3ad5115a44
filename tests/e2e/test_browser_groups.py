"""The Distributed tab's process-group table in headless chromium against a real TensorBoard.

(1) The synthesized FSDP + TP job (tests/synth/comm.py ``fsdp_tp_docs``, a 2 × 2 mesh): four groups,
shown with the ``distributed`` route's roles, ranks and exposed times; clicking a TP group lists its
ranks (60/50 µs on the lower rank, 40/40 on the higher). (2) The 8 DLRM ranks: no process-group args,
so one group over ranks 0–7 and the fallback message under the group table (not a notice).
"""

from __future__ import annotations

import pytest
from synth.comm import fsdp_tp_docs

from tests.e2e.helpers import api, dlrm_ranks, format_duration, job_tensorboard, open_distributed_tab


def _groups_rows(frame):
    rows = frame.locator('[data-testid="groups-table"] [data-testid="group-row"]')
    rows.first.wait_for(timeout=90_000)
    return rows


def test_groups_table_on_a_synthesized_fsdp_tp_job(browser, tmp_path, artifacts):
    with job_tensorboard(tmp_path, docs=fsdp_tp_docs()) as base:
        doc = api(base, "distributed", run="job", span=1)
        groups = doc["view"]["groups"]
        assert [(g["name"], g["role"], g["exposed_us"]) for g in groups] == [
            ("1", "FSDP shard", 40.0),
            ("2", "FSDP shard", 40.0),
            ("3", "TP", 45.0),
            ("4", "TP", 45.0),
        ]

        page, frame = open_distributed_tab(browser, base)
        rows = _groups_rows(frame)
        assert rows.count() == 4
        for i, g in enumerate(groups):
            cells = rows.nth(i).locator("td")
            assert cells.nth(0).inner_text().strip() == g["name"]
            assert cells.nth(2).inner_text().strip() == g["role"]
            assert cells.nth(7).inner_text().strip() == format_duration(g["exposed_us"])
        rows.nth(3).click()
        per_rank = frame.locator('[data-testid="group-rank-row"]')
        assert [per_rank.nth(i).get_attribute("data-rank") for i in range(per_rank.count())] == ["2", "3"]
        assert [per_rank.nth(i).locator("td").nth(3).inner_text().strip() for i in range(2)] == [
            format_duration(50.0),
            format_duration(40.0),
        ]
        frame.locator('[data-testid="groups-card"]').screenshot(path=str(artifacts / "groups_fsdp_tp.png"))
        page.close()


@pytest.mark.corpus
def test_groups_table_falls_back_to_one_group_on_dlrm(browser, tmp_path, artifacts):
    with job_tensorboard(tmp_path, samples=dlrm_ranks()) as base:
        doc = api(base, "distributed", run="job", span=1)
        message = doc["view"]["groups_messages"][0]
        assert message not in doc["messages"]  # the group table says it; the notices are for the ranks

        page, frame = open_distributed_tab(browser, base)
        rows = _groups_rows(frame)
        assert rows.count() == 1
        cells = rows.first.locator("td")
        assert cells.nth(0).inner_text().strip() == "default"
        assert cells.nth(3).inner_text().strip() == "0\u20137"
        assert frame.get_by_text(message).count() == 1
        assert frame.locator('[data-testid="groups-message"]').inner_text() == message
        frame.locator('[data-testid="groups-card"]').screenshot(path=str(artifacts / "groups_dlrm.png"))
        page.close()
