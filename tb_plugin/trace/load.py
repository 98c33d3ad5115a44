"""One call from a path to a :class:`~tb_plugin.trace.model.Trace`."""

from __future__ import annotations

from typing import Callable

import fsspec

from .decode import decode_trace
from .model import Trace
from .read import read_trace_bytes

READ_SHARE = 0.5  # share of the progress bar given to reading; the rest is decoding


def load_trace_file(path: str, fs=None, size: int | None = None,
                    progress: Callable[[float], None] | None = None, events_sink=None) -> Trace:
    """Read and decode one trace file (local path or fsspec URL). Raises ``TraceReadError``.

    ``events_sink``: see :func:`~tb_plugin.trace.decode.decode_trace`."""
    if fs is None:
        fs, path = fsspec.core.url_to_fs(str(path))
    if size is None:
        try:
            size = fs.size(path)
        except (OSError, ValueError):
            size = None
    read_progress = (lambda x: progress(READ_SHARE * x)) if progress else None
    data = read_trace_bytes(fs, path, size, read_progress)
    decode_progress = (lambda x: progress(READ_SHARE + (1 - READ_SHARE) * x)) if progress else None
    trace = decode_trace(data, decode_progress, events_sink)
    del data
    return trace
