"""On-disk cache of analysis results, beside the parse cache, so a warm report or tab recomputes nothing.

An entry is one result (an Operator table, a file's report aggregate, its memory curves…) of one
trace file, stored next to that file's parse-cache entry under the same key (the file's identity:
URL or inode, size, mtime/etag; :meth:`~.cache.ParseCache.identity`) as
``<key>.r-<hash of the result's name>.msgpack``. Invalidation:

- the file changes → its identity changes → another key (the parse cache's own rule);
- the column layout changes → the parse cache's versioned directory changes, and these with it;
- the analysis code changes → :data:`ANALYSIS_VERSION` (a SHA-256 of every source file under
  ``tb_plugin/analysis``, ``tb_plugin/trace`` and ``tb_plugin/artifacts``, of the report builder, the
  views and the per-rank task, of the package's ``__init__.py`` (its version) and of the parse
  cache's version) changes; an entry written by other code is a miss and is rewritten.

Format: msgpack (msgspec), never pickle. ``{"version", "name", "value"}``; numpy arrays and scalars
travel as msgpack extensions (dtype, shape, raw bytes: exact), floats as IEEE doubles (NaN, ±∞ and
−0.0 exact). Entries are written privately and atomically, without fsync (:mod:`~tb_plugin.storage.private_files`:
``durable=False``, a power loss costs at most a miss);
an entry that cannot be read back (0 bytes, truncated, corrupt, not a regular file, another version)
is a miss, removed, and rewritten by the next computation. A value msgpack cannot hold (an integer
beyond 64 bits, a lone surrogate) is simply not cached.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any, Callable

import msgspec
import numpy as np

from ..logs import module_logger
from ..storage.private_files import open_regular, write_atomic
from .cache import CACHE_VERSION, ParseCache, discard

logger = module_logger(__name__)

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SOURCES = (
    "__init__.py",
    "analysis",
    "trace",
    "artifacts",
    os.path.join("registry", "report.py"),
    os.path.join("registry", "views.py"),
    os.path.join("registry", "results.py"),
    os.path.join("registry", "executors", "task.py"),
)
_ARRAY, _SCALAR = 1, 2  # msgpack extension codes


def _analysis_version() -> str:
    """SHA-256 (16 hex digits) of the analysis code: the sources in :data:`_SOURCES` and the parse
    cache's version. Any edit to an analysis makes every cached result a miss."""
    digest = hashlib.sha256(CACHE_VERSION.encode())
    for item in _SOURCES:
        path = os.path.join(_PACKAGE, item)
        files = (
            [path]
            if os.path.isfile(path)
            else sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(".py"))
            if os.path.isdir(path)
            else []
        )
        for f in files:
            digest.update(os.path.relpath(f, _PACKAGE).encode() + b"\0")
            with open(f, "rb") as src:
                digest.update(src.read())
    return digest.hexdigest()[:16]


ANALYSIS_VERSION = _analysis_version()


def _enc_hook(obj: Any) -> msgspec.msgpack.Ext:
    """numpy arrays (numeric, any shape) and scalars as extensions: dtype, shape, raw bytes."""
    if isinstance(obj, np.ndarray) and obj.dtype.kind in "biufc":
        dtype = obj.dtype.str.encode()
        head = bytes([len(dtype)]) + dtype + bytes([obj.ndim]) + np.asarray(obj.shape, dtype="<i8").tobytes()
        return msgspec.msgpack.Ext(_ARRAY, head + np.ascontiguousarray(obj).tobytes())
    if isinstance(obj, np.generic) and obj.dtype.kind in "biufc":
        dtype = obj.dtype.str.encode()
        return msgspec.msgpack.Ext(_SCALAR, bytes([len(dtype)]) + dtype + obj.tobytes())
    raise NotImplementedError(f"cannot cache a {type(obj).__name__}")


def _ext_hook(code: int, data: memoryview) -> Any:
    raw = bytes(data)
    dtype = np.dtype(raw[1 : 1 + raw[0]].decode())
    pos = 1 + raw[0]
    if code == _SCALAR:
        return np.frombuffer(raw, dtype=dtype, offset=pos, count=1)[0]
    if code == _ARRAY:
        ndim = raw[pos]
        shape = tuple(int(x) for x in np.frombuffer(raw, dtype="<i8", count=ndim, offset=pos + 1))
        count = int(np.prod(shape, dtype=np.int64))
        return np.frombuffer(raw, dtype=dtype, count=count, offset=pos + 1 + 8 * ndim).reshape(shape).copy()
    raise ValueError(f"unknown msgpack extension {code}")


_ENCODER = msgspec.msgpack.Encoder(enc_hook=_enc_hook)
_DECODER = msgspec.msgpack.Decoder(ext_hook=_ext_hook)


def encode(name: str, value: Any) -> bytes:
    """The bytes of one entry (raises ``NotImplementedError``, ``OverflowError``, ``UnicodeEncodeError``
    or ``TypeError`` for a value msgpack cannot hold)."""
    return _ENCODER.encode({"version": ANALYSIS_VERSION, "name": name, "value": value})


def decode(name: str, data: bytes) -> Any:
    """The value of an entry written by :func:`encode`; raises ``ValueError`` for another version or
    name, and msgspec's errors for damaged bytes."""
    doc = _DECODER.decode(data)
    if not isinstance(doc, dict) or doc.get("version") != ANALYSIS_VERSION or doc.get("name") != name:
        raise ValueError("written by other analysis code")
    return doc["value"]


class ResultCache:
    """Analysis results of one trace file (identified as in the parse cache)."""

    def __init__(self, cache: ParseCache, url: str, version: str) -> None:
        self._base = cache.events_path(url, version)[: -len(".events.bin")]

    def path(self, name: str) -> str:
        return f"{self._base}.r-{hashlib.sha256(name.encode()).hexdigest()[:16]}.msgpack"

    def get(self, name: str) -> tuple[bool, Any]:
        """``(True, value)`` when ``name`` is cached and readable, else ``(False, None)``."""
        path = self.path(name)
        try:
            with open_regular(path) as f:
                data = f.read()
            return True, decode(name, data)
        except FileNotFoundError:
            return False, None
        except Exception as exc:
            logger.info("analysis cache entry %s is unusable (%s: %s): computed again", path, type(exc).__name__, exc)
            discard(path)
            return False, None

    def put(self, name: str, value: Any) -> None:
        """Store ``value`` (a failure only costs the cache entry)."""
        try:
            data = encode(name, value)
        except (NotImplementedError, OverflowError, UnicodeEncodeError, TypeError, ValueError) as exc:
            logger.debug("result %s is not cached: %s", name, exc)
            return
        try:
            write_atomic(self.path(name), lambda f: f.write(data), durable=False)
        except OSError as exc:
            logger.warning("cannot write analysis cache entry %s: %s", self.path(name), exc)

    def get_or_make(self, name: str, make: Callable[[], Any]) -> Any:
        """The cached value of ``name``, else ``make()`` stored."""
        hit, value = self.get(name)
        if hit:
            return value
        value = make()
        self.put(name, value)
        return value


__all__ = ["ANALYSIS_VERSION", "ResultCache", "decode", "encode"]
