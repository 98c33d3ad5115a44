"""A snapshot streamed from its file to the reader child in blocks: the same
snapshot as reading the file whole, plain and gzip; the read bounds (too big, not a pickle, hostile)
kept; this process never holds the file."""

from __future__ import annotations

import gzip
import pickle
import subprocess

import pytest
from synth.snapshot import synthesize_snapshot
from test_snapshot_stream import assert_same

from tb_plugin.artifacts import isolated
from tb_plugin.artifacts.snapshot import SnapshotError, load_snapshot, load_snapshot_blocks
from tb_plugin.registry.cache import ParseCache
from tb_plugin.registry.runs import RunRegistry


def _opened(root, name):
    reg = RunRegistry(str(root), cache=ParseCache())
    reg.scan()
    (art,) = [a for a in reg.artifacts() if a.entry.rel.endswith(name)]
    reg.load_artifact(art)
    return art


@pytest.fixture
def big():
    """A 3 MB snapshot: above the in-process bound, so it goes to the child."""
    return pickle.dumps(synthesize_snapshot("current", entries=30_000, frames=5), protocol=4)


def test_a_streamed_snapshot_equals_the_whole_read(tmp_path, monkeypatch, big):
    assert len(big) > 2 << 20
    monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr("tb_plugin.storage.read.CHUNK_BYTES", 256 << 10)  # blocks of 256 KiB (8 MiB in use)
    monkeypatch.setattr("tb_plugin.artifacts.snapshot.SHARED_MAX_BYTES", 1 << 20)  # not the shared child's size
    run = tmp_path / "job"
    run.mkdir()
    (run / "snapshot.pickle").write_bytes(big)
    sizes = []
    real = isolated.parse_blocks_in_child

    def spy(blocks, size, again=None):
        def each():
            for b in blocks:
                sizes.append(len(b))
                yield b

        return real(each(), size, again)

    monkeypatch.setattr("tb_plugin.artifacts.snapshot.parse_blocks_in_child", spy)
    art = _opened(tmp_path, "snapshot.pickle")
    assert art.state == "ready", art.error
    assert_same(art.views.snapshot, load_snapshot(big))
    assert sum(sizes) == len(big) and len(sizes) > 1 and max(sizes) < len(big) // 2  # blocks, never the file


def test_a_gzip_file_is_inflated_in_bounded_blocks(tmp_path, monkeypatch, big):
    import fsspec

    from tb_plugin.storage.read import Blocks

    monkeypatch.setattr("tb_plugin.storage.read.CHUNK_BYTES", 256 << 10)
    path = tmp_path / "snapshot.pickle.gz"
    path.write_bytes(gzip.compress(big))
    blocks = Blocks(fsspec.filesystem("file"), str(path), path.stat().st_size, json_document=False, limit_share=1)
    assert max(len(b) for b in blocks) <= 256 << 10
    assert_same(load_snapshot_blocks(blocks, path.stat().st_size), load_snapshot(big))


def test_blocks_of_any_size_give_the_same_snapshot(big):
    blocks = [big[i : i + 100_003] for i in range(0, len(big), 100_003)]
    assert_same(load_snapshot_blocks(iter(blocks), len(big)), load_snapshot(big))
    small = pickle.dumps(synthesize_snapshot("current", entries=300, frames=2))  # in this process
    assert_same(load_snapshot_blocks([small[:100], small[100:]], len(small)), load_snapshot(small))


def test_the_child_grows_its_buffer_past_a_wrong_size(big):
    assert_same(load_snapshot_blocks([big[: 1 << 20], big[1 << 20 :]], 1000), load_snapshot(big))


def test_a_file_over_the_bound_is_refused_and_the_child_ended(tmp_path, monkeypatch, big):
    """A plain file over the bound is refused from its size (no child); a gzip one whose inflated bytes
    pass the bound once the child has started ends that child."""
    import fsspec

    from tb_plugin.storage.read import Blocks, ReadError

    monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("KINETOSCOPE_MAX_TRACE_BYTES", str(len(big) * 4 // 5))
    monkeypatch.setattr("tb_plugin.storage.read.CHUNK_BYTES", 256 << 10)
    monkeypatch.setattr("tb_plugin.artifacts.snapshot.SHARED_MAX_BYTES", 1 << 20)  # a child of its own
    (tmp_path / "snapshot.pickle").write_bytes(big)
    children = []
    real_popen = subprocess.Popen

    def popen(*a, **k):
        children.append(real_popen(*a, **k))
        return children[-1]

    monkeypatch.setattr(subprocess, "Popen", popen)  # (as the reader module starts its children)
    art = _opened(tmp_path, "snapshot.pickle")
    assert art.state == "error" and "KINETOSCOPE_MAX_TRACE_BYTES" in art.error and children == []
    gz = tmp_path / "snapshot.pickle.gz"
    gz.write_bytes(gzip.compress(big))
    with pytest.raises(ReadError, match="KINETOSCOPE_MAX_TRACE_BYTES"):
        load_snapshot_blocks(
            Blocks(fsspec.filesystem("file"), str(gz), gz.stat().st_size, json_document=False, limit_share=1),
            gz.stat().st_size,
        )
    assert len(children) == 1 and children[0].poll() is not None  # started, then ended: not left running


@pytest.mark.parametrize(
    "data, message",
    [
        (b"\x00" * (3 << 20), "not a pickle: it starts with byte 00"),  # a sparse file: refused before the child
        (pickle.dumps([print] + [f"{i:01000d}" for i in range(3000)], protocol=2), "refused to load global"),
    ],
    ids=["zeros", "global"],
)
def test_bad_big_files_are_refused_when_streamed(data, message):
    assert len(data) > 1 << 20
    with pytest.raises(SnapshotError, match=message):
        load_snapshot_blocks([data[i : i + 65536] for i in range(0, len(data), 65536)], len(data))
