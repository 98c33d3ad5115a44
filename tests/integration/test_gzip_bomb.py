"""Gzip bombs and oversized traces: decompressed bytes are limited by KINETOSCOPE_MAX_TRACE_BYTES
(default: 1/8 of the machine's memory), with a clear per-file error naming the setting."""

from __future__ import annotations

import gzip
import io
import shutil

import pytest

from conftest import sample
from tb_plugin.cli import run_report
from tb_plugin.trace.errors import TraceReadError
from fuzz_files import gzip_bomb
from test_fuzz import _ev, _step_and
# --------------------------------------------------------------------------------------------

def test_gzip_bomb_helper_is_a_real_gzip_file():
    assert gzip.decompress(gzip_bomb(3, b" ")) == b" " * (3 << 20)


def test_gzip_bomb_stops_at_the_limit(tmp_path, monkeypatch):
    from tb_plugin.registry.parse import load_trace_file

    bomb = tmp_path / "bomb.pt.trace.json.gz"
    bomb.write_bytes(gzip_bomb(1024, b"["))  # 1 GiB of '[' in about 1 MB: a JSON start, so only the limit stops it
    assert bomb.stat().st_size < 2 << 20
    monkeypatch.setenv("KINETOSCOPE_MAX_TRACE_BYTES", str(64 << 20))
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
