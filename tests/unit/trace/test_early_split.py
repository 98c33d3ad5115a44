"""The early reader's split (trace/early_split.py): a document split into joined batches in one process
(``write_split``, numpy never imported) and read back in another (``read_split``) decodes into the same
trace, the same events side file (bytes and offsets) and the same top-level fields as the document split
here, serially or in halves; a document the child does not split that way, or a file that does not hold a
whole split, is split here as before."""

from __future__ import annotations

import io
import json
import mmap
import os
import subprocess
import sys

import pytest
from test_decode_halves import forks, mixed_events  # noqa: F401 (forks: a fixture)
from test_decode_stream import assert_same

from tb_plugin.trace import decode
from tb_plugin.trace.batching import join_batch
from tb_plugin.trace.decode import decode_trace
from tb_plugin.trace.early_split import read_split, write_split
from tb_plugin.trace.errors import TraceReadError
from tb_plugin.trace.events import _OBJECT_DECODER, BATCH_EVENTS

pytestmark = pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="no memory files")


def _split_file(doc: bytes) -> mmap.mmap | None:
    """What write_split writes for ``doc``, mapped as the main process maps it (None: nothing written)."""
    fd = os.memfd_create("test-split")
    try:
        wrote = write_split(doc, fd)
        size = os.fstat(fd).st_size
        assert wrote == (size > 0)
        return mmap.mmap(fd, size, prot=mmap.PROT_READ) if size else None
    finally:
        os.close(fd)


def _document(groups: int, indent: int | None = 2) -> bytes:
    top = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "V100", "totalGlobalMem": 1 << 35}]}
    return json.dumps({**top, "traceEvents": mixed_events(groups), "traceName": "t"}, indent=indent).encode()


@pytest.mark.parametrize("groups", [7, BATCH_EVENTS // 3, 2 * BATCH_EVENTS + 11])
@pytest.mark.parametrize("halves", [False, True])
def test_the_split_decodes_as_the_document_split_here(forks, monkeypatch, groups, halves):  # noqa: F811
    doc = _document(groups)
    split = read_split(_split_file(doc))
    assert split is not None
    head = _OBJECT_DECODER.decode(doc)
    raws = head.traceEvents
    assert split.events == len(raws) and len(split.batches) == -(-len(raws) // BATCH_EVENTS)
    for k, batch in enumerate(split.batches):  # the same joins, each event placed where its join puts it
        assert bytes(batch.joined) == join_batch(raws[k * BATCH_EVENTS : (k + 1) * BATCH_EVENTS])
        assert [bytes(batch.joined[s : s + n]) for s, n in zip(batch.starts, batch.lengths)] == [
            bytes(r) for r in raws[k * BATCH_EVENTS : (k + 1) * BATCH_EVENTS]
        ]
    assert split.top == {f: getattr(head, f) for f in head.__struct_fields__ if f != "traceEvents"}
    ref_sink, sink = io.BytesIO(), io.BytesIO()
    ref = decode_trace(doc, events_sink=ref_sink, halves=halves)
    monkeypatch.setattr(decode, "_split", None)  # (never split here again)
    got = decode_trace(doc, events_sink=sink, halves=halves, split=split)
    assert_same(ref, got)
    assert sink.getvalue() == ref_sink.getvalue() and len(sink.getvalue()) > len(doc) // 2
    assert got.meta == ref.meta and got.devices  # (the top-level fields came through the header)


@pytest.mark.parametrize(
    "doc",
    [
        json.dumps(mixed_events(20)).encode(),  # the array form
        b'\xef\xbb\xbf{"traceEvents": []}',  # a byte order mark
        b'{"traceEvents": [{"ph": "X"}, ',  # cut off
        b'{"traceEvents": [{"ph": "X", "ts": NaN}]}',  # a bare NaN
        b'{"schemaVersion": 1}',  # no events
        b'{"traceEvents": {"ph": "X"}}',  # not a list
    ],
)
def test_other_documents_are_not_split_by_the_child(doc):
    assert _split_file(doc) is None


def test_a_file_without_a_whole_split_is_refused():
    whole = _split_file(_document(BATCH_EVENTS + 5))
    assert whole is not None
    data = bytes(whole)
    for cut in (data[:-1], data[:-9], data[: len(data) // 2], data[1:], b"\0" * 8, b""):
        fd = os.memfd_create("test-cut")
        os.write(fd, cut)
        got = mmap.mmap(fd, len(cut), prot=mmap.PROT_READ) if cut else None
        os.close(fd)
        assert got is None or read_split(got) is None


def test_a_split_is_ignored_for_a_document_it_cannot_be_of():
    doc = _document(30)
    split = read_split(_split_file(doc))
    marked = b"\xef\xbb\xbf" + doc  # (the child never splits one)
    assert_same(decode_trace(marked), decode_trace(marked, split=split))
    with pytest.raises(TraceReadError):
        decode_trace(b"[{", split=split)


def test_the_child_never_imports_numpy():
    code = (
        "import sys, os\n"
        "from tb_plugin.trace.early_split import write_split\n"
        "fd = os.memfd_create('t')\n"
        'assert write_split(b\'{"traceEvents": [{"ph": "X"}]}\', fd)\n'
        "print('numpy' in sys.modules)\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    got = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=root)
    )
    assert got.returncode == 0 and got.stdout.strip() == "False", got.stderr


def test_short_writes_are_completed(monkeypatch):
    doc = _document(BATCH_EVENTS + 600)
    whole = _split_file(doc)
    monkeypatch.setattr(os, "writev", lambda fd, parts: os.write(fd, bytes(parts[0])[:1]))  # one byte a call
    short = _split_file(doc)
    assert whole is not None and short is not None and bytes(short) == bytes(whole)


def test_odd_events_decode_as_the_document_split_here():
    events = mixed_events(40)
    events[3:3] = [17, "text", None, {"ph": "X", "ts": "late", "dur": [1]}, [], {"ph": "C", "args": 5}]
    doc = json.dumps({"traceEvents": events}).encode()
    split = read_split(_split_file(doc))
    assert split is not None and split.events == len(events)
    ref_sink, sink = io.BytesIO(), io.BytesIO()
    ref = decode_trace(doc, events_sink=ref_sink)
    assert_same(ref, decode_trace(doc, events_sink=sink, split=split))
    assert sink.getvalue() == ref_sink.getvalue()
