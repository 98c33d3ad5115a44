"""Bounded memory of a parse and its analyses (the 4.5 GB benchmark trace):

- a column whose rows all hold one value (bit for bit) is held as that one value, a read-only stride-0
  view (``Table.compact``), by the parse and by the parse cache alike; every value reads the same;
- analyses that would not fit the memory budget for one trace are refused with a per-file message
  naming the budget (``KINETOSCOPE_MAX_TRACE_BYTES``) before they start, in the CLI and the registry.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from conftest import sample

from tb_plugin.cli import report as cli_report
from tb_plugin.registry import parse
from tb_plugin.registry.budget import _trace_bytes
from tb_plugin.registry.cache import ParseCache
from tb_plugin.registry.runs import RunRegistry
from tb_plugin.trace.errors import TraceReadError
from tb_plugin.trace.model import Table, held_bytes

V100 = "kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"


def test_compact_keeps_values_and_holds_one():
    n = 1000
    nan_payload = np.full(n, np.nan)
    nan_payload.view(np.uint64)[7] ^= 1  # another NaN: not bit-equal to the others
    table = Table(
        {
            "minus_one": np.full(n, -1, dtype=np.int64),
            "nan": np.full(n, np.nan),
            "zeros_of_both_signs": np.r_[np.zeros(n - 1), -0.0],
            "nan_payloads": nan_payload,
            "varying": np.arange(n, dtype=np.int32),
            "one_row": np.array([5], dtype=np.int32),
            "empty": np.zeros(0),
        }
    )
    before = {k: v.copy() for k, v in table.columns.items()}
    table.compact()
    held = {k: held_bytes(v) for k, v in table.columns.items()}
    assert held == {
        "minus_one": 8,
        "nan": 8,
        "zeros_of_both_signs": 8 * n,
        "nan_payloads": 8 * n,
        "varying": 4 * n,
        "one_row": 4,
        "empty": 0,
    }
    for k, v in table.columns.items():
        assert v.dtype == before[k].dtype and v.shape == before[k].shape
        assert v.tobytes() == before[k].tobytes(), k  # every bit the same
    assert not table.minus_one.flags.writeable
    with pytest.raises(ValueError):
        table.minus_one[0] = 3
    assert table.compact().minus_one.strides == (0,)  # compacting again changes nothing


@pytest.mark.corpus
def test_parse_and_cache_hold_constant_columns_once(tmp_path):
    """The 2021 V100 trace has no comms, graph or FLOPs args: those columns hold one value each,
    from the parse and from the parse cache, and the registry's budget counts them so."""
    trace = parse.load_trace_file(str(sample(V100)))
    n = len(trace.events)
    assert n > 40_000
    for key in ("graph_id", "graph_node_id", "seq", "flops", "collective", "process_group_ranks"):
        col = trace.events.columns[key]
        assert col.strides == (0,) and len(col) == n, key
    assert trace.events.graph_id[0] == -1 and np.isnan(trace.events.flops[-1])
    assert trace.events.ts.strides != (0,) and trace.events.name.strides != (0,)
    full = sum(a.nbytes for t in (trace.events, trace.memory, trace.flows, trace.counters) for a in t.columns.values())
    assert _trace_bytes(trace) < 0.75 * full  # ~40% of the columns' bytes are constant columns

    cache = ParseCache(str(tmp_path))
    cache.put("u", "v", trace)
    back = cache.get("u", "v")
    for key, col in trace.events.columns.items():
        got = back.events.columns[key]
        assert got.tobytes() == col.tobytes() and (got.strides == (0,)) == (col.strides == (0,)), key
    for key, col in trace.memory.columns.items():
        assert back.memory.columns[key].tobytes() == col.tobytes(), key


def _tiny_events_logdir(tmp_path, n: int):
    """A run whose file has ``n`` small operator events (about 100 bytes each on disk)."""
    run = tmp_path / "logdir" / "run"
    run.mkdir(parents=True)
    events = [
        {"ph": "X", "cat": "cpu_op", "name": f"aten::op{i % 7}", "pid": 1, "tid": 1, "ts": i, "dur": 1}
        for i in range(n)
    ]
    path = run / "w.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return tmp_path / "logdir", path


def test_analysis_over_the_budget_is_a_per_file_error_naming_it(tmp_path, monkeypatch):
    logdir, path = _tiny_events_logdir(tmp_path, 60_000)
    size = path.stat().st_size
    need = parse.ANALYSIS_BYTES_PER_EVENT * 60_000
    assert size < need // 2  # the file itself fits the budget below; its analyses do not
    monkeypatch.setenv("KINETOSCOPE_MAX_TRACE_BYTES", str(need // 2))
    monkeypatch.setenv("KINETOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(TraceReadError) as err:
        parse.check_analysis_budget(parse.load_trace_file(str(path)))
    message = str(err.value)
    assert "KINETOSCOPE_MAX_TRACE_BYTES" in message and "memory budget" in message and "60000 events" in message

    out, errs = io.StringIO(), io.StringIO()  # the CLI: the file's error, exit 1, no traceback
    assert cli_report.run_report(str(logdir), None, True, True, out, errs) == 1
    doc = json.loads(out.getvalue())
    (worker,) = doc["runs"][0]["workers"]
    assert "memory budget" in worker["error"] and "KINETOSCOPE_MAX_TRACE_BYTES" in worker["error"]
    assert "Traceback" not in errs.getvalue() and "memory budget" in errs.getvalue()

    registry = RunRegistry(str(logdir), cache=ParseCache())  # the UI's loader: the same per-file message
    registry.scan()
    (state,) = registry.files()
    registry.load(state)
    assert state.error is not None and "KINETOSCOPE_MAX_TRACE_BYTES" in state.error

    monkeypatch.setenv("KINETOSCOPE_MAX_TRACE_BYTES", str(2 * need))  # within the budget: analysed
    out, errs = io.StringIO(), io.StringIO()
    assert cli_report.run_report(str(logdir), None, True, True, out, errs) == 0, errs.getvalue()
    (worker,) = json.loads(out.getvalue())["runs"][0]["workers"]
    assert worker["error"] is None and worker["operators"]
