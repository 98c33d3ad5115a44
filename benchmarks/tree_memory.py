"""The physical memory a process and its descendants hold together, sampled from outside.

A forked child's RSS counts every page it still shares with its parent, so neither process's peak RSS
nor their sum says what the machine gives a report that forks (the section child, the decode workers).
The sum of the processes' anonymous proportional set sizes (``Pss_Anon`` of ``/proc/PID/smaps_rollup``:
each shared page split among its sharers) counts each page once: the memory the tree holds beyond the
page cache. :class:`TreeMemory` samples it from a thread of the benchmark's own process (not the measured
one), every ``interval`` seconds; reading a 2 GB process's rollup walks its page tables (~1-2 ms of kernel
time in that process's stead), so the peak can miss a spike shorter than the interval.
"""

from __future__ import annotations

import os
import threading


def _descendants(pid: int) -> list[int]:
    """``pid`` and every live process below it (``/proc/PID/task/TID/children``)."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:  # ended meanwhile
            continue
    return found


def anon_pss_mb(pid: int) -> float:
    """``Pss_Anon`` of one process, MB (0 once it has ended)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss_Anon:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class TreeMemory:
    """Peak of the summed anonymous PSS of ``pid``'s process tree while the context is open (MB)."""

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        self.pid, self.interval = pid, interval
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_mb = max(self.peak_mb, sum(anon_pss_mb(p) for p in _descendants(self.pid)))
            self._stop.wait(self.interval)

    def __enter__(self) -> TreeMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
