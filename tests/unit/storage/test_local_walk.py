"""storage/local_walk: the bounded walk both early readers use, and a file's identity."""

from __future__ import annotations

import os

import pytest

from tb_plugin.storage.local_walk import TooManyEntries, file_identity, walk_files


def test_files_depth_first_names_sorted_links_not_entered(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "z.json").write_text("{}")
    (tmp_path / "b" / "a.json").write_text("{}")
    (tmp_path / "c.json").write_text("{}")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.json").write_text("{}")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "hidden.json").write_text("{}")
    os.symlink(outside, tmp_path / "link")
    got = [os.path.relpath(e.path, tmp_path) for e in walk_files(str(tmp_path), 100)]
    assert got == [
        "c.json",
        "link",
        os.path.join("a", "x.json"),
        os.path.join("b", "a.json"),
        os.path.join("b", "z.json"),
    ]


def test_more_entries_than_allowed_raise(tmp_path):
    for i in range(5):
        (tmp_path / f"{i}.json").write_text("{}")
    assert len(list(walk_files(str(tmp_path), 5))) == 5
    with pytest.raises(TooManyEntries):
        list(walk_files(str(tmp_path), 4))


def test_identity_changes_with_the_file(tmp_path):
    path = tmp_path / "t.json"
    path.write_text("{}")
    first = file_identity(os.stat(path))
    assert file_identity(os.stat(path)) == first
    path.write_text('{"a": 1}')
    assert file_identity(os.stat(path)) != first
