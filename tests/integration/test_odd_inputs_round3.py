"""Odd inputs of the third hardening review: a trace with a module and a flow but no operator
(item 10), and integers past Python's 4,300-digit conversion limit in trace args and snapshots (item 11)."""

from __future__ import annotations

import io
import json
import pickle

from test_odd_inputs import _app, _file, _get, _registry, _x

from tb_plugin.artifacts.snapshot import load_snapshot
from tb_plugin.cli.report import run_report
from tb_plugin.trace import jsonsafe

MODULE_AND_FLOW = (
    b'{"traceEvents":[{"ph":"X","cat":"python_function","name":"nn.Module: Linear_0","pid":1,"tid":1,'
    b'"ts":0,"dur":10},{"ph":"s" ,"cat":"fwdbwd","id":1,"pid":1,"tid":1,"ts":1,"name":"fwdbwd",'
    b'"bp":"e"}],"displayTimeUnit":"ms"}'
)


def test_a_module_and_a_flow_without_operators_is_a_module_tree(tmp_path):
    """The review's 218-byte trace raised IndexError in the module tree: the whole file failed in
    ``report`` and the ``modules`` route answered 500."""
    assert len(MODULE_AND_FLOW) == 218
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "w.1.pt.trace.json").write_bytes(MODULE_AND_FLOW)
    out, err = io.StringIO(), io.StringIO()
    assert run_report(str(tmp_path), None, True, False, out, err) == 0, err.getvalue()
    status, doc = _get(_app(_registry(tmp_path)), "/modules", **_file("a"))
    assert status == 200
    assert [m["name"] for m in doc["modules"]] == ["Linear_0"]


HUGE = 7 * 10**5000  # past Python's 4,300-digit limit on int <-> str


def test_huge_integer_in_args_is_kept_as_text(tmp_path):
    """Args with a 5,000-digit integer came back ``{}``; now the integer is its digits, the rest as is."""
    path = tmp_path / "a" / "w.1.pt.trace.json"
    path.parent.mkdir()
    body = json.dumps({"traceEvents": [_x("mm", 0, 10, Small=1, Name="x", Big=0)]}).replace(
        '"Big": 0', '"Big": ' + "7" * 5000
    )
    path.write_text(body)
    status, doc = _get(_app(_registry(tmp_path)), "/timeline_event", row=0, **_file("a"))
    assert status == 200 and doc["args"]["Small"] == 1 and doc["args"]["Name"] == "x"
    assert doc["args"]["Big"] == "7" * 5000


def test_huge_integer_in_a_snapshot_is_kept_as_text():
    """A snapshot with such an integer was "internal error: ValueError" as a whole."""
    snap = load_snapshot(
        pickle.dumps(
            {
                "segments": [],
                "device_traces": [],
                "external_annotations": [{"stage": "START", "huge": HUGE, HUGE: -HUGE, "big": 2**70}],
            }
        )
    )
    (note,) = snap.annotations
    assert note["huge"] == hex(HUGE) and note[hex(HUGE)] == "-" + hex(HUGE) and note["big"] == str(2**70)
    assert jsonsafe.int_text(10**3999) == str(10**3999) and jsonsafe.int_text(-(10**4500)).startswith("-0x")
