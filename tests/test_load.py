"""Bounded load test (issue 9): 50 concurrent clients hit every route (30, artifacts included) of a real
TensorBoard for 10 s.

benchmarks/bench_concurrency.py is the 60 s version. The p95 bound is for a 2-core CI machine (the
server and the 50 client threads share it; measured ≈ 0.6 s there with another job running)."""

from __future__ import annotations

from benchmarks import bench_concurrency as bench
from tests.e2e.conftest import tensorboard

from conftest import SAMPLES

P95_BOUND_S = 3.0


def test_fifty_clients_every_route(tmp_path):
    logdir = bench.build_logdir(tmp_path / "logdir", SAMPLES)
    cache = tmp_path / "cache"
    cache.mkdir()
    with tensorboard(logdir, cache) as base:
        base += "/data/plugin/kinetoscope"
        keys = bench.wait_ready(base, len(bench.FILES), timeout=180)
        targets = bench.targets(base, keys)
        result = bench.load(base, targets, clients=50, seconds=10)
    print(bench.report(result, 10))
    assert result["errors"] == []
    assert all(result["latencies"][r] for r in bench.ROUTES), "every route was requested"
    every = [v for vs in result["latencies"].values() for v in vs]
    assert bench.percentile(every, 95) < P95_BOUND_S
