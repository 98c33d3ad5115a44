"""Call stacks of operators, as text with one frame per line, outermost first (innermost last).

Two sources: the old ``Call stack`` arg (2021 traces; frames joined by ``;``, innermost first), and,
with ``with_stack=True`` in PyTorch 2.x, the chain of ``python_function`` events enclosing the op on
its thread. A frame reads ``path(line): function``; ``parse_frame`` splits it for "go to source".
"""

from __future__ import annotations

import re

import numpy as np

from ..trace.categories import Kind
from ..trace.model import Trace
from .op_tree import op_tree

_FRAME = re.compile(r"^(?P<file>.+?)\((?P<line>\d+)\): (?P<function>.*)$")


def parse_frame(text: str) -> dict:
    """``{"text", "file", "line", "function"}``; ``file``/``line`` are null for frames without a location."""
    m = _FRAME.match(text)
    if not m:
        return {"text": text, "file": None, "line": None, "function": text}
    return {"text": text, "file": m.group("file"), "line": int(m.group("line")), "function": m.group("function")}


def stack_ids(trace: Trace) -> np.ndarray:
    """For every event, the string id of its call-stack text (0 when it has none)."""
    return trace.memo("stack_ids", lambda: _stack_ids(trace))


def _intern(trace: Trace, text: str, table: dict) -> int:
    got = table.get(text)
    if got is None:
        got = table[text] = len(trace.strings)
        trace.strings.append(text)
    return got


def _stack_ids(trace: Trace) -> np.ndarray:
    ev = trace.events
    out = np.zeros(len(ev), dtype=np.int64)
    texts: dict[str, int] = {}
    is_op = (ev.kind == Kind.CPU_OP) | (ev.kind == Kind.USER_ANNOTATION)
    # 2021: the "Call stack" arg
    old = np.flatnonzero(is_op & (ev.call_stack > 0))
    converted: dict[int, int] = {}
    for row, sid in zip(old.tolist(), ev.call_stack[old].tolist()):
        if sid not in converted:
            frames = [f for f in trace.strings[sid].split(";") if f]
            converted[sid] = _intern(trace, "\n".join(reversed(frames)), texts)
        out[row] = converted[sid]
    # 2.x: python_function ancestry
    py_parent = op_tree(trace).py_parent
    rows = np.flatnonzero(is_op & (out == 0) & (py_parent >= 0))
    memo: dict[int, int] = {}
    for row, leaf in zip(rows.tolist(), py_parent[rows].tolist()):
        sid = memo.get(leaf)
        if sid is None:
            frames = []
            node = leaf
            while node >= 0 and len(frames) < 256:
                frames.append(trace.strings[ev.name[node]])
                node = int(py_parent[node])
            sid = memo[leaf] = _intern(trace, "\n".join(reversed(frames)), texts)
        out[row] = sid
    return out
