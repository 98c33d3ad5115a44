"""Small files that used to exhaust memory or CPU. Each is written here;
peak memory is measured in a child process (its ``VmHWM``; ``ru_maxrss`` would carry the peak of the
test process that started it, which Linux keeps across ``exec``), so the figures are this file's alone."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import pytest
from fuzz_files import begin_end_trace, gzip_bomb

from tb_plugin.registry.parse import load_trace_file
from tb_plugin.storage import read
from tb_plugin.trace.errors import TraceReadError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _peak_rss_mb_of_loading(logdir, env=None) -> tuple[dict, float]:
    """Load every file of ``logdir`` (traces and artifacts) with the registry in a child process;
    return ({path: state or error}, peak RSS in MB)."""
    code = (
        "import json, sys\n"
        "def hwm_mb():  # this process's own peak: ru_maxrss would include the parent's (Linux keeps it across exec)\n"
        "    return int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM:')).split()[1]) / 1024\n"
        "from tb_plugin.registry.runs import RunRegistry\n"
        "reg = RunRegistry(sys.argv[1]); reg.scan()\n"
        "out = {}\n"
        "for st in list(reg._files.values()):\n"
        "    reg.load(st); out[st.entry.rel] = st.error or st.state\n"
        "for art in reg.artifacts():\n"
        "    reg.load_artifact(art); out[art.entry.rel] = art.error or art.state\n"
        "print(json.dumps({'states': out, 'rss_mb': hwm_mb()}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(logdir)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=dict(os.environ, **(env or {})),
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(done.stdout.strip().splitlines()[-1])
    return doc["states"], doc["rss_mb"]


def test_default_limit_follows_the_machine(monkeypatch):
    monkeypatch.delenv("KINETOSCOPE_MAX_TRACE_BYTES", raising=False)
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert read.max_trace_bytes() == max(256 << 20, min(16 << 30, total // 8))
    assert read.max_trace_bytes() < total  # the old fixed 16 GiB exceeded a 24 GB machine's parse peak
    monkeypatch.setattr(read, "_physical_memory", lambda: 1 << 30)
    assert read.max_trace_bytes() == 256 << 20
    monkeypatch.setenv("KINETOSCOPE_MAX_TRACE_BYTES", "1e8")
    assert read.max_trace_bytes() == 100_000_000
    monkeypatch.setenv("KINETOSCOPE_MAX_TRACE_BYTES", "1e999")  # inf: not a limit; the default holds
    assert read.max_trace_bytes() == 256 << 20


def test_whitespace_bomb_is_refused_early(tmp_path):
    """2 MB of gzip inflating to 2 GiB of spaces: it reached 4.3 GB RSS and was accepted as ready."""
    run = tmp_path / "run"
    run.mkdir()
    bomb = run / "w.pt.trace.json.gz"
    bomb.write_bytes(gzip_bomb(2048, b" "))
    assert bomb.stat().st_size < 3 << 20
    with pytest.raises(TraceReadError, match="first 8 MiB hold only whitespace"):  # early: after 8 MiB of 2 GiB
        load_trace_file(str(bomb))
    states, rss = _peak_rss_mb_of_loading(tmp_path)
    assert "whitespace" in states["run/w.pt.trace.json.gz"]
    assert rss < 400, rss  # the interpreter with numpy and TensorBoard's imports is ~150 MB; the bomb adds ≤ 16 MB


def test_non_json_first_byte_is_refused_before_reading_on(tmp_path):
    path = tmp_path / "x.pt.trace.json"
    path.write_bytes(b"  \n<html>" + b"x" * (20 << 20))
    with pytest.raises(TraceReadError, match="starts with '<'"):
        load_trace_file(str(path))


def test_memory_export_bomb_is_bounded(tmp_path):
    """A 2 MB ``*.raw.json.gz`` export reached 4.3 GB even with KINETOSCOPE_MAX_TRACE_BYTES=1e8
    (``gzip.decompress`` without a limit)."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "memory_timeline.raw.json.gz").write_bytes(gzip_bomb(2048, b"["))
    states, rss = _peak_rss_mb_of_loading(tmp_path, {"KINETOSCOPE_MAX_TRACE_BYTES": "1e8"})
    (state,) = [v for k, v in states.items() if k.endswith(".raw.json.gz")]
    assert "exceeds 100000000 bytes" in state or "inflates more than 200x" in state, state
    assert rss < 500, rss  # 100 MB limit + the interpreter


def test_memory_export_in_memory_bomb_is_bounded(monkeypatch):
    from tb_plugin.artifacts.timeline_export import TimelineExportError, load_timeline_export

    monkeypatch.setenv("KINETOSCOPE_MAX_TRACE_BYTES", str(32 << 20))
    with pytest.raises(TimelineExportError, match="decompressed size exceeds|inflates more than 200x"):
        load_timeline_export(gzip_bomb(256, b"["))
    good = gzip.compress(json.dumps([[0, 2, 1024, 3], [1000, 4, -1024, 3], [2000, 2, 10, 1]]).encode())
    doc = load_timeline_export(good)
    assert doc["times_us"].tolist() == [0.0, 1.0, 2.0] and doc["bytes"][3].tolist() == [1024.0, 0.0, 0.0]


def test_sparse_pickle_is_not_read_whole(tmp_path):
    """A sparse 2 GiB ``*.pickle`` was read whole with ``f.read()``; now a file above the limit is
    refused from its size, and a zero first byte (no pickle starts so) before any parse."""
    run = tmp_path / "run"
    run.mkdir()
    big = run / "big_snapshot.pickle"
    with open(big, "wb") as f:
        f.truncate(2 << 30)  # sparse: 2 GiB of zeros that take no disk
    small = run / "small_snapshot.pickle"
    with open(small, "wb") as f:
        f.truncate(50 << 20)
    states, rss = _peak_rss_mb_of_loading(tmp_path, {"KINETOSCOPE_MAX_TRACE_BYTES": str(1 << 30)})
    assert "file size exceeds" in states["run/big_snapshot.pickle"]
    assert "not a pickle: it starts with byte 00" in states["run/small_snapshot.pickle"]
    assert rss < 400, rss  # not 2 GiB


def test_begin_end_pairing_is_linear(tmp_path):
    path = tmp_path / "be.pt.trace.json"
    path.write_bytes(begin_end_trace(60_000))
    assert path.stat().st_size > 4_000_000
    trace = load_trace_file(str(path))  # how long (linear: seconds; quadratic was ~110 s): bench_bounds.py
    assert any("60000 'B' events without an 'E' and 60000 'E' events without a 'B'" in w for w in trace.warnings)


def test_begin_end_pairing_rules_hold():
    """Same-name E closes the innermost open B of its name; a nameless E the innermost of any."""
    events = [
        {"ph": "B", "name": "outer", "pid": 1, "tid": 1, "ts": 0},
        {"ph": "B", "name": "inner", "pid": 1, "tid": 1, "ts": 1},
        {"ph": "B", "name": "x", "pid": 1, "tid": 1, "ts": 2},
        {"ph": "E", "name": "inner", "pid": 1, "tid": 1, "ts": 3},  # closes inner (skips x)
        {"ph": "E", "pid": 1, "tid": 1, "ts": 4},  # nameless: closes x, the innermost open
        {"ph": "E", "name": "outer", "pid": 1, "tid": 1, "ts": 10},
        {"ph": "E", "name": "ghost", "pid": 1, "tid": 1, "ts": 11},  # unmatched
    ]
    from tb_plugin.trace.decode import decode_trace

    trace = decode_trace(json.dumps({"traceEvents": events}).encode())
    ev = trace.events
    got = sorted((trace.strings[n], float(t), float(d)) for n, t, d in zip(ev.name, ev.ts, ev.dur))
    assert got == [("inner", 1.0, 2.0), ("outer", 0.0, 10.0), ("x", 2.0, 2.0)]
    assert any("0 'B' events without an 'E' and 1 'E' events without a 'B'" in w for w in trace.warnings)
