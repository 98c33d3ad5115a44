"""``torch.profiler._memory_profiler`` ``export_memory_timeline`` output as per-category series.

Two forms:
- raw (``*.raw.json.gz``, ``memory_timeline.raw.gz``): rows ``[ts, action, bytes, category]``; bytes
  are signed; ``ts`` is -1 for memory that existed before profiling (shown at the first time). Actions:
  1 preexisting, 2 create, 3 increment version (a − row for the old category, then a + row for the
  new one), 4 destroy. The series are the running sum of bytes per category.
- ``[times, sizes]`` (``.json``/``.json.gz``): ``sizes[i]`` lists the bytes of each category at
  ``times[i]`` (a per-category list of lists is accepted too).
Timestamps are ns in both; the result is µs relative to the first.
"""

from __future__ import annotations

import msgspec
import numpy as np

from ..storage.read import ReadError, gunzip_bounded

CATEGORIES = (
    "parameter",
    "optimizer state",
    "input",
    "temporary",
    "activation",
    "gradient",
    "autograd detail",
    "unknown",
)


class TimelineExportError(Exception):
    """Not a memory-timeline export."""


def load_timeline_export(data: bytes | bytearray) -> dict:
    if data[:2] == b"\x1f\x8b":  # inflated under the read limit: a 2 MB bomb no longer reaches 4 GB
        try:
            data = gunzip_bounded(data)
        except ReadError as exc:
            raise TimelineExportError(str(exc)) from None
    try:
        doc = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise TimelineExportError(f"invalid JSON: {exc}") from None
    except RecursionError:
        raise TimelineExportError("invalid JSON: nested too deeply for a memory-timeline export") from None
    if (
        isinstance(doc, list)
        and len(doc) == 2
        and isinstance(doc[0], list)
        and isinstance(doc[1], list)
        and (not doc[0] or not isinstance(doc[0][0], list))
        and not _raw_rows(doc)
    ):
        return _from_times_sizes(doc[0], doc[1])
    if isinstance(doc, list) and all(isinstance(r, list) and len(r) == 4 for r in doc[:100]):
        return _from_raw(np.array(doc, dtype=np.float64).reshape(-1, 4))
    raise TimelineExportError(
        "not a memory-timeline export: expected [times, sizes] or rows of [ts, action, bytes, category]"
    )


def _raw_rows(doc: list) -> bool:
    """Two raw rows (``[[ts, action, bytes, category], …]``) rather than ``[times, sizes]``: both are lists
    of 4 numbers (``sizes`` holds lists, one per time or per category)."""
    return all(len(r) == 4 and all(isinstance(v, (int, float)) for v in r) for r in doc)


def _from_raw(rows: np.ndarray) -> dict:
    ts, nbytes, cat = rows[:, 0], rows[:, 2], rows[:, 3].astype(np.int64)
    valid = ts >= 0
    first = ts[valid].min() if valid.any() else 0.0
    ts = np.where(valid, ts, first)
    order = np.argsort(ts, kind="stable")
    ts, nbytes, cat = ts[order], nbytes[order], np.clip(cat[order], 0, len(CATEGORIES) - 1)
    times, idx = np.unique(ts, return_index=True)
    series = []
    for c in range(len(CATEGORIES)):
        running = np.cumsum(np.where(cat == c, nbytes, 0))
        # value after the last row at each distinct time
        last = np.r_[idx[1:] - 1, len(ts) - 1]
        series.append(running[last])
    return {
        "form": "raw",
        "times_us": ((times - first) / 1000.0),
        "categories": list(CATEGORIES),
        "bytes": np.stack(series) if series else np.zeros((0, 0)),
    }


def _from_times_sizes(times: list, sizes: list) -> dict:
    t = np.asarray(times, dtype=np.float64)
    s = np.asarray(sizes, dtype=np.float64)
    if s.ndim != 2:
        raise TimelineExportError("'sizes' must be a list of lists")
    if s.shape[0] == len(t) and s.shape[1] != len(t):
        s = s.T
    base = t.min() if len(t) else 0.0
    names = list(CATEGORIES[: s.shape[0]]) + [f"category {i}" for i in range(len(CATEGORIES), s.shape[0])]
    return {"form": "times_sizes", "times_us": (t - base) / 1000.0, "categories": names, "bytes": s}
