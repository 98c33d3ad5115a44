"""Whether this process may fork a child that answers through an anonymous memory file: the test both
early readers (``storage/early_read.py``, ``artifacts/forked.py``) make before they fork."""

from __future__ import annotations

import os
import threading


def may_fork_alone() -> bool:
    """POSIX with ``fork`` and ``memfd_create``, and no other thread (a fork copies only this thread: a
    lock another one holds would stay held in the child)."""
    return (
        hasattr(os, "fork")
        and hasattr(os, "memfd_create")
        and threading.active_count() == 1
        and threading.current_thread() is threading.main_thread()
    )
