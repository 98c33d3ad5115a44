"""The :class:`Registry` protocol (what the routes and the CLI use), and :class:`MultiRegistry`:
several logdirs at once (TensorBoard's ``--logdir_spec name1:path1,name2:path2``), local and remote
mixed: one :class:`~tb_plugin.registry.runs.RunRegistry` per logdir, so a bucket that cannot be listed
(no credentials, access denied, missing bucket, an extra not installed) is an error of its own runs
while the other logdirs keep working."""

from __future__ import annotations

import os
import posixpath
import re
import time
from typing import Any, Callable, Protocol

from ..settings import Settings
from ..storage.urls import redact
from .cache import ParseCache
from .runs import RunRegistry
from .states import ArtifactState, FileState
from .views import FileViews

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


class Registry(Protocol):
    """The data provider the routes, the CLI and the plugin use: :class:`RunRegistry` (one logdir)
    and :class:`MultiRegistry` (several) both implement it."""

    logdir: str

    @property
    def error(self) -> str | None: ...
    def start(self) -> Registry: ...
    def stop(self) -> None: ...
    def scan(self) -> None: ...
    def wait_scanned(self, timeout: float | None = None) -> bool: ...
    def files(self) -> list[FileState]: ...
    def find(self, run: str, worker: str, span: str) -> FileState | None: ...
    def want(self, state: FileState) -> None: ...
    def load(self, state: FileState, progress: Callable[[float], None] | None = None) -> FileState: ...
    def views(self, state: FileState) -> FileViews: ...
    def fs_of(self, state: FileState): ...
    def client_message_of(self, state: FileState, message: str) -> str: ...
    def parse_in_parallel(self, states: list[FileState]) -> int: ...
    def distributed(self, run: str, span: str = "1") -> dict: ...
    def workers_in_run(self, run: str) -> int: ...
    def artifacts(self, run: str | None = None) -> list[ArtifactState]: ...
    def find_artifact(self, run: str, path: str) -> ArtifactState | None: ...
    def load_artifact(self, art: ArtifactState, wait: bool = True) -> ArtifactState: ...
    def snapshot_ranks(self, art: ArtifactState) -> dict: ...
    def hang(self, run: str) -> dict | None: ...
    def hang_records(self, run: str) -> tuple[list, list] | None: ...
    def rank_group(self, art: ArtifactState) -> list[tuple[int, ArtifactState]]: ...
    def runs_document(self) -> dict[str, Any]: ...
    def snapshot_counters(self, state: FileState, trace: Any, t0: float, t1: float, bins: int) -> list[dict]: ...
    def snapshot_trace(self, art: ArtifactState, device: int) -> tuple[dict | None, object, int]: ...
    def critical_path_overlay(self, state: FileState) -> dict: ...


class MultiRegistry:
    """The :class:`Registry` interface over several logdirs (one :class:`RunRegistry` each); run names
    are ``<name>`` or ``<name>/<run>``."""

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

    def _owner(self, run: str):
        for reg in self.registries:
            if run == reg.prefix or run.startswith(reg.prefix + "/"):
                return reg
        return None

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
    def files(self):
        return sorted(
            (st for reg in self.registries for st in reg.files()), key=lambda s: (s.run, s.worker, int(s.span))
        )

    def find(self, run: str, worker: str, span: str):
        reg = self._owner(run)
        return reg.find(run, worker, span) if reg else None

    def want(self, state) -> None:
        self._owner(state.run).want(state)

    def load(self, state, progress=None):
        return self._owner(state.run).load(state, progress)

    def views(self, state):
        return self._owner(state.run).views(state)

    def fs_of(self, state):
        return self._owner(state.run).fs

    def client_message_of(self, state, message: str) -> str:
        return self._owner(state.run).client_message(message)

    def parse_in_parallel(self, states) -> int:
        used = 0
        for reg in self.registries:
            mine = [st for st in states if self._owner(st.run) is reg]
            used = max(used, reg.parse_in_parallel(mine)) if mine else used
        return used

    def distributed(self, run: str, span: str = "1") -> dict:
        return self._owner(run).distributed(run, span)

    def workers_in_run(self, run: str) -> int:
        reg = self._owner(run)
        return reg.workers_in_run(run) if reg else 0

    # artifacts
    def artifacts(self, run: str | None = None):
        return sorted((a for reg in self.registries for a in reg.artifacts(run)), key=lambda a: a.entry.rel)

    def find_artifact(self, run: str, path: str):
        reg = self._owner(run)
        return reg.find_artifact(run, path) if reg else None

    def load_artifact(self, art, wait: bool = True):
        return self._owner(art.run).load_artifact(art, wait)

    def snapshot_ranks(self, art) -> dict:
        return self._owner(art.run).snapshot_ranks(art)

    def hang(self, run: str) -> dict | None:
        return self._owner(run).hang(run)

    def hang_records(self, run: str):
        return self._owner(run).hang_records(run)

    def rank_group(self, art) -> list:
        return self._owner(art.run).rank_group(art)

    def runs_document(self) -> dict[str, Any]:
        docs = [reg.runs_document() for reg in self.registries]
        return {
            "logdir": self.logdir,
            "loading": {
                "files_total": sum(d["loading"]["files_total"] for d in docs),
                "files_done": sum(d["loading"]["files_done"] for d in docs),
                "files_queued": sum(d["loading"].get("files_queued", 0) for d in docs),
            },
            "errors": [e for d in docs for e in d["errors"]],
            "notices": [n for d in docs for n in d.get("notices", [])],
            "runs": sorted((r for d in docs for r in d["runs"]), key=lambda r: r["name"]),
        }
