"""Raw events left in place: a local uncompressed trace that is streamed gets no side-file copy of its
events; each duration event's ``src_offset``/``src_length`` point into the trace file itself
(trace/raw_positions.py, trace/decode_stream.py, registry/parse.py). The offsets must name exactly
the bytes of the event (the details panel decodes them), whatever the separators, chunk cuts, byte
order mark, bare NaN literals or worker count."""

from __future__ import annotations

import gzip
import io
import json
import os

import fsspec
import numpy as np
import pytest
from conftest import sample

from tb_plugin.registry import parse
from tb_plugin.registry.cache import ParseCache
from tb_plugin.registry.views import _full_args
from tb_plugin.trace.args import args_of_raw
from tb_plugin.trace.decode import decode_trace
from tb_plugin.trace.decode_stream import decode_stream
from tb_plugin.trace.raw_positions import locate


class FileBlocks(list):
    """Blocks that are the file's own bytes (as storage.read.Blocks says of an uncompressed file)."""

    raw = True


class InPlaceSink(io.BytesIO):
    in_place_path = "/the/trace"


def ev(name, ts, **args):
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": 1, "args": args}


def events_doc(n: int = 60) -> list[dict]:
    names = ['a"},{"b', 'q\\"}, {"ph": "X"', "back\\\\", "}]", "x}, ", '{"ph":"E"}', "plain"]
    return [ev(names[i % len(names)], i, nested={"k": [i, {"deep": "}, {"}]}) for i in range(n)]


def check(doc: bytes, chunk: int, block: int = 1 << 20, workers: int = 1, nonfinite: bool = False) -> int:
    """Decode ``doc`` streamed in place and as a whole with a side file: equal columns, and every
    placed event's bytes in ``doc`` equal (or, with bare literals, decode like) its side-file bytes.
    Returns the number of events placed."""
    ref_sink = io.BytesIO()
    ref = decode_trace(doc, events_sink=ref_sink)
    sink = InPlaceSink()
    got = decode_stream(
        FileBlocks(doc[i : i + block] for i in range(0, len(doc), block)),
        events_sink=sink,
        workers=workers,
        chunk_bytes=chunk,
    )
    assert sink.getvalue() == b""  # nothing copied
    assert got.meta.pop("events_in_place") is True
    assert ref.strings == got.strings and ref.meta == got.meta and ref.warnings == got.warnings
    for key, col in ref.events.columns.items():
        if key not in ("src_offset", "src_length"):
            assert col.tobytes() == got.events.columns[key].tobytes(), key
    side = ref_sink.getvalue()
    placed = 0
    for row in range(len(ref.events)):
        o, n = int(got.events.src_offset[row]), int(got.events.src_length[row])
        ro, rn = int(ref.events.src_offset[row]), int(ref.events.src_length[row])
        assert (o < 0) == (ro < 0) or o < 0
        if o < 0:
            continue
        placed += 1
        mine, theirs = doc[o : o + n], side[ro : ro + rn]
        if nonfinite:
            assert args_of_raw(mine) == args_of_raw(theirs) is not None
        else:
            assert mine == theirs
    return placed


@pytest.mark.parametrize("chunk", [1, 37, 400, 1 << 20])
@pytest.mark.parametrize("indent", [None, 2, 4])
def test_offsets_name_each_event_whatever_the_cuts_and_separators(chunk, indent):
    doc = json.dumps({"traceEvents": events_doc(), "deviceProperties": []}, indent=indent).encode()
    assert check(doc, chunk) == 60


@pytest.mark.parametrize("chunk", [1, 400, 1 << 20])
def test_mixed_separators_fall_back_to_the_exact_scan(chunk):
    parts = [json.dumps(e).encode() for e in events_doc(30)]
    seps = [b",", b" ,\n", b",\t\t", b"\r\n,  "]
    body = parts[0] + b"".join(seps[i % len(seps)] + p for i, p in enumerate(parts[1:]))
    doc = b'{"traceEvents": [ \n' + body + b'\n ], "x": 1}'
    assert check(doc, chunk) == 30


def test_array_form_byte_order_mark_and_two_workers():
    doc = b"\xef\xbb\xbf" + json.dumps(events_doc(200), indent=1).encode()
    assert check(doc, 400, block=777, workers=2) == 200


def test_bare_nan_literals_keep_their_file_bytes():
    """A chunk whose NaN/Infinity literals were quoted to decode it: the offsets are still the file's
    (the exact scan), and the details panel quotes the literals again when it reads them back."""
    body = json.dumps(events_doc(20)).encode().replace(b'"deep": "}, {"', b'"deep": NaN, "inf": -Infinity')
    assert check(body, 300, nonfinite=True) == 20
    raw_first = body[body.index(b"{", 1) :]
    assert args_of_raw(raw_first[: raw_first.index(b"}}") + 3]) is not None


def test_locate_returns_none_for_what_it_cannot_place():
    buf = bytearray(b'  {"a": 1} , 5 ,{"b": 2}')
    import msgspec

    raws = msgspec.json.decode(b"[" + bytes(buf) + b"]", type=list[msgspec.Raw])
    assert locate(buf, 0, raws, quoted=False) is None  # an element that is no object
    buf2 = bytearray(b' {"a": 1},\n  {"b": [1, 2]}')
    raws2 = msgspec.json.decode(b"[" + bytes(buf2) + b"]", type=list[msgspec.Raw])
    starts, lengths, raw_lengths = locate(buf2, 0, raws2, quoted=False)
    assert starts.tolist() == [1, 13] and lengths.tolist() == [8, 13] == raw_lengths.tolist()


def _parse(tmp_path, path, monkeypatch):
    monkeypatch.setenv("KINETOSCOPE_STREAM_ABOVE_BYTES", "0")
    cache = ParseCache(str(tmp_path / "cache"))
    trace, _ = parse.parse_entry(fsspec.filesystem("file"), str(path), str(path), "v1", os.path.getsize(path), cache)
    return trace, cache


@pytest.mark.corpus
def test_the_registry_points_the_cache_at_the_trace_file(tmp_path, monkeypatch):
    """A streamed local .json trace: no raw-events copy in the cache, ``events_file`` is the trace
    itself (through a symlink: its real path), and the details panel reads the same args as from the
    copy a gzipped twin of the file gets."""
    data = gzip.decompress(sample("kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz").read_bytes())
    (tmp_path / "real").mkdir()
    real = tmp_path / "real" / "w.pt.trace.json"
    real.write_bytes(data)
    link = tmp_path / "w.pt.trace.json"
    link.symlink_to(real)
    twin = tmp_path / "twin.pt.trace.json.gz"
    twin.write_bytes(gzip.compress(data, 1))

    trace, cache = _parse(tmp_path, link, monkeypatch)
    assert trace.meta["events_file"] == str(real.resolve())
    assert trace.meta["events_bytes"] == len(data)
    assert not [n for _, _, names in os.walk(cache.directory) for n in names if n.endswith(".events.bin")]
    copy, _ = _parse(tmp_path / "c2", twin, monkeypatch)
    assert copy.meta["events_file"].endswith(".events.bin")
    rows = np.flatnonzero(trace.events.src_offset >= 0)
    assert len(rows) == len(trace.events) == 44666
    for row in rows[:: len(rows) // 400]:
        full = _full_args(trace, int(row))
        assert full == _full_args(copy, int(row))
        assert full == args_of_raw(data[trace.events.src_offset[row] :][: trace.events.src_length[row]])

    # read back from the cache: the same offsets; a trace file touched since is no longer trusted
    again = cache.get(str(link), "v1")
    assert again is not None and again.meta["events_file"] == str(real.resolve())
    assert again.events.src_offset.tobytes() == trace.events.src_offset.tobytes()
    st = os.stat(real)
    os.utime(real, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert cache.get(str(link), "v1") is None


def test_a_gzipped_file_without_the_gz_name_is_copied(tmp_path, monkeypatch):
    """The blocks of a gzip file are not its bytes: its events go to the side file as before."""
    data = json.dumps({"traceEvents": events_doc(40)}).encode()
    path = tmp_path / "odd.pt.trace.json"
    path.write_bytes(gzip.compress(data))
    trace, _ = _parse(tmp_path, path, monkeypatch)
    assert trace.meta["events_file"].endswith(".events.bin")
    with open(trace.meta["events_file"], "rb") as f:
        side = f.read()
    row = 7
    o, n = trace.events.src_offset[row], trace.events.src_length[row]
    assert json.loads(side[o : o + n])["ts"] == 7
