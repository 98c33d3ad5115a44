"""Decide from a file's first 64 KB whether a ``.json``/``.json.gz`` file is a Chrome trace."""

from __future__ import annotations

import re
import threading
import zlib

SNIFF_BYTES = 64 * 1024
_OBJECT_HINT = re.compile(rb'"traceEvents"\s*:')
_ARRAY_EVENT = re.compile(rb'^\[\s*\{')
_EVENT_KEYS = re.compile(rb'"ph"\s*:\s*"')


def looks_like_trace(head: bytes) -> bool:
    """Object form with a ``traceEvents`` key, or an array form whose first item is an event."""
    if head[:2] == b"\x1f\x8b":
        try:
            head = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS).decompress(head, SNIFF_BYTES)
        except zlib.error:
            return False
    text = head[:SNIFF_BYTES].lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith(b"{"):
        return bool(_OBJECT_HINT.search(text))
    if text.startswith(b"["):
        return bool(_ARRAY_EVENT.match(text)) and bool(_EVENT_KEYS.search(text))
    return False


class SniffCache:
    """Sniff results keyed by ``(path, version)`` so a refresh does not read the file again."""

    def __init__(self) -> None:
        self._known: dict[tuple[str, str], bool] = {}
        self._lock = threading.Lock()

    def is_trace(self, fs, path: str, version: str) -> bool:
        key = (path, version)
        with self._lock:
            if key in self._known:
                return self._known[key]
        try:
            with fs.open(path, "rb") as f:
                head = f.read(SNIFF_BYTES)
            result = looks_like_trace(head)
        except (OSError, ValueError):
            result = False
        with self._lock:
            self._known[key] = result
        return result
