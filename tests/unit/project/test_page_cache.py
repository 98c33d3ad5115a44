"""The benchmarks' page-cache helper (benchmarks/page_cache.py): a file's resident fraction, and reading it
in when part of it is not. No timing is measured here."""

from __future__ import annotations

import mmap
import os
import sys

import pytest

from benchmarks.page_cache import ensure_all_resident, ensure_resident, make_resident, resident_fraction

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mincore: Linux")


def _file(tmp_path, size: int) -> str:
    path = str(tmp_path / "trace.json")
    with open(path, "wb") as f:
        f.write(b"x" * size)
    return path


def test_an_empty_file_has_no_fraction(tmp_path):
    assert resident_fraction(_file(tmp_path, 0)) is None


def test_a_file_read_is_all_resident_and_said_so(tmp_path):
    path = _file(tmp_path, 3 * mmap.PAGESIZE + 1)  # (a last page partly used: counted as a page)
    make_resident(path)
    assert resident_fraction(path) == 1.0
    assert ensure_resident(path, "the trace") == "page cache: the trace: 100.0% resident"


def test_pages_dropped_are_read_again(tmp_path):
    path = _file(tmp_path, 64 * mmap.PAGESIZE)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    dropped = resident_fraction(path)
    if dropped is None or dropped >= 0.999:
        pytest.skip("this file system keeps the pages (tmpfs)")
    line = ensure_resident(path)
    assert f"{dropped:.1%} resident, read once" in line and line.endswith(": 100.0%")
    assert resident_fraction(path) == 1.0


def test_a_folder_s_files_each_and_only_those_read_when_asked(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "sub").mkdir()  # (a folder inside: not a file, left out)
    for name in ("a.json", "b.json"):
        (folder / name).write_bytes(b"y" * (4 * mmap.PAGESIZE))
        make_resident(str(folder / name))
    assert ensure_all_resident(str(folder)) == [
        "page cache: a.json: 100.0% resident",
        "page cache: b.json: 100.0% resident",
    ]
    assert ensure_all_resident(str(folder), only_read=True) == []
    assert ensure_all_resident(str(folder / "a.json")) == ["page cache: a.json: 100.0% resident"]
