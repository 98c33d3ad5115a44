"""The distributed view of a run: each rank's aggregate, computed here or on an executor (local
process pool or Dask), combined across ranks (:class:`DistributedAggregate`, a collaborator of the
registry)."""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, TypeVar, cast

from ..analysis import critical_path_overlay
from ..analysis import distributed as distributed_analysis
from ..logs import module_logger
from . import report_distributed
from .executors import LocalExecutor, is_remote, open_executor, run_ranks
from .executors.task import RankJob, received_aggregate
from .interface import RankRun
from .states import ERROR, LOADING, QUEUED, READY, FileState

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

    from ..analysis.advice_ranks import RunAdvice
    from ..analysis.distributed_records import DistributedView
    from .cache import ParseCache
    from .executors.base import Executor
    from .records import DistributedResult, RankAggregate  # (types only: a report never imports them, ~3 ms)
    from .trace_files import TraceFiles

logger = module_logger(__name__)

T = TypeVar("T")
EXECUTOR_RETRY_S = 60.0  # after a remote executor failed, the local loads are used this long before a new try


class DistributedAggregate:
    """Per-rank work and the cross-rank view of one logdir's runs, a collaborator of the registry: each
    rank's aggregate is computed from the trace files (``traces``) here, or on an executor from the
    files themselves (``fs``, ``cache``), and combined across ranks."""

    def __init__(
        self, traces: TraceFiles, fs: AbstractFileSystem | None, cache: ParseCache | None, executor: str | None
    ) -> None:
        self._traces = traces
        self._fs = fs
        self._cache = cache
        # where the distributed view's per-rank work runs when ranks are not loaded here: "local",
        # "dask://host:port", or None for $KINETOSCOPE_EXECUTOR (see registry/executors)
        self.executor = executor
        self._executor: Executor | None = None
        self._executor_failure: tuple[float, str] | None = None
        self._executor_lock = threading.Lock()
        # the last cross-rank answer per (kind, run, span[, worker]): (what it was computed from, answer).
        # Computed from the ranks' aggregates, it is reused while they are the same objects (held here,
        # so their ids are not reused), instead of being recombined at every request (256 ranks: 7 s).
        self._combined: dict[tuple[str, ...], tuple[tuple[Any, ...], list[Any], Any]] = {}

    def _remembered(
        self,
        slot: tuple[str, ...],
        states: list[FileState],
        extra: tuple[Any, ...],
        compute: Callable[[], T],
    ) -> T:
        """``compute()``, or the answer kept for ``slot`` when ``states`` (their file versions and
        aggregates) and ``extra`` are what it was computed from."""
        held = [st.aggregate for st in states]
        key = (tuple((st.entry.rel, st.entry.version, id(a)) for st, a in zip(states, held)), extra)
        got = self._combined.get(slot)
        if got is not None and got[0] == key:
            return cast(T, got[2])  # what compute() returned for this slot
        doc = compute()
        self._combined[slot] = (key, held, doc)
        return doc

    def close(self) -> None:
        """Close the remote executor, if one was opened."""
        with self._executor_lock:
            if self._executor is not None:
                self._executor.close()
                self._executor = None

    def distributed(self, run: str, span: str = "1") -> DistributedResult:
        """The distributed view of a run's ranks at one span (see analysis.distributed), combined from
        each rank's aggregate. Ranks not analysed yet go to the remote executor when one is chosen
        (``executor`` / ``$KINETOSCOPE_EXECUTOR``), else to the local process pool when they are
        enough for one (:meth:`LocalExecutor.pool_size`: only their summaries come back, and their
        parses go to the parse cache), else are loaded here."""
        states, ranks, messages, guessed = self._ranks(run, span)
        return self._remembered(
            ("distributed", run, span),
            states,
            (tuple(messages), tuple(guessed)),
            lambda: self._distributed_doc(run, span, states, ranks, messages, guessed),
        )

    def _distributed_doc(
        self,
        run: str,
        span: str,
        states: list[FileState],
        ranks: list[tuple[int, str, dict[str, Any]]],
        messages: list[str],
        guessed: list[str],
    ) -> DistributedResult:
        spans = sorted({st.span for st in self._traces.files() if st.run == run}, key=int)

        def result(reason: str | None, view: DistributedView | None, messages: list[str]) -> DistributedResult:
            # files: the run's files at this span; ranks_loaded: those that loaded (the ranks compared);
            # reason: why there is no view (null with one); the files' own failures are in messages
            return {
                "state": "ready",
                "run": run,
                "span": span,
                "spans": spans,
                "files": len(states),
                "ranks_loaded": len(ranks),
                "reason": reason,
                "view": view,
                "messages": messages,
            }

        if len(ranks) < 2:  # one rank: no comparison, but its own groups and critical path
            own = distributed_analysis.single_rank_view(ranks[0][0], ranks[0][1], ranks[0][2]) if ranks else None
            alone = result(no_view_reason(span, len(states), len(ranks)), None, messages)
            # one rank compares with nothing: how its rank was read is a note, not a warning
            alone["notes"], alone["single_rank"] = guessed, own
            return alone
        messages = guessed + messages
        view = distributed_analysis.combine_ranks(ranks)
        messages += view["matching"]["messages"]  # windows that do not line up, dtype/size mismatches
        if view["instances"]["total"] == 0:
            messages.append(
                "no communication kernels found (CPU-only or Gloo ranks): transfer and sync times need GPU collectives"
            )
        return result(None, view, messages)

    def span_advice(self, run: str, span: str) -> list[RunAdvice] | None:
        """The advice that holds on several of the run's loaded files at ``span``, once for the run
        (:func:`.report_distributed.run_advice`): the ``distributed`` route's and the MCP tool's."""
        files = [st for st in self._traces.files() if st.run == run and st.span == span]
        return report_distributed.run_advice([{"worker": st.worker, "overview": st.overview} for st in files])

    def critical_path_overlay(self, state: FileState) -> dict[str, Any]:
        """The critical path on one loaded file's timeline (:func:`analysis.critical_path_overlay.rank_overlay`):
        across the run's loaded ranks at its span, or its own path when it is the only one; with
        ``rank``, ``worker`` and ``messages`` (ranks that did not load)."""
        _, ranks, messages, guessed = self._ranks(state.run, state.span)
        mine = [r for r in ranks if r[1] == state.worker]
        if not mine:  # it loaded for the timeline but not as a rank: its own path
            aggregate = self._rank_aggregate(state)
            if aggregate is None:  # it failed to load again since the request found it ready
                raise LookupError(f"{state.entry.rel}: not loaded ({state.error})")
            agg = aggregate["distributed"]
            mine = [(distributed_analysis.rank_of_info(agg["distributed_info"], state.worker, 0)[0], state.worker, agg)]
            ranks = mine
        rank = mine[0][0]
        states = [st for st in self._traces.files() if st.run == state.run and st.span == state.span]
        return self._remembered(
            ("critical_path", state.run, state.span, state.worker),
            states,
            (tuple(guessed + messages), rank, tuple(r[1] for r in ranks)),
            lambda: dict(
                critical_path_overlay.rank_overlay(ranks, rank, self._traces.views(state).trace),
                rank=rank,
                worker=state.worker,
                messages=guessed + messages if len(ranks) > 1 else [],
            ),
        )  # one rank: how its rank was read is noise

    def _ranks(
        self, run: str, span: str
    ) -> tuple[list[FileState], list[tuple[int, str, dict[str, Any]]], list[str], list[str]]:
        """The run's files at ``span``, its loaded ranks ``(rank, worker, aggregate)``, messages, and
        per rank without ``distributedInfo`` where its rank was read instead."""
        guessed: list[str] = []
        states = sorted(
            (st for st in self._traces.files() if st.run == run and st.span == span), key=lambda s: s.worker
        )
        messages = []
        failed: dict[str, str] = {}
        todo = [st for st in states if st.aggregate is None and st.state not in (READY, ERROR)]
        if todo:
            executor, problem = self._executor_for(todo)
            if problem:
                messages.append(problem)
            if executor is not None:  # the files another request is analysing are waited for below
                mine = [st for st in todo if st.lock.acquire(blocking=False)]
                try:
                    self.analyse(
                        [st for st in mine if st.aggregate is None],
                        executor,
                        RankRun(tables=False, failed=failed, warn=messages.append),
                    )
                finally:
                    for st in mine:
                        st.lock.release()
        ranks = []
        for position, st in enumerate(states):
            rel = st.entry.rel
            if st.aggregate is None and rel not in failed:
                self._rank_aggregate(st)
            if st.aggregate is None:
                messages.append(f"{rel}: not analysed ({failed.get(rel) or st.error})")
                continue
            agg = st.aggregate["distributed"]
            rank, source = distributed_analysis.rank_of_info(agg["distributed_info"], st.worker, position)
            if source != "distributedInfo":
                guessed.append(f"{st.worker}: no distributedInfo; rank {rank} taken from the {source}")
            ranks.append((rank, st.worker, agg))
        if len({r for r, _, _ in ranks}) < len(ranks):
            messages.append("two files claim the same rank: ranks are compared in worker order instead")
            ranks = [(i, w, t) for i, (_, w, t) in enumerate(ranks)]
        return states, ranks, messages, guessed

    def _rank_aggregate(self, st: FileState) -> RankAggregate | None:
        """Load this file (if not loaded) and set its distributed aggregate (its views' ``rank_reduce``,
        read from the analysis cache when there), once: under the file's lock, so concurrent requests
        wait for one parse and one reduction. Returns it (None: the file did not load)."""
        with st.lock:
            if st.aggregate is not None:
                return st.aggregate
            if st.state in (QUEUED, LOADING):
                self._traces.load_held(st)
            if st.state == READY:
                st.aggregate = {"distributed": self._traces.views(st).rank_reduce()}
            return st.aggregate

    def rank_job(self, state: FileState, tables: bool = True) -> RankJob:
        """The executor job of one file (see executors/task.py)."""
        entry, fs = state.entry, self._fs
        if fs is None:  # a listed file comes from an opened logdir
            raise LookupError(f"{entry.rel}: the logdir cannot be opened")
        return RankJob(
            key=entry.rel,
            url=fs.unstrip_protocol(entry.path),
            version=entry.version,
            size=entry.size,
            cache_dir=os.path.dirname(self._cache.root) if self._cache is not None else None,
            tables=tables,
        )

    def analyse(self, states: list[FileState], executor: Executor, how: RankRun = RankRun()) -> None:
        """Run the per-rank task of each file on ``executor`` (results in completion order, ``how.progress``
        per rank). With ``how.tables`` (the report) each file ends READY with its overview and aggregate,
        or ERROR with its message; without, only ``aggregate`` is set and errors go to ``how.failed``."""
        tables, failed = how.tables, how.failed
        by_key = {st.entry.rel: st for st in states}
        jobs = [self.rank_job(st, tables) for st in states]
        if tables:
            for st in states:
                st.state, st.progress = LOADING, 0.0
        for result in run_ranks(executor, jobs, how.progress, how.warn):
            st = by_key[result.key]
            error = self._traces.client_message(result.error) if result.error else None
            if not tables:
                if error:
                    (failed if failed is not None else {})[result.key] = error
                elif result.aggregate is not None:
                    st.aggregate = received_aggregate(result.aggregate)
                continue
            st.load_seconds, st.from_cache = result.seconds, result.from_cache
            aggregate = result.aggregate  # a result without an error holds its aggregate (executors/task.py)
            if error or aggregate is None:
                st.error, st.state = error or "the rank's analysis returned no result", ERROR
            else:
                st.warnings, st.notes = list(result.warnings), list(result.notes)
                received = received_aggregate(aggregate)
                st.aggregate, st.overview = received, received["tables"]["overview"]
                st.progress, st.state = 1.0, READY

    def _executor_for(self, todo: list[FileState]) -> tuple[Executor | None, str | None]:
        """``(executor, problem)`` for the ranks ``todo``: the remote executor when one is chosen, a
        local pool when ``todo`` is big enough for one, else ``(None, None)`` (load them here)."""
        if is_remote(self.executor):
            return self._remote_executor()
        pool = open_executor(self.executor)
        if not isinstance(pool, LocalExecutor) or pool.pool_size([self.rank_job(st, False) for st in todo]) < 2:
            return None, None
        return pool, None

    def _remote_executor(self) -> tuple[Executor | None, str | None]:
        """``(executor, problem)``: the remote executor, opened once and kept; after a failure
        ``(None, message)`` and a new try only after :data:`EXECUTOR_RETRY_S`."""
        with self._executor_lock:
            if self._executor is not None:
                return self._executor, None
            failed_at, message = self._executor_failure or (None, None)
            if failed_at is not None and time.monotonic() - failed_at < EXECUTOR_RETRY_S:
                return None, message
            problems: list[str] = []
            executor = open_executor(self.executor, problems.append)
            if problems:
                logger.warning("%s", problems[0])
                self._executor_failure = (time.monotonic(), problems[0])
                return None, problems[0]
            self._executor, self._executor_failure = executor, None
            return executor, None


def no_view_reason(span: str, files: int, loaded: int) -> str:
    """Why a run has no distributed view at ``span``, from its file count there and how many loaded."""
    if files == 0:
        return f"no file of this run has span {span}: there is nothing to compare across ranks"
    if files == 1:
        return "only one rank (file) in this run has this span: there is nothing to compare across ranks"
    return (
        f"{files - loaded} of the {files} files of span {span} failed to load, leaving {loaded} "
        f"rank{'' if loaded == 1 else 's'}: there is nothing to compare across ranks"
    )
