"""A file swapped for a symlink pointing outside the logdir *after* the listing is never read.

The listing already hides such symlinks (``tests/e2e/test_security_http.py``); these tests change the
logdir between the scan and the read, through the registry (trace, snapshot, parallel parse, the
``trace_file`` route's filesystem) and through :func:`open_inside` directly.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest
from conftest import sample, x

from tb_plugin.registry.cache import ParseCache
from tb_plugin.registry.runs import ERROR, READY, RunRegistry
from tb_plugin.storage import confined
from tb_plugin.storage.fs import open_logdir

SECRET = "KINETOSCOPE-SECRET-OUTSIDE"


def _trace(name: str) -> str:
    return json.dumps(
        {
            "traceEvents": [
                x("ProfilerStep#1", "user_annotation", 0, 100),
                x(name, "cpu_op", 10, 5),
            ]
        }
    )


@pytest.fixture()
def dirs(tmp_path):
    logdir, outside = tmp_path / "logdir", tmp_path / "outside"
    (logdir / "run").mkdir(parents=True)
    outside.mkdir()
    (logdir / "run" / "w.pt.trace.json").write_text(_trace("aten::mm"))
    (outside / "w.pt.trace.json").write_text(_trace(SECRET))
    (outside / "secret.pickle").write_bytes(b"\x80\x04}\x94." + SECRET.encode())
    return logdir, outside


def _swap(path, target) -> None:
    """Replace ``path`` by a symlink to ``target`` (what an attacker with write access can do)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
    os.symlink(target, path)


def _registry(logdir, cache=None) -> RunRegistry:
    reg = RunRegistry(str(logdir), cache=cache)
    reg.scan()
    return reg


@pytest.mark.parametrize("with_cache", [False, True])
def test_trace_swapped_for_an_outside_symlink_after_listing_is_refused(dirs, tmp_path, with_cache):
    logdir, outside = dirs
    reg = _registry(logdir, ParseCache(str(tmp_path / "cache")) if with_cache else None)
    (state,) = reg.files()
    _swap(logdir / "run" / "w.pt.trace.json", outside / "w.pt.trace.json")
    reg.load(state)
    assert state.state == ERROR and "outside the logdir" in state.error and "not read" in state.error, state.error
    assert SECRET not in state.error
    # the trace_file route reads through the same filesystem
    with pytest.raises(PermissionError, match="outside the logdir"):
        reg.fs_of(state).open(state.entry.path, "rb")


def test_run_directory_swapped_for_an_outside_symlink_is_refused(dirs):
    logdir, outside = dirs
    reg = _registry(logdir)
    (state,) = reg.files()
    _swap(logdir / "run", outside)  # a directory component, not the file itself
    reg.load(state)
    assert state.state == ERROR and "outside the logdir" in state.error, state.error


@pytest.mark.corpus
def test_snapshot_swapped_after_listing_is_refused(dirs):
    logdir, outside = dirs
    shutil.copy(sample("memory_snapshots/mem_snapshot.pickle"), logdir / "run" / "mem_snapshot.pickle")
    reg = _registry(logdir)
    (art,) = [a for a in reg.artifacts() if a.entry.kind == "snapshot"]
    _swap(logdir / "run" / "mem_snapshot.pickle", outside / "secret.pickle")
    reg.load_artifact(art)
    assert art.state == ERROR and "outside the logdir" in art.error, art.error


def test_symlinks_inside_the_logdir_still_load(dirs):
    logdir, _ = dirs
    (logdir / "data").mkdir()
    shutil.move(logdir / "run" / "w.pt.trace.json", logdir / "data" / "w.pt.trace.json")
    os.symlink(logdir / "data" / "w.pt.trace.json", logdir / "run" / "w.pt.trace.json")
    reg = _registry(logdir)
    states = {s.entry.rel: s for s in reg.files()}
    assert set(states) == {"data/w.pt.trace.json", "run/w.pt.trace.json"}
    for state in states.values():
        reg.load(state)
        assert state.state == READY, state.error


def test_a_fifo_swapped_in_cannot_block_the_read(dirs):
    logdir, _ = dirs
    reg = _registry(logdir)
    (state,) = reg.files()
    path = logdir / "run" / "w.pt.trace.json"
    path.unlink()
    os.mkfifo(path)  # opening a FIFO for reading blocks until a writer comes: O_NONBLOCK + fstat refuse it
    reg.load(state)
    assert state.state == ERROR and "not a regular file" in state.error, state.error


def test_directory_swapped_between_resolve_and_open_is_caught_by_the_opened_path(dirs, monkeypatch):
    """The last window: ``realpath`` saw the old directory, then it became a symlink before ``open``.
    Simulated by making ``realpath`` return the stale answer; ``/proc/self/fd`` tells the truth."""
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs Linux /proc")
    logdir, outside = dirs
    fs, root = open_logdir(str(logdir))
    target = str(logdir / "run" / "w.pt.trace.json")
    _swap(logdir / "run", outside)
    monkeypatch.setattr(confined.os.path, "realpath", lambda p: str(p))  # the stale, pre-swap answer
    with pytest.raises(PermissionError, match="was opened as .*outside the logdir"):
        confined.open_inside(fs.confine_root, target)


def test_reads_inside_are_unchanged(dirs):
    logdir, _ = dirs
    fs, root = open_logdir(str(logdir))
    path = f"{root}/run/w.pt.trace.json"
    assert fs.cat_file(path) == (logdir / "run" / "w.pt.trace.json").read_bytes()
    assert fs.cat_file(path, start=2, end=12) == (logdir / "run" / "w.pt.trace.json").read_bytes()[2:12]
    with fs.open(path, "r") as f:  # text mode too
        assert json.load(f)["traceEvents"][1]["name"] == "aten::mm"
    with pytest.raises(FileNotFoundError):
        fs.open(f"{root}/run/missing.pt.trace.json", "rb")
