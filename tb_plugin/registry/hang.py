"""Flight-recorder dumps of a job: found in a folder by their content, read in batches on the
executors (:mod:`.executors.dump_task`; a batch's pickles share one bounded reader child), analysed by
:mod:`tb_plugin.analysis.hang` and ranked by :mod:`tb_plugin.analysis.hang_verdict`. The one builder
of the hang document for the CLI (``kinetoscope hang``, ``report``), the notebook, MCP and the
``hang`` route."""

from __future__ import annotations

import posixpath
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterable, SupportsInt

import numpy as np

from ..storage.fs import open_logdir
from ..storage.naming import is_certain_trace, snapshot_rank, split_worker
from ..storage.remote import StorageError
from ..storage.sniff import FLIGHT_RECORDER_HEAD, looks_like_flight_recorder
from .executors import RankJob, open_executor, run_ranks
from .executors.dump_task import BATCH_FILES

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

    from .executors import Executor
    from .records import HangDocument, HangTrace, HangTraceError
    from .states import ArtifactState, DumpRecords
    from .trace_files import TraceFiles

MAX_ENTRIES_SHOWN = 200  # entries of one rank the view's table gets (the newest)
MAX_TRACES_LINKED = 4  # traces beside a folder's dumps loaded to link the findings (the suspects' first)


class HangError(Exception):
    """The folder cannot be listed, or holds no dump. The message is shown as is."""


def find_dumps(fs: AbstractFileSystem, root: str) -> list[tuple[str, str, int]]:
    """``(name, path, size)`` of every flight-recorder dump directly in the folder ``root``, by content
    (the first :data:`~tb_plugin.storage.sniff.FLIGHT_RECORDER_HEAD` bytes), sorted by name."""
    try:
        listing = fs.ls(root, detail=True)
    except (FileNotFoundError, NotADirectoryError):
        raise HangError(f"no such folder: {root}") from None
    out: list[tuple[str, str, int]] = []
    for info in listing:
        path, name = info["name"], posixpath.basename(info["name"].rstrip("/"))
        if info.get("type") != "file" or is_certain_trace(name) or not info.get("size"):
            continue
        try:
            head = fs.cat_file(path, start=0, end=FLIGHT_RECORDER_HEAD)
        except OSError:
            continue
        if looks_like_flight_recorder(head):
            out.append((name, path, int(info["size"])))
    return sorted(out)


def read_dumps(
    items: Iterable[tuple[str, str, int]],
    executor: Executor | None = None,
    warn: Callable[[str], object] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(records, unreadable)`` of the dumps ``(key, url, size)``: records with numpy columns, a
    ``path`` (the key) and a rank; unreadable ``{"path", "rank", "error"}`` (the rank from the name)."""
    from ..artifacts.flight_recorder import rank_from_name, to_columns

    items = list(items)
    jobs = [
        RankJob(
            key=f"dumps:{i}",
            url=items[i][1],
            version="",
            size=sum(s for _, _, s in items[i : i + BATCH_FILES]),
            kind="flight_recorder",
            batch=tuple(items[i : i + BATCH_FILES]),
        )
        for i in range(0, len(items), BATCH_FILES)
    ]
    own = executor is None
    executor = executor or open_executor(warn=warn)
    records: list[dict[str, Any]] = []
    unreadable: list[dict[str, Any]] = []
    try:
        for result in run_ranks(executor, jobs, warn=warn):
            got = (result.aggregate or {}).get("records", {})
            for key, _url, _ in items if result.error else ():
                got.setdefault(key, {"error": result.error})
            for key, rec in got.items():
                name = posixpath.basename(key)
                if "error" in rec:
                    unreadable.append({"path": key, "rank": rank_from_name(name), "error": rec["error"]})
                elif rec.get("rank") is None:
                    unreadable.append(
                        {
                            "path": key,
                            "rank": None,
                            "error": "the dump names no rank, nor does its file name end in one",
                        }
                    )
                else:
                    records.append(dict(compact(to_columns(rec)), path=key))
    finally:
        if own:
            executor.close()
    records.sort(key=lambda r: (r["rank"], r["path"]))
    unreadable.sort(key=lambda u: (u["rank"] is None, u["rank"] or 0, u["path"]))
    return records, unreadable


def compact(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with its entry columns narrowed (int32 where every value fits; times stay int64), as
    copies: the reader's answer they were views of is freed."""
    from ..analysis.hang_table import narrow  # the hang modules load only for flight-recorder dumps

    cols = {k: v if k.endswith("_ns") else narrow(v) for k, v in record["entries"].items()}
    return dict(record, entries={k: np.array(v) for k, v in cols.items()})


def job_document(
    records: list[dict[str, Any]], unreadable: list[dict[str, Any]], traces: dict[int, HangTrace] | None = None
) -> HangDocument:
    """The hang document: :func:`~tb_plugin.analysis.hang.analyse` ranked by
    :func:`~tb_plugin.analysis.hang_verdict.rank_findings`, with ``traces`` (rank → ``{"path",
    "worker", "span"}`` of a profiler trace of that rank) and, per finding, ``trace_ranks``: the
    ranks it names that have one."""
    from ..analysis import hang, hang_verdict  # the hang modules load only for flight-recorder dumps

    ranked = hang_verdict.rank_findings(hang.analyse(records, unreadable))
    traces = traces or {}
    findings: list[dict[str, Any]] = ranked["findings"]
    for f in findings:
        named = set(f["missing_ranks"]) | set(f["ranks_present"])
        f["trace_ranks"] = sorted(r for r in named if r in traces)
    return {
        "ranks": ranked["ranks"],
        "groups": ranked["groups"],
        "findings": findings,
        "unreadable": ranked["unreadable"],
        "latest_ns": ranked["latest_ns"],
        "verdict": ranked["verdict"],
        "traces": {str(r): t for r, t in sorted(traces.items())},
        "dumps": len(records) + len(ranked["unreadable"]),
    }


def traces_by_rank(names: Iterable[str]) -> dict[int, HangTrace]:
    """rank → ``{"path", "worker", "span"}`` of the first trace file named for that rank
    (``rank<N>`` in the name, :func:`~tb_plugin.storage.naming.snapshot_rank`); span is always "1"
    here (the registry gives the real one)."""
    out: dict[int, HangTrace] = {}
    for name in sorted(names):
        got = snapshot_rank(name)
        if got is not None and is_certain_trace(posixpath.basename(name)):
            out.setdefault(got[1], {"path": name, "worker": split_worker(posixpath.basename(name))[0], "span": "1"})
    return out


def folder_document(
    folder: str,
    executor: Executor | None = None,
    warn: Callable[[str], object] | None = None,
    link_traces: bool = True,
) -> HangDocument:
    """The hang document of the dumps directly in ``folder`` (a path or URL), with the traces beside them
    (by rank; ``link_traces``: the findings linked to the collectives in them, :func:`link_folder_traces`).
    Raises :class:`HangError` when the folder holds no dump."""
    fs, root = open_logdir(folder)
    items = find_dumps(fs, root)
    if not items:
        raise HangError(f"no flight-recorder dump in {folder}")
    records, unreadable = read_dumps(
        [(name, fs.unstrip_protocol(path) if not _local(fs) else path, size) for name, path, size in items],
        executor,
        warn,
    )
    names = [posixpath.basename(i["name"]) for i in fs.ls(root, detail=True) if i.get("type") == "file"]
    doc = job_document(records, unreadable, traces_by_rank(names))
    doc["folder"] = folder
    if link_traces:
        link_folder_traces(doc, fs, root)
    return doc


def link_folder_traces(doc: HangDocument, fs: AbstractFileSystem, root: str, limit: int = MAX_TRACES_LINKED) -> None:
    """Loads the traces beside the dumps of the first ``limit`` ranks the findings name (suspects first,
    in verdict order) and links the findings to them
    (:func:`~tb_plugin.analysis.hang_traces.link_findings`); a trace that cannot be read is listed in
    ``doc["trace_errors"]``."""
    from ..analysis import hang_traces
    from ..trace.errors import TraceReadError
    from .parse import load_trace_file

    wanted: list[int] = []
    for f in doc["findings"]:
        for r in [*f["missing_ranks"], *(f.get("waiting_ranks") or f["ranks_present"])]:
            if str(r) in doc["traces"] and r not in wanted and len(wanted) < limit:
                wanted.append(r)
    by_rank: dict[int, dict[str, Any]] = {}
    errors: list[HangTraceError] = []
    for r in wanted:
        path = doc["traces"][str(r)]["path"]
        try:
            by_rank[r] = hang_traces.rank_collectives(load_trace_file(posixpath.join(root, path), fs))
        except (TraceReadError, StorageError, OSError, ValueError, MemoryError) as exc:
            errors.append({"rank": r, "path": path, "error": str(exc)[:500]})
    hang_traces.link_findings(doc["findings"], by_rank)
    if errors:
        doc["trace_errors"] = errors


def _local(fs: AbstractFileSystem) -> bool:
    from ..storage.remote import is_local_fs

    return is_local_fs(fs)


def rank_entries(records: list[dict[str, Any]], rank: int, limit: int = MAX_ENTRIES_SHOWN) -> dict[str, Any] | None:
    """The newest ``limit`` entries of ``rank``'s dump, newest last, each with its stack (frames as
    ``"name (file:line)"``) when recorded; None when no readable dump has that rank."""
    rec = next((r for r in records if r["rank"] == rank), None)
    if rec is None:
        return None
    cols, vocab, stacks = rec["entries"], rec["vocab"], rec.get("stacks", [])
    n = len(cols["seq"])
    rows = []
    for i in range(max(0, n - limit), n):  # at most ``limit`` rows
        stack = int(cols["stack"][i])
        rows.append(
            {
                "record_id": _num(cols["record_id"][i]),
                "pg_name": vocab["pg_name"][cols["pg_name"][i]],
                "pg_desc": vocab["pg_desc"][cols["pg_desc"][i]],
                "pg_id": _num(cols["pg_id"][i]),
                "collective_seq_id": _num(cols["seq"][i]),
                "p2p_seq_id": _num(cols["p2p_seq"][i]),
                "op": vocab["op"][cols["op"][i]],
                "state": vocab["state"][cols["state"][i]],
                "sizes": vocab["sizes"][cols["sizes"][i]],
                "dtypes": vocab["dtypes"][cols["dtypes"][i]],
                "created_ns": _num(cols["created_ns"][i]),
                "started_ns": _num(cols["started_ns"][i]),
                "completed_ns": _num(cols["completed_ns"][i]),
                "frames": stacks[stack] if 0 <= stack < len(stacks) else [],
            }
        )
    return {"rank": rank, "path": rec["path"], "entries_total": n, "entries": rows}


def _num(v: SupportsInt | None) -> int | None:
    return None if v is None or int(v) == -1 else int(v)


class HangDumps:
    """The flight-recorder dumps of one logdir's runs, a collaborator of the registry: each run's
    ``flight_recorder`` artifacts (from ``artifacts``) read once per version and kept until they change;
    the hang document built from them on each call, linked to the run's trace files (``traces``)."""

    def __init__(
        self,
        fs: AbstractFileSystem | None,
        executor: str | None,
        artifacts: Callable[[str], list[ArtifactState]],
        traces: TraceFiles,
    ) -> None:
        self._fs = fs
        self._executor = executor  # where dumps are read: see registry/executors
        self._artifacts = artifacts
        self._traces = traces
        self._lock = threading.Lock()
        self._read: dict[str, tuple[tuple[tuple[str, str], ...], DumpRecords]] = {}  # run → (versions, records)

    def records(self, run: str) -> DumpRecords | None:
        """``(records, unreadable)`` of the run's dumps; None when it has none."""
        arts = [a for a in self._artifacts(run) if a.entry.kind == "flight_recorder"]
        if not arts or self._fs is None:
            return None
        fs = self._fs
        key = tuple((a.entry.rel, a.entry.version) for a in arts)
        with self._lock:
            held = self._read.get(run)
            if held is not None and held[0] == key:
                return held[1]
            got = read_dumps(
                [
                    (a.entry.rel, fs.unstrip_protocol(a.entry.path) if not _local(fs) else a.entry.path, a.entry.size)
                    for a in arts
                ],
                open_executor(self._executor),
            )
            self._read[run] = (key, got)
            return got

    def document(self, run: str) -> HangDocument | None:
        """The run's hang document (:func:`job_document`), its traces linked by rank; the findings of a
        rank whose trace is loaded also say where its collectives stand in it
        (:func:`~tb_plugin.analysis.hang_traces.link_findings`). None without dumps."""
        from ..analysis import hang_traces
        from .states import READY

        got = self.records(run)
        if got is None:
            return None
        traces: dict[int, HangTrace] = {}
        loaded: dict[int, Any] = {}
        for st in self._traces.files():
            found = snapshot_rank(st.entry.rel) if st.run == run else None
            if found is not None and found[1] not in traces:
                traces[found[1]] = {"path": st.entry.rel, "worker": st.worker, "span": st.span}
                if st.state == READY:  # never loads a trace for this: the links come with loaded ones
                    loaded[found[1]] = hang_traces.rank_collectives(self._traces.views(st).trace)
        doc = job_document(*got, traces)
        hang_traces.link_findings(doc["findings"], loaded)
        return doc
