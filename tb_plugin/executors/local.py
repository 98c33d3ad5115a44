"""The default executor: a process pool on this machine (or this process, when a pool does not pay)."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
from typing import Iterator, Sequence

from .task import RankJob, RankResult, reduce_rank


class LocalExecutor:
    """Runs :func:`.task.reduce_rank` in ``spawn``-ed worker processes (no forked threads or locks).

    ``workers=None`` sizes the pool like the registry's parallel parsing: at most the cores, as many
    as fit in the available memory, and no pool at all (this process, one rank after the other) when
    the files are too small for process start-up to pay. ``workers=1`` always runs inline."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers
        self.used_workers = 0  # processes of the last map (0: ran in this process)
        self.description = "the local process pool"

    def map(self, jobs: Sequence[RankJob]) -> Iterator[RankResult]:
        workers = self.workers if self.workers is not None else _auto_workers(jobs)
        workers = min(workers, len(jobs))
        if workers < 2:
            self.used_workers = 0
            for job in jobs:
                yield reduce_rank(job)
            return
        self.used_workers = workers
        ctx = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            futures = {pool.submit(reduce_rank, job): job for job in jobs}
            for future in concurrent.futures.as_completed(futures):
                try:
                    yield future.result()
                except Exception as exc:  # a worker process died (killed for memory): retried inline
                    yield RankResult(key=futures[future].key, lost=True, error=f"{type(exc).__name__}: {exc}")

    def close(self) -> None:
        pass


def _auto_workers(jobs: Sequence[RankJob]) -> int:
    from ..runs import PARALLEL_MIN_BYTES, decompressed_guess, parallel_workers

    sizes = [decompressed_guess(job.size, job.url) for job in jobs]
    if len(jobs) < 2 or sum(sizes) < PARALLEL_MIN_BYTES:
        return 1
    return parallel_workers(sizes)
