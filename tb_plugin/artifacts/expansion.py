"""How many objects a read pickle would be with every shared reference written out as a copy.

A pickle names a container once and then refers to it by its memo slot (``BINGET``: 2 bytes), so a
952 KB file can hold one 2,000-key dict referenced 300,000 times: 600 million keys for anything that
walks the value as a tree (cleaning it into JSON, reading each segment's blocks). :func:`check`
counts those objects on the read value without walking shared parts twice (each distinct container
once, its expanded count remembered by ``id``: the value no longer changes once read) and refuses a
value whose count exceeds :func:`object_limit` of the file's size with a :class:`TooManyObjects`
that names the bound.

Counting: a container is 1 plus its items (a dict's keys and values); a string or bytes 1 plus one per
4 KiB (a long string referenced many times is many strings' worth of output); any other scalar 1.
PyTorch's snapshots reach ~4 objects per byte (each 2-byte reference to a 3-key frame dict is 7).
"""

from __future__ import annotations

import itertools

OBJECTS_PER_BYTE = 16  # objects a value may expand to per byte of its file (real snapshots: ≤ 4)
OBJECTS_FLOOR = 1_000_000  # the bound for files under OBJECTS_FLOOR / OBJECTS_PER_BYTE bytes (62.5 KB)
_CONTAINERS = (list, dict, tuple, set, frozenset)


class TooManyObjects(ValueError):
    """The value expands past the bound for its file's size. The message names the bound."""


def object_limit(size: int) -> int:
    """Objects a pickle of ``size`` bytes may expand to (:data:`OBJECTS_PER_BYTE` per byte, at least
    :data:`OBJECTS_FLOOR`)."""
    return max(OBJECTS_FLOOR, OBJECTS_PER_BYTE * int(size))


def _scalar(x) -> int:
    return 1 + (len(x) >> 12) if isinstance(x, (str, bytes, bytearray)) else 1


def _items(c):
    return itertools.chain.from_iterable(c.items()) if isinstance(c, dict) else iter(c)


def refusal(limit: int, size: int) -> TooManyObjects:
    """The error for a value past ``limit`` objects read from a ``size``-byte file."""
    return TooManyObjects(
        f"this pickle expands to more than {limit:,} objects through shared references, the bound for its "
        f"{size:,} bytes ({OBJECTS_PER_BYTE} objects per byte, at least {OBJECTS_FLOOR:,}): "
        "not a memory snapshot (a hostile or corrupt file?)"
    )


def check(value, size: int) -> int:
    """The expanded object count of ``value`` read from a ``size``-byte file; raises
    :class:`TooManyObjects` past :func:`object_limit` ``(size)`` or for a container that holds itself
    (an endless expansion). Iterative: any nesting depth."""
    limit = object_limit(size)
    if not isinstance(value, _CONTAINERS):
        return _scalar(value)
    counted: dict[int, int] = {}  # id of a container fully counted -> its expanded count
    open_ids: set[int] = {id(value)}  # containers being counted (met again inside: a cycle)
    work = [[value, _items(value), 1]]  # container, its items left, its count so far
    while work:
        top = work[-1]
        for item in top[1]:
            if isinstance(item, _CONTAINERS):
                got = counted.get(id(item))
                if got is None:
                    if id(item) in open_ids:
                        raise TooManyObjects("this pickle holds a container inside itself: not a memory snapshot")
                    open_ids.add(id(item))
                    work.append([item, _items(item), 1])
                    break
                top[2] += got
            else:
                top[2] += _scalar(item)
            if top[2] > limit:
                raise refusal(limit, size)
        else:
            work.pop()
            open_ids.discard(id(top[0]))
            counted[id(top[0])] = top[2]
            if not work:
                return top[2]
            work[-1][2] += top[2]
            if work[-1][2] > limit:
                raise refusal(limit, size)
    return 0  # not reached
