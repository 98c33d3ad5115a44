"""An executor on an existing ``dask.distributed`` cluster.

Each rank is one Dask task running :func:`.task.reduce_rank` on a worker: the worker opens the file's
URL itself through fsspec (so it needs the storage extra and the bucket's credentials), parses it,
and sends back only the aggregates. Nothing is cached on the workers (``cache_dir`` is dropped: a
path on this machine means nothing there).
"""

from __future__ import annotations

import dataclasses
from typing import Iterator, Sequence

from .task import RankJob, RankResult, reduce_rank

CONNECT_TIMEOUT_S = 5.0  # scheduler connection, and the wait for a first worker


class NoWorkers(RuntimeError):
    pass


class DaskExecutor:
    def __init__(self, address: str, connect_timeout: float | None = None) -> None:
        from distributed import Client  # ImportError: the caller falls back to the local pool

        connect_timeout = CONNECT_TIMEOUT_S if connect_timeout is None else connect_timeout

        self.address = address
        self.client = Client(address, timeout=connect_timeout, set_as_default=False)
        try:
            self.client.wait_for_workers(1, timeout=connect_timeout)
        except Exception:
            self.client.close()
            raise NoWorkers(f"the scheduler has no workers after {connect_timeout:g} s") from None
        workers = len(self.client.scheduler_info().get("workers", {}))
        self.description = f"the Dask cluster at {address} ({workers} workers)"

    def map(self, jobs: Sequence[RankJob]) -> Iterator[RankResult]:
        from distributed import as_completed

        jobs = [dataclasses.replace(job, cache_dir=None) for job in jobs]
        futures = self.client.map(reduce_rank, jobs, pure=False)
        owner = {future.key: job for future, job in zip(futures, jobs)}
        for future in as_completed(futures, loop=self.client.loop):
            job = owner[future.key]
            try:
                result = future.result()
            except Exception as exc:  # worker killed, cluster gone: reduce_rank itself never raises
                result = RankResult(key=job.key, lost=True, error=f"{type(exc).__name__}: {exc}")
            future.release()
            yield result

    def close(self) -> None:
        self.client.close()
