"""Bounded large-logdir test: 200 runs × 10 tiny traces are all listed, and `runs`/`overview` answer
without errors while the loader works through them. How fast (listing, first answer, p95 per route):
``benchmarks/bench_large_logdir.py`` (1000 × 10) prints it; this test asserts no times."""

from __future__ import annotations

from benchmarks import bench_large_logdir as bench


def test_large_logdir_lists_every_file_and_answers_while_loading():
    out = bench.run(runs=200, files_per_run=10, seconds=5, clients=8, verbose=True)
    assert out["files"] == 2000
    assert out["errors"] == []
    assert out["files_done_during"] > 0, "the loader makes progress while requests are served"
