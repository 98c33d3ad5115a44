"""One rounding rule for the CLI and the UI: the cases in frontend/src/__fixtures__/rounding_cases.json
are asserted here against tb_plugin/analysis/numfmt.py and by util/format.test.ts against util/format.ts."""

from __future__ import annotations

import io
import json
import os

import pytest

from tb_plugin.cli import run_report
from tb_plugin.analysis.numfmt import duration, fixed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = json.load(open(os.path.join(ROOT, "frontend", "src", "__fixtures__", "rounding_cases.json")))["cases"]


@pytest.mark.parametrize("value,digits,want", CASES)
def test_shared_rounding_cases(value, digits, want):
    assert fixed(value, digits) == want


def test_sign_and_non_finite():
    assert fixed(0.25, 1, sign=True) == "+0.3" and fixed(-0.25, 1, sign=True) == "-0.3"
    assert fixed(-0.01, 1, sign=True) == "+0.0"
    assert fixed(float("nan"), 1) == "nan" and fixed(float("-inf"), 1) == "-inf"


def test_report_rounds_like_the_ui_on_synthetic_ddp_rank0():
    out, err = io.StringIO(), io.StringIO()
    assert run_report(os.path.join(ROOT, "samples", "synthetic_ddp"), None, False, False, out, err) == 0
    rank0 = out.getvalue().split("== run")[1]
    assert "worker rank0" in rank0
    def row(label):
        (line,) = [x for x in rank0.splitlines() if x.startswith(f"   {label}  ")]
        return line[len(f"   {label}"):].split()

    # averages 2.25 µs and 56.25 µs: the Overview shows 2.3 and 56.3; Python's ".1f" printed 2.2 and 56.2
    assert row("Memset") == ["2.3", "0.26%"]
    assert row("CPU Exec") == ["56.3", "6.51%"]
    assert row("Kernel") == ["487.2", "56.35%"]
    assert "average step: 0.865 ms" in rank0


def test_duration_text_is_the_uis_formatDuration():
    # the same cases as frontend/src/util/format.test.ts: advice text and tables choose one unit
    cases = {1234.5: "1.23 ms", 1235: "1.24 ms", 812: "812 µs", 2.5: "2.50 µs", 111593.6: "111.59 ms",
             2_500_000: "2.50 s", 999.5: "1,000 µs", -812.4: "-812 µs", 0: "0.00 µs", 34: "34 µs"}
    assert {us: duration(us) for us in cases} == cases
