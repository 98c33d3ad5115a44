"""The non-``X`` events of a batch, read a phase group at a time (``trace/other_events.py``), give the
rows the event-by-event reading gave, known by construction: only ``[memory]`` instants with args
become memory rows, only ``fwdbwd`` flows become flow rows, each in the batch's order, with hostile
names and phases left out rather than crashing, and metadata and ``B``/``E`` events still read."""

from __future__ import annotations

import numpy as np
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


def test_memory_pids_and_tids_keep_the_ids_of_interning_every_value_in_turn(monkeypatch):
    """Each batch sends its memory events' pids and tids as distinct values and codes (``coded``): the
    finish still gives them the string ids, in the order, of interning every pid and then every tid in
    turn (texts no event named before it), whatever the batches and workers; a list pid is its text."""
    from tb_plugin.trace import decode_stream as ds
    from tb_plugin.trace.decode_stream import decode_stream

    monkeypatch.setattr(ds, "UNIT_BATCHES", 1)
    monkeypatch.setattr(ds, "FIRST_UNITS", ())
    monkeypatch.setattr(ds, "BATCH_EVENTS", 4)
    pids = [1, "p9", 1, 7, "7", [3, 4], "p9", 8, True, 7, "p10", 8]
    tids = ["t1", 2, "t1", "t3", 2, "t4", "t4", "t1", "t5", 2, "t6", "t3"]
    events = [{"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 2, "ts": 0.0, "dur": 1.0}]
    for i, (pid, tid) in enumerate(zip(pids, tids)):
        events.append({**_memory(100.0 - i, i + 1), "pid": pid, "tid": tid})  # newest first: rows reversed
    body = orjson.dumps({"traceEvents": events})
    whole = decode_trace(body)
    chunks = [body[i : i + 64] for i in range(0, len(body), 64)]
    for workers in (1, 2):
        tr = decode_stream(chunks, workers=workers, chunk_bytes=96)
        assert tr.strings == whole.strings
        # after "cpu_op", "op", "1", "2": the new pids, then the new tids, each in first-occurrence order
        assert tr.strings[-11:] == ["p9", "7", "7", "[3, 4]", "8", "p10", "t1", "t3", "t4", "t5", "t6"]
        mem = tr.memory
        assert mem.bytes.tolist() == list(range(len(pids), 0, -1))
        # 7 and "7" (and 1 and True) name one text: the finish keeps the first id of a text
        assert [tr.strings[p] for p in mem.pid.tolist()] == [str(p) if p is not True else "1" for p in pids][::-1]
        assert [tr.strings[t] for t in mem.tid.tolist()] == [str(t) for t in tids][::-1]


def test_coded_values_rebuild_the_list():
    from tb_plugin.trace.other_events import coded

    values = [3, "a", 3, None, 3.0, "a", True, [1, 2], "b"]
    distinct, codes = coded(values)
    # a dict's keys: 3.0 is 3 (its first form kept); the unhashable list as its text
    assert codes.dtype == np.int32
    assert distinct == [3, "a", None, True, "[1, 2]", "b"]
    assert codes.tolist() == [0, 1, 0, 2, 0, 1, 3, 4, 5]
    none, no_codes = coded([])
    assert none == [] and no_codes.dtype == np.int32 and len(no_codes) == 0
