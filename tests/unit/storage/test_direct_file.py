"""Large files written past the page cache (``O_DIRECT``): the same bytes as a buffered write, whatever
the pieces' sizes and alignment, and the same bytes again where the file system refuses direct writes."""

from __future__ import annotations

import errno
import os

import numpy as np
import pytest

from tb_plugin.registry import cache as cache_module
from tb_plugin.registry.cache import ParseCache
from tb_plugin.storage import direct_file
from tb_plugin.storage.array_file import read_arrays, stored_bytes, write_arrays
from tb_plugin.storage.direct_file import BLOCK, DirectWriter, open_direct
from tb_plugin.storage.private_files import write_atomic


def _pieces(seed: int) -> list[bytes]:
    """Pieces of every awkward size: empty, one byte, around a block, around the bounce buffer."""
    rng = np.random.default_rng(seed)
    sizes = [0, 1, BLOCK - 1, BLOCK, BLOCK + 1, 3, direct_file.BUFFER_BYTES - 5, 10, direct_file.BUFFER_BYTES + 7, 2]
    return [rng.integers(0, 256, n, dtype=np.uint8).tobytes() for n in sizes]


def _write(path: str, pieces: list[bytes], direct: bool) -> None:
    write_atomic(path, lambda f: [f.write(p) for p in pieces], direct=direct)


def test_a_direct_write_gives_the_bytes_of_a_buffered_one(tmp_path):
    pieces = _pieces(1)
    _write(str(tmp_path / "buffered"), pieces, direct=False)
    _write(str(tmp_path / "direct"), pieces, direct=True)
    expected = b"".join(pieces)
    assert (tmp_path / "buffered").read_bytes() == expected
    assert (tmp_path / "direct").read_bytes() == expected  # the padded last block cut off
    assert os.path.getsize(tmp_path / "direct") == len(expected) > 2 * direct_file.BUFFER_BYTES
    assert oct(os.stat(tmp_path / "direct").st_mode & 0o777) == "0o600"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.skipif(not getattr(os, "O_DIRECT", 0), reason="no O_DIRECT on this system")
def test_the_writer_really_opens_direct_where_the_file_system_takes_it(tmp_path):
    fd, direct = open_direct(str(tmp_path / "f"), os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        import fcntl

        assert direct and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_DIRECT
    finally:
        os.close(fd)


def test_a_refused_direct_write_is_made_buffered_with_the_same_bytes(tmp_path, monkeypatch):
    """A file system that opens with O_DIRECT and then refuses the writes (EINVAL): the second
    buffer's write fails, is made again buffered, and every later write is buffered."""
    real_write, calls = os.write, []

    def refusing(fd, data):
        calls.append(len(data))
        if len(calls) == 2:
            raise OSError(errno.EINVAL, "Invalid argument")
        return real_write(fd, data)

    monkeypatch.setattr(direct_file.os, "write", refusing)
    pieces = _pieces(2)
    _write(str(tmp_path / "f"), pieces, direct=True)
    assert (tmp_path / "f").read_bytes() == b"".join(pieces)
    assert calls[:3] == [direct_file.BUFFER_BYTES] * 3  # the refused one made again, whole


@pytest.mark.parametrize("refusal", [errno.EINVAL, errno.EOPNOTSUPP])
def test_a_file_system_without_o_direct_is_written_buffered(tmp_path, monkeypatch, refusal):
    real_open = os.open

    def no_direct(path, flags, mode=0o777):
        if flags & getattr(os, "O_DIRECT", 0):
            raise OSError(refusal, os.strerror(refusal))
        return real_open(path, flags, mode)

    monkeypatch.setattr(direct_file.os, "open", no_direct)
    fd, direct = open_direct(str(tmp_path / "probe"), os.O_WRONLY | os.O_CREAT, 0o600)
    os.close(fd)
    assert direct is False
    pieces = _pieces(3)
    _write(str(tmp_path / "f"), pieces, direct=True)
    assert (tmp_path / "f").read_bytes() == b"".join(pieces)


def test_other_errors_are_raised_and_leave_no_file(tmp_path, monkeypatch):
    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(direct_file.os, "write", full)
    with pytest.raises(OSError) as raised:
        _write(str(tmp_path / "f"), _pieces(4), direct=True)
    assert raised.value.errno == errno.ENOSPC
    assert list(tmp_path.iterdir()) == []


def test_a_writer_left_by_an_error_frees_its_buffer(tmp_path):
    fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        with pytest.raises(RuntimeError):
            with DirectWriter(fd) as out:
                out.write(b"x" * 10)
                raise RuntimeError("the caller failed")
        assert out._buffer is None and out.written == 10
    finally:
        os.close(fd)


def test_large_cache_entries_go_direct_and_read_back_field_by_field(tmp_path, monkeypatch):
    """The parse cache's entry of at least DIRECT_ABOVE_BYTES is written direct (the real O_DIRECT open
    is seen), a smaller one buffered; both read back equal to what was written."""
    monkeypatch.setattr(cache_module, "DIRECT_ABOVE_BYTES", 1 << 20)
    opened: list[bool] = []
    real = direct_file.open_direct

    def spy(*args):
        got = real(*args)
        opened.append(got[1])
        return got

    monkeypatch.setattr("tb_plugin.storage.private_files.open_direct", spy)
    large = {
        "a": np.arange(400_000, dtype=np.int64)[::2],
        "c": np.broadcast_to(np.int32(7), (5000,)),
        "s": np.array(["x"]),
    }
    small = {"a": np.arange(1000, dtype=np.int64)}
    assert stored_bytes(large) >= 1 << 20 > stored_bytes(small)
    for name, arrays in (("large", large), ("small", small)):
        ParseCache._write(str(tmp_path / name), arrays)
        with open(tmp_path / name, "rb") as f:
            back = read_arrays(f)
        assert list(back) == list(arrays)
        for key in arrays:
            assert back[key].dtype == arrays[key].dtype and np.array_equal(back[key], arrays[key])
    expected_direct = [bool(getattr(os, "O_DIRECT", 0))]
    assert opened == expected_direct  # the small entry never asked for it

    with open(tmp_path / "reference", "wb") as f:  # byte for byte what a plain buffered file gets
        write_arrays(f, large)
    assert (tmp_path / "large").read_bytes() == (tmp_path / "reference").read_bytes()
