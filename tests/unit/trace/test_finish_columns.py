"""The finish's event columns (trace/finish.py, trace/ordered_columns.py): the device kinds' lookup table gives, for every kind,
what comparing it with each of those kinds gave; the heap's freed pages are given back after a column
joined from chunks that held rows, not after one made from chunks of one value (nothing freed)."""

from __future__ import annotations

import json

import numpy as np

from tb_plugin.trace import finish, ordered_columns
from tb_plugin.trace.categories import Kind
from tb_plugin.trace.columns import ColumnBuilder
from tb_plugin.trace.events import _RAW_LIST
from tb_plugin.trace.model import EVENT_COLUMNS


def test_the_device_kinds_table_is_the_comparison_with_each_kind():
    kinds = np.arange(256, dtype=np.uint8)
    compared = np.isin(kinds, (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET, Kind.GPU_USER_ANNOTATION))
    assert finish._PLACED_ON_DEVICE[kinds].tolist() == compared.tolist()
    assert int(compared.sum()) == 4


def test_pages_are_given_back_after_joined_rows_only(monkeypatch):
    asked: list[int] = []
    monkeypatch.setattr(ordered_columns, "release_freed_memory", lambda: asked.append(1))
    monkeypatch.setattr(ordered_columns, "TRIM_ABOVE_BYTES", 100)  # (150 rows of any column; not one value per chunk)
    builder = ColumnBuilder(None)
    for b in range(3):  # (times in order: the columns are not reordered, which gives pages back too)
        events = [
            {"ph": "X", "cat": "kernel", "name": f"k{i % 3}", "pid": 0, "tid": 7, "ts": 100 * b + i, "dur": 2}
            for i in range(50)
        ]
        joined = b"[" + b",".join(json.dumps(e).encode() for e in events) + b"]"
        builder.add_batch(_RAW_LIST.decode(joined), joined)
    one_value = sum(all(c.strides == (0,) for c in chunks) for chunks in builder.chunks.values())
    columns = len(builder.chunks)
    trace = builder.finish({}, "array")
    assert columns == len(EVENT_COLUMNS) and one_value >= 20 and len(asked) == columns - one_value
    assert trace.events.ts.tolist() == sorted(trace.events.ts.tolist())
