"""The ranged parse (trace/decode_ranges.py, trace/ranges.py): the decode workers read a local
uncompressed trace's events themselves. Its columns, strings, metadata and warnings must be byte for
byte those of the serial streamed parse and of the whole-document decoder, whatever the range cuts
fall on (strings holding ``}, {``, events larger than a range, keys after ``traceEvents``, the array
form, a byte order mark); what it cannot read (bare ``NaN``, a cut-off array) goes to the scanner."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from tb_plugin.trace import decode_ranges, ranges
from tb_plugin.trace.decode import decode_trace
from tb_plugin.trace.decode_stream import Unstreamable, decode_stream


class FileBlocks(list):
    """Blocks that are the file's own bytes (as storage.read.Blocks says of an uncompressed file)."""

    raw = True


def ev(name, ts, **args):
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": ts % 3, "ts": ts, "dur": 1, "args": args}


NAMES = ['a"},{"b', 'q\\"}, {"ph": "X"', "back\\\\", "}]", "x}, ", '{"ph":"E"}', "plain", "},\n{"]


def events(n: int = 400) -> list[dict]:
    out = [ev(NAMES[i % len(NAMES)], i, nested={"k": [i, {"deep": "}, {"}]}) for i in range(n)]
    out[7]["ph"] = "B"
    out[9]["ph"] = "E"
    out.insert(20, {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "p}, {"}})
    out.insert(50, {"ph": "C", "name": "mem", "pid": 1, "ts": 3, "args": {"v": 1}})
    return out


@pytest.fixture
def small_ranges(monkeypatch):
    """Ranges of a few KB and short cut windows, so a small document has many cuts; a spy on the
    second pass: ``used`` lists each ranged parse's unit count."""
    monkeypatch.setattr(decode_ranges, "MIN_EVENTS_BYTES", 0)
    monkeypatch.setattr(decode_ranges, "RANGE_BYTES", 3000)
    monkeypatch.setattr(ranges, "FIRST_WINDOW", 64)
    used: list[int] = []
    real = decode_ranges.RangedEvents._parse

    def spy(self, *args):
        end = real(self, *args)
        if end is not None:  # (the workers read the events)
            used.append(self.total)
        return end

    monkeypatch.setattr(decode_ranges.RangedEvents, "_parse", spy)
    return used


def parse(tmp_path, doc: bytes, workers: int, chunk: int = 4096):
    path = tmp_path / "t.pt.trace.json"
    path.write_bytes(doc)

    class Sink(io.BytesIO):
        in_place_path = str(path)

    sink = Sink()
    got = decode_stream(
        FileBlocks(doc[i : i + 1000] for i in range(0, len(doc), 1000)),
        events_sink=sink,
        workers=workers,
        chunk_bytes=chunk,
    )
    assert sink.getvalue() == b""  # events left in the file
    return got


def same(a, b, offsets: bool = True) -> None:
    assert a.strings == b.strings and a.meta == b.meta and a.warnings == b.warnings
    for table in ("events", "memory", "flows", "counters"):
        x, y = getattr(a, table).columns, getattr(b, table).columns
        assert x.keys() == y.keys()
        for key in x:
            if offsets or key not in ("src_offset", "src_length"):
                assert np.asarray(x[key]).tobytes() == np.asarray(y[key]).tobytes(), (table, key)


def check(tmp_path, doc: bytes, used: list[int], ranged: bool | None, chunk: int = 4096) -> None:
    """The ranged parse (2 workers) against the serial streamed parse and the whole document
    (``ranged``: whether the workers read the events; None: either)."""
    got = parse(tmp_path, doc, 2, chunk)
    assert ranged is None or bool(used) is ranged
    serial = parse(tmp_path, doc, 1, chunk)
    same(got, serial)
    for row in range(len(got.events)):  # each placed event names its own bytes
        o, n = int(got.events.src_offset[row]), int(got.events.src_length[row])
        if o >= 0:
            assert json.loads(doc[o : o + n])["ts"] == got.events.ts[row]
    got.meta.pop("events_in_place")
    same(got, decode_trace(doc), offsets=False)


@pytest.mark.parametrize("indent", [None, 1])
@pytest.mark.parametrize("separators", [(",", ":"), (", ", ": ")])
def test_cuts_inside_strings_and_any_separators(tmp_path, small_ranges, indent, separators):
    doc = json.dumps({"traceEvents": events()}, indent=indent, separators=separators).encode()
    check(tmp_path, doc, small_ranges, ranged=True)
    assert small_ranges[0] >= 1


def test_keys_before_and_after_the_events(tmp_path, small_ranges):
    doc = json.dumps(
        {
            "schemaVersion": 1,
            "deviceProperties": [{"id": 0, "name": "}, {"}],
            "traceEvents": events(),
            "distributedInfo": {"rank": 3, "world_size": 8},
            "traceName": "x}, {",
        }
    ).encode()
    check(tmp_path, doc, small_ranges, ranged=True)


def test_array_form_and_byte_order_mark(tmp_path, small_ranges):
    doc = b"\xef\xbb\xbf" + json.dumps(events()).encode()
    check(tmp_path, doc, small_ranges, ranged=True)


@pytest.mark.parametrize("blob, ranged", [("a}b, {" * 1500, True), ("}, {" * 2000, None)])
def test_events_larger_than_a_range(tmp_path, small_ranges, blob, ranged):
    """Ranges of 3 KB start and end inside 8 KB events; a blob of ``}, {}, {`` looks like elements
    to the cut finder: its range then fails to decode and the scanner reads the array."""
    big = events(60)
    for i in range(0, 60, 7):
        big[i]["args"]["blob"] = blob
    doc = json.dumps({"traceEvents": big}).encode()
    check(tmp_path, doc, small_ranges, ranged=ranged)


def test_many_batches_and_units(tmp_path, small_ranges, monkeypatch):
    monkeypatch.setattr("tb_plugin.trace.events.BATCH_EVENTS", 50)
    monkeypatch.setattr(decode_ranges, "BATCH_EVENTS", 50)
    monkeypatch.setattr("tb_plugin.trace.decode_stream.BATCH_EVENTS", 50)
    doc = json.dumps({"traceEvents": events(1200)}).encode()
    check(tmp_path, doc, small_ranges, ranged=True)
    assert small_ranges[0] > 3  # units of 1, 2 then 4 batches


def test_bare_nan_goes_to_the_scanner(tmp_path, small_ranges):
    doc = json.dumps({"traceEvents": events()}).encode().replace(b'"ts": 200,', b'"ts": 200, "x": NaN,', 1)
    assert b"NaN" in doc
    got = parse(tmp_path, doc, 2)
    assert not small_ranges  # the workers' range answer said no: the main process scanned
    same(got, parse(tmp_path, doc, 1))


def test_cut_off_array_goes_to_the_scanner(tmp_path, small_ranges):
    doc = json.dumps(events()).encode()[:-300]
    got = parse(tmp_path, doc, 2)
    assert not small_ranges and got.warnings  # recovered by the scanner, with its warning
    same(got, parse(tmp_path, doc, 1))


def test_a_range_that_does_not_decode_goes_to_the_scanner(tmp_path, small_ranges):
    evs = events()
    doc = json.dumps({"traceEvents": evs}).encode()
    at = doc.index(b'"ts": 250,')
    doc = doc[:at] + b'"ts": 250 "oops": 1,' + doc[at + len(b'"ts": 250,') :]  # invalid JSON in one event
    for workers in (2, 1):  # the scanner's verdict either way: decode the whole document (its errors)
        with pytest.raises(Unstreamable):
            parse(tmp_path, doc, workers)
    assert not small_ranges


def test_small_documents_are_scanned_by_the_main_process(tmp_path, monkeypatch):
    monkeypatch.setattr(ranges, "FIRST_WINDOW", 64)
    doc = json.dumps({"traceEvents": events(50)}).encode()
    calls = []
    monkeypatch.setattr(decode_ranges.RangedEvents, "_parse", lambda *a: calls.append(a))
    got = parse(tmp_path, doc, 2)
    assert not calls  # under MIN_EVENTS_BYTES
    same(got, parse(tmp_path, doc, 1))


def test_subprocess_workers_read_ranges_too(tmp_path, small_ranges, monkeypatch):
    """Where a fork is not safe (a threaded server) the workers are ``python -c`` processes: the same
    calls, pickled through their pipes."""
    monkeypatch.setattr("tb_plugin.trace.decode_workers.can_fork", lambda: False)
    doc = json.dumps({"traceEvents": events()}).encode()
    check(tmp_path, doc, small_ranges, ranged=True)


@pytest.mark.parametrize("phase", ["first", "second"])
def test_a_worker_that_dies_leaves_its_work_to_this_process(tmp_path, small_ranges, monkeypatch, phase):
    """An answer never comes (in the first pass, or the second): what is left is computed here, and
    the columns are the same."""
    from tb_plugin.trace import decode_workers

    real_receive, real_next = decode_workers.Workers.receive, decode_ranges._Plan.next_unit
    armed = [phase == "first"]
    planned = []

    def receive(self, i):
        if armed[0]:
            armed[0] = False
            self.broken = True
            raise decode_workers.WorkerDied("gone")
        return real_receive(self, i)

    def next_unit(self):
        got = real_next(self)
        if isinstance(got, tuple) and not planned:  # the second pass's first unit
            planned.append(1)
            armed[0] = phase == "second"
        return got

    monkeypatch.setattr(decode_workers.Workers, "receive", receive)
    monkeypatch.setattr(decode_ranges._Plan, "next_unit", next_unit)
    doc = json.dumps({"traceEvents": events(600)}).encode()
    check(tmp_path, doc, small_ranges, ranged=None)
    assert not armed[0]  # it died


def test_the_whole_report_is_the_same_on_one_worker_and_on_two(tmp_path, monkeypatch, runner_threads_fork_safe):
    """``kinetoscope report --json`` of a local uncompressed trace: decoded inline with every section
    here, and by the ranged parse with the sections split over a forked child: the same document."""
    import contextlib
    import gzip
    import os

    from tb_plugin.cli import main
    from tb_plugin.registry.executors import sections

    sample = os.path.join(os.path.dirname(__file__), "..", "..", "..", "samples", "gpu_transformer_bf16")
    run = tmp_path / "logdir" / "run"
    run.mkdir(parents=True)
    with gzip.open(os.path.join(sample, "h200.1795664832269.pt.trace.json.gz")) as f:
        (run / "h200.1795664832269.pt.trace.json").write_bytes(f.read())
    monkeypatch.setattr(decode_ranges, "MIN_EVENTS_BYTES", 0)
    monkeypatch.setattr(decode_ranges, "RANGE_BYTES", 64 << 10)
    monkeypatch.setattr(sections, "FORK_ABOVE_ITEMS", 0)
    monkeypatch.setattr(sections, "_memory_for_a_child", lambda: True)
    monkeypatch.setenv("KINETOSCOPE_STREAM_ABOVE_BYTES", "0")
    forks, ranged = [], []
    real_fork, real_parse = sections.SectionFork.__init__, decode_ranges.RangedEvents._parse
    monkeypatch.setattr(
        sections.SectionFork, "__init__", lambda self, *a, **k: forks.append(1) or real_fork(self, *a, **k)
    )
    monkeypatch.setattr(decode_ranges.RangedEvents, "_parse", lambda self, *a: ranged.append(1) or real_parse(self, *a))
    documents = []
    for workers in ("1", "2"):
        monkeypatch.setenv("KINETOSCOPE_DECODE_WORKERS", workers)
        monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path / f"cache{workers}"))
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            assert main(["report", str(tmp_path / "logdir"), "--json"]) == 0
        documents.append(out.getvalue())
        assert (len(forks), len(ranged)) == ((0, 0) if workers == "1" else (1, 1))
    assert documents[0] == documents[1]


def test_ranges_offsets_in_order_checked_range_by_range():
    a = np.array([5, 9, 12], dtype=np.int64)
    empty = np.zeros(0, dtype=np.int64)
    assert decode_ranges._in_order([a, empty, np.array([13, 40], dtype=np.int64)], 5)
    assert decode_ranges._in_order([empty, empty], 0)
    assert not decode_ranges._in_order([a], 6)  # the first event before the array's first element
    assert not decode_ranges._in_order([a, empty, np.array([12, 40], dtype=np.int64)], 0)  # across ranges
    assert not decode_ranges._in_order([np.array([1, 3, 3], dtype=np.int64)], 0)  # within one
    assert not decode_ranges._in_order([np.array([1, 4, 2], dtype=np.int64)], 0)


def test_a_range_scanned_in_the_buffer_of_an_earlier_one_is_the_same(tmp_path):
    """The first pass's buffer is kept from one range to the next (grown, never shrunk): each range's
    events, scanned after larger and smaller ranges and after a range that does not decode, are those
    of a fresh process's scan; the buffer is freed by drop_buffer."""
    doc = json.dumps({"traceEvents": events(300)}).encode()
    path = tmp_path / "t.pt.trace.json"
    path.write_bytes(doc)
    bad = tmp_path / "bad.pt.trace.json"
    bad.write_bytes(doc.replace(b'"ph": "X"', b'"ph": X', 5))
    start = doc.index(b"[") + 1
    bounds = [(start, 9000), (start, 30000), (9000, 12000), (12000, 40000)]
    fresh = []
    for lo, hi in bounds:
        ranges.drop_buffer()
        fresh.append(ranges.scan_range(str(path), 0, lo, hi, lo == start, 4096))
    assert all(got["ok"] and len(got["offsets"]) for got in fresh)
    assert not ranges.scan_range(str(bad), 0, start, 30000, True, 4096)["ok"]
    for (lo, hi), want in zip(bounds[::-1], fresh[::-1]):
        got = ranges.scan_range(str(path), 0, lo, hi, lo == start, 4096)
        assert (
            got["offsets"].tolist() == want["offsets"].tolist() and got["lengths"].tolist() == want["lengths"].tolist()
        )
        assert got["next"] == want["next"]
    assert len(ranges._buffer) >= 30000 - start
    ranges.drop_buffer()
    assert len(ranges._buffer) == 0


@pytest.mark.parametrize("last_single", [0, 3])
@pytest.mark.parametrize("per_range", [[0, 5, 0], [7], [3, 0, 4, 9, 1], [0], [0, 0], [50, 50, 1], [2, 2, 2, 2]])
def test_units_planned_range_by_range_are_the_streamed_parses(monkeypatch, per_range, last_single):
    """The second pass's units, planned as each range's events are taken: the streamed parse's units
    (1, 2, then 4 batches; the last ``last_single`` batches one per unit), with the same events, whatever
    the ranges' sizes; PENDING while a unit's events are not all known; nothing planned after a range fails."""
    monkeypatch.setattr(decode_ranges, "BATCH_EVENTS", 2)
    start, offset, answers = 10, 10, []
    for i, n in enumerate(per_range):
        offsets = np.arange(offset, offset + 3 * n, 3, dtype=np.int64)
        offset += 3 * n + 1
        answers.append({"ok": True, "offsets": offsets, "lengths": np.full(n, 2, dtype=np.int32), "end": offset})
    plan = decode_ranges._Plan(start, len(answers), (1, 2), 4, last_single)
    planned = []
    for answer in answers:
        assert plan.next_unit() is decode_ranges.PENDING
        plan.add(answer)
        while (got := plan.next_unit()) not in (None, decode_ranges.PENDING):
            planned.append(got)
    assert plan.next_unit() is None and plan.end == offset
    total = sum(per_range)
    want = list(decode_ranges._units(total, (1, 2), 4, last_single))
    assert [sizes for sizes, _, _ in planned] == want and plan.total == len(want)
    batches, at = -(-total // 2), 0  # (a unit begun within the last ``last_single`` batches: one batch)
    for sizes in want:  # (and no unit runs into them)
        assert len(sizes) == 1 or at + len(sizes) <= batches - last_single
        at += len(sizes)
    tail = min(last_single, len(want))
    assert at == batches and [len(sizes) for sizes in want[len(want) - tail :]] == [1] * tail
    every = np.concatenate([a["offsets"] for a in answers])
    assert np.concatenate([o for _, o, _ in planned] or [every[:0]]).tolist() == every.tolist()
    assert all(len(o) == len(n) == sum(s) for s, o, n in planned)

    failing = decode_ranges._Plan(start, 2, (1, 2), 4)
    failing.add(answers[0])
    failing.add({"ok": False})
    assert failing.failed and failing.next_unit() is None and failing.end is None
