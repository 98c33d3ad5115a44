"""``kinetoscope diff BASE EXP --fail-on …``: the CI regression gate's printed table or JSON, and its
exit status (0 no regression, 2 a kernel rule matching no kernel, 3 a regression beyond threshold and
noise). The document is built by tb_plugin/registry/gate.py; the test by analysis/regression.py."""

from __future__ import annotations

import re
from typing import TextIO

import orjson

from ..analysis.numfmt import fixed
from ..analysis.regression import CONFIDENCE, MIN_STEPS
from ..registry import gate
from ..trace import jsonsafe

# C0 and C1 controls, DEL, and the format characters that reorder or hide text (bidi controls, zero widths)
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


def run_gate(args, base_reg, base, exp_reg, exp, out: TextIO, err: TextIO) -> int:
    """The regression gate (tb_plugin/registry/gate.py): 3 on a regression, 2 for a kernel rule that
    matches no kernel, else 0."""
    try:
        found = gate.gate_document(args.rules, base, base_reg.views(base), exp, exp_reg.views(exp))
    except gate.GateError as exc:
        err.write(f"kinetoscope: {printable(str(exc))}\n")
        return 2
    if args.json:
        doc = {"baseline": base.entry.path, "experiment": exp.entry.path, **found}
        out.write(jsonsafe.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        out.write(f"baseline:   {printable(base.entry.path)}\nexperiment: {printable(exp.entry.path)}\n")
        for c in found["checks"]:
            iv = c["interval_pct"] or c["interval_us"]
            unit = "%" if c["interval_pct"] else " µs"
            band = (
                ""
                if iv is None
                else f" ({CONFIDENCE:.0%} interval {fixed(iv[0], 1, sign=True)}{unit} .. {fixed(iv[1], 1, sign=True)}{unit})"
            )
            change = (
                "n/a"
                if c["delta_us"] is None
                else f"{fixed(c['delta_us'], 1, sign=True)} µs"
                + ("" if c["delta_pct"] is None else f" ({fixed(c['delta_pct'], 1, sign=True)}%)")
            )
            out.write(
                f"  {c['status'].upper():<14} {printable(c['rule'])}: median {change}{band}, "
                f"{c['baseline_steps']} vs {c['experiment_steps']} steps\n"
            )
        for r in found["explain"]["operators"][:5]:
            out.write(
                f"    operator {printable(tail(' > '.join(r['path']), 80))}: {fixed(r['delta_us'], 1, sign=True)} µs/step\n"
            )
        for k in found["explain"]["kernels"][:5]:
            out.write(
                f"    kernel {printable(tail(k['name'], 80))}: {fixed(k['delta_per_step_us'], 1, sign=True)} µs/step\n"
            )
        out.write(f"verdict: {found['verdict']}\n")
    for c in found["checks"]:
        if c["status"] == "too_few_steps":
            err.write(
                f"kinetoscope: {printable(c['rule'])}: fewer than {MIN_STEPS} steps on a side, the noise cannot be "
                f"estimated; not counted as a regression\n"
            )
    return 3 if found["verdict"] == "regression" else 0


def printable(text: str) -> str:
    """``text`` with control and format characters (newlines, escape sequences, bidirectional
    overrides) written as ``\\n``, ``\\x1b``, ``\\u202e``: a name from a trace prints on one line and
    cannot forge a line of the gate's output nor drive the terminal."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def tail(text: str, width: int) -> str:
    """``text`` cut to its last ``width`` characters, led by "…" when something was cut."""
    return text if len(text) <= width else "\u2026" + text[-(width - 1) :]


def path_text(row: dict) -> str:
    """A diff row's operator path (last 90 characters), and where it moved from when its parent changed."""
    moved = f" (moved from {tail(' > '.join(row['moved_from']), 60)})" if row.get("moved_from") else ""
    return tail(" > ".join(row["path"]), 90) + moved
