"""One rounding rule for the CLI and the UI: the cases in frontend/src/__fixtures__/rounding_cases.json
are asserted here against tb_plugin/analysis/numfmt.py and by util/format.test.ts against util/format.ts."""

from __future__ import annotations

import io
import json
import os

import pytest

from tb_plugin.analysis.numfmt import fixed
from tb_plugin.cli.report import run_report

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
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
        return line[len(f"   {label}") :].split()

    # averages 2.25 µs and 56.25 µs: the Overview shows 2.3 and 56.3; Python's ".1f" printed 2.2 and 56.2
    assert row("Memset") == ["2.3", "0.26%"]
    assert row("CPU Exec") == ["56.3", "6.51%"]
    assert row("Kernel") == ["487.2", "56.35%"]
    assert "average step: 0.865 ms" in rank0


NUMBER_TEXT = json.load(open(os.path.join(ROOT, "frontend", "src", "__fixtures__", "number_text_cases.json")))


@pytest.mark.parametrize("value,want", NUMBER_TEXT["decimal"])
def test_decimal_text_shared_cases(value, want):
    """Raw floats (CSV cells, event arguments) by the one rule, as util/format.ts does."""
    from tb_plugin.analysis.numfmt import decimal_text

    assert decimal_text(value) == want


@pytest.mark.parametrize("value,want", NUMBER_TEXT["duration"])
def test_duration_shared_cases(value, want):
    """A sentence's duration uses the tables' unit choice (34 µs, not "0.0 ms")."""
    from tb_plugin.analysis.numfmt import duration

    assert duration(value) == want


@pytest.mark.corpus
def test_csv_cells_carry_no_binary_noise():
    """Every float cell of the operator and memory-event CSVs of a real sample has at most 3 decimals (or 3
    significant digits below 1): "262422.46700000024" was written before."""
    import csv
    import re

    from conftest import loaded_registry, sample

    from tb_plugin import api

    reg = loaded_registry(sample("torch213_cpu"))
    st = next(s for s in reg.files() if s.state == "ready")
    q = {"run": st.run, "worker": st.worker, "span": st.span}
    cells = []
    for route in (api.operators, api.memory_events):
        code, text = route(reg, dict(q), as_csv=True)
        assert code == 200
        cells += [c for row in list(csv.reader(io.StringIO(text)))[1:] for c in row]
    floats = [c for c in cells if re.fullmatch(r"-?\d+\.\d+", c)]
    assert floats, "no decimal cell at all"
    noisy = [c for c in floats if len(c.split(".")[1]) > 3 and not c.startswith(("0.", "-0."))]
    assert not noisy, noisy[:10]
