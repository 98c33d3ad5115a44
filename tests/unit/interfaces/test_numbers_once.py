"""Each percentage is computed once, in Python, and every interface shows the served value: the CLI's
text prints the document's field (a test changes the field and sees the printed text follow), the
routes serve the same document, and the frontend's fixtures carry the field that the UI shows without
recomputing it (frontend tests: charts.test.ts, Forensics.test.tsx).

- the share of the average step per category: ``average_pct`` of the overview (analysis/overview.py);
- a rank's peak against the median: ``vs_median_pct`` and ``outlier_vs_median_pct`` of the per-rank
  snapshots (analysis/snapshot_ranks.py)."""

from __future__ import annotations

import io
import json
import pathlib

import pytest

from tb_plugin.analysis.overview import CATEGORY_KEYS
from tb_plugin.analysis.snapshot_ranks import compare
from tb_plugin.cli import main
from tb_plugin.cli.tables import print_tables

REPO = pathlib.Path(__file__).resolve().parents[3]
FIXTURES = REPO / "frontend" / "src" / "__fixtures__"


def test_the_overview_serves_each_categorys_share_of_the_average_step(capsys):
    assert main(["report", str(REPO / "samples" / "synthetic_resnet"), "--json", "--no-cache"]) == 0
    doc = json.loads(capsys.readouterr().out)
    ov = doc["runs"][0]["workers"][0]["overview"]
    total = ov["average"]["total_us"]
    assert total > 0
    assert set(ov["average_pct"]) == set(CATEGORY_KEYS)
    for key in CATEGORY_KEYS:
        assert ov["average_pct"][key] == pytest.approx(ov["average"][key] / total * 100)
    assert sum(ov["average_pct"].values()) == pytest.approx(100, abs=1e-6)
    # the text report prints the served share: change it and the printed column follows
    key = CATEGORY_KEYS[0]
    ov["average_pct"][key] = 12.5
    out = io.StringIO()
    print_tables(doc, out)
    lines = out.getvalue().splitlines()
    line = lines[next(i for i, x in enumerate(lines) if "% of step" in x) + 1]  # the first category's row
    assert line.rstrip().endswith("12.50%"), line


def test_compare_serves_the_vs_median_percentages():
    doc = compare([{"rank": r, "peak_active_bytes": p} for r, p in enumerate([100, 102, 98, 150])])
    assert doc["outlier_vs_median_pct"] == pytest.approx((150 / 101 - 1) * 100)
    assert [r["vs_median_pct"] for r in doc["ranks"]] == pytest.approx(
        [(p / 101 - 1) * 100 for p in (100, 102, 98, 150)]
    )
    assert doc["outlier_threshold_pct"] == pytest.approx(10)
    none = compare([{"rank": 0, "peak_active_bytes": 100}, {"rank": 1, "peak_active_bytes": None}])
    assert none["outlier_vs_median_pct"] is None and none["ranks"][1]["vs_median_pct"] is None


def test_the_cli_prints_the_served_outlier_percentage():
    """The text report's outlier line prints ``outlier_vs_median_pct`` as served (not a ratio recomputed)."""
    group = {
        "ranks": [
            {"rank": 0, "path": "r0.pickle", "peak_active_bytes": 100},
            {"rank": 1, "path": "r1.pickle", "peak_active_bytes": 150},
        ],
        "median_peak_bytes": 101,
        "outlier_rank": 1,
        "outlier_peak_to_median": 150 / 101,
        "outlier_vs_median_pct": 12.5,  # not what the ratio gives: the printed text must follow this field
    }
    run = {
        "name": "job",
        "workers": [],
        "snapshots": [{"path": "r0.pickle", "error": "x"}],
        "memprofiler": [],
        "snapshot_ranks": [group],
    }
    out = io.StringIO()
    print_tables({"runs": [run]}, out)
    assert "outlier: rank 1 (+12.5 % vs the median)" in out.getvalue()


def test_the_frontend_fixtures_carry_the_served_percentages():
    """The fixtures the frontend tests render are the routes' answers: they carry the served fields."""
    overview = json.loads((FIXTURES / "overview_resnet50.json").read_text())
    assert set(overview["average_pct"]) == set(overview["categories"])
    dlrm = json.loads((FIXTURES / "distributed" / "distributed_dlrm.json").read_text())
    for path in dlrm["view"]["critical_path"]:
        assert set(path["by_category_pct"]) == set(path["by_category"])
        assert all("pct" in r for r in path["by_rank"])


def test_the_critical_path_serves_its_shares_and_the_cli_prints_them():
    """``by_category_pct`` and ``by_rank``'s ``pct`` (% of the path's length) are served with the path;
    the text report prints them as served."""
    from tb_plugin.cli.path import print_critical_path

    path = {
        "step": "2",
        "length_us": 670.0,
        "by_category": {"kernel": 100.0, "cpu": 515.0, "communication": 50.0, "waiting": 5.0},
        "by_category_pct": {"kernel": 12.5, "cpu": 0.0, "communication": 0.0, "waiting": 87.5},  # not the µs' shares
        "by_rank": [{"rank": 0, "us": 60.0, "pct": 25.0}, {"rank": 1, "us": 610.0, "pct": 75.0}],
        "truncated": False,
        "segments": [],
        "collectives": [],
    }
    out = io.StringIO()
    print_critical_path([path], out, across=True)
    assert (
        "(kernel 12.5% · cpu 0.0% · communication 0.0% · waiting 87.5%) [rank 1 75.0%, rank 0 25.0%]" in out.getvalue()
    )
