"""A streaming, restricted reader of pickles (protocols 2–5) for allocator snapshots.

``pickle.load`` of a snapshot builds every history entry as a dict and every frame as a dict, and
keeps them all (its memo holds every container) until the load ends: ~13× the file's size in memory.
:func:`read` runs the pickle's opcodes itself and never holds more than a batch of entries:

- a list that receives dicts with an ``action`` key (a device's history) hands each ``APPENDS``
  batch to ``on_rows`` (which turns it into columns) instead of keeping it; the entries' memo slots
  are released (an entry referenced again later raises :class:`SharedEntry`: PyTorch never shares one,
  and the caller reads such a file whole);
- a list of frames (MEMOIZE, MARK, then memo references and flat dicts of memo references and small
  ints: what PyTorch writes, and what a frame list is once its strings were seen) is matched as raw bytes by
  one regular expression (C speed) and read once per distinct byte string: the next identical
  bytes give the same list object (so a stack is interned by identity), and its memo slots are
  filled with the same objects. Protocols 2–3 number their memo slots (BINPUT): their frame lists are
  keyed with those numbers left out, and reused when the numbers are the next slots (:mod:`.pickle_puts`).

Only builtin containers and scalars are built: an opcode that names a global, calls or builds an
object (``GLOBAL``, ``STACK_GLOBAL``, ``REDUCE``, ``BUILD``, ``INST``, ``OBJ``, ``NEWOBJ``, ``EXT*``,
``PERSID``, out-of-band buffers) is refused with :class:`~.unpickle.RefusedPickle` before anything is
called. Tuples are hashed as Python hashes them (dict keys), so a pickle that
:func:`~.unpickle.tuple_nesting_bound` cannot clear is still read in a child process.

Values equal ``pickle.load``'s for every pickle that ``pickle`` writes. One that changes a cached
frame list or its dicts, or an entry's empty list, after building them (APPEND/SETITEM through a memo
reference; pickle never writes that) changes a copy: the lists elsewhere keep the bytes' first value.
"""

from __future__ import annotations

import codecs
import pickle
import re
import struct
from typing import Callable

from . import pickle_puts
from .expansion import TooManyObjects, object_limit
from .pickle_rare import rare
from .unpickle import RefusedPickle

_GONE = object()  # the memo slot of a history entry handed to on_rows
_MAX_CACHED = 200_000  # distinct frame-list byte strings kept (each is one stack; beyond, read plainly)
# One frame list as PyTorch writes it: memo references (h: BINGET, j: LONG_BINGET) to frame dicts, or
# flat dicts of memo references and small ints (K, M, J), None and bools; MEMOIZE (\x94) after a new
# container. Every alternative starts with a distinct opcode byte, so a match is the stream's own
# opcode sequence: the list and nothing else (APPENDS/APPEND apply to the container below the MARK).
_S = rb"(?:h.|j....|K.|M..|J....|N|\x88|\x89)"
_DICT = rb"\}\x94?(?:\((?:" + _S + _S + rb")*u|" + _S + _S + rb"s)?"
_ITEM = rb"(?:h.|j....|" + _DICT + rb")"
_FRAME_LIST = re.compile(rb"\]\x94?(?:\((?:" + _ITEM + rb")*e)*(?:" + _ITEM + rb"a)?", re.S)

_I4 = struct.Struct("<i").unpack_from
_U2 = struct.Struct("<H").unpack_from
_U4 = struct.Struct("<I").unpack_from
_F8 = struct.Struct(">d").unpack_from


def read(data: bytes | bytearray, on_rows: Callable[[list, list], bool] | None = None):
    """The object in the pickle ``data``. ``on_rows(target, items)`` is called for each APPEND(S)
    of dicts onto a list: it returns True when it took the items (they are then not appended).
    Raises :class:`RefusedPickle` for a global, an object-building opcode or an unreadable pickle."""
    if isinstance(data, memoryview):  # bytes and bytearray are read as they are
        data = bytes(data)
    try:
        return _Machine(data, on_rows).run()
    except RefusedPickle:
        raise
    except TooManyObjects as exc:
        raise RefusedPickle(str(exc)) from None
    except (
        EOFError,
        IndexError,
        KeyError,
        ValueError,
        TypeError,
        struct.error,
        UnicodeDecodeError,
        OverflowError,
        MemoryError,
        RecursionError,
        AttributeError,
        pickle.UnpicklingError,
    ) as exc:
        raise RefusedPickle(f"not a readable pickle: {type(exc).__name__}: {exc}") from None


class SharedEntry(RefusedPickle):
    """A history entry handed to ``on_rows`` is referenced again: read the file some other way."""


class _Machine:
    def __init__(self, data: bytes | bytearray, on_rows) -> None:
        self.data = data
        self.on_rows = on_rows
        self.memo: list = []
        self.far: dict[int, object] = {}  # BINPUT beyond the memo's end (never written by pickle itself)
        self.cache: dict[bytes, tuple[list, list]] = {}  # frame-list bytes -> (list, its memo objects)
        self.cache_put: dict[tuple, tuple[list, list]] = {}  # protocol 2-3: key -> (list, its memo objects)
        self.templates: dict[tuple, list] = {}  # protocol 2-3: (length, last bytes) -> templates (pickle_puts)
        self.empty: list = []  # the empty list of every entry without frames (shared: copied before any change)
        self.shared: set[int] = {id(self.empty)}  # ids of the cached lists and their dicts (never modified)
        self.dict_slots: list[int] = []  # memo slots of dicts since the last rows batch
        self.stopped = False
        self.copies_left = object_limit(len(data))  # items _own may still copy

    def _get(self, i: int):
        memo = self.memo
        got = memo[i] if i < len(memo) else self.far[i]
        if got is _GONE:
            raise SharedEntry("a history entry is referenced twice (PyTorch never writes that)")
        return got

    def _put(self, i: int, value) -> None:
        memo = self.memo
        if i < len(memo):
            memo[i] = value
        elif i == len(memo):
            memo.append(value)
        else:
            self.far[i] = value

    def _frames(self, start: int) -> tuple[object, int] | None:
        """The frame list at ``start`` from the cache (reading it once): (value, end) or None."""
        m = _FRAME_LIST.match(self.data, start)
        end = m.end()  # type: ignore[union-attr]  # (at a ``]``: the pattern always matches)
        if self.data[end - 1] not in b"ae":  # an empty list (or one built some other way): read plainly
            return None
        raw = bytes(self.data[start:end])  # the cache key (a bytearray's slice is not hashable)
        got = self.cache.get(raw)
        if got is None:
            if len(self.cache) >= _MAX_CACHED:
                return None
            before = len(self.memo)
            stack = self._loop(start, end, [], fast=False)
            if len(stack) != 1:
                raise RefusedPickle("not a readable pickle: a malformed list")
            value = stack[0]
            got = self.cache[raw] = (value, self.memo[before:])
            self.shared.update(id(x) for x in got[1] if isinstance(x, (list, dict)))
            self.shared.add(id(value))
            return value, end
        self.memo += got[1]
        return got[0], end

    def run(self):
        stack = self._loop(0, len(self.data), [], fast=True)
        if not self.stopped:
            raise EOFError("pickle data was truncated (no STOP opcode)")
        return stack[0]

    def _rows(self, target: list, items: list) -> bool:
        """Hand ``items`` (appended to ``target``) to on_rows; on acceptance release their memo slots."""
        if self.on_rows is None or not self.on_rows(target, items):
            return False
        memo = self.memo
        taken = {id(x) for x in items}
        n = len(memo)
        for s in self.dict_slots:
            if s < n and id(memo[s]) in taken:  # (a BINPUT far beyond the memo's end is left alone)
                memo[s] = _GONE
        self.dict_slots.clear()
        return True

    def _flat_items(self, pos: int, stack: list, fast: bool) -> tuple[int, bool]:
        """The items of the dict below ``stack``'s top, from ``pos`` just after its MARK: values of
        the common opcodes (memo references, ints, frame lists) go on ``stack``; at SETITEMS they go
        into the dict: (the position after it, True). At any other opcode: (its position, False), and
        the caller goes on with the MARK set and the values read so far on the stack."""
        data, memo = self.data, self.memo
        k = len(stack)
        push = stack.append
        from_bytes, i4, u2, u4 = int.from_bytes, _I4, _U2, _U4
        frame_list, cache, empty = _FRAME_LIST.match, self.cache, self.empty
        while True:
            op = data[pos]
            if op == 0x68:  # BINGET
                try:
                    got = memo[data[pos + 1]]
                except IndexError:
                    return pos, False
                if got is _GONE:
                    return pos, False
                push(got)
                pos += 2
            elif op == 0x8A:  # LONG1
                n = data[pos + 1]
                push(from_bytes(data[pos + 2 : pos + 2 + n], "little", signed=True))
                pos += 2 + n
            elif op == 0x4B:  # BININT1
                push(data[pos + 1])
                pos += 2
            elif op == 0x4A:  # BININT
                push(i4(data, pos + 1)[0])
                pos += 5
            elif op == 0x4D:  # BININT2
                push(u2(data, pos + 1)[0])
                pos += 3
            elif op == 0x5D and fast:  # a frame list, or an empty list
                got = None
                if data[pos + 2] == 0x28 and data[pos + 1] == 0x94:
                    end = frame_list(data, pos).end()  # type: ignore[union-attr]  # (at a ``]``: always matches)
                    if data[end - 1] in (0x61, 0x65):  # APPEND, APPENDS: a list with items
                        hit = cache.get(bytes(data[pos:end]))  # (bytes() of bytes is no copy)
                        if hit is not None:  # seen before: the same list, and its memo objects
                            push(hit[0])
                            memo += hit[1]
                            pos = end
                            continue
                        got = self._frames(pos)
                if got is not None:
                    push(got[0])
                    pos = got[1]
                elif data[pos + 1] in (0x71, 0x72):  # protocol 2-3: a PUT where MEMOIZE is
                    got = pickle_puts.list_at(self, pos)
                    if got is None:
                        return pos, False
                    push(got[0])
                    pos = got[1]
                elif data[pos + 1] == 0x94:
                    nxt = data[pos + 2]  # stays empty: a key (not an item and APPEND) or SETITEMS follows
                    if (
                        nxt == 0x75
                        or (nxt == 0x68 and data[pos + 4] != 0x61)
                        or (nxt == 0x6A and data[pos + 7] != 0x61)
                    ):
                        lst = empty  # one shared empty list (copied if changed), not 56 bytes per free entry
                    else:
                        lst = []
                    push(lst)
                    memo.append(lst)
                    pos += 2
                else:
                    return pos, False
            elif op == 0x6A:  # LONG_BINGET
                try:
                    got = memo[u4(data, pos + 1)[0]]
                except IndexError:
                    return pos, False
                if got is _GONE:
                    return pos, False
                push(got)
                pos += 5
            elif op == 0x75:  # SETITEMS
                items = stack[k:]
                del stack[k:]
                if len(items) % 2:
                    raise ValueError("odd number of items for SETITEMS")
                stack[-1].update(zip(items[::2], items[1::2]))
                return pos + 1, True
            else:
                return pos, False

    def _own(self, stack: list, k: int):
        """``stack[k]``, copied there first when it is a cached (shared) list or dict about to change."""
        got = stack[k]
        if id(got) in self.shared:
            self.copies_left -= len(got) + 1
            if self.copies_left < 0:  # a shared list changed again and again (pickle never writes that)
                raise TooManyObjects(f"copies of changed shared lists exceed {object_limit(len(self.data)):,} objects")
            got = stack[k] = type(got)(got)
        return got

    def _loop(self, pos: int, end: int, stack: list, fast: bool) -> list:
        """Run the opcodes in ``data[pos:end]`` on ``stack``; ``fast``: the frame-list cache and the rows
        hand-off are on (off inside a frame list read for the cache). Returns at STOP or ``end``."""
        data, memo, shared, slots = self.data, self.memo, self.shared, self.dict_slots
        marks: list[int] = []
        push, memoize = stack.append, memo.append
        from_bytes = int.from_bytes
        while pos < end:
            op = data[pos]
            pos += 1
            if op == 0x68:  # h BINGET
                i = data[pos]
                got = memo[i] if i < len(memo) else self._get(i)
                if got is _GONE:
                    got = self._get(i)
                push(got)
                pos += 1
            elif op == 0x6A:  # j LONG_BINGET
                i = _U4(data, pos)[0]
                got = memo[i] if i < len(memo) else self._get(i)
                if got is _GONE:
                    got = self._get(i)
                push(got)
                pos += 4
            elif op == 0x8A:  # LONG1
                n = data[pos]
                push(from_bytes(data[pos + 1 : pos + 1 + n], "little", signed=True))
                pos += 1 + n
            elif op == 0x94:  # MEMOIZE
                memoize(stack[-1])
            elif op == 0x4B:  # K BININT1
                push(data[pos])
                pos += 1
            elif op == 0x7D:  # } EMPTY_DICT (most often with its MEMOIZE and MARK)
                d: dict = {}
                push(d)
                nxt = data[pos]  # its memo slot, to release it if it is a history entry
                if nxt == 0x94:
                    slots.append(len(memo))
                    memoize(d)
                    pos += 1
                    if data[pos] == 0x28:
                        k = len(stack)
                        pos, done = self._flat_items(pos + 1, stack, fast)
                        if not done:  # stopped before its SETITEMS: on as the opcodes say
                            marks.append(k)
                elif nxt == 0x71 or nxt == 0x72:  # protocol 2-3: BINPUT, LONG_BINPUT
                    i = data[pos + 1] if nxt == 0x71 else _U4(data, pos + 1)[0]
                    slots.append(i)
                    if i == len(memo):
                        memoize(d)
                    else:
                        self._put(i, d)
                    pos += 2 if nxt == 0x71 else 5
                    if data[pos] == 0x28:
                        k = len(stack)
                        pos, done = self._flat_items(pos + 1, stack, fast)
                        if not done:
                            marks.append(k)
            elif op == 0x5D:  # ] EMPTY_LIST
                got = None
                if fast:
                    nxt = data[pos]
                    if nxt == 0x94 and data[pos + 1] == 0x28:
                        got = self._frames(pos - 1)
                    elif (nxt == 0x71 and data[pos + 2] == 0x28) or (nxt == 0x72 and data[pos + 5] == 0x28):
                        got = pickle_puts.frames(self, pos - 1)
                if got is None:
                    push([])
                else:
                    push(got[0])
                    pos = got[1]
            elif op == 0x75:  # u SETITEMS
                k = marks.pop()
                d = self._own(stack, k - 1) if id(stack[k - 1]) in shared else stack[k - 1]
                items = stack[k:]
                del stack[k:]
                d.update(zip(items[::2], items[1::2]))
                if len(items) % 2:
                    raise ValueError("odd number of items for SETITEMS")
            elif op == 0x4A:  # J BININT
                push(_I4(data, pos)[0])
                pos += 4
            elif op == 0x4D:  # M BININT2
                push(_U2(data, pos)[0])
                pos += 2
            elif op == 0x28:  # ( MARK
                marks.append(len(stack))
            elif op == 0x65:  # e APPENDS
                k = marks.pop()
                target = self._own(stack, k - 1) if id(stack[k - 1]) in shared else stack[k - 1]
                items = stack[k:]
                del stack[k:]
                if not (
                    fast and type(target) is list and items and type(items[0]) is dict and self._rows(target, items)
                ):
                    target.extend(items)
            elif op == 0x61:  # a APPEND
                item = stack.pop()
                target = self._own(stack, -1) if id(stack[-1]) in shared else stack[-1]
                if not (fast and type(target) is list and type(item) is dict and self._rows(target, [item])):
                    target.append(item)
            elif op == 0x8C:  # SHORT_BINUNICODE
                n = data[pos]
                push(codecs.utf_8_decode(data[pos + 1 : pos + 1 + n], "surrogatepass", True)[0])
                pos += 1 + n
            elif op == 0x58:  # X BINUNICODE
                n = _U4(data, pos)[0]
                push(codecs.utf_8_decode(data[pos + 4 : pos + 4 + n], "surrogatepass", True)[0])
                pos += 4 + n
            elif op == 0x73:  # s SETITEM
                v = stack.pop()
                key = stack.pop()
                (self._own(stack, -1) if id(stack[-1]) in shared else stack[-1])[key] = v
            elif op == 0x4E:  # N NONE
                push(None)
            elif op == 0x88:
                push(True)
            elif op == 0x89:
                push(False)
            elif op == 0x47:  # G BINFLOAT
                push(_F8(data, pos)[0])
                pos += 8
            elif op == 0x95:  # FRAME: the frame's length; the opcodes go on across it
                pos += 8
            elif op == 0x71:  # q BINPUT
                self._put(data[pos], stack[-1])
                pos += 1
            elif op == 0x72:  # r LONG_BINPUT
                self._put(_U4(data, pos)[0], stack[-1])
                pos += 4
            elif op == 0x86:  # TUPLE2
                b = stack.pop()
                stack[-1] = (stack[-1], b)
            elif op == 0x85:  # TUPLE1
                stack[-1] = (stack[-1],)
            elif op == 0x87:  # TUPLE3
                c, b = stack.pop(), stack.pop()
                stack[-1] = (stack[-1], b, c)
            elif op == 0x29:  # ) EMPTY_TUPLE
                push(())
            elif op in (0x74, 0x6C, 0x64, 0x91):  # t TUPLE, l LIST, d DICT, FROZENSET: from the mark
                k = marks.pop()
                items = stack[k:]
                del stack[k:]
                push(
                    tuple(items)
                    if op == 0x74
                    else items
                    if op == 0x6C
                    else frozenset(items)
                    if op == 0x91
                    else dict(zip(items[::2], items[1::2]))
                )
            elif op == 0x2E:  # . STOP: the value on top (as pickle.load, what lies below is dropped)
                self.stopped = True
                return [stack[-1]]
            else:
                pos = rare(self, op, pos, stack, marks)
        if marks:
            raise ValueError("a MARK is never closed")
        return stack
