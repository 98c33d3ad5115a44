"""A reader child started on a local allocator snapshot before ``kinetoscope report`` imports the registry.

The report's process spends ~0.3 s importing the registry, numpy and the analyses before it lists the
logdir; a snapshot's reader child (:mod:`.snapshot_child`) needs none of that. :func:`start` (called by
the report command as soon as the logdir is found to exist) walks the first :data:`MAX_WALKED` entries
of a local logdir and starts one reader child on the first file, in path order, named as a snapshot
(:func:`~tb_plugin.storage.naming.artifact_kind`), over :data:`~.isolated.SHARED_MAX_BYTES` (smaller
files go to the shared child) and starting with a pickle's protocol byte: the child reads the file as
its stdin, under the limits of any reader child (:class:`~.isolated.Started`), while this process
imports on the other core. On the command line (``fork``) the child is forked from this still nearly
empty process (:mod:`.forked`), so it reads at once. When the registry reads that file it :func:`claim` s the child (the file's
identity unchanged since the start: device, inode, size, modification time); otherwise the child is
ended (:func:`drop`: the parse cache had it; at exit: never asked for). No interpreter is started for a
file the parse cache holds (:func:`~tb_plugin.storage.cache_keys.cached_blob_exists`); a forked child
is forked first, and ended at once when the cache holds its file (the key's hashing module is imported
after the fork: ~3 ms less before the child reads). Nothing here reads the file's content beyond its first two bytes.
"""

from __future__ import annotations

import atexit
import os
import threading

from ..storage.file_heads import is_pickle_head
from ..storage.local_walk import FileIdentity, TooManyEntries, file_identity, walk_files
from ..storage.naming import artifact_kind
from ..storage.private_files import open_regular
from .isolated import SHARED_MAX_BYTES, Started, start_on_file

MAX_WALKED = 2000  # directory entries looked at (a large logdir: its snapshots are read the usual way)
_lock = threading.Lock()
_started: dict[str, tuple[FileIdentity, Started]] = {}  # real path → (identity, child)
_registered = False  # _end_all registered to run at exit


def _first_snapshot(root: str) -> str | None:
    """The first file under ``root`` (depth first, names sorted; symbolic links not followed) named as a
    snapshot and larger than :data:`~.isolated.SHARED_MAX_BYTES`, among the first :data:`MAX_WALKED` entries."""
    try:
        for e in walk_files(root, MAX_WALKED):
            try:
                if (
                    artifact_kind(e.name) == "snapshot"
                    and e.is_file(follow_symlinks=False)
                    and e.stat(follow_symlinks=False).st_size > SHARED_MAX_BYTES
                ):
                    return e.path
            except OSError:
                continue
    except TooManyEntries:
        return None
    return None


def start(root: str, cached: bool = True, fork: bool = False) -> None:
    """Start a reader child on the first large snapshot under the local folder ``root`` (see the
    module docstring); nothing when there is none, when it cannot be opened or started, or (``cached``:
    the command reads the parse cache) when the cache holds its snapshot. ``fork``: the child is forked
    from this process where it may be (:mod:`.forked`: the command line, before its imports)."""
    if os.name != "posix":  # (pread, and the reader child's limits)
        return
    path = _first_snapshot(os.path.abspath(root))
    if path is None:
        return
    try:
        # a regular file, its last component no symlink, never a FIFO that blocks (as the registry opens files);
        # the child gets its own descriptor: this one is closed
        with open_regular(path) as f:
            st = os.fstat(f.fileno())
            if not fork and cached and _cached(path, st):  # (a fresh interpreter: not started for nothing)
                return
            head = os.pread(f.fileno(), 2, 0)
            if not is_pickle_head(head):  # (not gzip, not text)
                return
            if fork:  # (its modules imported here: the child needs them before it reads)
                from .snapshot_child import forked_main

                started = start_on_file(f, st.st_size, forked_main)
            else:
                started = start_on_file(f, st.st_size)
    except OSError:
        return
    # a forked child starts first, then the cache is looked at (its key's hashing module, ~3 ms, is imported
    # after the fork): a cached file's child is ended at once, as is one whose lookup failed (the registry
    # then reads the file the usual way)
    if fork and cached:
        try:
            hit = _cached(path, st)
        except OSError:
            hit = True
        except BaseException:
            started.kill()
            raise
        if hit:
            started.kill()
            return
    global _registered
    with _lock:
        _started[os.path.realpath(path)] = (file_identity(st), started)
        if not _registered:
            _registered = True
            atexit.register(_end_all)


def _cached(path: str, st: os.stat_result) -> bool:
    """Whether the parse cache holds the snapshot of ``path`` (``st``: its status)."""
    from ..storage.cache_keys import cached_blob_exists  # (hashlib: imported only here, after a fork)

    return cached_blob_exists(path, st, "snapshot")


def claim(path: str) -> Started | None:
    """The child started on the local file ``path`` when it is still the file it reads (else that
    child is ended), or None; a child is claimed once."""
    real = os.path.realpath(path)
    with _lock:
        got = _started.pop(real, None)
    if got is None:
        return None
    identity, started = got
    try:
        same = file_identity(os.stat(real)) == identity
    except OSError:
        same = False
    if not same:
        started.kill()
        return None
    return started


def has_child(path: str) -> bool:
    """Whether a child was started early on the local file ``path`` and not yet claimed."""
    real = os.path.realpath(path)
    with _lock:
        return real in _started


def drop(path: str) -> None:
    """End the child started on ``path``, if any (its answer is not needed: the parse cache has it)."""
    got = claim(path)
    if got is not None:
        got.kill()


def _end_all() -> None:
    with _lock:
        left = [started for _, started in _started.values()]
        _started.clear()
    for started in left:
        started.kill()
