"""Large remote traces go through the streamed, chunked decode, read in ranged blocks through fsspec's
file object (storage/remote_blocks.py), against the real emulators of tests/emulators.py (moto,
gcp-storage-emulator, Azurite). The streaming threshold is lowered to 0 and the range to 256 KiB, so
the V100 traces (a few MB) cross many ranges, gzip and plain, with the decode workers in use."""

from __future__ import annotations

import gzip
import os
from unittest import mock

import numpy as np
import pytest
from conftest import sample
from emulators import Emulator, clear_fsspec_instances

from tb_plugin.cli import main
from tb_plugin.registry.parse import load_trace_file
from tb_plugin.registry.runs import ERROR, READY, RunRegistry
from tb_plugin.storage import read, remote, remote_blocks
from tb_plugin.trace.errors import TraceReadError

pytestmark = [pytest.mark.corpus, pytest.mark.emulator]  # the sample corpus (docs/TESTING.md), storage emulators

V100 = "kineto/resnet50_num_workers_0"
RANGE = 256 << 10


@pytest.fixture(scope="module", params=["s3", "gcs", "azure"])
def cloud(request, tmp_path_factory):
    """An emulator holding v100/ (the two gzipped V100 traces and one of them as plain JSON)."""
    local = tmp_path_factory.mktemp("v100")
    gz = sorted(sample(V100).glob("*.gz"))
    for f in gz:
        (local / f.name).write_bytes(f.read_bytes())
    plain = gz[0].name[:-3].replace("worker0", "worker1")
    (local / plain).write_bytes(gzip.decompress(gz[0].read_bytes()))
    emu = Emulator(request.param).start()
    with mock.patch.dict(os.environ, emu.env):
        try:
            emu.make_bucket()
            emu.upload(local, "v100")
            clear_fsspec_instances()
            emu.local = local
            yield emu
        finally:
            emu.kill()
            clear_fsspec_instances()


@pytest.fixture
def streamed(monkeypatch):
    """Every file streamed, in 256 KiB ranges, on two decode workers; the whole-object download
    (read._read_remote) fails the test if it is used."""
    monkeypatch.setenv("KINETOSCOPE_STREAM_ABOVE_BYTES", "0")
    monkeypatch.setenv("KINETOSCOPE_DECODE_WORKERS", "2")
    monkeypatch.setattr(remote_blocks, "RANGE_BYTES", RANGE)
    monkeypatch.setattr(remote, "BACKOFF_S", 0.05)

    def no_download(*a, **k):
        raise AssertionError("a large remote object was downloaded whole instead of streamed")

    monkeypatch.setattr(read, "_read_remote", no_download)
    ranges = []
    real_open = remote_blocks._Ranges.__init__

    def counting(self, *a, **k):
        ranges.append(a)
        real_open(self, *a, **k)

    monkeypatch.setattr(remote_blocks._Ranges, "__init__", counting)
    clear_fsspec_instances()
    yield ranges
    clear_fsspec_instances()


def _same(a, b) -> None:
    assert a.strings == b.strings
    for ta, tb in ((a.events, b.events), (a.memory, b.memory), (a.flows, b.flows), (a.counters, b.counters)):
        assert sorted(ta.columns) == sorted(tb.columns)
        for key, col in ta.columns.items():
            assert col.dtype == tb.columns[key].dtype and np.array_equal(col, tb.columns[key], equal_nan=True), key
    assert (a.meta, a.warnings, a.notes, a.distributed, a.devices) == (
        b.meta,
        b.warnings,
        b.notes,
        b.distributed,
        b.devices,
    )


def test_remote_trace_streamed_in_ranges_equals_the_local_parse(cloud, streamed):
    names = sorted(os.listdir(cloud.local))
    assert len(names) == 3
    for name in names:
        local_path = str(cloud.local / name)
        size = os.path.getsize(local_path)
        with mock.patch.dict(os.environ, {"KINETOSCOPE_STREAM_ABOVE_BYTES": str(1 << 40)}):
            expected = load_trace_file(local_path)  # the whole-document parse, locally
        got = load_trace_file(cloud.url(f"v100/{name}"))
        assert len(got.events) > 10_000  # several decode batches
        _same(got, expected)
        assert size > 4 * RANGE  # many ranged reads
    assert len(streamed) == 3


def test_remote_report_streamed_equals_local(cloud, streamed, capsys, tmp_path):
    """The CLI report (no cache, then a fresh parse into the cache) equals the local one byte for byte."""
    assert main(["report", str(cloud.local), "--json", "--no-cache"]) == 0
    expected = capsys.readouterr().out
    assert main(["report", cloud.url("v100"), "--json", "--no-cache"]) == 0
    assert capsys.readouterr().out == expected
    with mock.patch.dict(os.environ, {"KINETOSCOPE_CACHE_DIR": str(tmp_path / "cache")}):
        assert main(["report", cloud.url("v100"), "--json"]) == 0
    assert capsys.readouterr().out == expected
    assert len(streamed) >= 6


def test_streamed_object_deleted_after_listing_is_a_clear_error(cloud, streamed):
    fs = cloud.fs()
    name = sorted(os.listdir(cloud.local))[0]
    fs.put_file(str(cloud.local / name), f"{cloud.bucket}/gone-stream/{name}")
    reg = RunRegistry(cloud.url("gone-stream"))
    reg.scan()
    fs.rm(f"{cloud.bucket}/gone-stream/{name}")
    st = reg.load(reg.files()[0])
    assert st.state == ERROR and "deleted" in st.error and cloud.url("gone-stream") in st.error


def test_streamed_object_replaced_by_a_shorter_one_mid_read(cloud, streamed, monkeypatch):
    """The object shrinks between the listing (its size) and the reads: the short range fails the
    file like a deleted object, never a garbled parse."""
    fs = cloud.fs()
    name = sorted(os.listdir(cloud.local))[-1]  # the plain JSON one
    fs.put_file(str(cloud.local / name), f"{cloud.bucket}/shrunk/{name}")
    reg = RunRegistry(cloud.url("shrunk"))
    reg.scan()
    fs.pipe_file(f"{cloud.bucket}/shrunk/{name}", (cloud.local / name).read_bytes()[: 3 * RANGE // 2])
    clear_fsspec_instances()
    st = reg.load(reg.files()[0])
    assert st.state == ERROR and "deleted or replaced" in st.error, st.error
    assert reg.files()[0].state != READY


def test_remote_document_the_scanner_cannot_split_is_downloaded_whole(cloud, streamed, monkeypatch):
    """``traceEvents`` twice: the scanner gives up (Unstreamable) after its first ranges; the object is
    then read whole, as before streaming, and parsed like the same file locally."""
    plain = sorted(os.listdir(cloud.local))[-1]
    doc = (cloud.local / plain).read_bytes()
    assert doc.lstrip()[:1] == b"{"
    twice = b'{"traceEvents": [], ' + doc.lstrip()[1:]
    local_path = cloud.local.parent / "twice.json"
    local_path.write_bytes(twice)
    cloud.fs().pipe_file(f"{cloud.bucket}/twice/w.pt.trace.json", twice)
    downloads = []
    monkeypatch.setattr(read, "_read_remote", lambda *a, **k: downloads.append(a) or real_read_remote(*a, **k))
    expected = load_trace_file(str(local_path))
    got = load_trace_file(cloud.url("twice/w.pt.trace.json"))
    _same(got, expected)
    assert len(expected.events) > 10_000
    assert len(downloads) == 1 and len(streamed) == 1


real_read_remote = read._read_remote


def test_streamed_object_replaced_mid_read_by_one_of_the_same_size(cloud, streamed, monkeypatch):
    """The object is overwritten (same size, other bytes) once its first ranges are read, while other
    ranges are in flight: S3 refuses the later ranged GETs (If-Match on the ETag read at the open), and
    the file fails like a deleted object, never a parse mixing two versions. (GCS and Azure reads are
    not pinned to a generation: a same-size replacement is only caught when it changes the size.)"""
    if cloud.backend != "s3":
        pytest.skip("only S3 reads are pinned to the ETag seen at the open")
    import s3fs

    fs = cloud.fs()
    name = sorted(os.listdir(cloud.local))[-1]  # the plain JSON one
    key = f"{cloud.bucket}/replaced/{name}"
    doc = (cloud.local / name).read_bytes()
    assert doc.count(b'"ph": "X"') > 1000
    fs.put_file(str(cloud.local / name), key)
    real, calls = s3fs.core.S3File._fetch_range, []

    def replace_after_two(f, start, end):
        calls.append(start)
        if len(calls) == 3:
            cloud.fs().pipe_file(key, doc.replace(b'"ph": "X"', b'"ph": "x"'))
        return real(f, start, end)

    monkeypatch.setattr(s3fs.core.S3File, "_fetch_range", replace_after_two)
    with pytest.raises(TraceReadError, match="deleted or replaced after it was listed"):
        load_trace_file(cloud.url(f"replaced/{name}"))
    assert len(calls) >= 3
