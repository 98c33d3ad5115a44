"""One definition per number (issue 16): each quantity is computed in one place, and the places that
used to compute it separately (the Overview and the Trace view's counters, the Memory view, the
recommendations, the CLI) now give the same numbers. Traces are written here, values known."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tb_plugin.trace.decode import decode_trace


def _trace(events: list[dict], **top) -> bytes:
    return json.dumps(dict({"traceEvents": events}, **top)).encode()


def test_trace_memo_computes_once_and_keeps_none():
    trace = decode_trace(_trace([{"ph": "X", "name": "op", "cat": "cpu_op", "ts": 0, "dur": 5, "pid": 1, "tid": 1}]))
    calls = []
    assert trace.memo("k", lambda: calls.append(1) or 42) == 42
    assert trace.memo("k", lambda: calls.append(1) or 0) == 42 and calls == [1]
    assert trace.memo("none", lambda: calls.append(2)) is None
    assert trace.memo("none", lambda: calls.append(2)) is None and calls == [1, 2]
    assert trace.derived["k"] == 42
