"""The ranged parse's second pass decodes its batches without splitting them into raw events again
(trace/placed_raws.py): the first pass's starts and lengths stand in for the split, which is made only
when a raw event is asked for (counters, an event that does not decode) or the placement does not agree
with the batch (the file changed between the passes). Each way, the decoded state is the split's."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tb_plugin.trace import placed_raws as pr
from tb_plugin.trace.decode_workers import decode_batch
from tb_plugin.trace.events import _RAW_LIST
from tb_plugin.trace.placed_raws import PlacedRaws, raw_lengths

X = [{"ph": "X", "cat": "kernel", "name": f"k{i % 3}", "pid": 0, "tid": 7, "ts": i, "dur": 2} for i in range(40)]
OTHERS = [
    {"ph": "C", "name": "mem", "pid": 0, "ts": 3, "args": {"a": 1, "b": 2.5}},
    {"ph": "i", "name": "[memory]", "pid": 0, "tid": 1, "ts": 4, "args": {"Bytes": 64, "Addr": 9}},
    {"ph": "B", "name": "b", "pid": 1, "tid": 2, "ts": 5},
    {"ph": "E", "pid": 1, "tid": 2, "ts": 9},
    {"ph": "s", "id": 4, "pid": 0, "tid": 7, "ts": 6, "cat": "ac2g", "name": "f"},
    {"ph": "X", "name": "bad args", "pid": 0, "tid": 7, "ts": 7, "dur": 1, "args": [1, 2]},
    {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "p"}},
]


def _batch(events: list, blanks: bytes) -> bytes:
    """``[`` + the events joined by a comma and ``blanks`` (as a file spaces them) + ``]``."""
    return b"[" + (b"," + blanks).join(json.dumps(e).encode() for e in events) + b"]"


def _placement(joined: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Each raw event's start in ``joined`` and its length, as the first pass finds them."""
    raws = _RAW_LIST.decode(joined)
    starts, at = [], 0
    for raw in raws:
        at = joined.index(bytes(raw), at)
        starts.append(at)
        at += len(raw)
    return np.array(starts, dtype=np.int64), np.array([len(r) for r in raws], dtype=np.int32)


def _same_state(a: dict, b: dict) -> None:
    assert a["keys"] == b["keys"] and a["texts"] == b["texts"]
    for key in ("begin_end", "memory_parts", "flow_rows", "counter_rows", "phase_counts", "bad_args", "bad_events"):
        assert repr(a[key]) == repr(b[key]), key
    assert a["sink_pos"] == b["sink_pos"]
    for key, chunks in a["chunks"].items():
        for x, y in zip(chunks, b["chunks"][key], strict=True):
            assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), key


@pytest.mark.parametrize("blanks", [b"", b"\n  ", b" "])
@pytest.mark.parametrize("events", [X, X[:20] + OTHERS + X[20:]], ids=["complete", "mixed"])
def test_placed_batches_decode_as_split_ones(blanks, events):
    batches = [_batch(events[:25], blanks), _batch(events[25:], blanks)]
    placed = [_placement(b) for b in batches]
    for sink in (False, True):
        _same_state(decode_batch(batches, sink, spaced=True, placed=placed), decode_batch(batches, sink, spaced=True))


def test_a_batch_of_plain_events_is_not_split_again(monkeypatch):
    joined = _batch(X, b"\n")
    raws = PlacedRaws(joined, *_placement(joined))
    monkeypatch.setattr(pr, "_RAW_LIST", None)  # (a split would fail here)
    decode_batch([joined], True, spaced=True, placed=[(raws.starts, raws.lengths)])
    assert raws._raws is None and raw_lengths(raws).tolist() == [len(json.dumps(e)) for e in X]


def test_a_counter_is_read_from_the_split():
    joined = _batch(X[:3] + OTHERS[:1], b"")
    raws = PlacedRaws(joined, *_placement(joined))
    assert raws[3] == _RAW_LIST.decode(joined)[3] and raws._raws is not None


@pytest.mark.parametrize(
    "wrong",
    [
        lambda s, n: (s[:-1], n[:-1]),  # one event fewer than the batch holds
        lambda s, n: (s + 1, n),  # every start one byte late
        lambda s, n: (s, n - 1),  # every event one byte short
        lambda s, n: (s, n + 10**6),  # past the batch's end
    ],
)
def test_a_placement_that_does_not_agree_is_replaced_by_the_split(wrong):
    """A file that changed between the passes: the batch is split and decoded as before (and its lengths
    are the split's), never a crash or a misplaced column."""
    batches = [_batch(X[:20] + OTHERS[2:4] + X[20:], b" ")]
    starts, lengths = _placement(batches[0])
    _same_state(
        decode_batch(batches, True, spaced=True, placed=[wrong(starts, lengths)]),
        decode_batch(batches, True, spaced=True),
    )


def test_a_units_batches_are_read_each_into_its_own_buffer(tmp_path):
    """``ranges.span_batches``: each batch is ``[`` + the file's bytes from its first event's start to its
    last event's end + ``]`` (read straight into its buffer: the unit is not read whole and copied), an
    empty batch ``[]``; a file that ends before a batch's last event is refused as before."""
    from tb_plugin.trace import ranges
    from tb_plugin.trace.errors import TraceReadError

    head = b'\xef\xbb\xbf{"traceEvents": ['
    body = _batch(X[:30], b"\n  ")[1:-1]
    path = tmp_path / "t.json"
    path.write_bytes(head + body + b"]}")
    starts, lengths = _placement(b"[" + body + b"]")
    offsets = starts - 1 + len(head) - 3  # (document offsets: past the byte order mark)
    sizes = [10, 0, 15, 5]
    got = ranges.span_batches(str(path), 3, offsets, lengths, sizes)
    text, want, k = path.read_bytes()[3:], [], 0
    for size in sizes:
        first, last = k, k + size - 1
        want.append(b"[" + text[offsets[first] : offsets[last] + lengths[last]] + b"]" if size else b"[]")
        k += size
    assert [bytes(b) for b in got] == want
    path.write_bytes(head + body[:-40])
    with pytest.raises(TraceReadError, match="shrank"):
        ranges.span_batches(str(path), 3, offsets, lengths, sizes)
