"""An unnamed file put in place of a path (storage/private_files.put_in_place): the early reader's split,
on disk, becomes the parse cache's events file. The path holds exactly the first bytes asked, privately;
where the file cannot be named (another file system, no /proc, no privilege) its bytes are copied;
the descriptor is closed either way."""

from __future__ import annotations

import os
import stat

import pytest

from tb_plugin.storage import private_files as pf

pytestmark = pytest.mark.skipif(not hasattr(os, "O_TMPFILE"), reason="unnamed files: Linux only")

BODY = bytes(range(256)) * 4096  # 1 MiB


def _unnamed(folder) -> int:
    fd = os.open(str(folder), os.O_TMPFILE | os.O_RDWR, 0o600)
    os.write(fd, BODY + b"tail the path never holds")
    return fd


@pytest.mark.parametrize("named", [True, False])
def test_the_path_holds_the_first_bytes_and_the_descriptor_is_closed(tmp_path, monkeypatch, named):
    if not named:
        monkeypatch.setattr(pf, "_name_unnamed", lambda fd, path: False)  # copied instead
    target = tmp_path / "entry" / "key.events.bin"
    target.parent.mkdir()
    target.write_bytes(b"an empty events file's place")
    fd = _unnamed(tmp_path)
    pf.put_in_place(fd, len(BODY), str(target), durable=named)
    assert target.read_bytes() == BODY
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
    with pytest.raises(OSError):
        os.fstat(fd)
    assert sorted(p.name for p in target.parent.iterdir()) == ["key.events.bin"]  # no temp file left


def test_an_unnamed_file_is_named_here(tmp_path):
    fd = _unnamed(tmp_path)
    try:
        assert pf._name_unnamed(fd, str(tmp_path / "named"))
    finally:
        os.close(fd)
    assert (tmp_path / "named").read_bytes().startswith(BODY)


def test_a_failed_rename_leaves_no_temp_file(tmp_path, monkeypatch):
    target = tmp_path / "key.events.bin"
    monkeypatch.setattr(pf.os, "replace", lambda a, b: (_ for _ in ()).throw(PermissionError(b)))
    with pytest.raises(PermissionError):
        pf.put_in_place(_unnamed(tmp_path), len(BODY), str(target))
    assert list(tmp_path.iterdir()) == []
