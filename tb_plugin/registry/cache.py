"""On-disk cache of parsed traces, so a restart does not parse an unchanged file again.

One file per trace, named by a hash of (logdir URL of the file, size, mtime or etag), under
``$KINETOSCOPE_CACHE_DIR`` or the platform's user cache directory. The format version, which
includes a fingerprint of the column layout, is part of the directory name: a new layout never
reads an old entry (self-invalidating). Entries are private (0600 in 0700 directories), written
atomically and fsynced (:mod:`.private_files`). Any entry that cannot be read back (zero-length,
truncated, corrupt, a FIFO or a symlink put in its place) is a miss, removed, and rewritten by the
next parse; temp files of writers that died are swept when a cache is opened. An entry (the parsed
columns, or a derived blob such as ``*.timeline.arrays``) is an array file (:mod:`..storage.array_file`:
raw array bytes after a validated index, no zip CRC, no pickle) whose ``header`` array is JSON.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import stat
import threading
from typing import Any

import numpy as np
import orjson

from ..logs import module_logger
from ..storage.array_file import read_arrays, stored_bytes, write_arrays
from ..storage.cache_keys import ENTRY_SUFFIX, INODE_MARK, cache_root, entry_key, identity  # noqa: F401 - INODE_MARK for the tests
from ..storage.private_files import DIR_MODE, make_private_dir, open_regular, sweep_temps, write_atomic
from ..trace import jsonsafe
from ..trace.model import TABLE_COLUMNS, DeviceInfo, Table, Trace, compact_column

FORMAT_REVISION = 12  # 12: no grid-size or Python-id columns (read by nothing); 11: array files, not npz; 10: object addresses stripped from names; 9: CUPTI range-profiler ranges are not device work; 8: MTIA and CUPTI range events are device work, string device pids; 7: memory events of unplaceable device types are a warning; 2: canonical pid/tid ids; 3: ATen-named uncategorized events are ops; 4: deterministic string ids
# 5: "seq" column; group_size falls back to the length of "Process Group Ranks"
# 6: "notes" (duration-less events, Composer trainer spans) split from "warnings"


#: A Trace's column tables as an entry stores them: (Trace field, array-name prefix, the table's columns).
_TABLES = tuple((field, field[0] + ".", columns) for field, columns in TABLE_COLUMNS.items())  # e. m. f. c.


def _layout_fingerprint() -> str:
    spec = "".join(repr(sorted((k, np.dtype(v).str) for k, v in columns.items())) for _, _, columns in _TABLES)
    spec += repr([f.name for f in dataclasses.fields(DeviceInfo)])
    return hashlib.sha256(spec.encode()).hexdigest()[:10]


CACHE_VERSION = f"v{FORMAT_REVISION}-{_layout_fingerprint()}"
# Entries of at least this many bytes are written past the page cache (storage/direct_file.py): the
# 4.5 GB trace's 918 MB entry in 0.5 s instead of 2.8 s here; a small entry stays in the page cache,
# where a server that reloads it soon finds it (the 35 MB V100 trace's is 6 MB)
DIRECT_ABOVE_BYTES = 64 << 20


def default_cache_dir() -> str:
    return cache_root()


logger = module_logger(__name__)
_SWEPT: set[str] = set()  # cache directories this process has swept
_SWEPT_LOCK = threading.Lock()


def _read_entry(path: str, compact: bool = False) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
    """``(header, {name: array})`` of the entry at ``path``, or None when it is missing or unreadable
    in any way (then it is removed, so the next write replaces it)."""
    try:
        with open_regular(path) as f:
            # each constant column is made one value as soon as it is read, so they are never all held
            arrays = read_arrays(f, compact_column if compact else None)
        header = orjson.loads(arrays.pop("header").tobytes())
        if not isinstance(header, dict):
            raise ValueError("header is not a JSON object")
        return header, arrays
    except FileNotFoundError:
        return None
    except Exception as exc:
        logger.warning(
            "parse cache entry %s is unreadable (%s: %s): treated as a miss and rewritten",
            path,
            type(exc).__name__,
            exc,
        )
        discard(path)
        return None


def discard(path: str) -> None:
    """Remove a bad cache entry (a regular file or a FIFO; never follows a symlink)."""
    try:
        os.unlink(path)
    except OSError:
        pass


def _events_file_intact(meta: object) -> bool:
    """Whether the entry's raw events file (if it has one) is still the regular file of the size
    written (a zero-length, truncated or FIFO replacement makes the whole entry a miss); when it is the
    trace file itself (events left in place), also of the same mtime and inode."""
    if not isinstance(meta, dict) or not meta.get("events_file"):
        return True
    try:
        st = os.lstat(meta["events_file"])
    except (OSError, TypeError, ValueError):
        return False
    return (
        stat.S_ISREG(st.st_mode)
        and st.st_size == meta.get("events_bytes", st.st_size)
        and st.st_mtime_ns == meta.get("events_mtime_ns", st.st_mtime_ns)
        and st.st_ino == meta.get("events_inode", st.st_ino)
    )


class ParseCache:
    """Get and put parsed :class:`Trace` objects by file identity: the file's URL and version, or
    for a hard-linked local file its inode version alone (:func:`inode_version`)."""

    def __init__(self, directory: str | None = None) -> None:
        self.directory = os.path.join(directory or default_cache_dir(), CACHE_VERSION)
        self.root = self.directory
        with _SWEPT_LOCK:
            first = self.directory not in _SWEPT
            _SWEPT.add(self.directory)
        if first:
            try:
                make_private_dir(self.directory)
                os.chmod(self.directory, DIR_MODE)  # also one made by an earlier version (0755)
            except OSError:
                pass  # read-only or someone else's: writes will fail and only cost the cache
        if first and os.path.isdir(self.directory):
            swept = sweep_temps(self.directory)
            if swept:
                logger.info("removed %d temp files left by parses that were killed", swept)

    def has(self, url: str, version: str) -> bool:
        return os.path.exists(self._path(url, version))

    @staticmethod
    def identity(url: str, version: str) -> str:
        """What the entry of (``url``, ``version``) is keyed by: files with one identity share it."""
        return identity(url, version)

    def _path(self, url: str, version: str) -> str:
        key = entry_key(url, version)
        return os.path.join(self.directory, key[:2], key + ENTRY_SUFFIX)

    def events_path(self, url: str, version: str) -> str:
        """Where the raw events of this file go (for the timeline's full event args)."""
        return (
            self._path(url, version)[: -len(ENTRY_SUFFIX)] + ".events.bin"
        )  # not ".json": a logdir scan must never take it for a trace

    def _blob_path(self, url: str, version: str, kind: str) -> str:
        return self._path(url, version)[: -len(ENTRY_SUFFIX)] + f".{kind}{ENTRY_SUFFIX}"

    def has_blob(self, url: str, version: str, kind: str) -> bool:
        return os.path.exists(self._blob_path(url, version, kind))

    def get_blob(self, url: str, version: str, kind: str) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
        """A derived index stored beside the parsed columns (``kind`` names it), or None."""
        return _read_entry(self._blob_path(url, version, kind))

    def put_blob(
        self, url: str, version: str, kind: str, header: dict[str, Any], arrays: dict[str, Any], durable: bool = True
    ) -> None:
        """Store a derived index beside the parsed columns. ``durable=False``: not fsynced (a blob whose
        reading fails, its lengths checked against the file's, is a miss and derived again: :func:`_read_entry`)."""
        path = self._blob_path(url, version, kind)
        header_bytes = np.frombuffer(jsonsafe.dumps(header, default=str), dtype=np.uint8)
        self._write(path, dict(arrays, header=header_bytes), durable)

    def get(self, url: str, version: str) -> Trace | None:
        path = self._path(url, version)
        got = _read_entry(path, compact=True)
        if got is None:
            return None
        header, arrays = got
        if not _events_file_intact(header.get("meta")):
            logger.warning("the raw events file of parse cache entry %s is missing or damaged: parsed again", path)
            discard(path)
            return None
        try:
            tables = {field: Table({k: arrays[prefix + k] for k in columns}) for field, prefix, columns in _TABLES}
            return Trace(
                strings=header["strings"],
                events=tables["events"],
                memory=tables["memory"],
                flows=tables["flows"],
                counters=tables["counters"],
                devices=[DeviceInfo(**d) for d in header["devices"]],
                distributed=header["distributed"],
                meta=header["meta"],
                warnings=header["warnings"],
                notes=header.get("notes", []),
            )
        except (KeyError, TypeError) as exc:  # written by other code with the same layout fingerprint
            logger.warning("parse cache entry %s lacks %s: treated as a miss", path, exc)
            discard(path)
            return None

    def put(self, url: str, version: str, trace: Trace) -> None:
        self._write(*self.prepare(url, version, trace))

    def prepare(self, url: str, version: str, trace: Trace) -> tuple[str, dict[str, Any]]:
        """``(path, arrays)`` that :meth:`put` writes, taken now (header serialized, column dicts copied):
        writing them later, in another thread (:meth:`write_prepared`), stores the trace as it is now."""
        path = self._path(url, version)
        header = jsonsafe.dumps(  # integers beyond 64 bits, deep nesting: values, not a failed file
            {
                "strings": trace.strings,
                "devices": [dataclasses.asdict(d) for d in trace.devices],
                "distributed": trace.distributed,
                "meta": trace.meta,
                "warnings": trace.warnings,
                "notes": trace.notes,
            },
            option=orjson.OPT_SERIALIZE_NUMPY,
            default=str,
        )
        arrays = {"header": np.frombuffer(header, dtype=np.uint8)}
        for field, prefix, _ in _TABLES:
            arrays.update({prefix + k: v for k, v in getattr(trace, field).columns.items()})
        return path, arrays

    def write_prepared(self, path: str, arrays: dict[str, Any]) -> None:
        """Write what :meth:`prepare` returned; a failure only costs the cache entry (logged)."""
        try:
            self._write(path, arrays)
        except Exception as exc:
            logger.warning("cannot write parse cache entry %s: %s", path, exc)

    @staticmethod
    def _write(path: str, arrays: dict[str, Any], durable: bool = True) -> None:
        """Write an array file privately and atomically (fsynced unless not ``durable``; past the page
        cache from :data:`DIRECT_ABOVE_BYTES`); a failure (an array of a dtype it cannot hold
        included) only costs the cache entry."""
        try:
            direct = durable and stored_bytes(arrays) >= DIRECT_ABOVE_BYTES
            write_atomic(path, lambda f: write_arrays(f, arrays), durable=durable, direct=direct)
        except (OSError, ValueError) as exc:
            logger.warning("cannot write parse cache entry %s: %s", path, exc)


__all__ = ["ParseCache", "CACHE_VERSION", "default_cache_dir"]
