"""The non-``X`` events of a batch, read a phase group at a time (``trace/other_events.py``), give the
rows the event-by-event reading gave, known by construction: only ``[memory]`` instants with args
become memory rows, only ``fwdbwd`` flows become flow rows, each in the batch's order, with hostile
names and phases left out rather than crashing, and metadata and ``B``/``E`` events still read."""

from __future__ import annotations

import orjson

from tb_plugin.trace.decode import decode_trace
from tb_plugin.trace.events import BATCH_EVENTS


def _memory(ts: float, nbytes: int, **extra) -> dict:
    args = {"Bytes": nbytes, "Addr": 4096 + nbytes, "Total Allocated": 10 * nbytes, "Device Type": 1, "Device Id": 0}
    return {"ph": "i", "name": "[memory]", "pid": 1, "tid": 2, "ts": ts, "args": args, **extra}


def _events() -> list[dict]:
    out: list[dict] = []
    for i in range(3):
        out.append({"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 2, "ts": 10.0 * i, "dur": 5.0})
        out.append(_memory(10.0 * i + 1, 100 + i))
        out.append({"ph": "s", "cat": "fwdbwd", "id": i, "pid": 1, "tid": 2, "ts": 10.0 * i + 2})
        out.append({"ph": "f", "cat": "fwdbwd", "id": i, "pid": 1, "tid": 3, "ts": 10.0 * i + 3, "bp": "e"})
        out.append({"ph": "s", "cat": "ac2g", "id": 100 + i, "pid": 1, "tid": 2, "ts": 10.0 * i + 4})
    out += [
        {"ph": "I", "name": "[memory]", "pid": 1, "tid": 2, "ts": 40.0, "args": {"Bytes": -100}},
        {"ph": "i", "name": "[memory]", "pid": 1, "tid": 2, "ts": 41.0},  # no args: not a memory row
        {"ph": "i", "name": ["[memory]"], "pid": 1, "tid": 2, "ts": 42.0, "args": {"Bytes": 7}},  # a list name
        {"ph": "i", "name": "marker", "pid": 1, "tid": 2, "ts": 43.0, "args": {"Bytes": 8}},
        {"ph": "t", "cat": "fwdbwd", "id": 9, "pid": 1, "tid": 4, "ts": 44.0},
        {"ph": "f", "cat": ["fwdbwd"], "id": 10, "pid": 1, "tid": 4, "ts": 45.0},  # a list category
        {"ph": ["i"], "name": "[memory]", "pid": 1, "tid": 2, "ts": 46.0, "args": {"Bytes": 9}},  # a list phase
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "trainer"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "main"}},
        {"ph": "B", "cat": "cpu_op", "name": "outer", "pid": 1, "tid": 5, "ts": 50.0},
        {"ph": "E", "pid": 1, "tid": 5, "ts": 58.0},
    ]
    return out


def test_memory_rows_are_the_memory_instants_with_args_in_order():
    tr = decode_trace(orjson.dumps({"traceEvents": _events()}))
    mem = tr.memory
    assert mem.ts.tolist() == [1.0, 11.0, 21.0, 40.0]
    assert mem.bytes.tolist() == [100, 101, 102, -100]
    assert mem.addr.tolist() == [4196, 4197, 4198, -1]
    assert mem.total_allocated.tolist() == [1000, 1010, 1020, -1]
    assert mem.device_type.tolist() == [1, 1, 1, -1]
    assert {tr.strings[p] for p in mem.pid.tolist()} == {"1"}


def test_flow_rows_are_the_fwdbwd_flows_in_order():
    tr = decode_trace(orjson.dumps({"traceEvents": _events()}))
    flows = tr.flows
    assert flows.id.tolist() == [0, 0, 1, 1, 2, 2, 9]
    assert flows.phase.tolist() == [0, 1, 0, 1, 0, 1, 1]
    assert flows.ts.tolist() == [2.0, 3.0, 12.0, 13.0, 22.0, 23.0, 44.0]
    assert [tr.strings[t] for t in flows.tid.tolist()] == ["2", "3", "2", "3", "2", "3", "4"]


def test_metadata_and_begin_end_are_still_read():
    tr = decode_trace(orjson.dumps({"traceEvents": _events()}))
    assert tr.meta["process_names"] == {"1": "trainer"}
    assert tr.meta["thread_names"] == {"1/2": "main"}
    names = [tr.strings[n] for n in tr.events.name.tolist()]
    assert sorted(names) == ["op0", "op1", "op2", "outer"]
    assert tr.events.dur[names.index("outer")] == 8.0


def test_rows_across_batches_keep_the_document_order():
    """Memory instants and flows in several batches, each batch mixing them with complete events."""
    events = []
    for i in range(BATCH_EVENTS + 10):
        events.append(
            _memory(float(i), i + 1) if i % 3 == 0 else {"ph": "X", "cat": "k", "name": "x", "ts": i, "dur": 1}
        )
        if i % 5 == 0:
            events.append({"ph": "s" if i % 2 else "f", "cat": "fwdbwd", "id": i, "pid": 0, "tid": 0, "ts": float(i)})
    tr = decode_trace(orjson.dumps(events))
    expected = [i + 1 for i in range(BATCH_EVENTS + 10) if i % 3 == 0]
    assert tr.memory.bytes.tolist() == expected
    flow_ids = [i for i in range(BATCH_EVENTS + 10) if i % 5 == 0]
    assert tr.flows.id.tolist() == flow_ids
    assert tr.flows.phase.tolist() == [0 if i % 2 else 1 for i in flow_ids]
