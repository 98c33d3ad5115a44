"""The state of one trace file or memory artifact in the registry.

A file goes ``queued`` → ``loading`` → ``ready`` or ``error`` (:class:`LoadState`). :meth:`FileState.shown` and
:meth:`ArtifactState.shown` are what the ``runs`` document shows of an entry (all but the load
progress): the registry rebuilds that document only when these change (see
:meth:`RunRegistry.runs_document`), so writers just assign fields; nothing needs to announce a change.
"""

from __future__ import annotations

import dataclasses
import enum
import threading
from typing import TYPE_CHECKING, Any, Callable

from ..storage.fs import FileEntry

if TYPE_CHECKING:
    from ..analysis.overview import Overview
    from .records import RankAggregate

#: ``(records, unreadable)`` of a run's flight-recorder dumps (registry/hang.py ``read_dumps``)
DumpRecords = tuple[list[dict[str, Any]], list[dict[str, Any]]]


class LoadState(str, enum.Enum):
    """Where a trace file or an artifact stands. A ``str`` whose value is what the ``runs`` document
    and the routes show (``"ready"``, …), so it compares equal to, prints as and encodes to that."""

    QUEUED = "queued"
    LOADING = "loading"
    READY = "ready"
    ERROR = "error"

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


QUEUED, LOADING, READY, ERROR = LoadState.QUEUED, LoadState.LOADING, LoadState.READY, LoadState.ERROR


@dataclasses.dataclass
class FileState:
    entry: FileEntry
    worker: str
    span: str
    state: LoadState = QUEUED
    progress: float = 0.0
    error: str | None = None
    warnings: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)  # about the file; not warnings (Trace.notes)
    overview: Overview | None = None
    load_seconds: float | None = None  # the whole load (s), including what follows READY (cache writes, index)
    ready_seconds: float | None = None  # from the load's start to READY (s): what the user waits for
    from_cache: bool = False
    aggregate: RankAggregate | None = None  # per-rank aggregates (executors/task.py), once computed
    contents: dict[str, bool] | None = None  # has_memory / has_modules (analysis/contents.py), once loaded
    # held while this file is parsed or its aggregate computed: concurrent requests wait for one load
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock, repr=False, compare=False)
    # while a process pool parses the file: its progress (0..1) as the pool reports it
    progress_source: Callable[[], float] | None = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def run(self) -> str:
        return self.entry.run

    def shown(self) -> tuple[Any, ...]:
        """What the ``runs`` document shows of this file, but its progress: equal tuples, equal rows."""
        return (
            self.entry.rel,
            self.entry.size,
            self.worker,
            self.span,
            self.state,
            self.error,
            tuple(self.warnings),
            tuple(self.notes),
            tuple(sorted((self.contents or {}).items())),
        )

    def current_progress(self) -> float:
        """0..1: the pool's progress while a pool parses the file, else :attr:`progress`."""
        source = self.progress_source
        return float(source()) if source is not None else self.progress

    def as_json(self) -> dict[str, Any]:
        return {
            "span": self.span,
            "path": self.entry.rel,
            "size_bytes": self.entry.size,
            "state": self.state,
            "progress": round(self.current_progress(), 4),
            "error": self.error,
            "warnings": list(self.warnings),
            "notes": list(self.notes),
            **(self.contents or {"has_memory": None, "has_modules": None}),
        }


@dataclasses.dataclass
class ArtifactState:
    """A memory artifact of a run: an allocator snapshot, a memory-timeline export or a MemProfiler file."""

    entry: FileEntry
    state: LoadState = QUEUED
    error: str | None = None
    views: Any = None  # set before ``state`` becomes READY: readers check ``state`` without a lock
    # held while this artifact loads: one load per artifact, other artifacts never wait for it
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def run(self) -> str:
        return self.entry.run

    def shown(self) -> tuple[Any, ...]:
        """What the ``runs`` document shows of this artifact."""
        return (self.entry.rel, self.entry.kind, self.entry.size, self.state, self.error)

    def as_json(self) -> dict[str, Any]:
        return {
            "path": self.entry.rel,
            "kind": self.entry.kind,
            "size_bytes": self.entry.size,
            "state": self.state,
            "error": self.error,
        }
