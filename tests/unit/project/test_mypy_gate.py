"""The mypy gate (``tools/mypy_gate.py``): findings counted per file from mypy's output, a file over its
baseline (or unlisted, allowed none) fails, and ``--update`` only lowers the baseline."""

from __future__ import annotations

import importlib.util
from collections import Counter

from conftest import REPO

_spec = importlib.util.spec_from_file_location("mypy_gate", REPO / "tools" / "mypy_gate.py")
assert _spec and _spec.loader
gate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gate)

OUTPUT = """\
tb_plugin/a.py:3: error: Incompatible types in assignment  [assignment]
tb_plugin/a.py:9:5: error: Missing return statement  [return]
tb_plugin/a.py:9: note: see https://mypy.readthedocs.io
tb_plugin/sub/b.py:1: error: Name "x" is not defined  [name-defined]
Found 3 errors in 2 files (checked 5 source files)
"""


def test_findings_are_counted_per_file_without_notes():
    assert gate.count_findings(OUTPUT) == Counter({"tb_plugin/a.py": 2, "tb_plugin/sub/b.py": 1})


def test_a_file_over_its_baseline_or_unlisted_fails():
    found = gate.count_findings(OUTPUT)
    assert gate.over_baseline(found, {"tb_plugin/a.py": 2, "tb_plugin/sub/b.py": 1}) == {}
    assert gate.over_baseline(found, {"tb_plugin/a.py": 1}) == {
        "tb_plugin/a.py": (2, 1),
        "tb_plugin/sub/b.py": (1, 0),
    }


def test_update_only_lowers_and_drops_clean_files():
    found = Counter({"tb_plugin/a.py": 1, "tb_plugin/new.py": 4})
    assert gate.lowered(found, {"tb_plugin/a.py": 2, "tb_plugin/c.py": 3}) == {"tb_plugin/a.py": 1}


def test_baseline_file_reads_path_count_lines(tmp_path):
    path = tmp_path / "baseline"
    path.write_text("# comment\n\ntb_plugin/a.py: 2\ntb_plugin/b.py: 7  # shrinking\n")
    assert gate.read_baseline(path) == {"tb_plugin/a.py": 2, "tb_plugin/b.py": 7}
    assert gate.read_baseline(tmp_path / "absent") == {}


def test_the_committed_baseline_lists_only_existing_files():
    for path in gate.read_baseline():
        assert (REPO / path).is_file(), path
