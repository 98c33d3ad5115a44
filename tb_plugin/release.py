"""Give memory freed by an eviction back to the operating system.

The memory budget (:mod:`.runs`) drops the views of least recently used files. Their large numpy
columns are unmapped at once, but the many medium and small allocations (string tables, derived
indexes, memoized rows) go back to glibc's malloc arenas, one per request thread, which keep them:
browsing 20 runs of a 0.9 GB trace twice under a 4 GB budget grew the server to 10.9 GB although the
kept views stayed under 4 GB. ``malloc_trim(0)`` returns the free pages of every arena. Elsewhere
(not glibc) this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

_trim = None
if sys.platform.startswith("linux"):
    try:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        _trim = getattr(_libc, "malloc_trim", None)
    except OSError:
        _trim = None


def release_freed_memory() -> bool:
    """Return free heap pages to the OS (glibc ``malloc_trim(0)``); True when it could be asked."""
    if _trim is None:
        return False
    try:
        _trim(0)
    except Exception:  # noqa: BLE001 - best effort only
        return False
    return True
