"""The parse cache's entries as array files: a parsed trace and a derived blob read back field by field
as written, and an entry of the old format or a damaged one is a miss that is removed."""

from __future__ import annotations

import dataclasses
import logging
import os

import numpy as np
from synth.traces import SynthSpec, synthesize, write_trace

from tb_plugin.registry import cache as cache_mod
from tb_plugin.registry.cache import ParseCache
from tb_plugin.registry.parse import load_trace_file
from tb_plugin.trace.model import Trace


def _trace(tmp_path) -> Trace:
    path = tmp_path / "w.pt.trace.json"
    write_trace(synthesize(SynthSpec(steps=3, with_memory=True)), path)
    return load_trace_file(str(path))


def _tables_equal(back: Trace, trace: Trace) -> None:
    for field, _prefix, columns in cache_mod._TABLES:
        got, want = getattr(back, field).columns, getattr(trace, field).columns
        assert list(got) == list(want) == list(columns)
        for name, col in want.items():
            assert got[name].dtype == col.dtype and got[name].shape == col.shape, (field, name)
            assert got[name].tobytes() == col.tobytes(), (field, name)  # bits: NaN, -0.0


def test_a_parsed_trace_reads_back_field_by_field(tmp_path):
    trace = _trace(tmp_path)
    assert len(trace.events) and len(trace.memory)
    cache = ParseCache(str(tmp_path / "c"))
    cache.put("file://x", "1:2", trace)
    back = cache.get("file://x", "1:2")
    assert back is not None
    _tables_equal(back, trace)
    for f in dataclasses.fields(Trace):
        if f.name not in ("events", "memory", "flows", "counters", "derived"):
            assert getattr(back, f.name) == getattr(trace, f.name), f.name
    (entry,) = [p for p in _files(tmp_path / "c") if p.endswith(".arrays")]
    with open(entry, "rb") as f:
        assert f.read(5) == b"KSARR"


def test_constant_columns_come_back_as_one_value(tmp_path):
    trace = _trace(tmp_path)
    constant = [k for k, c in trace.events.columns.items() if len(c) > 1 and (c == c[0]).all()]
    assert constant  # the synthetic trace has some (else this test says nothing)
    cache = ParseCache(str(tmp_path / "c"))
    cache.put("u", "v", trace)
    back = cache.get("u", "v")
    assert all(back.events.columns[k].strides == (0,) for k in constant)
    _tables_equal(back, trace)


def test_blobs_keep_empty_0d_and_non_contiguous_arrays(tmp_path):
    cache = ParseCache(str(tmp_path))
    arrays = {
        "empty": np.zeros(0, dtype=np.int32),
        "scalar": np.array(7, dtype=np.int64),
        "strided": np.arange(50, dtype=np.float64)[::4],
        "grid": np.arange(12, dtype=np.uint16).reshape(3, 4).T,
    }
    cache.put_blob("u", "v", "timeline", {"format": 3, "tracks": []}, arrays, durable=False)
    assert cache.has_blob("u", "v", "timeline")
    header, back = cache.get_blob("u", "v", "timeline")
    assert header == {"format": 3, "tracks": []} and set(back) == set(arrays)
    for k, a in arrays.items():
        assert back[k].dtype == a.dtype and back[k].shape == a.shape and np.array_equal(back[k], a)


def test_an_unwritable_blob_costs_only_its_entry(tmp_path, caplog):
    cache = ParseCache(str(tmp_path))
    with caplog.at_level(logging.WARNING):
        cache.put_blob("u", "v", "timeline", {}, {"objects": np.array([None, {}], dtype=object)})
    assert not cache.has_blob("u", "v", "timeline") and "cannot write" in caplog.text
    assert [p for p in _files(tmp_path) if p.endswith(".tmp")] == []


def test_an_npz_or_damaged_entry_is_a_miss_and_removed(tmp_path, caplog):
    trace = _trace(tmp_path)
    cache = ParseCache(str(tmp_path / "c"))
    cache.put("u", "v", trace)
    (entry,) = [p for p in _files(tmp_path / "c") if p.endswith(".arrays")]
    whole = open(entry, "rb").read()
    path, arrays = cache.prepare("u", "v", trace)
    assert path == entry
    with open(entry, "wb") as f:
        np.savez(f, **arrays)  # what the last format wrote at this name
    damaged = [
        None,  # (the npz just written)
        whole[: len(whole) // 2],
        whole[:20],
        whole + b"\x00" * 64,
        whole[:100] + b"\xff" * 8 + whole[108:],  # inside the index
    ]
    for data in damaged:
        if data is not None:
            with open(entry, "wb") as f:
                f.write(data)
        with caplog.at_level(logging.WARNING):
            assert cache.get("u", "v") is None
        assert not os.path.exists(entry)
        cache.put("u", "v", trace)  # rewritten whole by the next parse
        assert open(entry, "rb").read() == whole


def _files(root) -> list[str]:
    return [os.path.join(d, f) for d, _, fs in os.walk(str(root)) for f in fs]
