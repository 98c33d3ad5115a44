"""When a reader child unpickles a snapshot whole with CPython's C unpickler, and the object bound then.

The streaming reader (:mod:`.pickle_stream`) holds a batch of history entries at a time (~1–2× the file
in memory) but runs every opcode in Python: ~2× a bare ``pickle.load``. The C unpickler (restricted: every
global refused, :func:`~.unpickle.load_whole`) builds the whole object (~10× the file's size in address
space, measured on PyTorch-shaped snapshots) at C speed. A reader child uses it when that fits under its
own address-space limit (``RLIMIT_AS``, set by :mod:`.isolated`): :func:`fits`. Past the limit the
unpickler's allocation fails with :class:`MemoryError` (a file larger than estimated, or one asking for a
huge memo), and the child reads the file again with the streaming reader. A drained read (protocols 4
and 5 from the pipe) is tried at the least expansion measured and watched as it grows (:class:`Projection`),
so a file that would not fit is streamed after a few percent of a read. A process without a finite
address-space limit (the server, the tests) never takes this path: no unbounded unpickler runs anywhere.

Shared references are built once by the unpickler; they amplify when the value is walked.
:func:`check_snapshot` applies :func:`~.expansion.object_limit` to what the snapshot's parse walks: each
history counts its entries (a history list referenced twice counts twice), its frame lists are read once
per distinct list object (:func:`~.snapshot_columns.trace_columns`: a shared list is no amplification),
and everything else (segments and their blocks, annotations) is counted by :func:`~.expansion.check`.
"""

from __future__ import annotations

from typing import Any

from ..trace.proc_status import status_bytes
from . import expansion

WHOLE_PER_BYTE = 12  # address space a whole read may take per byte of pickle (measured: ~10×)
# ... a protocol 4-5 read from the pipe whose histories are drained while reading (:mod:`.drain`), which
# empties each entry and (a frame dict per frame) its frames as it goes: VmPeak less the child's start,
# measured 2026-12-03 (benchmarks/snapshot_input.py's layouts): 4.30× a 1 M-entry file with 8 frame dicts
# of its own per entry (104 MB), 4.16× with 32 (200 000 entries), 3.86× with shared frame dicts, 3.76×
# with shared frame lists, 2.07× a PyTorch recording's history repeated to 1 M entries (199 MB). Such a
# read is tried where about the least of these fits (10× until then: the recording was streamed, 2.3× a
# bare pickle.load) and watched (:class:`Projection`): one that grows faster ends early, as one that
# runs out (MemoryError), and the file is streamed
DRAINED_LEAST_PER_BYTE = 2.5
PROJECT_AFTER_BYTES = 4 << 20  # pickle bytes read before a drained read's growth is projected
PROJECT_EVERY_BYTES = 4 << 20  # ... and between two projections (/proc/self/status read: ~30 µs each)


def _address_space_limit() -> int | None:
    """This process's ``RLIMIT_AS`` soft limit (bytes), or None when it has none (or no ``resource``)."""
    try:
        import resource
    except ImportError:
        return None
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    return None if soft == resource.RLIM_INFINITY or soft <= 0 else int(soft)


def _mapped_bytes() -> int | None:
    """This process's mapped address space now (``VmSize``, bytes), or None where /proc is missing."""
    return status_bytes(b"VmSize:")


class Projection:
    """A drained whole read's address space, projected from its growth so far: :meth:`check` (the drain's
    ``watch``, after each read) raises :class:`MemoryError` as soon as the growth per pickle byte read,
    carried to the file's end, with ``later`` bytes more, passes this process's limit (the child then has
    the file streamed, as when the unpickler's own allocation fails). Growth is measured from the start
    and projected once :data:`PROJECT_AFTER_BYTES` (or 1/32 of the file) are read, then every
    :data:`PROJECT_EVERY_BYTES`: a file that expands more than :func:`fits` assumed costs a few percent of
    a read, not the whole of one."""

    def __init__(self, size: int, later: int = 0) -> None:
        self.size, self.later = int(size), int(later)
        self.limit, self.start = _address_space_limit(), _mapped_bytes()
        self.next_at = max(PROJECT_AFTER_BYTES, self.size >> 5)

    def check(self, count: int) -> None:
        """After ``count`` pickle bytes read: :class:`MemoryError` when the projection passes the limit."""
        if count < self.next_at or self.limit is None or self.start is None or count <= 0:
            return
        self.next_at = count + PROJECT_EVERY_BYTES
        now = _mapped_bytes()
        if now is None:
            return
        projected = self.start + (now - self.start) * max(self.size, count) // count + self.later
        if projected > self.limit:
            raise MemoryError(f"a whole read projected to {projected >> 20} MiB, over {self.limit >> 20} MiB")


def fits(size: int, later: int = 0, per_byte: float = WHOLE_PER_BYTE) -> bool:
    """Whether a whole read of a ``size``-byte pickle should fit this process's address-space limit: only
    in a process that has one (a reader child), with ``per_byte`` × ``size`` left under it, and
    ``later`` bytes more (what the process maps besides the object: imports)."""
    limit, mapped = _address_space_limit(), _mapped_bytes()
    return limit is not None and mapped is not None and mapped + int(per_byte * size) + later <= limit


def check_snapshot(obj: Any, size: int, drained: int = 0) -> int:
    """The objects a snapshot's parse walks in ``obj`` (read whole from a ``size``-byte file), counted
    with shared references expanded (see the module docstring), plus ``drained`` history entries
    already turned into columns (:mod:`.drain`); raises :class:`~.expansion.TooManyObjects` past
    :func:`~.expansion.object_limit` ``(size)``."""
    if not (isinstance(obj, dict) and isinstance(obj.get("device_traces"), list)):
        return drained + expansion.check(obj, size)
    limit = expansion.object_limit(size)
    traces = obj["device_traces"]
    rows = drained + sum(len(t) for t in traces if isinstance(t, list))  # one step per device (≤ the file's bytes)
    if rows > limit:
        raise expansion.refusal(limit, size)
    rest = {k: v for k, v in obj.items() if k != "device_traces"}
    total = rows + expansion.check([rest, [t for t in traces if not isinstance(t, list)]], size)
    if total > limit:
        raise expansion.refusal(limit, size)
    return total
