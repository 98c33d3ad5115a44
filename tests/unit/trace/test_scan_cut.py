"""The scanner's cut (trace/scan.py ``_cut``): the first cut past a chunk's size is decoded before the
array's close is searched for. When the array closes inside the chunk, that cut lies in the keys after
it and must fail, so the chunk ends at the close: every chunk size gives the whole-document trace."""

from __future__ import annotations

import json

import pytest

from tb_plugin.trace.decode import decode_trace
from tb_plugin.trace.decode_stream import decode_stream
from tb_plugin.trace.scan import Source, scan_document

EVENTS = [
    {
        "ph": "X",
        "name": "op" + str(i) + ('"}, {' if i % 3 == 0 else ""),
        "cat": "cpu_op",
        "pid": 1,
        "tid": 1,
        "ts": i,
        "dur": 1,
        "args": {"l": [{"a": i}]} if i % 5 == 0 else {"a": i},
    }
    for i in range(40)
]
# after the events: objects in lists, "}," and "}]" where a cut past the array's close would land
# (longer than the events: a chunk that holds the close has its first cut past its size among them)
AFTER = {"deviceProperties": [{"id": i, "x": [{"y": 2}, {"z": 3}]} for i in range(200)], "distributedInfo": {"rank": 0}}


def _document() -> bytes:
    return json.dumps({"traceEvents": EVENTS, **AFTER}).encode()


@pytest.mark.parametrize("chunk", [1, 40, 97, 300, 1000, 4000, 1 << 20])
def test_every_chunk_size_reads_every_event_and_the_keys_after(chunk):
    data = _document()
    facts: dict = {}
    got = [raw for raws in scan_document(Source([data], max_carry=1 << 24), chunk, facts) for raw in raws]
    assert len(got) == len(EVENTS)
    assert [json.loads(bytes(r)) for r in got] == EVENTS
    assert json.loads(facts["top"]) == AFTER


@pytest.mark.parametrize("chunk", [97, 1000])
def test_streamed_in_small_blocks_is_the_whole_document(chunk):
    data = _document()
    ref = decode_trace(data)
    blocks = [data[i : i + 53] for i in range(0, len(data), 53)]
    got = decode_stream(blocks, chunk_bytes=chunk)
    assert got.strings == ref.strings and got.meta == ref.meta
    for key, col in ref.events.columns.items():
        assert col.dtype == got.events.columns[key].dtype and col.tobytes() == got.events.columns[key].tobytes(), key
