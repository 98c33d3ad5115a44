"""The whole read of a snapshot by CPython's C unpickler inside a bounded reader child
(:mod:`tb_plugin.artifacts.whole_read`): taken only under an address-space limit, field-by-field the
same snapshot as the streaming reader on protocols 2–5, bounded after memo expansion, and a memo bomb
falls back to the streaming reader."""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap

import pytest
from fuzz_files import shared_annotation_pickle, shared_segment_pickle
from synth.snapshot import LAYOUTS, synthesize_snapshot
from synth.snapshot_writer import write_snapshot_pickle
from test_snapshot_stream import PROTOCOLS, assert_same

from tb_plugin.artifacts import pickle_stream, whole_read
from tb_plugin.artifacts.snapshot import SnapshotError, load_snapshot, parse_pickle


def test_this_process_has_no_address_space_limit_so_never_reads_whole():
    assert not whole_read.fits(10)


def _whole(monkeypatch):
    """parse_pickle as a bounded child runs it: the whole read taken, the streaming reader never."""
    monkeypatch.setattr(whole_read, "fits", lambda size: True)

    def no_stream(*args, **kwargs):
        raise AssertionError("the streaming reader ran")

    monkeypatch.setattr(pickle_stream, "read", no_stream)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_whole_read_equals_streamed(layout, protocol, monkeypatch):
    data = pickle.dumps(synthesize_snapshot(layout, entries=2600, frames=5), protocol=protocol)
    streamed = parse_pickle(data, stream=True)
    _whole(monkeypatch)
    assert_same(parse_pickle(data), streamed)


@pytest.mark.parametrize("shared_frames", (False, True))
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_whole_read_equals_streamed_on_the_benchmark_layout(protocol, shared_frames, monkeypatch, tmp_path):
    path = tmp_path / "snap.pickle"
    with open(path, "wb") as f:  # each entry its own frame list (PyTorch), or lists shared per stack
        write_snapshot_pickle(f, 3000, frames=8, protocol=protocol, shared_frames=shared_frames)
    data = path.read_bytes()
    streamed = parse_pickle(data, stream=True)
    _whole(monkeypatch)
    assert_same(parse_pickle(data), streamed)


@pytest.mark.parametrize(
    "build",
    [lambda: shared_annotation_pickle(2000, 300_000), lambda: shared_segment_pickle(1000, 340_000)],
    ids=["annotation", "segment"],
)
def test_amplifying_files_are_refused_on_the_whole_read_too(build, monkeypatch):
    data = build()
    _whole(monkeypatch)
    with pytest.raises(SnapshotError, match=f"through shared references, the bound for its {len(data):,} bytes"):
        parse_pickle(data)


def test_a_history_referenced_many_times_counts_each_time(monkeypatch):
    obj = synthesize_snapshot("current", entries=1000, frames=2)
    history = obj["device_traces"][0]
    obj["device_traces"] = [history] * 100_000  # one list, 10^8 rows when parsed: a 2-byte BINGET each
    data = pickle.dumps(obj, protocol=4)
    assert len(data) < 1_000_000
    _whole(monkeypatch)
    with pytest.raises(SnapshotError, match="objects through shared references"):
        parse_pickle(data)


CHILD = textwrap.dedent(
    """
    import pickle, sys
    from tb_plugin.artifacts import isolated, pickle_stream, whole_read
    from tb_plugin.artifacts.snapshot import parse_pickle
    calls = []
    real = pickle_stream.read
    pickle_stream.read = lambda *a, **k: calls.append(1) or real(*a, **k)
    data = sys.stdin.buffer.read()
    isolated.apply_limits(isolated.memory_limit_bytes(len(data)), None)
    print(whole_read.fits(len(data)), parse_pickle(data).devices[0].size.tolist()[:3], len(calls))
    """
)


def _in_child(data: bytes) -> str:
    done = subprocess.run([sys.executable, "-c", CHILD], input=data, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return done.stdout.decode().strip()


def test_a_limited_child_reads_whole_and_a_memo_bomb_falls_back_to_the_streaming_reader():
    good = pickle.dumps(synthesize_snapshot("current", entries=50, frames=2), protocol=4)
    sizes = load_snapshot(good).devices[0].size.tolist()[:3]
    assert _in_child(good) == f"True {sizes} 0"  # whole, and the streaming reader never ran
    from fuzz_files import memo_index_pickle

    # the C unpickler asks for a 6 GB memo: MemoryError under the limit, then the streaming reader
    got = _in_child(memo_index_pickle(750_000_000))
    assert got.startswith("True [8, 8] ") and int(got.rsplit(" ", 1)[1]) >= 1, got


def test_a_drained_read_projected_past_the_limit_ends_early(monkeypatch):
    """The projection of a drained whole read's growth (``whole_read.Projection``): nothing before its first
    point (4 MiB or 1/32 of the file), then every 4 MiB; it ends the read with MemoryError as soon as the
    growth so far, carried to the file's end, with the bytes later imports take, passes the limit."""
    mb = 1 << 20
    mapped, reads = [100 * mb], []
    monkeypatch.setattr(whole_read, "_address_space_limit", lambda: 1000 * mb)
    monkeypatch.setattr(whole_read, "_mapped_bytes", lambda: reads.append(mapped[0]) or mapped[0])
    watch = whole_read.Projection(400 * mb, later=100 * mb)  # (its start: 100 MiB mapped)
    reads.clear()
    mapped[0] = 150 * mb
    watch.check(3 * mb)  # before 400/32 = 12.5 MiB read: not projected
    assert reads == []
    mapped[0] = 120 * mb
    watch.check(13 * mb)  # 20 MiB grown in 13: 100 + 20 * 400 / 13 + 100 = 815 MiB, under the limit
    watch.check(14 * mb)  # (the next projection 4 MiB later)
    assert len(reads) == 1
    mapped[0] = 140 * mb
    with pytest.raises(MemoryError):  # 40 MiB grown in 17: 100 + 941 + 100 MiB, past the limit
        watch.check(17 * mb)


def test_a_drained_read_that_grows_as_projected_is_not_ended(monkeypatch):
    mb = 1 << 20
    mapped = [100 * mb]
    monkeypatch.setattr(whole_read, "_address_space_limit", lambda: 1000 * mb)
    monkeypatch.setattr(whole_read, "_mapped_bytes", lambda: mapped[0])
    watch = whole_read.Projection(400 * mb, later=100 * mb)
    for read in range(1, 401):  # 2 bytes mapped per byte read: 100 + 800 + 100 = 1000 MiB, the limit
        mapped[0] = 100 * mb + 2 * read * mb
        watch.check(read * mb)
    mapped[0] += 4 * mb
    watch.next_at = 0
    with pytest.raises(MemoryError):  # (a little more: ended)
        watch.check(400 * mb)
    monkeypatch.setattr(whole_read, "_address_space_limit", lambda: None)
    whole_read.Projection(400 * mb).check(400 * mb)  # (no limit: never ended)
