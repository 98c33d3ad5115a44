"""A registry's local snapshot file read by its reader child from the file itself (:mod:`tb_plugin.artifacts.file_send`):
the spare's pipe filled through one 1 MiB buffer, or a fresh child given the file as its stdin. Field by field the
answer of the blocks it replaces (protocols 2, 4, 5), no block read in this process; gzip,
small and changed files still go in blocks; refusals, the size bound and the deadline hold."""

from __future__ import annotations

import gzip
import os
import pickle
import threading

import pytest
from method_spy import record_after
from test_early_reader import SMALL_SHARED, _write, small_files_logdir
from test_snapshot_stream import assert_same

from tb_plugin.artifacts import file_send, isolated, spare
from tb_plugin.artifacts.snapshot import load_snapshot
from tb_plugin.registry.runs import RunRegistry
from tb_plugin.storage import read as storage_read


@pytest.fixture
def logdir(tmp_path, monkeypatch):
    """A logdir folder (the shared child's size lowered), every reader child started and every block
    iteration of a file recorded: (root, started children, paths iterated in blocks)."""
    root = small_files_logdir(tmp_path, monkeypatch, isolated)
    started: list[isolated.Started] = record_after(monkeypatch, isolated.Started, "__init__")
    iterated: list[str] = []
    real_iter = storage_read.Blocks.__iter__

    def spy(self):
        iterated.append(str(self.path))
        return real_iter(self)

    monkeypatch.setattr(storage_read.Blocks, "__iter__", spy)
    yield root, started, iterated
    spare.end_spare()


def _load(root, with_spare: bool):
    reg = RunRegistry(str(root))
    if with_spare:
        reg.keep_spare_reader()
    reg.scan()
    (art,) = [a for a in reg.artifacts() if a.entry.kind == "snapshot"]
    reg.load_artifact(art)
    reg.stop()
    return art


def _in_blocks(monkeypatch, root, with_spare: bool):
    """The same file's artifact read the way it was before: in blocks through the child's pipe."""
    with monkeypatch.context() as m:
        m.setattr(file_send, "open_pickle", lambda path, larger_than: None)
        return _load(root, with_spare)


@pytest.mark.parametrize("with_spare", (True, False))
@pytest.mark.parametrize("protocol", (2, 4, 5))
def test_the_file_read_by_the_child_equals_the_blocks(logdir, monkeypatch, protocol, with_spare):
    root, started, iterated = logdir
    data = _write(root / "job" / "snapshot.pickle", 15_000, protocol)
    assert len(data) > SMALL_SHARED
    art = _load(root, with_spare)
    assert art.state == "ready", art.error
    assert iterated == []  # no block of the file read in this process
    assert [s.from_spare for s in started] == [with_spare]
    blocks = _in_blocks(monkeypatch, root, with_spare)
    assert blocks.state == "ready" and len(iterated) == 1  # (the reference did go in blocks)
    assert_same(art.views.snapshot, blocks.views.snapshot)
    assert_same(art.views.snapshot, load_snapshot(data))


def test_the_spares_pipe_is_filled_from_the_file(logdir, monkeypatch):
    root, started, iterated = logdir
    data = _write(root / "job" / "snapshot.pickle", 15_000, 4)
    sent = record_sent(monkeypatch)
    art = _load(root, True)
    assert art.state == "ready" and started[0].from_spare and sent == [len(data)] and iterated == []


def record_sent(monkeypatch) -> list[int]:
    """The byte counts :func:`~tb_plugin.artifacts.file_send.send_file` returned, recorded."""
    sent: list[int] = []
    real = file_send.send_file

    def spy(*args):
        sent.append(real(*args))
        return sent[-1]

    monkeypatch.setattr(file_send, "send_file", spy)
    return sent


def test_a_gzip_file_still_goes_in_blocks(logdir):
    root, started, iterated = logdir
    path = root / "job" / "snapshot.pickle"
    data = _write(path, 15_000, 4)
    path.write_bytes(gzip.compress(data))  # (inflated in blocks for the child)
    art = _load(root, True)
    assert art.state == "ready", art.error
    assert len(iterated) == 1
    assert_same(art.views.snapshot, load_snapshot(data))


def test_a_small_file_and_a_changed_one_go_in_blocks(logdir, monkeypatch):
    root, started, iterated = logdir
    path = root / "job" / "snapshot.pickle"
    data = _write(path, 15_000, 4)
    assert file_send.open_pickle(str(path), len(data)) is None  # not over the size given
    opened = file_send.open_pickle(str(path), SMALL_SHARED)
    assert opened is not None and opened[1] == len(data)
    opened[0].close()
    reg = RunRegistry(str(root))
    reg.scan()
    (art,) = reg.artifacts()
    with open(path, "ab") as f:  # grown after the listing: the listed size no longer holds
        f.write(b"\0" * 10)
    reg.load_artifact(art)
    reg.stop()
    assert len(iterated) == 1 and art.state == "ready", art.error
    assert_same(art.views.snapshot, load_snapshot(data))


@pytest.mark.parametrize("with_spare", (True, False))
def test_a_refused_file_gives_the_blocks_message(logdir, monkeypatch, with_spare):
    root, started, iterated = logdir
    data = pickle.dumps([print] + [f"{i:01000d}" for i in range(3000)], protocol=4)
    (root / "job" / "bad.pickle").write_bytes(data)
    art = _load(root, with_spare)
    blocks = _in_blocks(monkeypatch, root, with_spare)
    assert art.state == blocks.state == "error" and "refused to load global" in art.error
    assert art.error == blocks.error and len(iterated) == 1


def test_a_file_over_the_size_bound_is_refused_unread(logdir, monkeypatch):
    root, started, iterated = logdir
    _write(root / "job" / "snapshot.pickle", 15_000, 4)
    monkeypatch.setattr(storage_read, "max_trace_bytes", lambda: SMALL_SHARED + 1)
    art = _load(root, True)
    blocks = _in_blocks(monkeypatch, root, True)
    assert art.state == blocks.state == "error" and art.error == blocks.error
    assert started == [] and len(iterated) == 1  # no child for it; (the reference's blocks refused it)


def test_the_deadline_ends_the_send_and_the_child(logdir, monkeypatch):
    root, started, iterated = logdir
    path = root / "job" / "snapshot.pickle"
    data = _write(path, 15_000, 4)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        with open(path, "rb") as f, pytest.raises(file_send.SendTimeout):
            file_send.send_file(f, null, len(data), 0.0)
    finally:
        os.close(null)
    spare.keep_spare()
    monkeypatch.setattr(isolated, "time_limit_s", lambda size: 1e-9)  # its deadline past at once
    with open(path, "rb") as f:
        with pytest.raises(isolated.SnapshotError, match="took more than"):
            isolated.parse_file_in_child(f, len(data))
    assert started[0].from_spare and started[0].child.returncode is not None  # ended, not left reading


def test_a_file_that_shrank_sends_what_it_has(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 1000)
    r, w = os.pipe()
    try:
        with open(path, "rb") as f:
            assert file_send.send_file(f, w, 5000, float("inf")) == 1000
        assert os.read(r, 5000) == b"x" * 1000
    finally:
        os.close(r)
        os.close(w)


def test_the_file_is_copied_whole_through_one_small_buffer(tmp_path, monkeypatch):
    path = tmp_path / "f.bin"
    body = os.urandom((1 << 20) + 12345)
    path.write_bytes(body)
    monkeypatch.setattr(file_send, "COPY_BYTES", 1 << 16)
    writes: list[int] = []

    class Os:  # the module's ``os``, its writes recorded (the test process's own left alone)
        def __getattr__(self, name):
            return getattr(os, name)

        @staticmethod
        def write(fd, data):
            writes.append(len(data))
            return os.write(fd, data)

    monkeypatch.setattr(file_send, "os", Os())
    r, w = os.pipe()
    got = bytearray()

    def read_all():
        for chunk in iter(lambda: os.read(r, 1 << 16), b""):
            got.extend(chunk)

    reader = threading.Thread(target=read_all)
    reader.start()
    try:
        with open(path, "rb") as f:
            assert file_send.send_file(f, w, len(body), float("inf")) == len(body)
    finally:
        os.close(w)
        reader.join(10)
        os.close(r)
    assert bytes(got) == body and max(writes) <= 1 << 16  # (this process never held more than the buffer)
