"""The default executor: a process pool on this machine (or this process, when a pool does not pay),
sized to the cores and the memory available (also for the registry's parallel parsing)."""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from ...settings import usable_cores
from .task import ProgressSlots, RankJob, RankResult, init_progress, reduce_rank

if TYPE_CHECKING:
    import concurrent.futures

PARALLEL_MIN_BYTES = 64 << 20  # a process pool only pays for batches at least this big (decompressed)
# Peak RSS of one parse ≤ this × the decompressed trace size. Measured (peak minus the interpreter's 41 MB):
# a real trace scaled to 121 MB (V100 ResNet-50, ~530 bytes an event) 2.7×; 117 MB of the smallest
# possible events (58 bytes each: 2 M events) 8.2×. The per-event columns dominate small events, so the
# worst case is planned for (it was 3, and a trace of tiny events peaked at ~7× in the review).
PARSE_MEMORY_FACTOR = 8
GZIP_RATIO_GUESS = 12  # decompressed ÷ compressed size assumed for .gz traces


def parallel_workers(decompressed_sizes: list[int]) -> int:
    """Worker processes for parallel parsing: at most the usable cores (``taskset``), and as many as fit in the available
    memory at :data:`PARSE_MEMORY_FACTOR` × the largest file's decompressed size each."""
    cores = usable_cores()
    biggest = max(decompressed_sizes) if decompressed_sizes else 0
    need = PARSE_MEMORY_FACTOR * biggest
    available = _available_memory()
    by_memory = int(available // max(need, 1)) if available else cores
    return max(1, min(cores, len(decompressed_sizes), by_memory))


def _available_memory() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def decompressed_guess(size: int, name: str) -> int:
    """The decompressed bytes of a file of ``size`` bytes named ``name`` (a path or URL will do)."""
    return size * (GZIP_RATIO_GUESS if name.endswith(".gz") else 1)


class LocalExecutor:
    """Runs :func:`.task.reduce_rank` in ``spawn``-ed worker processes (no forked threads or locks).

    ``workers=None`` sizes the pool like the registry's parallel parsing: at most the cores, as many
    as fit in the available memory, and no pool at all (this process, one rank after the other) when
    the files are too small for process start-up to pay. ``workers=1`` always runs inline."""

    def __init__(self, workers: int | None = None, progress: ProgressSlots | None = None) -> None:
        self.workers = workers
        self.progress = progress  # a spawn-context RawArray("d") the jobs' progress_slot index, or None
        self._futures: dict[str, concurrent.futures.Future[RankResult]] = {}  # job key → future of the running map
        self.used_workers = 0  # processes of the last map (0: ran in this process)
        self.description = "the local process pool"

    def cancel(self, key: str) -> bool:
        """Drop the job ``key`` of the running :meth:`map` if the pool has not started it; True if dropped
        (its result is never yielded)."""
        future = self._futures.get(key)
        return future is not None and future.cancel()

    def pool_size(self, jobs: Sequence[RankJob]) -> int:
        """The processes :meth:`map` would start for ``jobs`` (0: it runs them in this process)."""
        workers = self.workers if self.workers is not None else _auto_workers(jobs)
        workers = min(workers, len(jobs))
        return workers if workers >= 2 else 0

    def map(self, jobs: Sequence[RankJob], submitted: Callable[[], object] | None = None) -> Iterator[RankResult]:
        """Results as they complete. ``submitted()`` is called once every job is in the pool (from then
        on :meth:`cancel` can drop the ones not started)."""
        if jobs and all(job.kind == "flight_recorder" for job in jobs):
            yield from _dump_batches(jobs)
            return
        workers = self.pool_size(jobs)
        if workers < 2:
            self.used_workers = 0
            for job in jobs:
                yield reduce_rank(job)
            return
        self.used_workers = workers
        import concurrent.futures  # only for a pool, like multiprocessing (with logging: ~4 ms)
        import multiprocessing  # only for a pool (~3 ms the report of one file does not need)

        ctx = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(
            max_workers=workers, mp_context=ctx, initializer=init_progress, initargs=(self.progress,)
        ) as pool:
            with _main_not_reimported():  # the workers start at the first submits
                futures = {pool.submit(reduce_rank, job): job for job in jobs}
            self._futures = {job.key: future for future, job in futures.items()}
            if submitted:
                submitted()
            for future in concurrent.futures.as_completed(futures):
                if future.cancelled():
                    continue
                try:
                    yield future.result()
                except Exception as exc:  # a worker process died (killed for memory): retried inline
                    yield RankResult(key=futures[future].key, lost=True, error=f"{type(exc).__name__}: {exc}")

    def close(self) -> None:
        pass


@contextlib.contextmanager
def _main_not_reimported() -> Iterator[None]:
    """While workers are spawned: ``__main__`` shows neither a file nor a module name, so the workers do
    not import it again. Their work (:func:`.task.reduce_rank`) lives in this package; a user's script
    without an ``if __name__ == "__main__":`` guard (the notebook API from a plain script) would else
    run again in every worker, and fail there when it starts processes itself."""
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    saved: dict[str, Any] = {k: main.__dict__[k] for k in ("__file__", "__spec__") if k in main.__dict__}
    main.__dict__.pop("__file__", None)
    main.__spec__ = None
    try:
        yield
    finally:
        main.__dict__.pop("__spec__", None)
        main.__dict__.update(saved)


def _auto_workers(jobs: Sequence[RankJob]) -> int:
    sizes = [decompressed_guess(job.size, job.url) for job in jobs]
    if len(jobs) < 2 or sum(sizes) < PARALLEL_MIN_BYTES:
        return 1
    return parallel_workers(sizes)


def _dump_batches(jobs: Sequence[RankJob]) -> Iterator[RankResult]:
    """Flight-recorder batches, one thread per core: each batch's work runs in its own reader child
    (:mod:`tb_plugin.artifacts.flight_recorder`), so threads use every core without a process pool."""
    import concurrent.futures  # (only here and for a pool: the report of one file does not need it)

    with concurrent.futures.ThreadPoolExecutor(max_workers=min(len(jobs), usable_cores())) as pool:
        for future in concurrent.futures.as_completed([pool.submit(reduce_rank, job) for job in jobs]):
            yield future.result()
