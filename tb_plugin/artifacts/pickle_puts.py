"""Frame lists of protocol 2–3 pickles, keyed so that repeated stacks are read once.

A protocol 2–3 pickle numbers every container it memoizes (``BINPUT n``/``LONG_BINPUT n``) where
protocol 4 writes ``MEMOIZE``, so two entries with the same stack differ in those numbers only.
:func:`frames` splits a frame list's bytes (as :data:`FRAME_LIST` matched them) into a key, the
runs of opcodes between the PUTs, and the PUTs; :func:`sequential` says whether
those numbers are the next memo slots from ``base`` on, each written as the pickler writes it
(``BINPUT`` below 256, ``LONG_BINPUT`` above): then PUT numbers act as ``MEMOIZE`` would, and a list
read once before under the same key is the same value, with the same objects in its memo slots.
"""

from __future__ import annotations

import re
import struct

from .unpickle import RefusedPickle

MAX_CACHED = 200_000  # distinct keys kept (each is one stack; beyond, read plainly)

# As pickle_stream's frame-list pattern, with a PUT (q: BINPUT, r: LONG_BINPUT) where MEMOIZE is.
_P = rb"(?:q.|r....)"
_S = rb"(?:h.|j....|K.|M..|J....|N|\x88|\x89)"
_DICT = rb"\}" + _P + rb"?(?:\((?:" + _S + _S + rb")*u|" + _S + _S + rb"s)?"
_ITEM = rb"(?:h.|j....|" + _DICT + rb")"
FRAME_LIST = re.compile(rb"\]" + _P + rb"?(?:\((?:" + _ITEM + rb")*e)*(?:" + _ITEM + rb"a)?", re.S)
# Such a list as runs of other opcodes (with their arguments) and PUTs (with theirs). Every opcode's length
# follows from its first byte, and a PUT follows ] or } only (never another PUT): the list starts and ends
# with a run, and runs and PUTs alternate.
_PARTS = re.compile(rb"(?:h.|j....|K.|M..|J....|[N\x88\x89}(uesa\]])+|q.|r....", re.S)
_U4 = struct.Struct("<I").unpack_from
_TAIL = 10  # a template's bucket: the list's length and its last bytes (its last frame's fields: no PUT)
_LONG: dict[int, tuple[int, int]] = {}  # n -> (A, B): n LONG_BINPUTs numbered base, base + 1, … read
# as one little-endian integer are A + base × B (each number's 4 bytes hold it: no carries)


def _long(n: int) -> tuple[int, int]:
    got = _LONG.get(n)
    if got is None:
        got = _LONG[n] = (
            sum((0x72 + (k << 8)) << (40 * k) for k in range(n)),
            sum(1 << (40 * k + 8) for k in range(n)),
        )
    return got


def sequential(puts: bytes, n: int, base: int) -> bool:
    """Whether the ``n`` PUTs ``puts`` number ``base``, ``base + 1``, …, each a BINPUT below 256 and
    a LONG_BINPUT from 256 on (what ``pickle`` writes): then they act as ``MEMOIZE`` would."""
    if 256 <= base <= (1 << 32) - n:  # the common case: every number past 256, each PUT 5 bytes
        a, b = _long(n)
        return len(puts) == 5 * n and int.from_bytes(puts, "little") == a + base * b
    return puts == b"".join(
        b"q" + bytes((i,)) if i < 256 else b"r" + struct.pack("<I", i) for i in range(base, base + n)
    )


def frames(m, start: int) -> tuple[object, int] | None:
    """The protocol 2–3 frame list at ``start`` for the reader ``m`` (a :class:`~.pickle_stream._Machine`):
    from its cache when the key (the runs of opcodes between its PUTs) was read before and the PUTs fill
    the next memo slots, else read once (and cached when its PUTs are sequential): (value, end), or None
    (read plainly). First tried: a template of the same length and last bytes (:func:`_template_hit`)."""
    data, memo = m.data, m.memo
    listed = FRAME_LIST.match(data, start)
    if listed is None:  # (the caller is at a ``]``: it matches)
        return None
    end = listed.end()
    if data[end - 1] not in b"ae":
        return None
    base = len(memo)
    near = (end - start, bytes(data[max(start, end - _TAIL) : end]))
    bucket = m.templates.get(near)
    if bucket is not None and base < 1 << 31:  # (numbers far below 2³²: a shift carries into no other byte)
        hit = _template_hit(bucket, int.from_bytes(data[start:end], "little"), base)
        if hit is not None:
            memo += hit[1]
            return hit[0], end
    parts = _PARTS.findall(data, start, end)
    puts = b"".join(parts[1::2])
    n = len(parts) // 2
    key = tuple(parts[0::2])
    got = m.cache_put.get(key)
    if got is None:
        if len(m.cache_put) >= MAX_CACHED:
            return None
        stack = m._loop(start, end, [], fast=False)
        if len(stack) != 1:
            raise RefusedPickle("not a readable pickle: a malformed list")
        if not (len(memo) - base == n and sequential(puts, n, base)):
            return stack[0], end
        got = m.cache_put[key] = (stack[0], memo[base:])
        m.shared.update(id(x) for x in got[1] if isinstance(x, (list, dict)))
        m.shared.add(id(stack[0]))
    elif sequential(puts, n, base):
        memo += got[1]
    else:
        return None
    if len(puts) == 5 * n and base + n <= 1 << 32 and (bucket is None or len(bucket) < 4):  # all LONG_BINPUTs
        offsets, at = [], 0
        for i, part in enumerate(parts):  # the position of each PUT's number in the list's bytes
            if i % 2:
                offsets.append(at + 1)
            at += len(part)
        m.templates.setdefault(near, []).append(
            (int.from_bytes(data[start:end], "little"), base, sum(1 << (8 * o) for o in offsets), got)
        )
    return got[0], end


def _template_hit(bucket: list, raw: int, base: int):
    """The cached (list, memo objects) of the template in ``bucket`` that the list's bytes ``raw`` (as a
    little-endian integer) equal with every PUT number shifted by the same amount: its numbers then
    run from ``base`` (the numbers are 4 bytes, at most 2³² − 1, so the shift carries into no other byte;
    the same length and integer: the same bytes)."""
    for whole, base0, puts, got in bucket:
        if raw == whole + (base - base0) * puts:
            return got
    return None


def list_at(m, pos: int) -> tuple[object, int] | None:
    """The list at ``pos`` (EMPTY_LIST, then a PUT): a frame list (:func:`frames`), or an
    empty one (the shared one when a key or SETITEMS follows): (value, position after it) or None."""
    data = m.data
    short = data[pos + 1] == 0x71
    p = pos + (3 if short else 6)
    nxt = data[p]
    if nxt == 0x28:
        return frames(m, pos)
    if nxt == 0x75 or (nxt == 0x68 and data[p + 2] != 0x61) or (nxt == 0x6A and data[p + 5] != 0x61):
        lst = m.empty
    else:
        lst = []
    i = data[pos + 2] if short else _U4(data, pos + 2)[0]
    if i == len(m.memo):
        m.memo.append(lst)
    else:
        m._put(i, lst)
    return lst, p
