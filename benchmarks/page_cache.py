"""Whether a trace's bytes are in the page cache before a timed run, and putting them there.

A "cold" report means an empty parse cache, not a disk read: the 4.5 GB trace read from the disk took
its first pass 8.0 s against 2.9 s from the page cache (twenty-fifth session, the same code on the same
box), and a trace just written, or pushed out by other files, can be either. :func:`resident_fraction`
says how much of a file is cached (``mincore`` over a read-only mapping, Linux); :func:`make_resident`
reads what is not (untimed), so that both traces of a ratio start alike.
"""

from __future__ import annotations

import ctypes
import mmap
import os

_WINDOW = 1 << 30  # bytes mapped at a time (mincore's vector: one byte per page)
_READ = 8 << 20  # bytes read at a time by make_resident
_MAP_FAILED = ctypes.c_void_p(-1).value


def resident_fraction(path: str) -> float | None:
    """The fraction (0-1) of ``path``'s pages in the page cache; None where that cannot be asked (not
    Linux, an empty file, a call refused)."""
    size = os.path.getsize(path)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        c_mmap, c_munmap, c_mincore = libc.mmap, libc.munmap, libc.mincore
    except (OSError, AttributeError):
        return None
    if size == 0:
        return None
    c_mmap.restype = ctypes.c_void_p
    c_mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    c_munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    c_mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    page = mmap.PAGESIZE
    resident = pages_in_all = 0
    fd = os.open(path, os.O_RDONLY)
    try:
        for at in range(0, size, _WINDOW):
            length = min(_WINDOW, size - at)
            address = c_mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, at)
            if address in (None, _MAP_FAILED):
                return None
            try:
                pages = (length + page - 1) // page
                vector = (ctypes.c_ubyte * pages)()
                if c_mincore(address, length, vector) != 0:
                    return None
                resident += pages - bytes(vector).translate(_LOW_BIT).count(0)
                pages_in_all += pages
            finally:
                c_munmap(address, length)
    finally:
        os.close(fd)
    return resident / pages_in_all


_LOW_BIT = bytes(b & 1 for b in range(256))  # mincore's byte per page: its low bit says resident


def make_resident(path: str) -> float:
    """Read ``path`` once (its pages into the page cache; nothing kept); the seconds it took."""
    import time

    started = time.perf_counter()
    fd = os.open(path, os.O_RDONLY)
    try:
        if hasattr(os, "posix_fadvise"):
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
        buffer = bytearray(_READ)
        while os.readv(fd, [buffer]) > 0:
            pass
    finally:
        os.close(fd)
    return time.perf_counter() - started


def ensure_resident(path: str, label: str = "") -> str:
    """Make ``path`` resident when less than all of it is; the line saying what was found and done."""
    return _ensure(path, label)[0]


def ensure_all_resident(path: str, only_read: bool = False) -> list[str]:
    """:func:`ensure_resident` for the file ``path``, or for every file in the folder ``path``; their lines
    (with ``only_read``, only those of files that had to be read)."""
    files = [path] if not os.path.isdir(path) else [os.path.join(path, n) for n in sorted(os.listdir(path))]
    lines = [_ensure(file, "") for file in files if os.path.isfile(file)]
    return [line for line, read in lines if read or not only_read]


def _ensure(path: str, label: str) -> tuple[str, bool]:
    """:func:`ensure_resident`'s line, and whether the file was read."""
    before = resident_fraction(path)
    name = label or os.path.basename(path)
    if before is None:
        return f"page cache: {name}: residency unknown", False
    if before >= 0.999:
        return f"page cache: {name}: {before:.1%} resident", False
    took = make_resident(path)
    after = resident_fraction(path)
    shown = "unknown" if after is None else f"{after:.1%}"
    return f"page cache: {name}: {before:.1%} resident, read once (untimed, {took:.1f} s): {shown}", True
