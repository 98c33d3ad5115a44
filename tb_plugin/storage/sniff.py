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


def sniff_kind(head: bytes) -> str | None:
    """``"trace"``, ``"memory_timeline"`` (a ``[times, sizes]`` export) or None for a JSON file's head."""
    if looks_like_trace(head):
        return "trace"
    if head[:2] == b"\x1f\x8b":
        try:
            head = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS).decompress(head, SNIFF_BYTES)
        except zlib.error:
            return None
    text = head[:SNIFF_BYTES].lstrip(b"\xef\xbb\xbf \t\r\n")
    if re.match(rb"^\[\s*\[\s*-?[0-9]", text):
        return "memory_timeline"
    return None


class SniffCache:
    """Sniff results keyed by ``(path, version)`` so a refresh does not read the file again."""

    def __init__(self) -> None:
        self._known: dict[tuple[str, str], str | None] = {}
        self._lock = threading.Lock()

    def kind(self, fs, path: str, version: str) -> str | None:
        """:func:`sniff_kind` of the file, read once per (path, version)."""
        key = (path, version)
        with self._lock:
            if key in self._known:
                return self._known[key]
        try:
            with fs.open(path, "rb") as f:
                head = f.read(SNIFF_BYTES)
            result = sniff_kind(head)
        except (OSError, ValueError):
            result = None
        with self._lock:
            self._known[key] = result
        return result
