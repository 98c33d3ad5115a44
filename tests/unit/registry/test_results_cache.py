"""The analysis cache (registry/results.py): reports byte-equal with and without it, a warm report that
parses nothing, damaged entries healed, and every cached view read back exactly as computed."""

from __future__ import annotations

import glob
import io
import os
import shutil

import numpy as np
import pytest
from conftest import sample

from tb_plugin.cli import report as cli_report
from tb_plugin.registry import results
from tb_plugin.registry.cache import ParseCache
from tb_plugin.registry.executors import task
from tb_plugin.registry.parse import open_views, parse_entry
from tb_plugin.storage.fs import open_logdir

SAMPLES = [
    "dlrm_8ranks",
    "kineto/resnet50_num_workers_0",
    "tracelens/h100",
    "tracelens/mi300",
    "torch213_cpu",
    "hta/amd_trace",
    "hta/nccl_parser_config",
    "hta/cpu_only__older_b8cce2c",
    "composer",
    "lightning",
]


def _report(logdir, cache: bool) -> str:
    out, err = io.StringIO(), io.StringIO()
    cli_report.run_report(str(logdir), None, True, cache, out, err, executor="local:1")
    return out.getvalue()


def _entries(cache_dir) -> list[str]:
    return sorted(glob.glob(os.path.join(str(cache_dir), "**", "*.r-*.msgpack"), recursive=True))


def _same(a, b) -> bool:
    """Strict equality: types included (a numpy array is equal only to an array of its dtype and shape)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            type(a) is type(b)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
        )
    if type(a) is not type(b):
        return isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and _same(list(a), list(b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and np.isnan(a):
        return np.isnan(b)
    if isinstance(a, float):
        return a == b and np.copysign(1, a) == np.copysign(1, b)
    return a == b


@pytest.mark.corpus
@pytest.mark.parametrize("rel", SAMPLES)
def test_report_is_byte_equal_with_and_without_the_analysis_cache(rel, tmp_path, monkeypatch):
    logdir = tmp_path / "logdir"
    shutil.copytree(sample(rel), logdir)
    uncached = _report(logdir, cache=False)
    cold = _report(logdir, cache=True)
    assert _entries(os.environ["KINETOSCOPE_CACHE_DIR"])  # the cold run stored its results

    def no_parse(*args, **kwargs):
        raise AssertionError("a warm report must not parse")

    monkeypatch.setattr(task, "parse_entry", no_parse)
    warm = _report(logdir, cache=True)
    assert uncached == cold == warm
    assert '"workers"' in warm


@pytest.mark.corpus
@pytest.mark.parametrize("damage", ["empty", "truncated", "garbage", "fifo", "other_version"])
def test_damaged_entries_are_ignored_recomputed_and_rewritten(damage, tmp_path, monkeypatch):
    logdir = tmp_path / "logdir"
    shutil.copytree(sample("tracelens/h100"), logdir)
    expected = _report(logdir, cache=True)
    entries = _entries(os.environ["KINETOSCOPE_CACHE_DIR"])
    assert len(entries) >= 5  # the report's aggregate and the views it used
    good = {p: open(p, "rb").read() for p in entries}
    for path, data in good.items():
        os.unlink(path)
        if damage == "empty":
            open(path, "wb").close()
        elif damage == "truncated":
            open(path, "wb").write(data[: len(data) // 2])
        elif damage == "garbage":
            open(path, "wb").write(b"\xc1" * 64)  # 0xc1 is never valid msgpack
        elif damage == "fifo":
            os.mkfifo(path)
    if damage == "other_version":
        monkeypatch.setattr(results, "ANALYSIS_VERSION", "0" * 16)
    assert _report(logdir, cache=True) == expected
    for path in entries:  # each read entry healed: a regular file that decodes with this code's version
        assert os.path.isfile(path) and not os.path.islink(path)
        results.decode(_name_of(path, good), open(path, "rb").read())
    assert _report(logdir, cache=True) == expected


def _name_of(path: str, good: dict) -> str:
    """The result name an entry file holds (read from its good copy)."""
    import msgspec

    return msgspec.msgpack.decode(good[path], ext_hook=lambda code, data: None)["name"]


@pytest.mark.corpus
@pytest.mark.parametrize(
    "rel", ["tracelens/h100", "tracelens/mi300", "dlrm_8ranks", "torch213_cpu", "kineto/resnet50_num_workers_0"]
)
def test_cached_views_read_back_exactly_as_computed(rel, tmp_path):
    path = sorted(glob.glob(str(sample(rel)) + "/*.json*"))[0]
    fs, fpath = open_logdir(path)
    cache = ParseCache(str(tmp_path / "cache"))
    trace, _ = parse_entry(fs, fpath, path, "v1", os.path.getsize(path), cache)

    def compute_all(views):
        out = {
            "overview": views.overview(),
            "rank_reduce": views.rank_reduce(),
            "insights": views.insights(),
            "modules": views.modules(),
            "tc": views.tensor_core_split(),
            "curves": views.memory_curves(),
            "pairs": views.memory_pairs(),
            "summary": views.memory_summary(),
        }
        for g in ("operator", "input_shape", "call_stack"):
            out["ops:" + g] = views.operators(g)
        for g in ("kernel", "kernel_op_config"):
            out["kernels:" + g] = views.kernels(g)
        for d in views.memory_devices():
            out["stats:" + d] = views.memory_stats(d)
        return out

    computed = compute_all(open_views(trace, cache, path, "v1"))
    stored = len(_entries(tmp_path / "cache"))
    again, _ = parse_entry(fs, fpath, path, "v1", os.path.getsize(path), cache)
    read_back = compute_all(open_views(again, cache, path, "v1"))
    assert stored >= 12 and len(_entries(tmp_path / "cache")) == stored
    for key in computed:
        assert _same(computed[key], read_back[key]), key


def test_values_round_trip_exactly():
    value = {
        "f": [1.5, float("nan"), float("inf"), -0.0],
        "i": [0, -(2**63), 2**64 - 1],
        "n": None,
        "s": "µs",
        "a": np.arange(6, dtype=np.int32).reshape(2, 3),
        "b": np.array([True, False]),
        "e": np.zeros(0),
        "x": np.float32(2.5),
        "y": np.int64(7),
        3: "int key",
    }
    back = results.decode("v", results.encode("v", value))
    assert _same(value, back)
    assert back["a"].flags.writeable
    with pytest.raises(ValueError):
        results.decode("other", results.encode("v", value))


def test_values_msgpack_cannot_hold_are_not_cached(tmp_path):
    store = results.ResultCache(ParseCache(str(tmp_path)), "file:///x", "v")
    store.put("big", {"n": 2**70})
    store.put("surrogate", "\ud800")
    store.put("objects", np.array(["a"], dtype=object))
    assert _entries(tmp_path) == []
    assert store.get_or_make("ok", lambda: [1, 2]) == [1, 2]
    assert store.get("ok") == (True, [1, 2])
