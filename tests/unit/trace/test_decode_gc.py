"""The decoder pauses the cyclic garbage collector per batch (trace/heap.gc_paused) and always gives it
back in the state it found it: enabled stays enabled, disabled (by the host program) stays disabled,
also when the decode fails."""

from __future__ import annotations

import gc
import json

import pytest

from tb_plugin.trace.decode import decode_trace
from tb_plugin.trace.errors import TraceReadError
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
