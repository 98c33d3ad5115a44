"""One figure of this process's ``/proc/self/status`` (Linux), read without importing anything heavier
than ``open``: the reader child checks its mapped bytes with it before it reads, the heap's lazy trims
their resident bytes."""

from __future__ import annotations


def status_bytes(field: bytes) -> int | None:
    """The ``field`` line (e.g. ``b"VmSize:"``, given in kB there) of ``/proc/self/status`` in bytes;
    None where /proc is missing or the line is not there."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1]) << 10
    except (OSError, ValueError, IndexError):
        pass
    return None
