"""A restricted unpickler: builtin containers and scalars only.

Allocator snapshots are plain dicts, lists, tuples, strings and numbers. Any pickle that names a
global (a class or a function: the way a pickle runs code) is refused with a clear error, before
anything is imported or called.

A pickle needs no global to be hostile: ``EMPTY_TUPLE`` followed by ``TUPLE1`` 10⁶ times (1 MB)
builds a tuple nested 10⁶ deep, and if it is a dict key the unpickler hashes it, which recurses in
C without a recursion check and overflows the stack: the process dies, before any check on the
loaded value could run (and a 200-byte pickle of tuples that share halves makes one hash take
2^60 steps). :func:`tuple_nesting_bound` bounds that depth from the bytes alone (C speed);
a pickle whose bound is above :data:`IN_PROCESS_NESTING` is read in a child process
(:mod:`.isolated`) with a time limit, so a crash or a hang is that file's error, never the server's.
"""

from __future__ import annotations

# the C unpickler itself (``pickle`` re-exports it): ``pickle.py`` and ``pickletools`` (~1.3 ms of imports) are
# then not imported before the report's reader child is forked, nor in that child
import _pickle
from typing import Protocol, cast

# Nesting that is safe to hash in this process. Depth costs C stack (~80 bytes a level, no recursion
# check: 100 000 levels survived and 300 000 crashed an 8 MB thread on CPython 3.11) and, worse, time:
# a tuple hash is not cached, so t(k+1) = (t(k), t(k)) built from the memo doubles the work per level
# (60 levels: 2^60 hashes from a 200-byte file). At 16 levels both are negligible (65 536 hashes).
IN_PROCESS_NESTING = 16
# The opcodes that wrap what is on the stack into a tuple (TUPLE1/2/3) or a frozenset, and the two
# halves of the MARK-based TUPLE: one byte each, so their count bounds the nesting of hashable values.
_WRAPPING = (b"\x85", b"\x86", b"\x87", b"\x91")


# Every byte a pickle can start with (its first opcode: ``pickletools.opcodes``' codes, a test compares); 0x00, a
# sparse file's first byte, is none.
_OPCODE_BYTES = b"().012BCFGIJKLMNPQRSTUVX]abcdeghijlopqrstu}" + bytes(range(0x80, 0x99))
PICKLE_OPCODES = frozenset(bytes([c]) for c in _OPCODE_BYTES)


class RefusedPickle(Exception):
    """The pickle needs a global that is not allowed, or is not a pickle."""


class _Restricted(_pickle.Unpickler):
    def find_class(self, module: str, name: str):
        raise RefusedPickle(
            f"refused to load global '{module}.{name}': only plain containers and scalars are allowed in "
            "memory snapshots (this file may run code when unpickled)"
        )


def tuple_nesting_bound(data: bytes) -> int:
    """An upper bound on how deep tuples and frozensets nest in the pickle ``data``: each level
    needs one ``TUPLE1``/``TUPLE2``/``TUPLE3``/``FROZENSET`` opcode, or a ``MARK`` (``(``) and a
    ``TUPLE`` (``t``). Counting those bytes anywhere (also inside strings and binary numbers, hence
    a bound, not the depth) costs ~1 ms per MB."""
    return sum(data.count(op) for op in _WRAPPING) + min(data.count(b"t"), data.count(b"("))


class _Source(Protocol):
    """A binary stream the unpickler reads: ``read`` and ``readline`` (``readinto`` and ``peek`` used when there)."""

    def read(self, n: int = -1) -> bytes: ...

    def readline(self) -> bytes: ...


class _WholeInput:
    """The pickle's bytes handed to the unpickler in one ``read``: the C unpickler then runs on its own
    buffer, as ``pickle.loads`` does (2–3× faster than through ``io.BytesIO``, whose ``peek`` makes it
    prefetch and skip in small chunks). Later reads find nothing: a truncated pickle stays an error."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def read(self, n: int = -1):
        data, self._data = self._data, b""  # the whole pickle (any bytes-like object) the first time
        return data

    def readline(self) -> bytes:
        return self.read()

    def readinto(self, buffer) -> int:
        return 0


def restricted_loads(data: bytes):
    """Unpickle ``data`` admitting only builtin containers and scalars; a global raises
    :class:`RefusedPickle`. Call it in this process only when :func:`tuple_nesting_bound` is at most
    :data:`IN_PROCESS_NESTING` (see :mod:`.isolated`)."""
    try:
        return load_whole(data)
    except MemoryError as exc:
        raise RefusedPickle(f"not a readable pickle: MemoryError: {exc}") from None


def _source(data: bytes | _Source) -> _Source:
    """What the unpickler reads: a bytes-like object (bytes, bytearray, mmap) in one piece, a stream as it is."""
    try:
        memoryview(data).release()  # type: ignore[arg-type]  # (a stream raises TypeError)
    except TypeError:
        return cast(_Source, data)
    return _WholeInput(cast(bytes, data))


def load_whole(data: bytes | _Source):
    """:func:`restricted_loads`, except that :class:`MemoryError` is raised as it is (the caller may read
    the file another way). ``data``: the pickle's bytes, or a binary stream it is read from (frame by
    frame for protocols 4 and 5). Only in a process whose address space is limited: CPython's
    unpickler sizes its memo from the file (``LONG_BINPUT 750000000`` asks for 6 GB)."""
    try:
        obj = _Restricted(_source(data)).load()
    except (RefusedPickle, MemoryError):
        raise
    except (
        _pickle.UnpicklingError,
        EOFError,
        ValueError,
        TypeError,
        IndexError,
        KeyError,
        AttributeError,
        RecursionError,
        OverflowError,
    ) as exc:
        raise RefusedPickle(f"not a readable pickle: {type(exc).__name__}: {exc}") from None
    return obj
