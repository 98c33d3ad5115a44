"""One call from a path to a :class:`~tb_plugin.trace.model.Trace`."""

from __future__ import annotations

import os
from typing import Callable

import fsspec

from .decode import decode_trace
from .model import Trace
from .read import read_trace_bytes

READ_SHARE = 0.5  # share of the progress bar given to reading; the rest is decoding


def load_trace_file(path: str, fs=None, size: int | None = None,
                    progress: Callable[[float], None] | None = None, events_sink=None,
                    spool_dir: str | None = None) -> Trace:
    """Read and decode one trace file (local path or fsspec URL). Raises ``TraceReadError``.

    ``events_sink``: see :func:`~tb_plugin.trace.decode.decode_trace`. ``spool_dir``: where a large
    remote object is downloaded before parsing (default: the directory of ``events_sink``, which is
    the parse cache's, else the system temp dir)."""
    if fs is None:
        fs, path = fsspec.core.url_to_fs(str(path))
    if size is None:
        try:
            size = fs.size(path)
        except (OSError, ValueError):
            size = None
    read_progress = (lambda x: progress(READ_SHARE * x)) if progress else None
    if spool_dir is None and isinstance(getattr(events_sink, "name", None), str):
        spool_dir = os.path.dirname(os.path.abspath(events_sink.name))
    data = read_trace_bytes(fs, path, size, read_progress, spool_dir)
    decode_progress = (lambda x: progress(READ_SHARE + (1 - READ_SHARE) * x)) if progress else None
    trace = decode_trace(data, decode_progress, events_sink)
    del data
    return trace
