"""Raw event bytes read from a trace left in place are served only while the file is the one parsed
(hardening round three, items 3 and 12): a run directory swapped for a symlink to an outside folder,
or the trace replaced by a same-size file with its mtime restored, makes the details fall back to the
columns instead of serving another file's args."""

from __future__ import annotations

import json
import os
import shutil

from test_raw_in_place import _parse

from tb_plugin.registry.raw_events import read_raw_event
from tb_plugin.registry.views import _full_args


def _trace(secret: str, n: int = 300) -> bytes:
    events = [
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": f"op{i}",
            "pid": 1,
            "tid": 1,
            "ts": i * 10,
            "dur": 5,
            "args": {"External id": i, "note": f"{secret}-{i:04d}"},
        }
        for i in range(n)
    ]
    return json.dumps({"traceEvents": events}).encode()


def test_a_run_directory_swapped_for_an_outside_symlink_serves_no_outside_args(tmp_path, monkeypatch):
    run, outside = tmp_path / "logs" / "run", tmp_path / "outside"
    run.mkdir(parents=True)
    outside.mkdir()
    (run / "w.pt.trace.json").write_bytes(_trace("inside"))
    (outside / "w.pt.trace.json").write_bytes(_trace("SECRET"))  # same size and layout, other args
    trace, _ = _parse(tmp_path, run / "w.pt.trace.json", monkeypatch)
    assert trace.meta["events_file"] == str((run / "w.pt.trace.json").resolve())
    assert _full_args(trace, 5)["note"] == "inside-0005"
    shutil.rmtree(run)
    os.symlink(outside, run)  # the swap: the same path now leads outside the logdir
    assert read_raw_event(trace, 5) is None
    assert "note" not in _full_args(trace, 5)  # the columns' args only, never the outside file's


def test_a_same_size_replacement_with_its_mtime_restored_is_noticed(tmp_path, monkeypatch):
    path = tmp_path / "w.pt.trace.json"
    path.write_bytes(_trace("old"))
    trace, _ = _parse(tmp_path, path, monkeypatch)
    st = os.stat(path)
    with open(path, "r+b") as f:  # rewritten in place: same inode and size
        f.write(_trace("new"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # mtime restored
    assert os.stat(path).st_ino == st.st_ino and os.stat(path).st_size == st.st_size
    assert read_raw_event(trace, 5) is None and "note" not in _full_args(trace, 5)


def test_a_range_that_is_not_the_event_is_not_served(tmp_path, monkeypatch):
    """Beyond the ends' fingerprint: a change in the middle that moves the events; the bytes read must
    be the event the columns name."""
    path = tmp_path / "w.pt.trace.json"
    data = _trace("old", 3000)  # 380 KB: the change below lies between the fingerprinted ends
    path.write_bytes(data)
    trace, _ = _parse(tmp_path, path, monkeypatch)
    st = os.stat(path)
    moved = data.replace(b'"name": "op1500"', b'"name": "op1501"', 1)
    assert len(moved) == len(data)
    with open(path, "r+b") as f:
        f.write(moved)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert read_raw_event(trace, 1500) is None
    assert _full_args(trace, 1501)["note"] == "old-1501"  # the rest still reads
