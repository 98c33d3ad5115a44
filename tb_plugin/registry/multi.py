""":class:`MultiRegistry`: the :class:`~.interface.Registry` interface over
several logdirs at once (TensorBoard's ``--logdir_spec name1:path1,name2:path2``), local and remote
mixed: one :class:`~tb_plugin.registry.runs.RunRegistry` per logdir, so a bucket that cannot be listed
(no credentials, access denied, missing bucket, an extra not installed) is an error of its own runs
while the other logdirs keep working."""

from __future__ import annotations

import os
import posixpath
import re
import time
from typing import TYPE_CHECKING, Any

from ..settings import Settings
from ..storage.urls import redact
from .cache import ParseCache
from .interface import Progress, RankRun, Registry
from .records import DistributedResult, HangDocument, RunsDocument, SnapshotRanksDocument
from .runs import RunRegistry
from .states import ArtifactState, FileState
from .views import FileViews

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

    from ..analysis.advice_ranks import RunAdvice
    from ..trace.model import Trace

_URI = re.compile(r"^[a-zA-Z][0-9a-zA-Z.+-]*://")


def parse_logdir_spec(spec: str) -> list[tuple[str, str]]:
    """``[(name, path_or_url)]`` from a ``--logdir_spec`` value, parsed as TensorBoard does: a
    ``name:`` prefix is a name unless the entry is a URL (``s3://…``) or an absolute/drive path.
    Entries without a name are named after their last path component."""
    out: list[tuple[str, str]] = []
    used: set[str] = set()
    for item in (x.strip() for x in spec.split(",")):
        if not item:
            continue
        name = None
        if not _URI.match(item) and ":" in item and item[0] != "/" and not os.path.splitdrive(item)[0]:
            name, _, item = item.partition(":")
        if not _URI.match(item):
            item = os.path.realpath(os.path.expanduser(item))
        if not name:
            name = posixpath.basename(item.rstrip("/").split("://", 1)[-1]) or "logdir"
        base, n = name.strip("/") or "logdir", 2
        name = base
        while name in used:
            name, n = f"{base}_{n}", n + 1
        used.add(name)
        out.append((name, item))
    return out


class MultiRegistry(Registry):
    """The :class:`~.interface.Registry` interface over several logdirs (one :class:`RunRegistry`
    each); run names are ``<name>`` or ``<name>/<run>``. Every call about a file, an artifact or a run
    goes to the registry that holds it."""

    def __init__(
        self,
        entries: list[tuple[str, str]],
        cache: ParseCache | None = None,
        reload_interval: float = 10.0,
        settings: Settings | None = None,
    ) -> None:
        self.registries = [
            RunRegistry(path, cache=cache, reload_interval=reload_interval, prefix=name, settings=settings)
            for name, path in entries
        ]
        self.logdir = ",".join(f"{name}:{redact(path)}" for name, path in entries)

    def _owner(self, run: str) -> RunRegistry | None:
        """The registry whose runs include ``run`` (None when no entry's name is its prefix)."""
        for reg in self.registries:
            if run == reg.prefix or run.startswith(reg.prefix + "/"):
                return reg
        return None

    def _holder(self, run: str) -> RunRegistry:
        """The registry holding a file or artifact of ``run`` (one it listed, so there is one)."""
        reg = self._owner(run)
        if reg is None:
            raise LookupError(f"no logdir holds run {run!r}")
        return reg

    # lifecycle
    def start(self) -> MultiRegistry:
        for reg in self.registries:
            reg.start()
        return self

    def stop(self) -> None:
        for reg in self.registries:
            reg.stop()

    def scan(self) -> None:
        for reg in self.registries:
            reg.scan()

    def wait_scanned(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        ok = True
        for reg in self.registries:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ok = reg.wait_scanned(left) and ok
        return ok

    @property
    def error(self) -> str | None:
        errors = [f"{r.prefix}: {r.error}" for r in self.registries if r.error]
        return "; ".join(errors) or None

    # files
    def files(self) -> list[FileState]:
        return sorted(
            (st for reg in self.registries for st in reg.files()), key=lambda s: (s.run, s.worker, int(s.span))
        )

    def find(self, run: str, worker: str, span: str) -> FileState | None:
        reg = self._owner(run)
        return reg.find(run, worker, span) if reg else None

    def workers_in_run(self, run: str) -> int:
        reg = self._owner(run)
        return reg.workers_in_run(run) if reg else 0

    def want(self, state: FileState) -> None:
        self._holder(state.run).want(state)

    def load(self, state: FileState, progress: Progress | None = None) -> FileState:
        return self._holder(state.run).load(state, progress)

    def ensure_loaded(self, state: FileState) -> FileState:
        return self._holder(state.run).ensure_loaded(state)

    def views(self, state: FileState) -> FileViews:
        return self._holder(state.run).views(state)

    def fs_of(self, state: FileState) -> AbstractFileSystem:
        return self._holder(state.run).fs_of(state)

    def client_message_of(self, state: FileState, message: str) -> str:
        return self._holder(state.run).client_message_of(state, message)

    def _by_holder(self, states: list[FileState]) -> list[tuple[RunRegistry, list[FileState]]]:
        """``states`` grouped by the registry holding each (registries without one left out)."""
        groups = [(reg, [st for st in states if self._owner(st.run) is reg]) for reg in self.registries]
        return [(reg, mine) for reg, mine in groups if mine]

    def parse_in_parallel(self, states: list[FileState]) -> int:
        return max((reg.parse_in_parallel(mine) for reg, mine in self._by_holder(states)), default=0)

    # the distributed aggregate
    def distributed(self, run: str, span: str = "1") -> DistributedResult:
        return self._holder(run).distributed(run, span)

    def critical_path_overlay(self, state: FileState) -> dict[str, Any]:
        return self._holder(state.run).critical_path_overlay(state)

    def span_advice(self, run: str, span: str) -> list[RunAdvice] | None:
        return self._holder(run).span_advice(run, span)

    def analyse(self, states: list[FileState], executor: Any, how: RankRun = RankRun()) -> None:
        for reg, mine in self._by_holder(states):
            reg.analyse(mine, executor, how)

    # artifacts
    def artifacts(self, run: str | None = None) -> list[ArtifactState]:
        return sorted((a for reg in self.registries for a in reg.artifacts(run)), key=lambda a: a.entry.rel)

    def find_artifact(self, run: str, path: str) -> ArtifactState | None:
        reg = self._owner(run)
        return reg.find_artifact(run, path) if reg else None

    def load_artifact(self, art: ArtifactState, wait: bool = True) -> ArtifactState:
        return self._holder(art.run).load_artifact(art, wait)

    def rank_group(self, art: ArtifactState) -> list[tuple[int, ArtifactState]]:
        return self._holder(art.run).rank_group(art)

    def snapshot_ranks(self, art: ArtifactState) -> SnapshotRanksDocument:
        return self._holder(art.run).snapshot_ranks(art)

    def snapshot_trace(self, art: ArtifactState, device: int) -> tuple[dict[str, Any] | None, Trace | None, int]:
        return self._holder(art.run).snapshot_trace(art, device)

    def snapshot_counters(
        self, state: FileState, trace: Trace, t0: float, t1: float, bins: int
    ) -> list[dict[str, Any]]:
        return self._holder(state.run).snapshot_counters(state, trace, t0, t1, bins)

    def hang_records(self, run: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
        reg = self._owner(run)
        return reg.hang_records(run) if reg else None

    def hang(self, run: str) -> HangDocument | None:
        reg = self._owner(run)
        return reg.hang(run) if reg else None

    def runs_document(self) -> RunsDocument:
        docs = [reg.runs_document() for reg in self.registries]
        return {
            "logdir": self.logdir,
            "loading": {
                "files_total": sum(d["loading"]["files_total"] for d in docs),
                "files_done": sum(d["loading"]["files_done"] for d in docs),
                "files_queued": sum(d["loading"]["files_queued"] for d in docs),
            },
            "errors": [e for d in docs for e in d["errors"]],
            "notices": [n for d in docs for n in d["notices"]],
            "runs": sorted((r for d in docs for r in d["runs"]), key=lambda r: r["name"]),
        }
