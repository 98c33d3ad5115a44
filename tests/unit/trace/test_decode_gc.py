"""The decoder pauses the cyclic garbage collector per batch (trace/heap.gc_paused) and always gives it
back in the state it found it: enabled stays enabled, disabled (by the host program) stays disabled,
also when the decode fails. The decoded event structs are never tracked by the collector at all."""

from __future__ import annotations

import gc
import json
import pickle

import msgspec
import pytest

from tb_plugin.trace.decode import decode_trace
from tb_plugin.trace.errors import TraceReadError
from tb_plugin.trace.events import _BATCH_DECODER, _NO_RAW, _ONE_DECODER
from tb_plugin.trace.heap import gc_paused

DOC = json.dumps(
    {
        "traceEvents": [
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": f"op{i}",
                "pid": 1,
                "tid": 1,
                "ts": i,
                "dur": 1,
                "args": {"External id": i},
            }
            for i in range(25_000)
        ]
    }
).encode()


@pytest.fixture
def restore_gc():
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


def test_decode_leaves_the_collector_as_it_found_it(restore_gc):
    gc.enable()
    trace = decode_trace(bytearray(DOC))
    assert gc.isenabled() and len(trace.events) == 25_000
    gc.disable()
    decode_trace(bytearray(DOC))
    assert not gc.isenabled()


def test_paused_inside_and_enabled_again_after_an_error(restore_gc):
    gc.enable()
    with pytest.raises(ZeroDivisionError):
        with gc_paused():
            assert not gc.isenabled()
            raise ZeroDivisionError("inside the pause")
    assert gc.isenabled()
    with pytest.raises(TraceReadError):
        decode_trace(bytearray(b'{"traceEvents": 5}'))
    assert gc.isenabled()


def test_decoded_events_are_untracked_and_share_the_empty_raw():
    """Events and their args are not the collector's (gc=False: they hold JSON values only, no cycle);
    an absent raw arg is the one shared empty Raw; a struct still pickles back equal (a decode worker's
    begin/end rows carry their args to the main process)."""
    events = _BATCH_DECODER.decode(
        b'[{"ph": "B", "name": "a", "args": {"Input Dims": [[2, 3]], "grid": [1, 2, 3], "x": {"y": [1]}}},'
        b' {"ph": "X", "args": {}}, {"ph": "E"}]'
    )
    loose = _ONE_DECODER.decode(b'{"ph": "X", "args": [1, {"a": 2}]}')
    for ev in (*events, loose):
        assert not gc.is_tracked(ev)
    assert not gc.is_tracked(events[0].args) and not gc.is_tracked(events[1].args)
    assert bytes(events[0].args.input_dims) == b"[[2, 3]]" and events[0].args.grid == [1, 2, 3]
    for raw in (events[1].args.input_dims, events[1].args.input_dims_old, events[1].args.input_types):
        assert raw is _NO_RAW and isinstance(raw, msgspec.Raw) and len(raw) == 0
    again = pickle.loads(pickle.dumps(events[0].args, protocol=pickle.HIGHEST_PROTOCOL))
    assert again == events[0].args and bytes(again.input_dims) == b"[[2, 3]]"
