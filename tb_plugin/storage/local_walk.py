"""A bounded look at a local folder, for the readers the command line starts before the registry: the
files under a folder, and a file's identity to check it is still the one seen then."""

from __future__ import annotations

import os
from collections.abc import Iterator

FileIdentity = tuple[int, int, int, int]  # device, inode, size (bytes), modification time (ns)


class TooManyEntries(Exception):
    """The folder holds more directory entries than the walk may look at."""


def file_identity(st: os.stat_result) -> FileIdentity:
    """The file's device, inode, size and modification time: equal while it is the same, unchanged file."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def walk_files(root: str, max_entries: int) -> Iterator[os.DirEntry]:
    """Every entry under ``root`` that is not a folder, depth first with names sorted (symbolic links not
    followed: a link is yielded, never entered); raises :class:`TooManyEntries` once the folders read hold
    more than ``max_entries`` entries in all. An unreadable folder or entry is skipped."""
    todo, walked = [root], 0
    while todo:
        try:
            with os.scandir(todo.pop()) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        walked += len(entries)
        if walked > max_entries:
            raise TooManyEntries(root)
        subfolders = []
        for e in entries:
            try:
                is_dir = e.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                subfolders.append(e.path)
            else:
                yield e
        todo += reversed(subfolders)
