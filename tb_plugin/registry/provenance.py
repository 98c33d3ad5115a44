"""Inductor's kernel provenance beside a trace: ``kernel_information.json`` (written by
``torch._inductor`` provenance tracking: per generated kernel name its ``pre_grad_nodes``,
``post_grad_nodes`` and ``stack_traces``), read when it lies in the trace's directory and kept in
``trace.meta["inductor_kernels"]`` for :mod:`tb_plugin.analysis.compiled_regions`.

Bad input never crashes or amplifies: the file is read only when it is a regular file (locally: never a
FIFO, never a symlink; in a logdir, through ``storage/confined.py``, so never outside it) of at most
:data:`MAX_BYTES`; only string items are kept, at most
:data:`MAX_KERNELS` kernels, :data:`MAX_ITEMS` items per list and :data:`MAX_TEXT` characters each.
A missing, oversized or malformed file is simply not used.
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING, Any

import orjson

from ..storage.confined import ConfinedLocalFileSystem
from ..storage.private_files import open_regular
from ..storage.remote import is_local_fs

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

PROVENANCE_NAME = "kernel_information.json"
MAX_BYTES = 8 << 20
MAX_KERNELS = 20_000
MAX_ITEMS = 20
MAX_TEXT = 2000
FIELDS = ("pre_grad_nodes", "post_grad_nodes", "stack_traces")


def read_provenance(fs: AbstractFileSystem, path: str) -> dict[str, dict[str, list[str]]] | None:
    """The sanitized provenance beside the trace at ``path`` on ``fs``, or None."""
    candidate = posixpath.join(posixpath.dirname(str(path)), PROVENANCE_NAME)
    try:
        if isinstance(fs, ConfinedLocalFileSystem):  # a logdir's file: inside it, regular, no FIFO, no symlink
            with fs.open(candidate, "rb") as f:
                raw = f.read(MAX_BYTES + 1)
        elif is_local_fs(fs):
            with open_regular(candidate) as f:
                raw = f.read(MAX_BYTES + 1)
        else:
            info = fs.info(candidate)
            if info.get("type") != "file" or (info.get("size") or 0) > MAX_BYTES:
                return None
            with fs.open(candidate, "rb") as f:
                raw = f.read(MAX_BYTES + 1)
    except (OSError, ValueError):
        return None
    except Exception:
        return None
    if len(raw) > MAX_BYTES:
        return None
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return sanitize(doc)


def sanitize(doc: Any) -> dict[str, dict[str, list[str]]] | None:
    """``{kernel name: {field: [text, …]}}`` from a decoded file, strings only, bounded (see above)."""
    if not isinstance(doc, dict):
        return None
    out: dict[str, dict[str, list[str]]] = {}
    for name, entry in doc.items():
        if len(out) >= MAX_KERNELS:
            break
        if not isinstance(name, str) or not isinstance(entry, dict):
            continue
        out[name[:MAX_TEXT]] = {
            f: [v[:MAX_TEXT] for v in entry.get(f, [])[:MAX_ITEMS] if isinstance(v, str)]
            if isinstance(entry.get(f), list)
            else []
            for f in FIELDS
        }
    return out or None
