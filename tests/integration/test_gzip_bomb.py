"""Gzip bombs and oversized traces: decompressed bytes are limited by KINETOSCOPE_MAX_TRACE_BYTES
(default: 1/8 of the machine's memory), with a clear per-file error naming the setting."""

from __future__ import annotations

import gzip
import io
import shutil

import pytest
from conftest import sample
from fuzz_files import gzip_bomb
from test_fuzz import _ev, _step_and

from tb_plugin.cli.report import run_report
from tb_plugin.trace.errors import TraceReadError

# --------------------------------------------------------------------------------------------


def test_gzip_bomb_helper_is_a_real_gzip_file():
    assert gzip.decompress(gzip_bomb(3, b" ")) == b" " * (3 << 20)


def test_gzip_bomb_stops_at_the_limit(tmp_path, monkeypatch):
    from tb_plugin.registry.parse import load_trace_file

    bomb = tmp_path / "bomb.pt.trace.json.gz"
    bomb.write_bytes(gzip_bomb(1024, b"["))  # 1 GiB of '[' in about 1 MB: a JSON start, so only the limit stops it
    assert bomb.stat().st_size < 2 << 20
    monkeypatch.setenv("KINETOSCOPE_MAX_TRACE_BYTES", str(64 << 20))
    monkeypatch.setattr("tb_plugin.storage.inflate.MAX_INFLATION", 10**9)  # the size limit alone (ratio: below)
    with pytest.raises(TraceReadError) as info:  # how long it takes: benchmarks/bench_bounds.py
        load_trace_file(str(bomb))
    message = str(info.value)
    assert "decompressed size exceeds" in message and "raise KINETOSCOPE_MAX_TRACE_BYTES" in message, message
    # through the registry and the CLI: the file and the reason
    out, err = io.StringIO(), io.StringIO()
    assert run_report(str(tmp_path), None, True, False, out, err) == 1
    assert "kinetoscope: bomb.pt.trace.json.gz: decompressed size exceeds" in err.getvalue()


@pytest.mark.corpus
def test_limit_applies_to_plain_files_and_spares_small_ones(tmp_path, monkeypatch):
    from tb_plugin.registry.parse import load_trace_file

    monkeypatch.setenv("KINETOSCOPE_MAX_TRACE_BYTES", str(100_000))
    small = tmp_path / "small.pt.trace.json.gz"
    small.write_bytes(gzip.compress(_step_and(_ev())))
    assert len(load_trace_file(str(small)).events) == 2
    big = tmp_path / "big.pt.trace.json"
    shutil.copy(sample("composer/rank_0.trace.json"), big)  # 139 514 bytes
    with pytest.raises(TraceReadError, match="exceeds"):
        load_trace_file(str(big))
    # under the default (16 GiB) the same files load, and a small bomb fails only as not-a-trace
    monkeypatch.delenv("KINETOSCOPE_MAX_TRACE_BYTES")
    assert len(load_trace_file(str(big)).events) > 0
    (tmp_path / "zeros.json.gz").write_bytes(gzip_bomb(32))
    with pytest.raises(TraceReadError, match="not a JSON trace"):
        load_trace_file(str(tmp_path / "zeros.json.gz"))


def _whitespace_bomb(gib: int) -> bytes:
    """The review's file: ``{"traceEvents":[`` then ``gib`` GiB of spaces, gzipped (2 MB for 2 GiB)."""
    return gzip.compress(b'{"traceEvents":[') + gzip_bomb(gib << 10, b" ")


def test_whitespace_bomb_is_refused_by_the_inflation_ratio(tmp_path):
    """2 GiB of spaces behind a valid JSON start used to load as "ready" at a 2.73 GB peak: now a
    per-file error naming the 200× bound, in a child whose peak stays under 250 MB, through both the
    whole-document and the streamed reader; a good trace beside it loads."""
    import subprocess
    import sys
    import textwrap

    bomb = tmp_path / "w.pt.trace.json.gz"
    bomb.write_bytes(_whitespace_bomb(2))
    assert bomb.stat().st_size < 3 << 20
    (tmp_path / "good.pt.trace.json.gz").write_bytes(gzip.compress(_step_and(_ev())))
    script = textwrap.dedent(f"""
        import fsspec
        from tb_plugin.registry.parse import load_trace_file
        from tb_plugin.storage.read import Blocks, ReadError
        from tb_plugin.trace.errors import TraceReadError
        try:
            load_trace_file({str(bomb)!r})
            raise SystemExit("loaded")
        except TraceReadError as exc:
            assert "inflates more than 200x" in str(exc), exc
        try:
            for _ in Blocks(fsspec.filesystem("file"), {str(bomb)!r}):
                pass
            raise SystemExit("streamed")
        except ReadError as exc:
            assert "inflates more than 200x" in str(exc), exc
        assert len(load_trace_file({str(tmp_path / "good.pt.trace.json.gz")!r}).events) == 2
        print("VmHWM_kB", [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1])
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout
    assert int(done.stdout.split("VmHWM_kB")[1].split()[0]) < 250_000


def test_long_whitespace_runs_cost_nothing_and_change_no_value(tmp_path):
    """Padding that stays under the ratio (random names between 1 MiB runs of blanks) loads equal to
    the same trace without it, and the inflated document keeps each run as one space."""
    import json
    import random

    from tb_plugin.registry.parse import load_trace_file
    from tb_plugin.storage.inflate import squeeze_blanks
    from tb_plugin.storage.read import gunzip_bounded

    rng = random.Random(3)
    events = [
        {
            "ph": "X",
            "name": "".join(rng.choice("abcdefghij") for _ in range(200_000)),
            "pid": 1,
            "tid": 1,
            "ts": i * 10,
            "dur": 5,
            "cat": "cpu_op",
        }
        for i in range(4)
    ]
    pad = " \n\t" * (1 << 18)  # 768 KiB of blanks between events
    body = '{"traceEvents":[' + (pad + ",").join(json.dumps(e) for e in events) + "]}"
    (tmp_path / "pad.pt.trace.json.gz").write_bytes(gzip.compress(body.encode()))
    (tmp_path / "plain.pt.trace.json.gz").write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    padded, plain = (
        load_trace_file(str(tmp_path / "pad.pt.trace.json.gz")),
        load_trace_file(str(tmp_path / "plain.pt.trace.json.gz")),
    )
    assert len(padded.events) == len(plain.events) == 4
    assert [padded.strings[i] for i in padded.events.name] == [plain.strings[i] for i in plain.events.name]
    inflated = gunzip_bounded(gzip.compress(body.encode()))
    assert len(inflated) < len(body) - 3 * 700_000
    assert squeeze_blanks(b"a" + b" " * 65535 + b"b") == b"a" + b" " * 65535 + b"b"  # shorter runs kept
    assert squeeze_blanks(b'"x"' + b"\n" * 70000 + b"}") == b'"x" }'
