"""Memory artifacts other than traces (allocator snapshots, memory-timeline exports, MemProfiler
output): loading them in their own thread (:class:`ArtifactStore`, a collaborator of the registry); their views
are :mod:`.artifact_views`, imported with their analysis and reader modules when one is loaded."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable, cast

from ..analysis import timeline_query
from ..logs import module_logger
from ..storage.fs import FileEntry
from ..storage.naming import companion_traces, composer_rank_batch, names_oom, snapshot_rank
from ..storage.read import Blocks, ReadError
from ..storage.remote import is_local_fs
from ..trace.errors import TraceReadError
from .parse import read_bytes
from .results import ANALYSIS_VERSION
from .states import ERROR, LOADING, QUEUED, READY, ArtifactState, DumpRecords, FileState

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

    from ..trace.model import Trace
    from .cache import ParseCache
    from .records import SnapshotRanksDocument
    from .trace_files import TraceFiles

logger = module_logger(__name__)

MEMPROFILER_KINDS = ("memprofiler_stats", "memprofiler_log")
SPARE_CHECKED = 8  # queued snapshots looked up in the parse cache when deciding on a spare reader child


def load_snapshot_blocks(blocks: Blocks, size: int) -> Any:
    """:func:`~tb_plugin.artifacts.snapshot.load_snapshot_blocks` (imported when a snapshot is read), by the
    reader child :mod:`~tb_plugin.artifacts.early` started on this file, if any (``blocks``' bounds first);
    else a plain pickle file of the listed size over the shared child's is read by a child from the file
    itself (:mod:`~tb_plugin.artifacts.file_send`: no block of it held here), and any other file in
    ``blocks``."""
    from ..artifacts.early import claim
    from ..artifacts.file_send import open_pickle
    from ..artifacts.isolated import SHARED_MAX_BYTES
    from ..artifacts.snapshot import load_snapshot_blocks as load
    from ..artifacts.snapshot import load_snapshot_file

    started = claim(blocks.path)
    if started is not None:
        try:
            blocks.check_raw_size()
        except ReadError:
            started.kill()
            raise
        return load(blocks, size, started)
    opened = open_pickle(blocks.path, SHARED_MAX_BYTES)
    if opened is None:
        return load(blocks, size)
    file, file_size = opened
    with file:
        if file_size != size:  # changed since it was listed: read in blocks, which bound what they read
            return load(blocks, size)
        blocks.check_raw_size()
        return load_snapshot_file(file, file_size, blocks)


def artifact_links(art: ArtifactState, traces: dict[str, tuple[str, str]]) -> dict[str, Any]:
    """What the ``runs`` listing adds to an artifact: ``trace`` (``{"worker", "span"}`` of the trace file
    a ``*.pt.trace.memory.*`` export was written beside, from ``traces``: logdir-relative path →
    (worker, span)), Composer's ``rank`` and ``batch`` from its name, a snapshot's ``rank`` (a
    ``rank<N>`` in its name or folder: see :func:`~.storage.naming.snapshot_rank`) and ``taken_on_oom``
    (its name says OOM: :func:`~.storage.naming.names_oom`)."""
    out: dict[str, Any] = {"trace": None, "rank": None, "batch": None}
    name, folder = art.entry.name, art.entry.rel[: len(art.entry.rel) - len(art.entry.name)]
    for trace_name in companion_traces(name):
        if folder + trace_name in traces:
            worker, span = traces[folder + trace_name]
            out["trace"] = {"worker": worker, "span": span}
            break
    rank_batch = composer_rank_batch(name)
    if rank_batch is not None:
        out["rank"], out["batch"] = rank_batch
    elif art.entry.kind == "snapshot":
        got = snapshot_rank(art.entry.rel)
        if got is not None:
            out["rank"] = got[1]
    if art.entry.kind == "snapshot":
        out["taken_on_oom"] = names_oom(name)
    return out


class ArtifactStore:
    """The memory artifacts of one logdir, a collaborator of the registry: reconciled with each
    listing, loaded in their own thread (:meth:`run`) or on request, and matched against the logdir's
    trace files (``traces``) for the snapshot views. Flight-recorder dumps are read with their run's
    other dumps by ``dumps`` (:class:`~.hang.HangDumps`)."""

    def __init__(
        self,
        fs: AbstractFileSystem | None,
        cache: ParseCache | None,
        traces: TraceFiles,
        dumps: Callable[[str], DumpRecords | None],
    ) -> None:
        self._fs = fs
        self._cache = cache
        self._traces = traces
        self._dumps = dumps
        self._artifacts: dict[str, ArtifactState] = {}  # rel → artifact
        self._wake = threading.Condition(threading.Lock())  # notified when the artifacts change or at stop
        self._match_facts_memo: dict[tuple[str, str], dict[str, Any]] = {}  # (rel, version) → match facts
        self.spare_reader = False  # keep a spare reader child for the next large snapshot (:meth:`tend_spare`)
        self._listed = False  # reconciled with a listing at least once

    def reconcile(self, entries: list[FileEntry]) -> None:
        """Make the artifacts those of a listing: new or changed ones queued, gone ones dropped."""
        with self._wake:
            seen = set()
            for e in entries:
                seen.add(e.rel)
                old = self._artifacts.get(e.rel)
                if old is None or old.entry.version != e.version:
                    self._artifacts[e.rel] = ArtifactState(entry=e)
            for rel in list(self._artifacts):
                if rel not in seen:
                    del self._artifacts[rel]
            self._listed = True
            self._wake.notify_all()
        self.tend_spare()

    def tend_spare(self) -> None:
        """With :attr:`spare_reader` (a live server, MCP server or notebook; the report command): keep one reader child started
        ahead (:func:`~tb_plugin.artifacts.spare.keep_spare`; with more than one to read, the next starts
        beside each read) while a local snapshot too large for the
        shared child awaits its first read and the parse cache lacks it, or before the first listing;
        otherwise end it (an idle process is not kept for nothing) unless another registry of this
        process wants it."""
        if not self.spare_reader:
            return
        from ..artifacts.spare import end_spare, keep_spare

        waiting = self._awaits_reader() if self._listed else 1
        if waiting:
            keep_spare(self, again=waiting > 1)  # (more than one: the next spare starts beside each read)
            if self._listed:  # a snapshot awaits its first read: what that read imports, imported now
                _import_snapshot_load()
        else:
            end_spare(self)

    def _awaits_reader(self) -> int:
        """How many queued local snapshots over the shared child's size have no parse-cache blob nor a
        child started early (:mod:`~tb_plugin.artifacts.early`): 0, 1 or 2 (more than one); the first few
        such snapshots looked at, each one ``stat``."""
        from ..artifacts.early import has_child
        from ..artifacts.isolated import SHARED_MAX_BYTES

        fs = self._fs
        if fs is None or not is_local_fs(fs):
            return 0
        with self._wake:
            queued = [
                a.entry
                for a in self._artifacts.values()
                if a.entry.kind == "snapshot" and a.state == QUEUED and (a.entry.size or 0) > SHARED_MAX_BYTES
            ]
        found = 0
        for entry in queued[:SPARE_CHECKED]:
            if has_child(entry.path):  # read by the child the report command started early
                continue
            if self._cache is None or not self._cache.has_blob(
                fs.unstrip_protocol(entry.path), entry.version, "snapshot"
            ):
                found += 1
                if found > 1:
                    break
        return found

    def wake(self) -> None:
        """Wake the loader thread (:meth:`run`): to stop, or to look at the artifacts again."""
        with self._wake:
            self._wake.notify_all()

    def artifacts(self, run: str | None = None) -> list[ArtifactState]:
        with self._wake:
            return sorted(
                (a for a in self._artifacts.values() if run is None or a.run == run), key=lambda a: a.entry.rel
            )

    def find_artifact(self, run: str, path: str) -> ArtifactState | None:
        """The artifact with this logdir-relative path in this run (a lookup, never a file path)."""
        with self._wake:
            a = self._artifacts.get(path)
        return a if a is not None and a.run == run else None

    def load_artifact(self, art: ArtifactState, wait: bool = True) -> ArtifactState:
        """Read, parse (or fetch from the cache) and index one artifact, in this thread, unless it is
        loaded already (checked without a lock). One lock per artifact: a slow artifact never delays
        another. With ``wait=False``, an artifact another thread is loading is returned as it is
        (state ``loading``: the caller answers that and the client polls)."""
        if art.state in (READY, ERROR):
            return art
        if not art.lock.acquire(blocking=wait):
            return art
        try:
            if art.state not in (READY, ERROR):
                self._load_artifact(art)
        finally:
            art.lock.release()
        return art

    def _load_artifact(self, art: ArtifactState) -> None:
        from ..artifacts.early import drop as drop_early
        from ..artifacts.isolated import SnapshotError
        from ..artifacts.memory_html import MAX_HTML_BYTES, MemoryHtmlError, extract_png
        from ..artifacts.memprofiler import MemProfilerError
        from ..artifacts.snapshot import pack_snapshot, unpack_snapshot
        from ..artifacts.timeline_export import TimelineExportError, load_timeline_export
        from .artifact_views import MemoryHtmlViews, SnapshotViews, TimelineExportViews, load_memprofiler_views

        fs = self._fs
        if fs is None:  # never listed: an artifact comes from a listing of an opened logdir
            art.error, art.state = "the logdir cannot be opened", ERROR
            return
        art.state = LOADING
        entry = art.entry
        url = fs.unstrip_protocol(entry.path)
        try:
            if entry.kind == "snapshot":
                snap = summary = None
                if self._cache is not None:
                    got = self._cache.get_blob(url, entry.version, "snapshot")
                    snap = unpack_snapshot(*got) if got else None
                    if snap is not None and is_local_fs(fs):
                        drop_early(entry.path)  # a reader child started on it early is not needed
                    # the summary too (its alloc/free matching sorts the whole history: seconds at 20 M entries)
                    got = self._cache.get_blob(url, entry.version, "snapshot-summary") if snap is not None else None
                    summary = got[0].get("summary") if got and got[0].get("analysis") == ANALYSIS_VERSION else None
                writing = None
                if snap is None:  # bounded like a trace (a sparse 2 GiB file is refused, not read whole)
                    snap = self._read_snapshot(fs, entry)
                    if self._cache is not None:  # written while the summary is computed (both release the GIL)
                        args = (url, entry.version, "snapshot", *pack_snapshot(snap), False)  # (not fsynced)
                        writing = threading.Thread(target=self._cache.put_blob, args=args, daemon=True)
                        writing.start()
                try:
                    art.views = SnapshotViews(snap, summary)
                    if summary is None and self._cache is not None:
                        self._cache.put_blob(
                            url,
                            entry.version,
                            "snapshot-summary",
                            {"summary": art.views.summary(), "analysis": ANALYSIS_VERSION},
                            {},
                            durable=False,  # (derived again when unreadable: no fsync on the first answer's path)
                        )
                    art.views.summary()
                finally:
                    if writing is not None:
                        writing.join()
            elif entry.kind == "memory_html":
                with fs.open(entry.path, "rb") as f:
                    art.views = MemoryHtmlViews(extract_png(f.read(MAX_HTML_BYTES + 1)))
            elif entry.kind in MEMPROFILER_KINDS:
                art.views = load_memprofiler_views(fs, entry)
            elif entry.kind == "flight_recorder":  # read with the run's other dumps, once (registry/hang.py)
                _, unreadable = self._dumps(art.run) or ([], [])
                error = next((u["error"] for u in unreadable if u["path"] == entry.rel), None)
                if error is not None:
                    raise TimelineExportError(error)
                art.views = None
            else:
                # (a large remote object comes back as a read-only mmap: bytes-like, as the readers take it)
                data = cast(bytes, read_bytes(fs, entry.path, entry.size))
                art.views = TimelineExportViews(load_timeline_export(data))
        except (SnapshotError, TimelineExportError, MemProfilerError, MemoryHtmlError, TraceReadError) as exc:
            art.error, art.state = self._traces.client_message(str(exc)), ERROR
        except OSError as exc:
            art.error, art.state = self._traces.client_message(f"cannot read file: {exc}"), ERROR
        except Exception as exc:  # one bad file must stay one file's problem
            logger.exception("reading %s failed", entry.rel)
            art.error, art.state = (
                self._traces.client_message(f"internal error while reading this file: {type(exc).__name__}: {exc}"),
                ERROR,
            )
        else:
            art.state = READY
        if entry.kind == "snapshot":
            self.tend_spare()  # the spare used: another one for the next snapshot, if one waits

    def _read_snapshot(self, fs: AbstractFileSystem, entry: FileEntry) -> Any:
        """The snapshot in ``entry``: a local file streamed to the reader child in blocks (this
        process holds one block, not the file), with the bounds of :func:`read_bytes`; a remote one read
        whole first."""
        from ..artifacts.snapshot import load_snapshot

        if not is_local_fs(fs):
            # (a large remote object comes back as a read-only mmap: bytes-like, as the reader takes it)
            return load_snapshot(cast(bytes, read_bytes(fs, entry.path, entry.size, json_document=False)))
        try:
            return load_snapshot_blocks(
                Blocks(fs, entry.path, entry.size, json_document=False, limit_share=1), entry.size or 0
            )
        except ReadError as exc:
            raise TraceReadError(str(exc)) from None

    def rank_group(self, art: ArtifactState) -> list[tuple[int, ArtifactState]]:
        """The snapshots that differ from ``art`` only by the rank in their name or folder
        (:func:`~.storage.naming.snapshot_rank`; a ``rank_<N>/`` folder is a run of its own, so every run
        is searched), ``art`` included, by rank; empty when its path names no rank."""
        mine = snapshot_rank(art.entry.rel)
        if mine is None or art.entry.kind != "snapshot":
            return []
        out = []
        for other in self.artifacts():
            got = snapshot_rank(other.entry.rel) if other.entry.kind == "snapshot" else None
            if got is not None and got[0] == mine[0]:
                out.append((got[1], other))
        return sorted(out, key=lambda ra: (ra[0], ra[1].entry.rel))

    def snapshot_ranks(self, art: ArtifactState) -> SnapshotRanksDocument:
        """Peak active bytes per rank of ``art``'s rank group (each snapshot loaded here unless another
        thread is loading it) and the outlier (:func:`~.analysis.snapshot_ranks.compare`)."""
        rows: list[dict[str, Any]] = []
        for rank, other in self.rank_group(art):
            self.load_artifact(other, wait=False)
            row = {
                "rank": rank,
                "run": other.run,
                "path": other.entry.rel,
                "state": other.state,
                "error": other.error,
                "peak_active_bytes": None,
                "device": None,
                "peak_time": None,
            }
            if other.state == READY:
                devices = other.views.summary()["devices"]
                if devices:
                    top = max(devices, key=lambda d: d["peak_active_bytes"])
                    row.update(
                        peak_active_bytes=top["peak_active_bytes"], device=top["device"], peak_time=top["peak_time"]
                    )
            rows.append(row)
        from ..analysis.snapshot_ranks import compare

        # compare keeps each row's keys (SnapshotRankRow's but the two it adds) and adds the ratios
        return cast("SnapshotRanksDocument", compare(rows))

    def snapshot_trace(self, art: ArtifactState, device: int) -> tuple[dict[str, Any] | None, Trace | None, int]:
        """The loaded trace of ``art``'s run that matches ``device`` of the snapshot best (largest
        wall-clock overlap, :func:`~.analysis.snapshot_attribution.match_overlap`): ``(link, trace,
        traces still loading)``; ``link`` is ``{"worker", "span", "path", "overlap_us"}``, None (and
        trace None) when no loaded trace matches."""
        from ..analysis import snapshot_attribution

        got = snapshot_rank(art.entry.rel)
        rank = got[1] if got else None
        best: tuple[dict[str, Any], FileState] | None = None  # (the match, its file)
        loading = 0
        for st in self._traces.files():
            if st.run != art.run:
                continue
            if st.state in (QUEUED, LOADING):
                self._traces.want(st)  # loaded next (the client polls)
                loading += 1
                continue
            if st.state != READY:
                continue
            overlap = snapshot_attribution.match_overlap(art.views.snapshot, device, self._match_facts(st), rank)
            if overlap is not None and (best is None or overlap > best[0]["overlap_us"]):
                best = (
                    {
                        "worker": st.worker,
                        "span": st.span,
                        "path": st.entry.rel,
                        "overlap_us": overlap,
                        "version": st.entry.version,
                    },
                    st,
                )
        if best is None:
            return None, None, loading
        return best[0], self._traces.views(best[1]).trace, loading

    def _match_facts(self, st: FileState) -> dict[str, Any]:
        """:func:`~.analysis.snapshot_attribution.match_facts` of a loaded trace file, kept per file
        version: matching a snapshot against every rank's trace never reloads an evicted trace."""
        from ..analysis import snapshot_attribution

        memo = self._match_facts_memo
        key = (st.entry.rel, st.entry.version)
        if key not in memo:
            memo[key] = snapshot_attribution.match_facts(self._traces.views(st).trace)
        return memo[key]

    def snapshot_counters(
        self, state: FileState, trace: Trace, t0: float, t1: float, bins: int
    ) -> list[dict[str, Any]]:
        """Counter tracks for the Trace view of ``trace`` (the file ``state``) over ``[t0, t1]`` (µs of
        the timeline, from its first event): per loaded snapshot of its run and device that matches it
        (:func:`~.analysis.snapshot_attribution.match_overlap`), the snapshot's active bytes per bin.
        Snapshots not loaded yet add nothing (the background loader reads them)."""
        out = []
        base = timeline_query.origin(trace)
        for art in self.artifacts(state.run):
            if art.entry.kind != "snapshot" or art.state != READY:
                continue
            from ..analysis import snapshot_attribution  # a loaded snapshot imported it already

            got = snapshot_rank(art.entry.rel)
            try:
                for device in art.views.devices():
                    if snapshot_attribution.match_overlap(art.views.snapshot, device, trace, got and got[1]) is None:
                        continue
                    values = snapshot_attribution.active_track(
                        art.views.wall_active(device), trace, t0 + base, t1 + base, bins
                    )
                    out.append(
                        {
                            "name": f"GPU {device} snapshot active ({art.entry.name})",
                            "unit": "bytes",
                            "values": values,
                            "snapshot": art.entry.rel,
                        }
                    )
            except Exception:  # a snapshot's problem never breaks the trace's timeline
                logger.exception("snapshot track of %s failed", art.entry.rel)
        return out

    def run(self, stop: threading.Event, interval: float) -> None:
        """Load queued memory artifacts in the background until ``stop`` is set (the registry's
        artifact thread): a slow snapshot or YAML file never holds up the traces (the loader thread)
        nor another artifact's requests. Looks again at least every ``interval`` s."""
        while not stop.is_set():
            with self._wake:
                art = next((a for a in self._artifacts.values() if a.state == QUEUED), None)
                if art is None:
                    self._wake.wait(timeout=interval)
                    continue
            self.load_artifact(art)


def _import_snapshot_load() -> None:
    """Import what a snapshot's first load imports beyond the listing's (the reader's parent side, the
    views and their analyses: ~9 ms of CPU) while the process waits for that load: a live server's, MCP
    server's or notebook's first snapshot request then does not pay them. (The parse cache's write imports
    nothing more: its array files need no ``zipfile``.)"""
    from ..artifacts import snapshot  # noqa: F401
    from . import artifact_views  # noqa: F401
