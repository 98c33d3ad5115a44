"""List a logdir through fsspec: local paths and ``s3://``, ``gs://``, ``az://`` URLs alike."""

from __future__ import annotations

import dataclasses
import os
import posixpath

from .cache_keys import inode_version
from .confined import ConfinedLocalFileSystem, inside
from .naming import artifact_kind, is_candidate, is_certain_trace, may_be_flight_recorder
from .remote import StorageError, is_local_fs
from .remote import open_logdir as _open_logdir
from .sniff import SniffCache


@dataclasses.dataclass(frozen=True)
class FileEntry:
    """A trace file: ``path`` on ``fs``, ``rel`` relative to the logdir ("/" separators)."""

    path: str
    rel: str
    size: int
    version: str  # changes when the file changes: mtime or etag, with the size
    # "trace" | "snapshot" | "memory_timeline" | "memprofiler_stats" | "memprofiler_log" | "flight_recorder"
    kind: str = "trace"

    @property
    def run(self) -> str:
        """The folder holding the file; a MemProfiler ``memprofiler/`` folder's files belong to the run
        of the folder above it (where Lightning writes the traces of the same job)."""
        parent = posixpath.dirname(self.rel)
        if posixpath.basename(parent) == "memprofiler" and self.kind != "trace":
            parent = posixpath.dirname(parent)
        return parent or "."

    @property
    def name(self) -> str:
        return posixpath.basename(self.rel)


def open_logdir(logdir: str):
    """``(fs, root)`` for a logdir path or URL (raises :class:`~.remote.StorageError` naming the
    extra to install when a cloud URL's fsspec package is missing). A local logdir's filesystem
    reads only files inside ``root``, checked again at every open (:mod:`.confined`)."""
    fs, root = _open_logdir(logdir)
    if is_local_fs(fs):
        fs = ConfinedLocalFileSystem(root)
    return fs, root


def _version(info: dict) -> str:
    for key in ("mtime", "ETag", "etag", "generation", "LastModified", "last_modified", "updated", "created"):
        if info.get(key) is not None:
            return f"{info.get('size')}:{info[key]}"
    return str(info.get("size"))


def list_files(fs, root: str, sniff: SniffCache, skipped_links: list[str] | None = None) -> list[FileEntry]:
    """Every profiler artifact under ``root`` at any depth (traces, allocator snapshots, memory
    timeline exports), sorted by relative path. Symlinks that are not followed (to directories, or
    resolving outside the logdir) are appended to ``skipped_links`` (logdir-relative), so the UI can
    say why something the user put there is not listed."""
    try:
        found = fs.find(root, detail=True)  # one recursive listing
    except FileNotFoundError:
        if is_local_fs(fs):
            return []
        raise StorageError(f"bucket or container not found: {fs.unstrip_protocol(root)}") from None
    if not found and not is_local_fs(fs):
        # some SDKs (adlfs) list a missing container as empty: tell a missing one from an empty prefix
        bucket = root.strip("/").split("/", 1)[0]
        if bucket and not fs.exists(bucket):
            raise StorageError(f"bucket or container not found: {fs.unstrip_protocol(bucket)}")
    out = []
    prefix = root.rstrip("/") + "/"
    real_root = os.path.realpath(root) if is_local_fs(fs) else None
    links = tuple(p.rstrip("/") + "/" for p, i in found.items() if i.get("islink")) if real_root else ()
    for path, info in found.items():
        if (
            links
            and real_root
            and (path.startswith(links) or (info.get("islink") and not _link_inside(real_root, path)))
        ):
            if skipped_links is not None and info.get("islink") and not path.startswith(links):
                skipped_links.append(path[len(prefix) :] if path.startswith(prefix) else posixpath.basename(path))
            continue  # below a symlinked directory, or a symlink that resolves outside the logdir
        if info.get("type") not in (None, "file") and not (real_root is not None and info.get("islink")):
            continue
        name = posixpath.basename(path)
        version = _version(info)
        if real_root is not None and (info.get("nlink") or 1) > 1 and not info.get("islink"):
            version = _inode_version(path, version)  # hard links to one file share its parse
        kind = artifact_kind(name)
        if kind is None:
            if is_certain_trace(name):
                kind = "trace"
            elif is_candidate(name):
                kind = sniff.kind(fs, path, version)
            elif may_be_flight_recorder(name):  # dumps have any name: only a dump is taken
                kind = "flight_recorder" if sniff.kind(fs, path, version) == "flight_recorder" else None
        elif kind == "snapshot" and sniff.kind(fs, path, version) == "flight_recorder":
            kind = "flight_recorder"  # a dump named *.pkl is not an allocator snapshot
        if kind is None:
            continue
        rel = path[len(prefix) :] if path.startswith(prefix) else name
        out.append(FileEntry(path=path, rel=rel, size=int(info.get("size") or 0), version=version, kind=kind))
    out.sort(key=lambda e: e.rel)
    return out


def _inode_version(path: str, version: str) -> str:
    """A hard-linked local file's version keyed by device + inode (one ``stat``; only files with
    several links pay it), else ``version`` unchanged."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return version
    return inode_version(st.st_size, st.st_mtime, st.st_dev, st.st_ino)


def _link_inside(real_root: str, path: str) -> bool:
    """Local logdirs only: a symlink is listed only when it resolves to a regular file inside the
    logdir. Symlinked directories are never descended into (no loops, no escapes); only links are
    resolved, as ``realpath`` on every one of 10 000 files would cost about a second."""
    real = os.path.realpath(path)
    return inside(real_root, real) and os.path.isfile(real)  # the root itself is a directory, never a file
