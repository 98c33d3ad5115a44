"""The reader child ``kinetoscope report`` starts on a large local snapshot before its imports
(:mod:`tb_plugin.artifacts.early`): the registry takes its answer (field by field the whole-file
reference, protocols 2-5), the bounds and refusals of the usual path hold, and a child nobody asks
for (the parse cache had the file, the file changed, the command ended) is ended."""

from __future__ import annotations

import os
import pickle
import threading
import time
from pathlib import Path

import pytest
from fuzz_files import deep_tuple_pickle, doubling_tuple_pickle, memo_index_pickle
from synth.snapshot_writer import write_snapshot_pickle
from test_snapshot_stream import assert_same

from tb_plugin.artifacts import early, isolated, snapshot_child
from tb_plugin.artifacts.forked import can_fork
from tb_plugin.artifacts.snapshot import load_snapshot, parse_pickle
from tb_plugin.registry.cache import ParseCache
from tb_plugin.registry.runs import RunRegistry
from tb_plugin.storage.cache_keys import cached_blob_exists

SMALL_SHARED = 1 << 20  # files above this get a child of their own (instead of 4 MiB: smaller test files)


def small_files_logdir(tmp_path, monkeypatch, reader_module) -> Path:
    """A logdir folder ``logdir/job`` with its own parse cache, and the size above which a snapshot gets
    a reader child of its own lowered to :data:`SMALL_SHARED` in ``reader_module`` and the snapshot
    module; its root."""
    monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(reader_module, "SHARED_MAX_BYTES", SMALL_SHARED)
    monkeypatch.setattr("tb_plugin.artifacts.snapshot.SHARED_MAX_BYTES", SMALL_SHARED)
    root = tmp_path / "logdir"
    (root / "job").mkdir(parents=True)
    return root


def _alone() -> bool:
    """Whether this test process may fork a reader child, once the threads that reap earlier reader children
    (and any other thread about to end) have ended."""
    end = time.monotonic() + 10  # (a reaping thread ends once its child has exited: milliseconds)
    for t in threading.enumerate():
        if t is not threading.current_thread():
            t.join(max(0.0, end - time.monotonic()))
    return can_fork()


@pytest.fixture(params=("forked", "started"))
def logdir(tmp_path, monkeypatch, request):
    """A logdir (:func:`small_files_logdir`) and the early children started on it: each test runs with the
    child forked from this process (the command line's) and with a fresh interpreter (the fallback)."""
    fork = request.param == "forked"
    if fork and not _alone():
        others = [t.name for t in threading.enumerate() if t is not threading.current_thread()]
        pytest.skip(f"other threads run in this test process (left by an earlier test): no fork: {others}")
    root = small_files_logdir(tmp_path, monkeypatch, early)
    children: list = []
    real = isolated.start_on_file

    def start_on_file(f, size, forked_main=None):
        if fork and not _alone():
            pytest.skip("another thread runs in this test process: no fork")
        children.append(real(f, size, snapshot_child.forked_main if fork else None))
        assert isinstance(children[-1], isolated.ForkedStarted) == fork
        return children[-1]

    monkeypatch.setattr(early, "start_on_file", start_on_file)
    yield root, children
    early._end_all()


def _write(path, entries: int, protocol: int = 4) -> bytes:
    with open(path, "wb") as f:
        write_snapshot_pickle(f, entries, frames=4, protocol=protocol)
    return path.read_bytes()


def _load(root, cache=True):
    reg = RunRegistry(str(root), cache=ParseCache() if cache else None)
    reg.scan()
    (art,) = [a for a in reg.artifacts() if a.entry.kind == "snapshot"]
    reg.load_artifact(art)
    return art


@pytest.mark.parametrize("protocol", (2, 3, 4, 5))
def test_the_early_child_answers_the_whole_file_reference(logdir, protocol):
    root, children = logdir
    data = _write(root / "job" / "snapshot.pickle", 15_000, protocol)
    assert len(data) > SMALL_SHARED
    early.start(str(root))
    assert len(children) == 1 and early._started  # started on the file, before the registry exists
    art = _load(root)
    assert art.state == "ready", art.error
    assert not early._started and children[0].child.returncode == 0  # claimed, and its answer taken
    assert_same(art.views.snapshot, parse_pickle(data, stream=True))
    assert_same(art.views.snapshot, load_snapshot(data))


def test_only_a_large_pickle_named_as_a_snapshot_is_started_on(logdir):
    root, children = logdir
    (root / "a.json").write_bytes(b"\x80\x04" + bytes(2 << 20))  # not a snapshot's name
    (root / "small.pickle").write_bytes(pickle.dumps({"device_traces": []}, protocol=4))  # the shared child's
    (root / "text.pickle").write_bytes(b"{" + bytes(2 << 20))  # not a pickle
    early.start(str(root))
    assert children == []
    data = _write(root / "job" / "b.pkl", 15_000)
    (root / "job" / "link.pickle").symlink_to(root / "job" / "b.pkl")  # (links are not followed)
    early.start(str(root / "job"))
    assert len(children) == 1 and list(early._started) == [os.path.realpath(root / "job" / "b.pkl")]
    assert len(data) > SMALL_SHARED


def test_a_fifo_or_a_link_swapped_in_is_not_opened(logdir, monkeypatch):
    """Between the listing and the open, the file became a FIFO (an open would block) or a symlink to a
    file outside the logdir: nothing is started."""
    root, children = logdir
    outside = root.parent / "outside.pickle"
    _write(outside, 15_000)
    path = root / "job" / "snapshot.pickle"
    path.write_bytes(b"\x80\x04" + bytes(2 << 20))
    for swap in (lambda: os.mkfifo(path), lambda: path.symlink_to(outside)):
        monkeypatch.setattr(early, "_first_snapshot", lambda root, swap=swap: (path.unlink(), swap(), str(path))[2])
        early.start(str(root))
        assert children == [] and not early._started


def test_a_cached_snapshot_ends_the_early_child(logdir):
    root, children = logdir
    _write(root / "job" / "snapshot.pickle", 15_000)
    assert _load(root).state == "ready"  # cached
    early.start(str(root), cached=False)  # (as if started before the cache was written)
    art = _load(root)
    assert art.state == "ready" and not early._started
    assert children[0].child.returncode is not None  # ended, not left reading


@pytest.mark.parametrize("hard_linked", (False, True))
def test_no_child_is_started_for_a_file_the_parse_cache_holds(logdir, hard_linked):
    """The cache's key as :mod:`tb_plugin.storage.cache_keys` forms it without the registry is the one the
    registry wrote (plain and hard-linked files: the inode version)."""
    root, children = logdir
    path = root / "job" / "snapshot.pickle"
    _write(path, 15_000)
    if hard_linked:
        os.link(path, root / "job" / "other-name.bin")
    assert not cached_blob_exists(str(path), os.stat(path), "snapshot")
    assert _load(root).state == "ready"  # cached
    assert cached_blob_exists(str(path), os.stat(path), "snapshot")
    early.start(str(root))
    assert children == [] and not early._started
    early.start(str(root), cached=False)  # --no-cache: the cache is not read, the child is needed
    assert len(children) == 1


def test_a_forked_child_on_a_cached_file_is_ended_at_once(logdir):
    """On the command line the child is forked before the cache's key is looked up: for a file the parse
    cache holds it is ended at once (reaped), and no child is left for the registry to claim."""
    root, children = logdir
    path = root / "job" / "snapshot.pickle"
    _write(path, 15_000)
    assert _load(root).state == "ready"  # cached
    early.start(str(root), fork=True)
    assert len(children) == 1 and children[0].child.returncode is not None and not early._started
    early.start(str(root), cached=False, fork=True)  # --no-cache: the child is needed
    assert len(children) == 2 and early.has_child(str(path))


def test_a_file_changed_since_the_start_is_read_again(logdir):
    root, children = logdir
    path = root / "job" / "snapshot.pickle"
    _write(path, 15_000)
    early.start(str(root))
    data = _write(path, 16_000)  # another file under the same name
    os.utime(path, ns=(1, 1))
    art = _load(root, cache=False)
    assert art.state == "ready" and children[0].child.returncode is not None
    assert_same(art.views.snapshot, load_snapshot(data))


def test_a_refused_file_gives_the_usual_message(logdir):
    root, children = logdir
    data = pickle.dumps([print] + [f"{i:01000d}" for i in range(3000)], protocol=4)
    (root / "job" / "bad.pickle").write_bytes(data)
    early.start(str(root))
    art = _load(root, cache=False)
    assert len(children) == 1 and art.state == "error" and "refused to load global" in art.error


def test_a_file_over_the_size_bound_is_refused_and_its_child_ended(logdir, monkeypatch):
    root, children = logdir
    data = _write(root / "job" / "snapshot.pickle", 15_000)
    early.start(str(root))
    monkeypatch.setenv("KINETOSCOPE_MAX_TRACE_BYTES", str(len(data) // 2))
    art = _load(root, cache=False)
    assert art.state == "error" and "KINETOSCOPE_MAX_TRACE_BYTES" in art.error
    assert children[0].child.returncode is not None


def test_a_memo_bomb_read_early_is_sent_again_to_a_streaming_child(logdir):
    root, children = logdir
    data = memo_index_pickle(750_000_000) + bytes(2 << 20)  # a 6 GB memo: MemoryError in the early child
    (root / "job" / "bomb.pickle").write_bytes(data)
    early.start(str(root))
    art = _load(root, cache=False)
    assert len(children) == 1 and art.state == "ready", art.error
    assert art.views.snapshot.devices[0].size.tolist() == [8, 8]


def test_an_unclaimed_child_is_ended_at_exit(logdir):
    root, children = logdir
    _write(root / "job" / "snapshot.pickle", 15_000)
    early.start(str(root))
    early._end_all()
    assert not early._started and children[0].child.returncode is not None


def report_outputs(root, cache_dir) -> list[bytes]:
    """``kinetoscope report ROOT --json``'s output without the early child (``--run .``), with it, with it
    and the parse cache written, and with the cache read (the child ended)."""
    import subprocess
    import sys

    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    env = dict(os.environ, PYTHONPATH=repo, KINETOSCOPE_CACHE_DIR=str(cache_dir))
    outs = []
    for extra in (["--no-cache", "--run", "."], ["--no-cache"], [], []):
        cmd = [sys.executable, "-m", "tb_plugin.cli", "report", str(root), "--json", *extra]
        done = subprocess.run(cmd, env=env, capture_output=True, cwd=repo, check=True)
        outs.append(done.stdout)
    return outs


def test_the_report_command_prints_the_same_with_the_early_child(tmp_path):
    """``kinetoscope report DIR --json`` prints the same with and without the early child, cached or not."""
    root = tmp_path / "logdir"
    root.mkdir()
    with open(root / "snapshot.pickle", "wb") as f:
        write_snapshot_pickle(f, 45_000, frames=8, protocol=4)
    assert (root / "snapshot.pickle").stat().st_size > isolated.SHARED_MAX_BYTES
    outs = report_outputs(root, tmp_path / "cache")
    assert outs[0] == outs[1] == outs[2] == outs[3] and b'"peak_active_bytes"' in outs[0]


def test_a_deep_tuple_crashes_only_the_early_child(logdir):
    """A pickle whose dict key is a tuple nested 10⁶ deep (the C stack overflows while it is hashed): the
    file's error, as from any reader child."""
    root, children = logdir
    (root / "job" / "deep.pickle").write_bytes(deep_tuple_pickle("key", 10**6) + bytes(2 << 20))
    early.start(str(root))
    art = _load(root, cache=False)
    assert len(children) == 1 and art.state == "error"
    assert "crashed the reader (SIGSEGV)" in art.error or "not a CUDA allocator snapshot" in art.error


def test_an_early_child_past_its_time_limit_is_the_files_error(logdir, monkeypatch):
    """Tuples sharing halves (2^60 hash steps): the child's limit ends it (its CPU limit, or the wait's
    deadline) and the message names the limit."""
    root, children = logdir
    monkeypatch.setattr(isolated, "BASE_TIME_S", 2.0)
    (root / "job" / "slow.pickle").write_bytes(doubling_tuple_pickle(60) + bytes(2 << 20))
    early.start(str(root))
    art = _load(root, cache=False)
    assert len(children) == 1 and art.state == "error" and "took more than" in art.error
