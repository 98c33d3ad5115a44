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


MAX_FRAMES = 256  # python frames kept per stack (innermost first)


def _chains(name: np.ndarray, parent: np.ndarray, leaves: np.ndarray) -> np.ndarray:
    """Per leaf (a python_function row): an id of its chain of frame names up to :data:`MAX_FRAMES`
    deep, equal for equal chains. One ancestor level per numpy pass: the chain so far and the next
    name (0 once the chain has ended) are renumbered together with ``np.unique`` of one int64 key."""
    chain = name[leaves].astype(np.int64)  # string ids < 2**31, so the key below fits in int64
    node = parent[leaves].astype(np.int64)
    for _ in range(MAX_FRAMES - 1):
        live = node >= 0
        if not live.any():
            break
        nxt = np.where(live, name[np.maximum(node, 0)].astype(np.int64) + 1, 0)
        _, chain = np.unique(chain * (1 << 32) + nxt, return_inverse=True)
        chain = chain.reshape(-1).astype(np.int64)
        node = np.where(live, parent[np.maximum(node, 0)], -1)
    return chain


def _chain_text(trace: Trace, leaf: int, parent: np.ndarray) -> str:
    """The call-stack text of one leaf: frame names outermost first, one per line."""
    frames: list[str] = []
    node = leaf
    while node >= 0 and len(frames) < MAX_FRAMES:
        frames.append(trace.strings[trace.events.name[node]])
        node = int(parent[node])
    return "\n".join(reversed(frames))


def _stack_ids(trace: Trace) -> np.ndarray:
    ev = trace.events
    out = np.zeros(len(ev), dtype=np.int64)
    texts: dict[str, int] = {}
    is_op = (ev.kind == Kind.CPU_OP) | (ev.kind == Kind.USER_ANNOTATION)
    # 2021: the "Call stack" arg, converted once per distinct text
    old = np.flatnonzero(is_op & (ev.call_stack > 0))
    sids, first, which = np.unique(ev.call_stack[old], return_index=True, return_inverse=True)
    converted = np.zeros(len(sids), dtype=np.int64)
    for k in np.argsort(first, kind="stable").tolist():  # interned in order of first appearance
        frames = [f for f in trace.strings[int(sids[k])].split(";") if f]
        converted[k] = _intern(trace, "\n".join(reversed(frames)), texts)
    out[old] = converted[which.reshape(-1)]
    # 2.x: python_function ancestry; each distinct chain of frame names is written once
    py_parent = op_tree(trace).py_parent
    rows = np.flatnonzero(is_op & (out == 0) & (py_parent >= 0))
    if len(rows):
        leaves, leaf_of_row = np.unique(py_parent[rows], return_inverse=True)
        chain = _chains(ev.name, py_parent, leaves)[leaf_of_row.reshape(-1)]  # per row
        keys, first = np.unique(chain, return_index=True)
        ids = np.zeros(len(keys), dtype=np.int64)
        for k in np.argsort(first, kind="stable").tolist():  # interned in order of first appearance
            ids[k] = _intern(trace, _chain_text(trace, int(py_parent[rows[first[k]]]), py_parent), texts)
        out[rows] = ids[np.searchsorted(keys, chain)]
    return out


def differing_frames(stacks: list[list[str]]) -> list[int | None]:
    """Per stack (frames outermost first), the index of the frame where it parts from the stacks
    that end in the same innermost frame (walking outwards), so two stacks that look alike by their
    last frame can be told apart; None when its innermost frame is its own, or when it is all the
    inner part of another stack. Neighbours in the sorted innermost-first order share the longest
    common inner part."""
    inner_first = [tuple(reversed(f)) for f in stacks]
    order = sorted(range(len(stacks)), key=inner_first.__getitem__)
    shared = [0] * len(stacks)
    for a, b in zip(order, order[1:]):
        x, y = inner_first[a], inner_first[b]
        n = 0
        while n < len(x) and n < len(y) and x[n] == y[n]:
            n += 1
        shared[a], shared[b] = max(shared[a], n), max(shared[b], n)
    return [len(f) - 1 - k if 0 < k < len(f) else None for f, k in zip(stacks, shared)]
