"""Bounded large-logdir test (issue 9): 200 runs × 10 tiny traces list quickly, and `runs`/`overview`
stay responsive while the loader works through them (benchmarks/bench_large_logdir.py: 1000 × 10)."""

from __future__ import annotations

from benchmarks import bench_large_logdir as bench


def test_large_logdir_lists_fast_and_stays_responsive():
    out = bench.run(runs=200, files_per_run=10, seconds=5, clients=8, verbose=True)
    assert out["files"] == 2000
    assert out["errors"] == []
    assert out["listing_s"] < 2.0 * 2000 / 10_000 + 0.6  # the 10 000-file target (2 s), scaled, with slack
    assert out["first_runs_s"] < 2.0
    assert out["runs_p95_ms"] < 2000 and out["overview_p95_ms"] < 2000
    assert out["files_done_during"] > 0, "the loader makes progress while requests are served"
