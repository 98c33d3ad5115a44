"""docs/mcp.md documents every tool of ``kinetoscope mcp`` and every parameter of each (in its row)."""

from __future__ import annotations

import re

import pytest
from conftest import REPO, run_async

pytest.importorskip("mcp")


def test_docs_name_every_tool_and_parameter(tmp_path):
    from tb_plugin.interfaces.mcp_app import build_server

    server = build_server(str(tmp_path))
    tools = run_async(server.list_tools)
    rows = {
        m.group(1): m.group(0) for m in re.finditer(r"^\| `(\w+)` \|.*$", (REPO / "docs" / "mcp.md").read_text(), re.M)
    }
    assert set(rows) == {t.name for t in tools}
    for t in tools:
        missing = [
            p for p in t.input_schema.get("properties", {}) if f"`{p}`" not in re.split(r"(?<!\\)\|", rows[t.name])[2]
        ]  # cells split on unescaped pipes
        assert missing == [], (t.name, missing)
