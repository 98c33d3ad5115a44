"""Logdir discovery, worker/span naming, sniffing and the parse cache."""

from __future__ import annotations

import gzip
import os

import numpy as np
import pytest
from conftest import sample, write_json

from tb_plugin.registry.cache import CACHE_VERSION, ParseCache
from tb_plugin.storage.fs import list_files, open_logdir


def list_trace_files(fs, root, sniff):
    return [e for e in list_files(fs, root, sniff) if e.kind == "trace"]


from tb_plugin.registry.parse import load_trace_file
from tb_plugin.storage.naming import assign_spans, split_worker
from tb_plugin.storage.sniff import SniffCache, looks_like_trace


@pytest.mark.parametrize(
    "name, worker, key",
    [
        ("worker0.1623143089861.pt.trace.json.gz", "worker0", 1623143089861),
        ("worker0_step_12.1694128201545.pt.trace.json", "worker0_step_12", 1694128201545),
        ("rank-0.json.gz", "rank-0", None),
        ("0_trace.json", "0_trace", None),
        ("Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", "Qwen_Qwen1.5-0.5B-Chat__1016005", None),
        ("rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", "rank-34.Jul_15_10_52_41", 1074),
        ("host.trace.json", "host", None),
        ("123.json", "123", None),
    ],
)
def test_split_worker(name, worker, key):
    assert split_worker(name) == (worker, key)


def test_spans_order_by_numeric_key_and_keyless_first():
    spans = assign_spans(["w.200.pt.trace.json", "w.1000.pt.trace.json", "w.pt.trace.json", "v.5.json"])
    assert spans == {
        "w.pt.trace.json": ("w", "1"),
        "w.200.pt.trace.json": ("w", "2"),
        "w.1000.pt.trace.json": ("w", "3"),
        "v.5.json": ("v", "1"),
    }


def test_sniff_forms():
    assert looks_like_trace(b'{"schemaVersion": 1, "traceEvents": [')
    assert looks_like_trace(b'[{"name": "a", "ph": "X", "ts": 1')
    assert looks_like_trace(b'[\n{"name": "a", "ph": "B"')  # array form, cut off
    assert looks_like_trace(gzip.compress(b'{"traceEvents": []}'))
    assert not looks_like_trace(b'{"loss": 0.5, "epoch": 1}')
    assert not looks_like_trace(b"[1, 2, 3]")
    assert not looks_like_trace(b"")
    assert not looks_like_trace(b"\x1f\x8bgarbage")


class _CountingFS:
    """Wraps a filesystem and counts open() calls."""

    def __init__(self, fs):
        self.fs, self.opens = fs, 0

    def open(self, *a, **k):
        self.opens += 1
        return self.fs.open(*a, **k)

    def cat_file(self, *a, **k):  # the sniff's one ranged read
        self.opens += 1
        return self.fs.cat_file(*a, **k)

    def __getattr__(self, name):
        return getattr(self.fs, name)


def test_discovery_runs_at_any_depth_and_sniffing(tmp_path):
    trace = {"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]}
    write_json(tmp_path / "root.pt.trace.json", trace)
    write_json(tmp_path / "a" / "b" / "c" / "rank-0.json.gz", trace, gz=True)
    write_json(tmp_path / "a" / "metrics.json", {"loss": [1, 2]})  # not a trace
    (tmp_path / "a" / "notes.txt").write_text("hello")
    fs, root = open_logdir(str(tmp_path))
    counting = _CountingFS(fs)
    sniff = SniffCache()
    entries = list_trace_files(counting, root, sniff)
    assert [(e.run, e.name) for e in entries] == [("a/b/c", "rank-0.json.gz"), (".", "root.pt.trace.json")]
    first = counting.opens
    assert first == 2  # the two candidate .json files were sniffed once each
    list_trace_files(counting, root, sniff)
    assert counting.opens == first  # cached by path and version: no second read


@pytest.mark.corpus
def test_cache_roundtrip_is_exact(tmp_path):
    path = sample("kineto/resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz")
    parsed = load_trace_file(str(path))
    cache = ParseCache(str(tmp_path))
    assert cache.get("file://x", "1:2") is None
    cache.put("file://x", "1:2", parsed)
    back = cache.get("file://x", "1:2")
    assert back.strings == parsed.strings
    for key, col in parsed.events.columns.items():
        np.testing.assert_array_equal(back.events.columns[key], col)
        assert back.events.columns[key].dtype == col.dtype
    assert back.devices == parsed.devices and back.warnings == parsed.warnings
    assert cache.get("file://x", "1:3") is None  # another version is another entry
    assert os.path.isdir(os.path.join(tmp_path, CACHE_VERSION))


@pytest.mark.corpus
def test_corrupt_cache_entry_is_a_miss(tmp_path):
    cache = ParseCache(str(tmp_path))
    parsed = load_trace_file(str(sample("kineto/gpu_metrics_input.json")))
    cache.put("u", "v", parsed)
    (entry,) = [os.path.join(d, f) for d, _, fs in os.walk(tmp_path) for f in fs]
    with open(entry, "r+b") as f:
        f.truncate(100)
    assert cache.get("u", "v") is None


def test_lightning_profiler_files_are_grouped_by_action():
    """Lightning's PyTorchProfiler names its exports ``{stage}-{filename}-{local_rank}-{action}.{ts}.pt.trace.json``
    (tensorboard_trace_handler's worker name): each action (and rank) is one worker, its exports its spans in
    time order."""
    from tb_plugin.storage.naming import assign_spans

    got = assign_spans(
        [
            "fit-prof-0-training_step.1700000000009.pt.trace.json",
            "fit-prof-0-training_step.1700000000001.pt.trace.json",
            "fit-prof-0-validation_step.1700000000005.pt.trace.json",
            "fit-prof-1-training_step.1700000000002.pt.trace.json",
            "fit-prof-0-[pl][profile]run_training_epoch.1700000000003.pt.trace.json",
        ]
    )
    assert got == {
        "fit-prof-0-training_step.1700000000001.pt.trace.json": ("fit-prof-0-training_step", "1"),
        "fit-prof-0-training_step.1700000000009.pt.trace.json": ("fit-prof-0-training_step", "2"),
        "fit-prof-0-validation_step.1700000000005.pt.trace.json": ("fit-prof-0-validation_step", "1"),
        "fit-prof-1-training_step.1700000000002.pt.trace.json": ("fit-prof-1-training_step", "1"),
        "fit-prof-0-[pl][profile]run_training_epoch.1700000000003.pt.trace.json": (
            "fit-prof-0-[pl][profile]run_training_epoch",
            "1",
        ),
    }


def test_skipped_symlinks_are_named_in_the_runs_notices(tmp_path):
    """Symlinked directories and links leading outside the logdir are not followed, and the runs
    document says so (naming them) instead of listing nothing without a word."""
    from tb_plugin.registry.runs import RunRegistry

    outside = tmp_path / "outside" / "r1"
    outside.mkdir(parents=True)
    trace = '{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2, "pid": 1, "tid": 1}]}'
    (outside / "w.pt.trace.json").write_text(trace)
    logdir = tmp_path / "logdir"
    (logdir / "run").mkdir(parents=True)
    (logdir / "run" / "w.pt.trace.json").write_text(trace)
    os.symlink(outside, logdir / "linked_run")  # a directory link
    os.symlink(outside / "w.pt.trace.json", logdir / "run" / "x.pt.trace.json")  # a file link leading out
    os.symlink(logdir / "run" / "w.pt.trace.json", logdir / "run" / "inside.pt.trace.json")  # followed: inside

    reg = RunRegistry(str(logdir), cache=None)
    reg.scan()
    doc = reg.runs_document()
    assert [s["path"] for r in doc["runs"] for w in r["workers"] for s in w["spans"]] == [
        "run/inside.pt.trace.json",
        "run/w.pt.trace.json",
    ]
    assert reg.skipped_links == ["linked_run", "run/x.pt.trace.json"]
    assert len(doc["notices"]) == 1
    assert doc["notices"][0].startswith("Skipped 2 symbolic links (linked_run, run/x.pt.trace.json)")

    (logdir / "linked_run").unlink()
    (logdir / "run" / "x.pt.trace.json").unlink()
    reg.scan()
    assert reg.runs_document()["notices"] == []  # a rescan clears it


def test_background_writer_keeps_order_and_reports_errors(tmp_path, monkeypatch):
    """The events side file is written by a thread: every chunk lands, in order; a failing write is
    raised to the parser (which then parses without the side file)."""
    from tb_plugin.storage.writer import BackgroundWriter

    chunks = [bytes([i % 251]) * (1000 + i) for i in range(200)]
    with open(tmp_path / "out.bin", "wb") as f, BackgroundWriter(f) as w:
        assert w.name == str(tmp_path / "out.bin") and w.tell() == 0
        for c in chunks:
            assert w.write(c) == len(c)
        assert w.tell() == sum(map(len, chunks))  # where the next chunk goes, written yet or not
    assert (tmp_path / "out.bin").read_bytes() == b"".join(chunks)

    # chunks handed to the thread in lists of HANDOFF_BYTES: several hand-offs, in order; rewind drops
    # what was pending and starts the file over
    from tb_plugin.storage import writer

    monkeypatch.setattr(writer, "HANDOFF_BYTES", 5000)
    with open(tmp_path / "out2.bin", "wb") as f, BackgroundWriter(f) as w:
        w.write(b"dropped" * 1000)
        w.write(b"pending")
        w.rewind()
        assert w.tell() == 0
        for c in chunks:
            w.write(c)
    assert (tmp_path / "out2.bin").read_bytes() == b"".join(chunks)
    with open(tmp_path / "out3.bin", "wb") as f:
        f.write(b"head")
        with BackgroundWriter(f) as w:
            w.write(b"tail")
            assert w.tell() == 8

    class Full:
        name = "full"

        def write(self, chunk):
            raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        with BackgroundWriter(Full()) as w:
            for _ in range(100):  # the error reaches a later write, or close at the latest
                w.write(b"x")
    assert not w._thread.is_alive()
