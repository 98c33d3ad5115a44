"""Names as shown and grouped: the object address a Python repr carries (``<built-in method
softmax of Tensor object at 0x7cbd…>``) is dropped, so the same function on two objects is one name
and every table, stack, diff and interface shows the same text."""

from __future__ import annotations

import re

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+\b")
_MARK = " at 0x"


def without_address(text: str) -> str:
    """``text`` without the `` at 0x…`` of the object reprs it contains."""
    return _ADDRESS.sub("", text) if _MARK in text else text


def strip_addresses(strings: list[str]) -> bool:
    """Rewrite the string table in place without object addresses; True when any text changed
    (ids whose texts became equal are then merged by the caller)."""
    changed = False
    for i, s in enumerate(strings):
        if _MARK in s:  # a substring test first: a table holds hundreds of thousands of texts
            clean = _ADDRESS.sub("", s)
            if clean != s:
                strings[i] = clean
                changed = True
    return changed
