"""The counter tracks' bin cap is one number in one place (analysis/counters.py), used by the trace's
own counters (registry/views.py) and by matched snapshots' (api/routes.py)."""

from __future__ import annotations

import re

from conftest import REPO

from tb_plugin.analysis.counters import MAX_BINS, counter_bins


def test_one_bin_per_pixel_up_to_the_cap():
    assert [counter_bins(w) for w in (1, 2000, MAX_BINS, MAX_BINS + 1, 10**6)] == [
        1,
        2000,
        MAX_BINS,
        MAX_BINS,
        MAX_BINS,
    ]


def test_no_other_module_caps_the_bins_itself():
    hits = [
        str(p.relative_to(REPO))
        for p in (REPO / "tb_plugin").rglob("*.py")
        if re.search(rf"min\([^)]*,\s*{MAX_BINS}\)", p.read_text())
    ]
    assert hits == []
