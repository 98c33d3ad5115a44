"""The opcodes of :mod:`.pickle_stream` that snapshot writers seldom use: text forms (protocol 0
spellings a protocol-2 stream may hold), bytes, sets, stack manipulation, and the refusals (a global,
a call, an object build, out-of-band buffers: the ways a pickle runs code)."""

from __future__ import annotations

import codecs
import pickle
import struct

from .unpickle import RefusedPickle

_REFUSED = {
    ord(c): n
    for c, n in [
        ("R", "REDUCE"),
        ("b", "BUILD"),
        ("i", "INST"),
        ("o", "OBJ"),
        ("\x81", "NEWOBJ"),
        ("\x92", "NEWOBJ_EX"),
        ("\x82", "EXT1"),
        ("\x83", "EXT2"),
        ("\x84", "EXT4"),
        ("P", "PERSID"),
        ("Q", "BINPERSID"),
        ("\x97", "NEXT_BUFFER"),
        ("\x98", "READONLY_BUFFER"),
    ]
}
_I4 = struct.Struct("<i").unpack_from
_U8 = struct.Struct("<Q").unpack_from


def rare(m, op: int, pos: int, stack: list, marks: list) -> int:
    """Run the opcode ``op`` (its argument at ``pos``) of the reader ``m``; the new position."""
    data = m.data
    if op == 0x80:  # PROTO
        if data[pos] > 5:
            raise ValueError(f"unsupported pickle protocol: {data[pos]}")
        return pos + 1
    if op == 0x63 or op == 0x93:  # c GLOBAL, STACK_GLOBAL: name the global in the refusal
        if op == 0x63:
            nl = data.index(b"\n", pos)
            nl2 = data.index(b"\n", nl + 1)
            module, name = data[pos:nl].decode("utf-8", "replace"), data[nl + 1 : nl2].decode("utf-8", "replace")
        else:
            name, module = stack[-1], stack[-2]
        raise RefusedPickle(
            f"refused to load global '{module}.{name}': only plain containers and scalars are "
            "allowed in memory snapshots (this file may run code when unpickled)"
        )
    if op in _REFUSED:
        raise RefusedPickle(
            f"refused opcode {_REFUSED[op]}: only plain containers and scalars are allowed in "
            "memory snapshots (this file may run code when unpickled)"
        )
    if op == 0x8D:  # BINUNICODE8
        n = _U8(data, pos)[0]
        stack.append(codecs.utf_8_decode(data[pos + 8 : pos + 8 + n], "surrogatepass", True)[0])
        return pos + 8 + n
    if op in (0x43, 0x42, 0x8E, 0x96, 0x55, 0x54):  # bytes, bytearray; Python 2 str (as ASCII text)
        width = {0x43: 1, 0x55: 1, 0x42: 4, 0x54: 4, 0x8E: 8, 0x96: 8}[op]
        n = int.from_bytes(data[pos : pos + width], "little", signed=op == 0x54)
        if n < 0 or pos + width + n > len(data):
            raise ValueError("truncated or negative length")
        raw = bytes(data[pos + width : pos + width + n])
        stack.append(bytearray(raw) if op == 0x96 else raw.decode("ascii") if op in (0x55, 0x54) else raw)
        return pos + width + n
    if op == 0x8B:  # LONG4
        n = _I4(data, pos)[0]
        if n < 0:
            raise ValueError("LONG pickle has negative byte count")
        stack.append(int.from_bytes(data[pos + 4 : pos + 4 + n], "little", signed=True))
        return pos + 4 + n
    if op == 0x8F:  # EMPTY_SET
        stack.append(set())
        return pos
    if op == 0x90:  # ADDITEMS
        k = marks.pop()
        items = stack[k:]
        del stack[k:]
        m._own(stack, -1).update(items)
        return pos
    if op == 0x30:  # POP
        if marks and marks[-1] == len(stack):
            marks.pop()
        else:
            stack.pop()
        return pos
    if op == 0x31:  # POP_MARK
        del stack[marks.pop() :]
        return pos
    if op == 0x32:  # DUP
        stack.append(stack[-1])
        return pos
    if op in (0x49, 0x4C, 0x46, 0x67, 0x70, 0x56, 0x53):  # text forms: INT LONG FLOAT GET PUT UNICODE STRING
        nl = data.index(b"\n", pos)
        line = bytes(data[pos:nl])
        if op == 0x49:
            stack.append(True if line == b"01" else False if line == b"00" else int(line))
        elif op == 0x4C:
            stack.append(int(line[:-1] if line.endswith(b"L") else line))
        elif op == 0x46:
            stack.append(float(line))
        elif op == 0x67:
            stack.append(m._get(int(line)))
        elif op == 0x70:
            m._put(int(line), stack[-1])
        elif op == 0x56:
            stack.append(line.decode("raw-unicode-escape"))
        else:
            if len(line) < 2 or line[:1] != line[-1:] or line[:1] not in b"\"'":
                raise ValueError("the STRING opcode argument must be quoted")
            stack.append(codecs.escape_decode(line[1:-1])[0].decode("ascii"))
        return nl + 1
    # worded as CPython's C unpickler words it, so a file reads the same whichever reader met it
    shown = chr(op) if 0x20 <= op <= 0x7E and op not in (0x27, 0x5C) else f"\\x{op:02x}"
    raise pickle.UnpicklingError(f"invalid load key, '{shown}'.")
