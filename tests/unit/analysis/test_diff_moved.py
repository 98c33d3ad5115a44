"""Diff: an operator whose parent changed is one moved node (``moved_from``), not a removed and an
added one. Known answers on nested synthetic steps, and the eager vs torch.compile H200 samples."""

from __future__ import annotations

import glob
import json

import pytest
from conftest import REPO, diff_query, loaded_registry, write_json, x

from tb_plugin import api
from tb_plugin.analysis.diff import op_diff, op_diff_flat
from tb_plugin.cli import main
from tb_plugin.registry.parse import load_trace_file


def _doc(tree: list) -> dict:
    """Two CPU steps of 4000 µs; ``tree``: ``[(name, dur, [children…]), …]`` laid out one after another
    inside each step, children from their parent's start + 5 µs."""
    events = []

    def place(nodes, t):
        for name, dur, kids in nodes:
            events.append(x(name, "cpu_op", t, dur))
            place(kids, t + 5)
            t += dur + 10

    for k in range(2):
        t0 = 10_000 + k * 20_000
        events.append(x(f"ProfilerStep#{k + 1}", "user_annotation", t0, 4000))
        place(tree, t0 + 10)
    return {"traceEvents": events}


OPT = "Optimizer.step#AdamW.step"
#: Eager: forward > aten::mm; the optimizer step (> fused AdamW) directly in the step.
EAGER = [("forward", 1000, [("aten::mm", 400, [])]), (OPT, 800, [("aten::_fused_adamw_", 700, [])])]
#: Compiled: the compiled region > aten::mm; the optimizer step (> fused AdamW) inside a wrapper.
COMPILED = [
    ("Torch-Compiled Region: 0/0", 600, [("aten::mm", 300, [])]),
    ("wrapper", 900, [(OPT, 850, [("aten::_fused_adamw_", 750, [])])]),
]


def _pair(tmp_path, base=EAGER, exp=COMPILED):
    write_json(tmp_path / "base" / "worker0.1.pt.trace.json", _doc(base))
    write_json(tmp_path / "exp" / "worker0.1.pt.trace.json", _doc(exp))
    return loaded_registry(tmp_path)


def test_a_node_whose_parent_changed_is_moved(tmp_path):
    reg = _pair(tmp_path)
    q = diff_query("base", "exp")
    code, level = api.diff(reg, dict(q, path=json.dumps(["ProfilerStep"])))
    assert code == 200
    got = {r["name"]: (r["status"], r["change_us"], r["moved_from"]) for r in level["operators"]}
    assert got == {
        "Torch-Compiled Region: 0/0": ("added", 600.0, None),
        "wrapper": ("added", 900.0, None),
        "forward": ("removed", -1000.0, None),
    }  # the optimizer step shows where it moved to
    code, inner = api.diff(reg, dict(q, path=json.dumps(["ProfilerStep", "wrapper"])))
    (row,) = inner["operators"]
    assert (row["name"], row["status"], row["change_us"]) == (OPT, "slower", 50.0)  # 50 µs > 10 µs and > 5 % of 800
    assert row["moved_from"] == ["ProfilerStep", OPT] and row["has_children"]
    assert row["baseline"]["host_total_us"] == 800.0 and row["experiment"]["host_total_us"] == 850.0
    # its children moved with it: opened at its new path, they compare with the old one's
    code, kids = api.diff(reg, dict(q, path=json.dumps(row["path"])))
    (kid,) = kids["operators"]
    assert (kid["name"], kid["status"], kid["change_us"]) == ("aten::_fused_adamw_", "slower", 50.0)
    assert kid["moved_from"] == ["ProfilerStep", OPT, "aten::_fused_adamw_"]
    # a name once among the unmatched nodes of each side: aten::mm under forward ↔ under the compiled region
    code, region = api.diff(reg, dict(q, path=json.dumps(["ProfilerStep", "Torch-Compiled Region: 0/0"])))
    (mm,) = region["operators"]
    assert (mm["status"], mm["change_us"], mm["moved_from"]) == (
        "faster",
        -100.0,
        ["ProfilerStep", "forward", "aten::mm"],
    )
    # opening a removed node still shows its (removed) children
    code, fwd = api.diff(reg, dict(q, path=json.dumps(["ProfilerStep", "forward"])))
    assert fwd["operators"] == []  # its only child moved away


def test_same_name_several_times_pairs_in_order(tmp_path):
    """``aten::add`` unmatched twice on each side: paired in tree order (depth, then parent and name),
    X's with W's and Y's with Z's; none is removed or added."""
    base = [("X", 500, [("aten::add", 100, [])]), ("Y", 500, [("aten::add", 200, [])])]
    exp = [("W", 500, [("aten::add", 110, [])]), ("Z", 500, [("aten::add", 260, [])])]
    _pair(tmp_path, base, exp)
    rows = {
        tuple(r["path"]): r
        for r in op_diff_flat(
            load_trace_file(str(tmp_path / "base" / "worker0.1.pt.trace.json")),
            load_trace_file(str(tmp_path / "exp" / "worker0.1.pt.trace.json")),
        )
    }
    assert rows[("ProfilerStep", "W", "aten::add")]["moved_from"] == ["ProfilerStep", "X", "aten::add"]
    assert rows[("ProfilerStep", "Z", "aten::add")]["moved_from"] == ["ProfilerStep", "Y", "aten::add"]
    assert rows[("ProfilerStep", "Z", "aten::add")]["change_us"] == 60.0
    assert {r["status"] for p, r in rows.items() if p[-1] == "aten::add"} == {"unchanged", "slower"}


def test_cli_text_says_moved_from(tmp_path, capsys):
    _pair(tmp_path)
    assert main(["diff", str(tmp_path / "base"), str(tmp_path / "exp"), "--no-cache"]) == 0
    text = capsys.readouterr().out
    assert f"ProfilerStep > wrapper > {OPT} (moved from ProfilerStep > {OPT}): host +50.0 µs" in text


def test_eager_vs_compiled_samples_optimizer_step_is_moved():
    """The H200 samples: eagerly the optimizer step runs inside ``ProfilerStep``; under torch.compile
    its range is a root of its thread. Before: "removed −771 µs" and "added +1.28 ms"; now one row."""
    base = load_trace_file(glob.glob(str(REPO / "samples/gpu_transformer_bf16/*.pt.trace.json.gz"))[0])
    exp = load_trace_file(glob.glob(str(REPO / "samples/gpu_compile/*.pt.trace.json.gz"))[0])
    rows = [r for r in op_diff_flat(base, exp) if r["name"] == OPT]
    assert len(rows) == 1
    (row,) = rows
    assert row["path"] == [OPT] and row["moved_from"] == ["ProfilerStep", OPT]
    assert row["baseline"]["host_total_us"] == pytest.approx(771.17, abs=0.01)
    assert row["experiment"]["host_total_us"] == pytest.approx(1282.19, abs=0.01)
    assert row["status"] == "slower" and row["change_us"] == pytest.approx(511.02, abs=0.01)
    top = op_diff(base, exp)
    assert OPT in [r["name"] for r in top]
    assert OPT not in [r["name"] for r in op_diff(base, exp, ("ProfilerStep",))]
