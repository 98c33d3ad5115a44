"""Where the parse cache keeps a file's entries, computed without the cache's imports (numpy): the
cache's folder, the key of a file's identity, and a local file's version as a logdir listing forms it.

:mod:`tb_plugin.registry.cache` keys its entries with :func:`entry_key`; :mod:`tb_plugin.artifacts.early`
asks :func:`cached_blob_exists` before it starts a reader child that the cache would make useless.
"""

from __future__ import annotations

import glob
import hashlib
import os

from ..settings import current

ENTRY_SUFFIX = ".arrays"  # an entry's file (and, after ".<kind>", a derived blob's): storage/array_file.py
INODE_MARK = "|inode:"  # in a version string: the file is keyed by its inode, not its path (inode_version)


def cache_root() -> str:
    """The parse cache's folder (its format versions are folders below): ``$KINETOSCOPE_CACHE_DIR``,
    else the platform's user cache folder."""
    chosen = current().cache_dir
    if chosen:
        return chosen
    import platformdirs

    return platformdirs.user_cache_dir("kinetoscope", appauthor=False)


def identity(url: str, version: str) -> str:
    """What the entry of (``url``, ``version``) is keyed by: files with one identity share it."""
    return f"inode\0{version}" if INODE_MARK in version else f"{url}\0{version}"


def entry_key(url: str, version: str) -> str:
    """The hex key an entry's files are named by (sha256 of :func:`identity`)."""
    return hashlib.sha256(identity(url, version).encode()).hexdigest()


def inode_version(size: int, mtime: float, dev: int, ino: int) -> str:
    """The version of a local file that has several hard links: size and mtime as usual, plus the
    device and inode. the parse cache (registry/cache.py) keys such a version by itself, without the path, so every
    link to the same content shares one cache entry (parsed once). Different device/inode pairs are
    different files, and a rewrite changes size or mtime, so no two contents share a key."""
    return f"{size}:{mtime}{INODE_MARK}{dev}:{ino}"


def local_version(st: os.stat_result) -> str:
    """A local file's version as the logdir listing forms it from ``os.stat`` (size and mtime; with
    the device and inode for a file of several hard links)."""
    if st.st_nlink > 1:
        return inode_version(st.st_size, st.st_mtime, st.st_dev, st.st_ino)
    return f"{st.st_size}:{st.st_mtime}"


def cached_blob_exists(path: str, st: os.stat_result, kind: str) -> bool:
    """Whether the parse cache holds a ``kind`` blob for the local file ``path`` (absolute, as listed)
    in any of its format versions (a stale version's blob answers True: then nothing is started early)."""
    return _cached(path, st, f".{kind}{ENTRY_SUFFIX}")


def cached_entry_exists(path: str, st: os.stat_result) -> bool:
    """Whether the parse cache holds the parsed trace of the local file ``path`` (as :func:`cached_blob_exists`)."""
    return _cached(path, st, ENTRY_SUFFIX)


def _cached(path: str, st: os.stat_result, suffix: str) -> bool:
    key = entry_key("file://" + path, local_version(st))
    return bool(glob.glob(os.path.join(glob.escape(cache_root()), "v*", key[:2], key + suffix)))
