"""Decide from a file's first 64 KB whether a ``.json``/``.json.gz`` file is a Chrome trace."""

from __future__ import annotations

import json
import re
import threading
import zlib

from ..logs import module_logger
from .file_heads import GZIP_MAGIC, is_pickle_head
from .inflate import GZIP_WBITS
from .private_files import open_regular, write_atomic

logger = module_logger(__name__)

SNIFF_BYTES = 64 * 1024
LEADING_BYTES = b"\xef\xbb\xbf \t\r\n"  # a UTF-8 byte order mark and whitespace, allowed before JSON
_OBJECT_HINT = re.compile(rb'"traceEvents"\s*:')
_ARRAY_EVENT = re.compile(rb"^\[\s*\{")
_EVENT_KEYS = re.compile(rb'"ph"\s*:\s*"')


def _head_text(head: bytes) -> bytes | None:
    """The first 64 KB as text (gunzipped when needed, BOM and leading whitespace stripped)."""
    if head[:2] == GZIP_MAGIC:
        try:
            head = zlib.decompressobj(wbits=GZIP_WBITS).decompress(head, SNIFF_BYTES)
        except zlib.error:
            return None
    return head[:SNIFF_BYTES].lstrip(LEADING_BYTES)


def looks_like_trace(head: bytes) -> bool:
    """Object form with a ``traceEvents`` key, or an array form whose first item is an event."""
    text = _head_text(head)
    if text is None:
        return False
    if text.startswith(b"{"):
        return bool(_OBJECT_HINT.search(text))
    if text.startswith(b"["):
        return bool(_ARRAY_EVENT.match(text)) and bool(_EVENT_KEYS.search(text))
    return False


FLIGHT_RECORDER_HEAD = 4096  # bytes of a file's head that :func:`looks_like_flight_recorder` reads


def looks_like_flight_recorder(head: bytes) -> bool:
    """True when ``head`` (a file's first bytes) starts a PyTorch flight-recorder dump: a pickle of
    protocol 2–5 naming ``version`` and ``pg_config`` or ``entries`` near its start (an allocator
    snapshot names ``segments``), or a JSON object naming ``pg_config`` and ``pg_status``, or ``entries``
    with an entry's ``collective_seq_id`` (a trace names ``traceEvents``)."""
    head = head[:FLIGHT_RECORDER_HEAD]
    if is_pickle_head(head):
        return b"version" in head and (b"pg_config" in head or b"entries" in head) and b"segments" not in head
    text = head.lstrip(LEADING_BYTES)
    # JSON keys may come sorted ("entries" first, "version" last): an entry's own keys then show it
    # (a trace's distributedInfo has a pg_config too, never a pg_status or entries)
    return (
        text[:1] == b"{"
        and b'"traceEvents"' not in text
        and (
            (b'"pg_config"' in text and b'"pg_status"' in text)
            or (b'"entries"' in text and b'"collective_seq_id"' in text)
        )
    )


def sniff_kind(head: bytes) -> str | None:
    """``"trace"``, ``"memory_timeline"`` (a ``[times, sizes]`` export), ``"flight_recorder"`` (a
    flight-recorder dump, pickle or JSON) or None for a file's head."""
    if looks_like_flight_recorder(head):
        return "flight_recorder"
    if looks_like_trace(head):
        return "trace"
    text = _head_text(head)
    if text is not None and re.match(rb"^\[\s*\[\s*-?[0-9]", text):
        return "memory_timeline"
    return None


class SniffCache:
    """Sniff results keyed by ``(path, version)`` so a refresh does not read the file again.

    The head is one ranged read of :data:`SNIFF_BYTES` (``fs.cat_file(path, 0, SNIFF_BYTES)``: a
    single ``Range`` request on S3, GCS and Azure, never a read-ahead block of several MB). With
    ``store`` (a JSON file, e.g. in the parse cache directory), results survive a restart: a file
    whose version (size + etag or mtime) did not change is never read again."""

    def __init__(self, store: str | None = None) -> None:
        self._known: dict[tuple[str, str], str | None] = {}
        self._lock = threading.Lock()
        self._store = store
        self.reads = 0  # ranged reads done (tests count them)
        if store:
            try:  # any unreadable index (a FIFO, deep nesting, odd values) is an empty one, rewritten
                with open_regular(store) as f:
                    for key, kind in json.load(f).items():
                        path, _, version = key.partition("\0")
                        self._known[(path, version)] = kind if isinstance(kind, str) else None
            except Exception as exc:
                if not isinstance(exc, FileNotFoundError):
                    logger.warning("sniff index %s is unreadable (%s): starting afresh", store, type(exc).__name__)
                self._known.clear()

    def kind(self, fs, path: str, version: str) -> str | None:
        """:func:`sniff_kind` of the file, read once per (path, version)."""
        key = (_url(fs, path), version)
        with self._lock:
            if key in self._known:
                return self._known[key]
        try:
            self.reads += 1
            head = fs.cat_file(path, start=0, end=SNIFF_BYTES)
            result = sniff_kind(head)
        except FileNotFoundError:
            return None  # deleted since the listing: not cached, the next listing decides
        except Exception as exc:  # unreadable (permissions, network): not a trace for now, retried next refresh
            logger.warning("cannot sniff %s: %s: %s", key[0], type(exc).__name__, exc)
            return None
        with self._lock:
            self._known[key] = result
            self._save()
        return result

    def _save(self) -> None:
        if not self._store:
            return
        body = json.dumps({f"{p}\0{v}": k for (p, v), k in self._known.items()}).encode()
        try:
            write_atomic(self._store, lambda f: f.write(body))
        except OSError:
            pass


def _url(fs, path: str) -> str:
    try:
        return fs.unstrip_protocol(path)
    except Exception:
        return path
