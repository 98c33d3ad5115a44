"""Bare ``NaN``, ``Infinity`` and ``-Infinity`` literals: not JSON, but some trace writers emit them.

Python's ``json.dumps`` (``allow_nan=True`` by default) and some C++ writers print a non-finite float
as a bare token, e.g. ``"args": {"flops": NaN}``. Strict JSON parsers (msgspec included) reject the
whole document. :func:`quote_nonfinite` rewrites every such token that stands *outside* a JSON string
into a JSON string of the same text (``NaN`` → ``"NaN"``), which the decoder's float columns read back
as the same value (numpy parses ``"NaN"``, ``"Infinity"`` and ``"-Infinity"``); integer columns treat it
as missing. Text inside strings (``"name": "loss is NaN"``) is left alone.

It is a fallback: the decoder calls it only after a strict decode failed *at* such a token, so a valid
file never pays for it. It costs two substring searches for the tokens, one vectorized pass over the bytes in
blocks of :data:`BLOCK_BYTES` to find which quotes open or close strings, and one copy of the document.
"""

from __future__ import annotations

import mmap
import re
from typing import Union

import numpy as np

_NAN, _INFINITY = re.compile(rb"NaN"), re.compile(rb"Infinity")  # literal patterns: a fast substring search
_QUOTE, _BACKSLASH = 0x22, 0x5C
BLOCK_BYTES = 8 << 20  # bytes scanned at once for quotes (bounds the temporaries to a few × this)
_FEW = 256  # up to this many quotes after a backslash per block are checked one by one

ByteBuffer = Union[bytes, bytearray, memoryview, mmap.mmap]  # a document in memory (a file's pages too)


def token_at(buf: ByteBuffer, position: int) -> bool:
    """Whether a non-finite literal starts at byte ``position`` (where a strict parser stopped: the
    ``N`` of ``NaN``, the ``I`` of ``Infinity``, or the ``-`` or ``I`` of ``-Infinity``)."""
    return bytes(buf[position : position + 9]).startswith((b"NaN", b"Infinity", b"-Infinity"))


def quote_nonfinite(buf: ByteBuffer) -> tuple[bytes, int] | None:
    """``(rewritten document, number of literals quoted)``, or None when no bare literal stands
    outside a string. ``buf``: any bytes-like object (bytes, bytearray, memoryview, mmap)."""
    view = memoryview(buf).cast("B")
    spans = _token_spans(view)
    if not spans:
        return None
    starts = np.fromiter((s for s, _ in spans), dtype=np.int64, count=len(spans))
    outside = ~_inside_strings(np.frombuffer(view, dtype=np.uint8), starts)
    if not outside.any():
        return None
    pieces: list[bytes | memoryview] = []
    prev = 0
    for keep, (start, end) in zip(outside.tolist(), spans):
        if keep:
            pieces += (view[prev:start], b'"', view[start:end], b'"')
            prev = end
    pieces.append(view[prev:])
    return b"".join(pieces), int(outside.sum())


def _token_spans(view: memoryview) -> list[tuple[int, int]]:
    """``(start, end)`` of every ``NaN``, ``Infinity`` and ``-Infinity``, sorted (strings included)."""
    spans = [m.span() for m in _NAN.finditer(view)]
    for m in _INFINITY.finditer(view):
        start = m.start() - 1 if m.start() and view[m.start() - 1] == 0x2D else m.start()  # "-"
        spans.append((start, m.end()))
    spans.sort()
    return spans


def _inside_strings(arr: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """For sorted byte ``positions``, whether each lies inside a JSON string: an odd number of
    unescaped quotes (a quote not preceded by an odd run of backslashes) comes before it."""
    inside = np.zeros(len(positions), dtype=bool)
    parity = 0
    for lo in range(0, len(arr), BLOCK_BYTES):
        hi = min(len(arr), lo + BLOCK_BYTES)
        quotes = np.flatnonzero(arr[lo:hi] == _QUOTE) + lo
        quotes = quotes[~_escaped(arr, quotes, lo)]
        a, b = np.searchsorted(positions, (lo, hi))
        if b > a:
            inside[a:b] = (parity + np.searchsorted(quotes, positions[a:b])) % 2 == 1
        parity = (parity + len(quotes)) % 2
    return inside


def _escaped(arr: np.ndarray, quotes: np.ndarray, lo: int) -> np.ndarray:
    """Which ``quotes`` (absolute positions, all ≥ ``lo``) follow an odd run of backslashes."""
    escaped = np.zeros(len(quotes), dtype=bool)
    if not len(quotes):
        return escaped
    after_bs = np.flatnonzero((quotes > 0) & (arr[np.maximum(quotes - 1, 0)] == _BACKSLASH))
    if len(after_bs) > _FEW:  # many: run lengths from the last non-backslash before each quote
        block = arr[lo : int(quotes[-1]) + 1]
        index = np.arange(len(block), dtype=np.int64)
        last_other = np.maximum.accumulate(np.where(block != _BACKSLASH, index, -1))
        q = quotes[after_bs] - lo
        before = np.where(q > 0, last_other[np.maximum(q - 1, 0)], -1)
        known = before >= 0  # the run starts inside this block (else: checked one by one below)
        escaped[after_bs[known]] = (q[known] - 1 - before[known]) % 2 == 1
        after_bs = after_bs[~known]
    for i in after_bs.tolist():  # few, or runs reaching back past the block start
        j = int(quotes[i]) - 1
        while j >= 0 and arr[j] == _BACKSLASH:
            j -= 1
        escaped[i] = (int(quotes[i]) - 1 - j) % 2 == 1
    return escaped
