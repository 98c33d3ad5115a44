"""The streaming decoder (trace/scan.py, trace/decode_stream.py, trace/decode_workers.py) against
the whole-document decoder kept as the reference: equal Trace columns, string tables, warnings,
raw-events side files and reports, whatever the chunk size, block size or number of workers.

The default run checks every sample trace serially with small chunks and a few in parallel; set
KINETOSCOPE_TEST_ALL_SAMPLES=1 to check every sample in parallel too and the JSON report of the
whole of ../shared/samples (slow: minutes on 2 cores).
"""

from __future__ import annotations

import gzip
import io
import json
import os

import numpy as np
import pytest
from conftest import SAMPLES, flight_recorder_dump, sample

from tb_plugin import cli
from tb_plugin.registry import parse
from tb_plugin.storage import read
from tb_plugin.storage.read import Blocks, read_trace_bytes
from tb_plugin.trace import decode_halves
from tb_plugin.trace import decode_stream as ds
from tb_plugin.trace.decode import decode_trace
from tb_plugin.trace.decode_stream import Unstreamable, decode_stream
from tb_plugin.trace.errors import TraceReadError

ALL = os.environ.get("KINETOSCOPE_TEST_ALL_SAMPLES") == "1"
REPO_SAMPLES = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))), "samples"
)


def assert_same(a, b) -> None:
    """Byte for byte: strings, every column (dtype and values), tables, meta, warnings, notes."""
    assert a.strings == b.strings
    for table in ("events", "memory", "flows", "counters"):
        ca, cb = getattr(a, table).columns, getattr(b, table).columns
        assert list(ca) == list(cb)
        for key in ca:
            assert ca[key].dtype == cb[key].dtype, (table, key)
            assert ca[key].tobytes() == cb[key].tobytes(), (table, key)
    assert a.meta == b.meta and a.warnings == b.warnings and a.notes == b.notes
    assert a.devices == b.devices and a.distributed == b.distributed


def blocks_of(data: bytes, size: int):
    return [data[i : i + size] for i in range(0, len(data), size)]


def both(data: bytes, chunk: int, block: int, workers: int = 1):
    """(whole-document trace, streamed trace), each with its raw-events side file's bytes."""
    ref_sink, sink = io.BytesIO(), io.BytesIO()
    ref = decode_trace(data, events_sink=ref_sink)
    got = decode_stream(blocks_of(data, block), events_sink=sink, workers=workers, chunk_bytes=chunk)
    assert_same(ref, got)
    assert ref_sink.getvalue() == sink.getvalue()
    return ref, got


def ev(name, ts, **args):
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": 1, "args": args}


HOSTILE_NAMES = ['a"},{"b', 'q\\"}, {"ph": "X"', "back\\\\", "}]", '\\\\"},{', "x}, ", '"', '{"ph":"E"}']


def doc_bytes(events, before=None, after=None, indent=None) -> bytes:
    doc = dict(before or {})
    doc["traceEvents"] = events
    doc.update(after or {})
    return json.dumps(doc, indent=indent).encode()


@pytest.mark.parametrize("chunk", [1, 5, 37, 400, 1 << 20])
@pytest.mark.parametrize("block", [3, 64, 1 << 20])
def test_cuts_inside_strings_with_escaped_quotes_and_nested_args(chunk, block):
    events = []
    for i, name in enumerate(HOSTILE_NAMES * 3):
        events.append(
            ev(
                name,
                i,
                **{
                    "Input Dims": [[1, 2], []],
                    "nested": [{"a": name}, {"b": [{"c": "}],{"}]}],
                    "External id": i,
                    "Call stack": name,
                },
            )
        )
    events.append(
        {
            "ph": "i",
            "name": "[memory]",
            "pid": 1,
            "tid": 1,
            "ts": 5,
            "args": {"Bytes": 4, "Addr": 9, "Device Type": 1, "Device Id": 0, "x": {"y": "]}"}},
        }
    )
    events.append({"ph": "B", "name": 'b"}', "pid": 1, "tid": 2, "ts": 1, "args": {"k": [{"}": "{"}]}})
    events.append({"ph": "E", "pid": 1, "tid": 2, "ts": 3})
    ref, got = both(doc_bytes(events, indent=1), chunk, block)
    assert len(got.events) == len(HOSTILE_NAMES) * 3 + 1 and len(got.memory) == 1
    assert set(HOSTILE_NAMES) <= set(got.strings)


@pytest.mark.parametrize("chunk", [1, 60, 1 << 20])
def test_top_level_keys_before_and_after_the_events(chunk):
    devices = [{"id": 0, "name": 'V"100', "totalGlobalMem": 1 << 30, "numSms": 80}]
    events = [ev("aten::mm", i) for i in range(20)]
    for before, after in [
        ({}, {"deviceProperties": devices, "distributedInfo": {"rank": 3}}),
        ({"deviceProperties": devices, "traceName": "t"}, {"baseTimeNanoseconds": 17, "x": [{"y": 1}]}),
        ({"schemaVersion": 1, "displayTimeUnit": "ms"}, {}),
        # keys longer than the scanner's first window (1 KB), a quote escaped in one
        ({"k" * 3000 + '"x': 1, "q" * 900 + '\\"': 2}, {"z" * 70000: [1]}),
    ]:
        _, got = both(doc_bytes(events, before, after), chunk, 7)
        assert got.devices and got.devices[0].name == 'V"100' if "deviceProperties" in {**before, **after} else True
    _, got = both(doc_bytes(events, {"traceName": "t"}, {"distributedInfo": {"rank": 3}}), chunk, 5)
    assert got.distributed == {"rank": 3} and got.meta["traceName"] == "t"


def test_array_form_and_empty_events():
    events = [ev(n, i) for i, n in enumerate(HOSTILE_NAMES)]
    both(json.dumps(events).encode(), 30, 11)
    both(b'\xef\xbb\xbf  {"traceEvents": [ ], "traceName": "empty"}', 4, 3)
    both(b'[{"ph": "X", "name": "a", "ts": 1, "dur": 2}, 5, "x"]', 4, 3)  # elements that are no event


@pytest.mark.parametrize("block", [1, 2, 5, 9])
def test_nonfinite_literals_across_block_and_chunk_boundaries(block):
    body = (
        b'{"traceEvents": [{"ph": "X", "name": "NaN", "ts": 1, "dur": NaN, "args": {"flops": Infinity}},'
        b'{"ph": "X", "name": "b", "ts": 2, "dur": -Infinity, "args": {"s": "Infinity"}}], '
        b'"deviceProperties": [{"id": 0, "totalGlobalMem": NaN}]}'
    )
    ref, got = both(body, 3, block)
    assert "3 bare NaN/Infinity literals" in " ".join(got.warnings) or "4 bare" in " ".join(got.warnings)
    assert np.isinf(got.events.flops).sum() == 1


@pytest.mark.parametrize("cut", [-1, -2, -9, -30, -60])
@pytest.mark.parametrize("chunk", [1, 100, 1 << 20])
def test_cut_off_array_recovers_complete_events_like_the_whole_document(cut, chunk):
    events = [ev(f"op{i}", i, nested={"k": [{"a": "}]"}]}) for i in range(8)]
    body = json.dumps(events).encode()[:cut]
    ref, got = both(body, chunk, 13)
    assert any("cut off" in w for w in got.warnings)
    nan_cut = body.replace(b'"dur": 1', b'"dur": NaN', 2)
    both(nan_cut, chunk, 13)


def test_undecodable_documents_are_left_to_the_whole_document_decoder():
    for body in (
        b'{"traceEvents": [{"ph": "X"}, 5]',
        b'{"traceEvents": [{"ph": "X"}], "a": }',
        b'{"a": 1}',
        b'{"traceEvents": [{"ph": "X"}]} trailing',
        b'{"traceEvents": [], "traceEvents": []}',
        b"  7",
    ):
        with pytest.raises(Unstreamable):
            decode_stream(blocks_of(body, 4), chunk_bytes=2)


def _batches_of(monkeypatch, n):
    monkeypatch.setattr(decode_halves, "BATCH_EVENTS", n)  # (the whole-document decoder's batches)
    monkeypatch.setattr(ds, "BATCH_EVENTS", n)


def test_parallel_decode_equals_serial_and_whole_document(monkeypatch):
    """Many batches (a few events each) over 3 workers: string ids, columns, B/E pairs, counters,
    memory, flows and the raw-events side file's offsets all equal the serial parse's."""
    _batches_of(monkeypatch, 7)
    events = []
    for i in range(60):
        events.append(ev(f"op{i % 9}", i, **{"External id": i, "Input Dims": [[i]], "Input type": ["float"]}))
        events.append(
            {
                "ph": "X",
                "cat": "kernel",
                "name": f"k{i % 4}",
                "pid": 0,
                "tid": 7,
                "ts": i + 0.5,
                "dur": 0.25,
                "args": {"correlation": i, "device": 0, "stream": 7, "grid": [i, 1, 1]},
            }
        )
        if i % 5 == 0:
            events += [
                {"ph": "B", "name": f"b{i}", "pid": 1, "tid": 3, "ts": i},
                {"ph": "E", "name": f"b{i}", "pid": 1, "tid": 3, "ts": i + 2},
                {"ph": "C", "name": "mem", "pid": 1, "ts": i, "args": {"value": i}},
                {"ph": "s", "cat": "fwdbwd", "id": i, "pid": 1, "tid": 1, "ts": i},
                {
                    "ph": "i",
                    "name": "[memory]",
                    "pid": 1,
                    "tid": 1,
                    "ts": i,
                    "args": {"Bytes": 8 * i, "Addr": i, "Device Type": 1, "Device Id": 0},
                },
                {"ph": "M", "name": "thread_name", "pid": 1, "tid": 3, "args": {"name": f"t{i}"}},
            ]
    events.append({"ph": "X", "name": True, "pid": 1.0, "tid": "1", "ts": 99, "dur": 1})  # equal keys, other types
    body = doc_bytes(events, {"deviceProperties": [{"id": 0, "name": "gpu"}]})
    serial = both(body, 500, 97, workers=1)[1]
    parallel = both(body, 500, 97, workers=3)[1]
    assert_same(serial, parallel)
    assert len(parallel.counters) == 12 and len(parallel.flows) == 12 and len(parallel.memory) == 12


def test_gzip_streamed_in_small_steps_and_ending_mid_chunk(tmp_path, monkeypatch):
    monkeypatch.setattr(read, "CHUNK_BYTES", 64)  # inflate and read in 64-byte steps
    events = [ev(n, i, nested=[{"a": n}]) for i, n in enumerate(HOSTILE_NAMES * 4)]
    body = doc_bytes(events, after={"deviceProperties": [{"id": 0}]})
    path = tmp_path / "t.pt.trace.json.gz"
    path.write_bytes(gzip.compress(body[:100]) + gzip.compress(body[100:]))  # two members, the cut mid-chunk
    import fsspec

    fs = fsspec.filesystem("file")
    ref = decode_trace(read_trace_bytes(fs, str(path)))
    assert_same(ref, decode_stream(Blocks(fs, str(path), path.stat().st_size), chunk_bytes=300))
    path.write_bytes(gzip.compress(body)[:-30])  # truncated: the same message as the whole-file read
    with pytest.raises(read.ReadError) as whole:
        read_trace_bytes(fs, str(path))
    with pytest.raises(read.ReadError) as streamed:
        decode_stream(Blocks(fs, str(path)), chunk_bytes=300)
    assert str(whole.value) == str(streamed.value) and "truncated" in str(streamed.value)


def _sample_traces():
    roots = [SAMPLES, REPO_SAMPLES]
    files = []
    for root in roots:
        for dirpath, _, names in os.walk(root):
            # not traces: known answers (*.expected.json, RECORDED.json) and export_memory_timeline files
            files += [
                os.path.join(dirpath, n)
                for n in names
                if ".json" in n
                and not n.endswith((".expected.json", "RECORDED.json"))
                and ".pt.trace.memory." not in n
                and "memory_analysis" not in dirpath
            ]
    return sorted(f for f in files if not flight_recorder_dump(f))


@pytest.mark.corpus
def test_every_sample_trace_streams_equal(monkeypatch):
    import fsspec

    fs = fsspec.filesystem("file")
    files = _sample_traces()
    assert len(files) >= 35
    parallel = files if ALL else [str(sample("kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"))]
    _batches_of(monkeypatch, 5000)  # several batches even in a small sample (both decoders batch alike)
    for path in files:
        ref = decode_trace(read_trace_bytes(fs, path))
        assert_same(ref, decode_stream(Blocks(fs, path), chunk_bytes=64 << 10))
        if path in parallel:
            assert_same(ref, decode_stream(Blocks(fs, path), workers=2, chunk_bytes=64 << 10))


def _report(logdir, capsys) -> dict:
    assert cli.main(["report", str(logdir), "--json", "--no-cache"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.corpus
def test_report_json_equal_streamed_and_whole(monkeypatch, capsys):
    logdir = SAMPLES if ALL else sample("kineto/resnet50_num_workers_0")
    monkeypatch.setenv("KINETOSCOPE_STREAM_ABOVE_BYTES", str(1 << 40))
    whole = _report(logdir, capsys)
    monkeypatch.setenv("KINETOSCOPE_STREAM_ABOVE_BYTES", "0")
    monkeypatch.setenv("KINETOSCOPE_DECODE_WORKERS", "2")
    assert _report(logdir, capsys) == whole


@pytest.mark.corpus
def test_budget_exceeded_is_a_clear_error_naming_it(monkeypatch):
    monkeypatch.setenv("KINETOSCOPE_STREAM_ABOVE_BYTES", "0")
    monkeypatch.setenv("KINETOSCOPE_MAX_TRACE_BYTES", str(4 << 20))
    with pytest.raises(TraceReadError) as err:
        parse.load_trace_file(str(sample("kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz")))
    assert "KINETOSCOPE_MAX_TRACE_BYTES" in str(err.value) and "budget" in str(err.value)


def test_unstreamable_file_falls_back_to_the_whole_document_with_its_cache(tmp_path, monkeypatch):
    """The scanner gives up half way (a non-event last element in the object form): the file is
    parsed whole, and the raw-events side file holds the events once."""
    from tb_plugin.registry.cache import ParseCache

    monkeypatch.setenv("KINETOSCOPE_STREAM_ABOVE_BYTES", "0")
    body = doc_bytes([ev(f"op{i}", i) for i in range(50)] + [5], after={"traceName": "odd"})
    path = tmp_path / "odd.pt.trace.json"
    path.write_bytes(body)
    import fsspec

    fs = fsspec.filesystem("file")
    cache = ParseCache(str(tmp_path / "cache"))
    trace, cached = parse.parse_entry(fs, str(path), str(path), "v1", len(body), cache)
    ref_sink = io.BytesIO()
    ref = decode_trace(body, events_sink=ref_sink)
    events_file = trace.meta.pop("events_file")
    assert trace.meta.pop("events_bytes") == len(ref_sink.getvalue())
    assert_same(ref, trace)
    with open(events_file, "rb") as f:
        assert f.read() == ref_sink.getvalue()


def test_workers_import_this_tb_plugin_whatever_the_working_directory(tmp_path, monkeypatch):
    """A worker must not pick up another checkout's tb_plugin from the working directory (it then
    could not start, and the parse fell back to serial without a word)."""
    from tb_plugin.trace import decode_workers
    from tb_plugin.trace.decode_workers import Workers

    monkeypatch.setattr(decode_workers, "can_fork", lambda: False)  # a fresh interpreter, as beside a server's threads
    (tmp_path / "tb_plugin").mkdir()
    (tmp_path / "tb_plugin" / "__init__.py").write_text("")
    monkeypatch.chdir(tmp_path)
    with Workers(1) as workers:
        workers.send(0, [b'[{"ph": "X", "name": "a", "ts": 1, "dur": 2}]'], False)
        state = workers.receive(0)
    assert state["texts"] == ["a"] and state["phase_counts"] == {"X": 1}


@pytest.mark.corpus
def test_local_files_above_the_threshold_are_streamed(monkeypatch):
    """The registry's parse streams a local file above KINETOSCOPE_STREAM_ABOVE_BYTES (so the report
    comparisons above do compare the two decoders), and decodes a smaller one whole."""
    path = str(sample("kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"))

    def refuse(*_, **__):
        raise AssertionError("decoded whole")

    monkeypatch.setattr(parse, "decode_trace", refuse)
    monkeypatch.setenv("KINETOSCOPE_STREAM_ABOVE_BYTES", "0")
    assert len(parse.load_trace_file(path).events) == 44666
    monkeypatch.setenv("KINETOSCOPE_STREAM_ABOVE_BYTES", str(1 << 40))
    with pytest.raises(AssertionError, match="decoded whole"):
        parse.load_trace_file(path)


@pytest.mark.corpus
def test_files_of_a_few_tens_of_mb_are_streamed_where_workers_are_forks(monkeypatch, tmp_path):
    """With forked workers (~5 ms to start) and two cores, a file above 32 MB (the V100 sample
    gunzipped, 35 MB) is decoded on both cores; the same file gzipped (counted 8 × 1.2 MB), beside a
    server's threads (fresh interpreters, ~0.15 s each) or on one core, it is decoded whole."""
    monkeypatch.delenv("KINETOSCOPE_STREAM_ABOVE_BYTES", raising=False)
    path = str(sample("kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"))
    plain = tmp_path / "worker0.pt.trace.json"
    plain.write_bytes(gzip.decompress(open(path, "rb").read()))
    whole = parse.load_trace_file(path)
    for forks, workers, threshold in ((True, 2, 32 << 20), (False, 2, 64 << 20), (True, 1, 64 << 20)):
        monkeypatch.setattr(parse, "can_fork", lambda: forks)
        monkeypatch.setattr(parse, "default_workers", lambda: workers)
        assert parse.stream_above_bytes() == threshold
    monkeypatch.setattr(parse, "can_fork", lambda: True)
    monkeypatch.setattr(parse, "default_workers", lambda: 2)
    real_decode = parse.decode_trace
    monkeypatch.setattr(parse, "decode_trace", lambda *_, **__: pytest.fail("decoded whole"))
    streamed = parse.load_trace_file(str(plain))
    assert_same(streamed, whole)
    with pytest.raises(pytest.fail.Exception, match="decoded whole"):
        parse.load_trace_file(path)
    monkeypatch.setattr(parse, "decode_trace", real_decode)


@pytest.mark.parametrize(
    "doc, message",
    [
        (b'{"abc', "inside a key"),
        (b'{"' + b"k" * 5000, "inside a key"),  # longer than the first windows: they grow, then more is read
        (b'{"traceEvents": [], "k": [1, 2', "inside a top-level value"),
        (b'{"k": "' + b"v" * 300000, "inside a top-level value"),
    ],
)
def test_a_document_cut_in_its_top_level_is_left_to_the_whole_document_decoder(doc, message):
    """The scanner's growing windows end at the document's end with Unstreamable (the whole-document
    decoder then says what is wrong), for keys and values shorter and longer than a window."""
    with pytest.raises(Unstreamable, match=message):
        decode_stream(blocks_of(doc, 7), chunk_bytes=3)
    with pytest.raises(TraceReadError):
        decode_trace(doc)
