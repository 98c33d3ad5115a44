"""What the notebook API and the MCP tools share (tb_plugin/interfaces/queries.py, mcp_tools.py):
top-N with the rest counted, the tab's groupings, long strings cut, on values known by construction."""

from __future__ import annotations

import pytest
from conftest import write_json, x

from tb_plugin.interfaces import queries
from tb_plugin.interfaces.mcp_tools import MAX_TEXT, Tools
from tb_plugin.registry.runs import RunRegistry


def test_top_rows_counts_the_rest():
    rows = [
        {"name": "a", "t_us": 5.0},
        {"name": "b", "t_us": 3.0},
        {"name": "c", "t_us": 2.0},
        {"name": "d", "t_us": 0.0},
        {"name": "e", "t_us": None},
    ]
    doc = queries.top_rows(rows, "t_us", 2, ["name", "t_us"])
    assert [r["name"] for r in doc["rows"]] == ["a", "b"]
    assert doc["rows_total"] == 5 and doc["rest"] == {"rows": 3, "t_us": 2.0}
    assert queries.top_rows(rows, "t_us", 10, ["name", "t_us"])["rest"] == {"rows": 0, "t_us": 0}
    with pytest.raises(queries.Invalid, match="sort must be one of name, t_us"):
        queries.top_rows(rows, "speed", 2, ["name", "t_us"])


def test_groupings_accept_the_tabs_names_too():
    assert queries.grouping("shape", queries.OPERATOR_GROUPS, "group_by") == "input_shape"
    assert queries.grouping("input_shape", queries.OPERATOR_GROUPS, "group_by") == "input_shape"
    assert queries.grouping("op", queries.KERNEL_GROUPS, "group_by") == "kernel_op_config"
    with pytest.raises(queries.Invalid, match="group_by must be one of name, op"):
        queries.grouping("stack", queries.KERNEL_GROUPS, "group_by")


def test_module_rows_flatten_the_tree_parents_first():
    tree = [
        {
            "name": "Net",
            "host_total_us": 9.0,
            "children": [
                {"name": "Linear_0", "host_total_us": 4.0, "children": []},
                {
                    "name": "Block",
                    "host_total_us": 5.0,
                    "children": [{"name": "ReLU_0", "host_total_us": 1.0, "children": []}],
                },
            ],
        }
    ]
    rows = queries.module_rows(tree)
    assert [(r["path"], r["depth"], r["host_total_us"]) for r in rows] == [
        ("Net", 0, 9.0),
        ("Net/Linear_0", 1, 4.0),
        ("Net/Block", 1, 5.0),
        ("Net/Block/ReLU_0", 2, 1.0),
    ]
    assert all("children" not in r for r in rows)


def test_answers_cut_long_strings(tmp_path):
    long = "frame.py(1): f\n" * 1000  # 15000 characters
    write_json(
        tmp_path / "run" / "w.1.pt.trace.json",
        {
            "traceEvents": [
                x("ProfilerStep#1", "user_annotation", 0, 100),
                x("aten::mm", "cpu_op", 10, 50, Call_stack=long),
            ]
        },
    )
    registry = RunRegistry(str(tmp_path))
    registry.scan()
    registry.load(registry.files()[0])
    tools = Tools(registry, wait_s=0)
    hit = tools.search_timeline("run", "aten::mm")["matches"][0]
    ev = tools.event("run", hit["row"])
    text = ev["args"]["Call stack"]
    assert text.startswith("frame.py(1): f\n") and text.endswith(f"… ({len(long) - MAX_TEXT} more characters)")
    assert len(text) < MAX_TEXT + 40
    assert ev["call_stack"] == ["ProfilerStep#1", "aten::mm"]


def test_kinetoscope_runs_without_the_mcp_extra(tmp_path):
    """Without mcp and pydantic installed, ``kinetoscope report`` works and ``kinetoscope mcp`` exits 2
    naming the extra to install."""
    import subprocess
    import sys

    from conftest import REPO

    code = (
        "import sys; sys.modules['mcp'] = sys.modules['pydantic'] = None; from tb_plugin.cli import main; "
        "sys.exit(main(sys.argv[1:]))"
    )
    mcp = subprocess.run(
        [sys.executable, "-c", code, "mcp", "samples"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert mcp.returncode == 2 and "pip install 'kinetoscope[mcp]'" in mcp.stderr
    report = subprocess.run(
        [sys.executable, "-c", code, "report", "samples/synthetic_resnet", "--no-cache"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert report.returncode == 0 and "average step: 0.914 ms" in report.stdout


def test_the_routes_and_the_queries_select_columns_with_one_function():
    """The Operator and GPU Kernel tables' columns per grouping: one function each
    (``api/table_columns.py``) for the routes, their CSV, MCP and the notebook."""
    from tb_plugin.api import routes, table_columns

    assert routes.operator_columns is queries.operator_columns is table_columns.operator_columns
    assert routes.kernel_columns is queries.kernel_columns is table_columns.kernel_columns
    shape = table_columns.operator_columns("input_shape")
    assert "input_shape" in shape and "call_stack" not in shape
    assert "input_shape" not in table_columns.operator_columns("operator")
