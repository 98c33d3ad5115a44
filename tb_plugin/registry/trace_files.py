"""What the registry's collaborators use of its trace files: :class:`TraceFiles`, the small interface
the artifact store (:mod:`.artifacts`), the flight-recorder dumps (:mod:`.hang`) and the distributed
aggregate (:mod:`.distributed`) are given when the registry composes them. They reach the trace files
only through it, never through the registry's own state."""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .states import FileState
    from .views import FileViews


class TraceFiles(abc.ABC):
    """The trace files of one logdir: listed, loaded on request, and their detail views."""

    @abc.abstractmethod
    def files(self) -> list[FileState]:
        """Every trace file, by (run, worker, span)."""

    @abc.abstractmethod
    def views(self, state: FileState) -> FileViews:
        """The detail views of a loaded file (re-read from the parse cache if it was evicted)."""

    @abc.abstractmethod
    def want(self, state: FileState) -> None:
        """Load this file next (a user is waiting for it)."""

    @abc.abstractmethod
    def load_held(self, state: FileState) -> FileState:
        """Load this file now, in this thread; the caller holds ``state.lock``."""

    @abc.abstractmethod
    def client_message(self, message: str) -> str:
        """A message about a file of this logdir as clients see it (no absolute server path)."""
