"""The executor interface: where the per-rank tasks (:func:`.task.reduce_rank`) run.

An executor takes :class:`~.task.RankJob` s and yields one :class:`~.task.RankResult` per job, in
completion order. Only those results (aggregates, a few KB each) come back; the event columns stay on
the worker that parsed them. Implementations: :class:`.local.LocalExecutor` (a process pool on this
machine, the default) and :class:`.dask.DaskExecutor` (an existing ``dask.distributed`` cluster).
"""

from __future__ import annotations

from typing import Callable, Iterable, Iterator, Protocol, Sequence

from .task import RankJob, RankResult

# progress(done, total, result): called after each rank, in completion order
Progress = Callable[[int, int, RankResult], None]


class Executor(Protocol):
    #: how it is shown to the user ("local process pool", "dask tcp://10.0.0.5:8786 (4 workers)")
    description: str

    def map(self, jobs: Sequence[RankJob]) -> Iterator[RankResult]:
        """Run every job; yield each result as it completes. A task the executor itself lost
        (worker died, cluster gone) is yielded with ``lost=True``."""
        ...

    def close(self) -> None: ...


def run_ranks(
    executor: Executor,
    jobs: Sequence[RankJob],
    progress: Progress | None = None,
    warn: Callable[[str], object] | None = None,
) -> Iterable[RankResult]:
    """Every job's result, each yielded once, with ``progress`` per rank. Jobs the executor lost are
    run again on this machine (inline), after a message through ``warn``."""
    total, done = len(jobs), 0
    lost: list[RankJob] = []
    reason = ""
    by_key = {job.key: job for job in jobs}
    for result in executor.map(jobs):
        if result.lost:
            lost.append(by_key[result.key])
            reason = reason or (result.error or "")
            continue
        done += 1
        if progress:
            progress(done, total, result)
        yield result
    if lost:
        from .local import LocalExecutor

        if warn:
            warn(
                f"{len(lost)} of {total} ranks were lost by {executor.description} ({reason}); analysing them "
                "on this machine instead"
            )
        for result in LocalExecutor(workers=1).map(lost):
            done += 1
            if progress:
                progress(done, total, result)
            yield result
