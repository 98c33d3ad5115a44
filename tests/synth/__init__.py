"""Test-data synthesizers: traces, snapshots and MemProfiler output whose answers are known by
construction. They live with the tests, not in the shipped package; ``samples/make_samples.py``
and the benchmarks put ``tests/`` on ``sys.path`` to use them."""
