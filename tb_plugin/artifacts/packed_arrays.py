"""``array.array`` columns from lists of Python values at C speed, without numpy: the snapshot reader child's
columns (:mod:`.snapshot_columns`) and stack indices (:mod:`.snapshot_stacks`)."""

from __future__ import annotations

import struct
from array import array

# the int64 typecode: C ``long`` where it is 8 bytes (its conversion reads a multi-digit int directly;
# ``long long``'s, in CPython 3.11, byte by byte)
INT64 = "l" if array("l").itemsize == 8 else "q"


def packed(typecode: str, values: list) -> array:
    """``array(typecode, values)`` for ``i``, ``l``, ``q`` and ``d``: the same values taken, the same refused
    (:data:`REFUSED`; ``struct``'s conversion, without ``array``'s argument parsing per item: ~half the
    instructions), :data:`PACKED_AT_ONCE` values at a time (their argument tuple is all that lives beside
    the array)."""
    out = array(typecode, _ZERO) * len(values)
    for at in range(0, len(values), PACKED_AT_ONCE):
        part = values[at : at + PACKED_AT_ONCE]
        struct.pack_into(f"{len(part)}{typecode}", out, at * out.itemsize, *part)
    return out


PACKED_AT_ONCE = 4096
_ZERO = (0,)
REFUSED = (struct.error, TypeError, OverflowError)  # (struct's error for a value array refuses)
