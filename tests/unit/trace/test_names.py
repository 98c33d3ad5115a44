"""Names without object addresses: the same Python function on two objects is one name in every
table and stack, and stacks that end in the same frame say where they part."""

from __future__ import annotations

import json

from conftest import x

from tb_plugin.analysis.call_stacks import differing_frames
from tb_plugin.analysis.operators import operator_rows, operator_stacks
from tb_plugin.trace.decode import decode_trace
from tb_plugin.trace.names import without_address

PY = "python_function"
SOFTMAX = "<built-in method softmax of Tensor object at 0x{}>"


def _trace():
    """Two calls of ``softmax`` on two tensors (two addresses), each under its own Python frame
    with the same function and each calling ``aten::softmax``; one 2021-style op whose name and
    ``Call stack`` carry addresses."""
    ev = []
    for i, addr in enumerate(("7cbd12345670", "7f00deadbeef")):
        t = 1000 * i
        ev += [
            x("model.py(10): forward", PY, t, 500),
            x(SOFTMAX.format(addr), PY, t + 10, 400),
            x("aten::softmax", "cpu_op", t + 20, 100),
        ]
    ev.append(
        x(
            "<function hook at 0xABCDEF12>",
            "cpu_op",
            3000,
            5,
            Call_stack=f"<function hook at 0x{1:012x}>;main.py(3): run",
        )
    )
    return decode_trace(json.dumps({"traceEvents": ev}).encode())


def test_without_address():
    assert without_address(SOFTMAX.format("7cbd12345670")) == "<built-in method softmax of Tensor object>"
    assert without_address("aten::mm") == "aten::mm"
    assert without_address("look at 0xyz") == "look at 0xyz"  # no hex digits: not an address


def test_no_name_or_stack_keeps_an_address():
    tr = _trace()
    assert not [s for s in tr.strings if " at 0x" in s]
    names = {r["name"]: r["calls"] for r in operator_rows(tr)}
    assert names == {"aten::softmax": 2, "<function hook>": 1}
    by_stack = operator_rows(tr, "call_stack")
    softmax = [r for r in by_stack if r["name"] == "aten::softmax"]
    assert len(softmax) == 1 and softmax[0]["calls"] == 2  # one stack, not one per tensor
    assert softmax[0]["call_stack"] == "model.py(10): forward\n<built-in method softmax of Tensor object>"
    hook = [r for r in by_stack if r["name"] == "<function hook>"][0]
    assert hook["call_stack"] == "main.py(3): run\n<function hook>"
    stacks = operator_stacks(tr, "call_stack", int(softmax[0]["key"]))
    assert [s["calls"] for s in stacks] == [2]


def test_stacks_ending_alike_say_where_they_part():
    stacks = [
        ["main", "train", "forward", "softmax"],
        ["main", "eval", "forward", "softmax"],
        ["other"],
        ["forward", "softmax"],
    ]
    # innermost-first, the first two share "softmax", "forward" and part at train / eval (index 1);
    # the last is all the inner part of both (nothing to show); "other" ends in its own frame
    assert differing_frames(stacks) == [1, 1, None, None]
    assert differing_frames([]) == []
    assert differing_frames([["a"], ["a"]]) == [None, None]


def test_real_sample_names_and_stacks_carry_no_address():
    """samples/torch_cpu_cnn: its Python frames carry 276 object addresses in the file."""
    from conftest import REPO

    from tb_plugin.registry.parse import load_trace_file

    tr = load_trace_file(str(next((REPO / "samples" / "torch_cpu_cnn").glob("*.pt.trace.json.gz"))))
    assert not [s for s in tr.strings if " at 0x" in s]
    rows = operator_rows(tr, "call_stack")
    assert rows and any("<built-in method" in (r["call_stack"] or "") for r in rows)
    # no two rows of one operator show the same stack text (they differed only in an address)
    keys = [(r["name"], r["call_stack"]) for r in rows]
    assert len(keys) == len(set(keys))
