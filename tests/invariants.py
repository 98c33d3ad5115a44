"""Invariants every analysed trace must satisfy ("Acceptance"), as small reusable checks.

Each ``*_failures`` function returns a list of human-readable failures (empty: the invariant holds), so
a test can assert on it and print every failure at once. ``tests/integration/test_invariants.py`` runs them on every
sample; other tests may call them on synthesized traces.

1. :func:`step_sum_failures`: per step, the breakdown categories add up to the step's ``total_us``
   (relative tolerance :data:`SUM_REL_TOL`: float rounding of an 8-term sum).
2. :func:`union_failures`: per step, each category's µs ≤ the union of that category's own event
   intervals inside the step, with no tolerance. The union is computed here, independently of
   ``analysis/breakdown.py`` (only its ``category_masks`` are reused): intervals ``[ts, ts + dur]`` from
   the event columns (µs, float64, the end rounded once as every analysis computes it), clipped to the
   step, merged by a plain sort-and-sweep, summed exactly (``math.fsum``) and rounded once. A value
   that exceeds it passes only if it is within the same union taken in whole nanoseconds
   (:func:`ns_union_us`: what an analysis computing in integer ns, as item 17 allows, is exact against).
3. :func:`gpu_idle_failures`: each GPU's idle time ≤ the window it is measured in.
4. :func:`percentage_failures`: every ``*_pct`` field is within 0–100 and every ``*_share`` within 0–1.
5. :func:`null_number_failures` / :func:`null_word_failures`: no NaN, ±Infinity or None in a field the
   HTTP API documents as a number, and no "null"/"None"/"NaN"/"undefined"/"Infinity"/"nan"/"inf" word
   in the sentences we write (recommendations, messages, warnings, reasons, errors).
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterator

import numpy as np
from synth.traces import CATEGORY_KEYS  # the breakdown keys in priority order

SUM_REL_TOL = 1e-9  # of the step's total: an 8-term float sum is off by a few ULPs at most


# -- 1. categories add up to the step -------------------------------------------------------------


def step_sum_failures(overview: dict) -> list[str]:
    """Steps (and the average) whose categories do not add up to ``total_us``."""
    out = []
    rows = [(f"step {r['step']}", r) for r in overview["steps"]]
    if overview["steps"]:
        rows.append(("average", overview["average"]))
    for label, row in rows:
        total = row["total_us"]
        parts = math.fsum(row[k] for k in CATEGORY_KEYS)
        if not abs(parts - total) <= SUM_REL_TOL * max(abs(total), 1.0):
            out.append(f"{label}: categories sum to {parts!r} µs, total_us is {total!r} µs")
    return out


# -- 2. each category ≤ the union of its own intervals ---------------------------------------------


def _disjoint_pieces(s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of ``[s[i], e[i]]`` (non-empty) as disjoint ``(starts, ends)``: sort by start, sweep."""
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    reach = np.maximum.accumulate(e)
    first = np.ones(len(s), dtype=bool)
    first[1:] = s[1:] > reach[:-1]  # a piece starts where the start is past everything before it
    last = np.append(np.flatnonzero(first)[1:] - 1, len(s) - 1)
    return s[first], reach[last]


def plain_union_us(starts: np.ndarray, ends: np.ndarray, lo: float, hi: float) -> float:
    """Length (µs) of the union of ``[starts[i], ends[i]]`` clipped to ``[lo, hi]``: the disjoint pieces
    summed exactly and rounded once."""
    s = np.clip(np.asarray(starts, dtype=np.float64), lo, hi)
    e = np.clip(np.asarray(ends, dtype=np.float64), lo, hi)
    keep = e > s
    if not keep.any():
        return 0.0
    piece_start, piece_end = _disjoint_pieces(s[keep], e[keep])
    return math.fsum(np.concatenate([piece_end, -piece_start]).tolist())


def to_ns(us: np.ndarray) -> np.ndarray:
    """µs (float64) to whole nanoseconds (int64), rounded to nearest without losing the integer part."""
    us = np.asarray(us, dtype=np.float64)
    whole = np.floor(us)
    return whole.astype(np.int64) * 1000 + np.rint((us - whole) * 1000).astype(np.int64)


def ns_union_us(ts: np.ndarray, dur: np.ndarray, lo: float, hi: float) -> float:
    """:func:`plain_union_us` for an analysis that works in whole nanoseconds: intervals
    ``[ns(ts), ns(ts) + ns(dur)]`` clipped to ``[ns(lo), ns(hi)]``; the exact ns total as µs."""
    start = to_ns(ts)
    s = np.clip(start, to_ns(lo), to_ns(hi))
    e = np.clip(start + to_ns(dur), to_ns(lo), to_ns(hi))
    keep = e > s
    if not keep.any():
        return 0.0
    piece_start, piece_end = _disjoint_pieces(s[keep], e[keep])
    return int((piece_end - piece_start).sum()) / 1000


def union_failures(trace, overview: dict) -> list[str]:
    """(step, category) pairs whose µs exceed the union of the category's own intervals in the step.
    ``overview`` is the Overview of ``trace`` (compute_overview / the report); the steps' absolute
    bounds come from ``analysis.steps.compute_steps``."""
    from tb_plugin.analysis.breakdown import category_masks
    from tb_plugin.analysis.steps import compute_steps

    steps = compute_steps(trace)
    rows = overview["steps"]
    if len(rows) != len(steps) or [r["step"] for r in rows] != list(steps.names):
        return [f"the overview's steps {[r['step'] for r in rows]} are not compute_steps' {list(steps.names)}"]
    ev = trace.events
    ts = np.asarray(ev.ts, dtype=np.float64)
    dur = np.asarray(ev.dur, dtype=np.float64)
    end = ts + dur
    out = []
    for name, mask in category_masks(trace).items():
        s_all, e_all = ts[mask], end[mask]
        for i, row in enumerate(rows):
            value = row[f"{name}_us"]
            lo, hi = float(steps.start[i]), float(steps.end[i])
            union = plain_union_us(s_all, e_all, lo, hi)
            # an analysis in whole ns (allows it) is held to the ns union instead
            if value > union and value > ns_union_us(s_all, dur[mask], lo, hi):
                out.append(
                    f"step {row['step']}: {name}_us = {value!r} > union of its intervals {union!r} "
                    f"(by {value - union:.3g} µs)"
                )
    return out


# -- 3. GPU idle ≤ window ---------------------------------------------------------------------------

IDLE_PARTS = ("host_wait_us", "short_gap_us", "other_us")


def exposed_idle_failures(insights: dict) -> list[str]:
    """The exposed-time decomposition: each GPU's ``idle_us`` within ``[0, window_us]``."""
    exposed = insights["exposed"]
    window = exposed["window_us"]
    return [
        f"GPU {g['device']}: exposed idle_us {g['idle_us']!r} outside [0, window_us {window!r}]"
        for g in exposed["gpus"]
        if not 0 <= g["idle_us"] <= window
    ]


def stream_idle_per_gpu(insights: dict) -> dict[int, float]:
    """Idle µs per GPU as the Insights tab reports it (``idle.gpus``); its parts (host wait, short gap,
    other) must add up to it."""
    out: dict[int, float] = {}
    for g in insights["idle"]["gpus"]:
        parts = sum(g[k] for k in IDLE_PARTS)
        assert math.isclose(parts, g["idle_us"], rel_tol=1e-9, abs_tol=1e-6), (g, parts)
        out[int(g["device"])] = float(g["idle_us"])
    return out


def gpu_idle_failures(insights: dict) -> list[str]:
    """GPUs whose idle time (:func:`stream_idle_per_gpu`) exceeds the steps window."""
    window = insights["exposed"]["window_us"]
    return [
        f"GPU {d}: idle {v / 1000:.3f} ms > window {window / 1000:.3f} ms ({v / window if window else math.inf:.2f}×)"
        for d, v in sorted(stream_idle_per_gpu(insights).items())
        if v > window
    ]


# -- 4. percentages ------------------------------------------------------------------------------


def walk(doc: Any, path: str = "") -> Iterator[tuple[str, str | None, Any]]:
    """``(path, key, value)`` of every leaf and list item of a JSON-like document (key: the dict key
    that holds the value, or the list's key for its items)."""
    stack = [(path, None, doc)]
    while stack:
        p, key, value = stack.pop()
        if isinstance(value, dict):
            for k, v in value.items():
                stack.append((f"{p}.{k}", str(k), v))
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                stack.append((f"{p}[{i}]", key, v))
        else:
            yield p, key, value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def percentage_failures(doc: Any) -> list[str]:
    """``*_pct`` outside 0–100 and ``*_share`` outside 0–1 (null is allowed here; see check 5)."""
    out = []
    for path, key, value in walk(doc):
        if key is None or value is None or not _is_number(value):
            continue
        if key.endswith("_pct") and not 0 <= value <= 100:
            out.append(f"{path} = {value!r} (not within 0–100)")
        elif (key.endswith("_share") or key == "share") and not 0 <= value <= 1:
            out.append(f"{path} = {value!r} (not within 0–1)")
    return out


# -- 5. no null/NaN where a number is documented, no null words in our sentences --------------------

# Fields docs/http_api.md documents as numbers (by unit suffix or by name) ...
_NUMERIC_KEY = re.compile(r"(_us|_bytes|_pct|_gbps|_share|_ts)$")
_NUMERIC_NAMES = frozenset(
    {
        "calls",
        "occurrences",
        "operators",
        "allocations",
        "self_allocations",
        "kernels",
        "rank",
        "world_size",
        "workers_in_run",
        "gpu_count",
        "step_count",
        "sync_calls",
        "cuda_sync_events",
        "ranks_present",
        "id",
        "group_size",
        "total_rows",
        "counts",
        "p50",
        "p95",
        "max",
        "total_stacks",
    }
)
# ... except those it documents as "number | null" (a value the trace cannot give), and the launch
# statistics, null when the trace has no launched kernel (insights.launch_delays; the UI shows "–").
NULLABLE = frozenset(
    {
        "sm_efficiency_pct",
        "achieved_occupancy_pct",
        "tensor_core_pct",
        "tc_self_pct",
        "tc_total_pct",
        "memory_bytes",
        "blocks_per_sm",
        "registers_per_thread",
        "shared_memory_bytes",
        "peak_reserved_bytes",
        "alloc_us",
        "free_us",
        "duration_us",
        "algbw_gbps",
        "busbw_gbps",
        "flops",
        "tflops_per_s",
        "free_time",
        "relative_pct",
        "p50",
        "p95",
        "max",
        "short_kernel_share",
        "edges_us",
        "base_time_ns",
        "window_pct",  # the runtime-calls table's share of a steps window of 0 µs
        "world_size",
        "rank",
    }
)  # distributedInfo fields the trace may leave out (the UI omits them)


def null_number_failures(doc: Any) -> list[str]:
    """Numeric fields holding None, NaN or ±Infinity (None allowed in :data:`NULLABLE` fields)."""
    out = []
    for path, key, value in walk(doc):
        if key is None or not (_NUMERIC_KEY.search(key) or key in _NUMERIC_NAMES):
            continue
        if value is None:
            if key not in NULLABLE:
                out.append(f"{path} is null")
        elif _is_number(value) and not math.isfinite(value):
            out.append(f"{path} = {value!r}")
        elif isinstance(value, str) and value.strip().lower() in ("nan", "inf", "-inf", "infinity", "null", "none"):
            out.append(f"{path} = {value!r}")
    return out


# Our own sentences (not names from the trace): where a formatting bug would show a null word.
SENTENCE_KEYS = frozenset({"recommendations", "messages", "warnings", "reason", "error", "pairs_reason", "notices"})
NULL_WORD = re.compile(r"\b(null|None|NaN|nan|undefined|Infinity|inf)\b|\[object Object\]")


def null_word_failures(doc: Any) -> list[str]:
    """Sentences (under :data:`SENTENCE_KEYS`) that contain a null word."""
    out = []
    for path, key, value in walk(doc):
        if key in SENTENCE_KEYS and isinstance(value, str) and NULL_WORD.search(value):
            out.append(f"{path}: {value!r}")
    return out


# -- 6. advice that fits the trace ---------------------------------------------------------------------

CALL_RULES = ("allocator", "blocking_copy", "synchronize")


def advice_failures(overview: dict) -> list[str]:
    """Recommendations under their threshold, sentences that are not the details' texts, and AMP advice
    for a GPU whose tensor cores already run kernels."""
    out = []
    recs = overview.get("recommendation_details") or []
    if overview.get("recommendations") != [r["text"] for r in recs]:
        out.append("recommendations are not the details' sentences")
    tensor_cores = {g["id"]: g.get("tensor_core_pct") or 0.0 for g in overview.get("gpus") or []}
    for r in recs:
        if "addressed_us" in r:
            if not r["addressed_us"] >= r["threshold_us"] > 0:
                out.append(f"{r['rule']}: addresses {r['addressed_us']} µs under its threshold {r['threshold_us']} µs")
        elif not r["addressed_bytes"] >= r["threshold_bytes"] > 0:
            out.append(f"{r['rule']}: addresses {r['addressed_bytes']} bytes under {r['threshold_bytes']} bytes")
        if r["rule"] == "mixed_precision" and tensor_cores.get(r["gpu"], 0.0) > 0:
            out.append(f"AMP advice on GPU {r['gpu']} whose tensor cores run {tensor_cores[r['gpu']]}% of kernel time")
    return out


def blocked_overhead_failures(overview: dict, insights: dict) -> list[str]:
    """CPU-overhead advice that counts time the host was blocked on the device: its time and the call
    rules' (GPU idle during and right after blocking calls) are disjoint parts of the GPU's idle time,
    and it is never more than the GPU's host wait."""
    recs = overview.get("recommendation_details") or []
    blocked = sum(r["addressed_us"] for r in recs if r["rule"] in CALL_RULES)
    idle = {g["device"]: g for g in insights["idle"]["gpus"]}
    out = []
    for r in recs:
        if r["rule"] != "cpu_overhead":
            continue
        g = idle[r["gpu"]]
        if r["addressed_us"] > g["host_wait_us"] + 1e-6:
            out.append(f"GPU {r['gpu']}: CPU overhead {r['addressed_us']} µs > host wait {g['host_wait_us']} µs")
        if r["addressed_us"] + blocked > g["idle_us"] + 1e-6:
            out.append(
                f"GPU {r['gpu']}: CPU overhead {r['addressed_us']} µs + blocked {blocked} µs > idle {g['idle_us']} µs"
            )
    return out
