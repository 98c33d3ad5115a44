"""Analyses rewritten without a Python loop over events give the results of the loop
they replaced. Each old loop is kept here as the reference, run on the real samples and on random
inputs built to hit its edge cases (crossings, points, ties)."""

from __future__ import annotations

import glob

import numpy as np
import pytest
from conftest import sample

from tb_plugin.analysis import timeline
from tb_plugin.registry.parse import load_trace_file

REAL = [
    "kineto/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
    "tracelens/h100/*",
    "tracelens/mi300/*",
    "dlrm_8ranks/worker0*",
    "hta/amd_trace/*",
    "hta/triton_example/*",
    "hta/with_gpu_user_annotation/*",
    "hta/critical_path/alexnet/*",
    "torch213_cpu/*",
    "composer/*",
    "lightning/*",
]


def _real_traces():
    for pattern in REAL:
        for path in sorted(glob.glob(str(sample(pattern.split("/")[0]).parent / pattern))):
            yield path, load_trace_file(path)


def reference_depths(start, end, track):
    """The stack loop ``timeline._depths`` was (one Python iteration per event)."""
    depth = np.zeros(len(start), dtype=np.int32)
    end = np.maximum(end, start)
    order = np.lexsort((-end, start, track))
    stack: list[float] = []
    current = -1
    for i, t, s, e in zip(order.tolist(), track[order].tolist(), start[order].tolist(), end[order].tolist()):
        if t != current:
            current, stack = t, []
        while stack and stack[-1] <= s and not (stack[-1] == s == e):
            stack.pop()
        depth[i] = len(stack)
        if e > s:
            stack.append(e)
    return depth


def test_depths_equal_the_stack_loop_on_random_tracks():
    rng = np.random.default_rng(17)
    for case in range(2000):
        n = int(rng.integers(0, 40))
        start = rng.integers(0, 20, n).astype(float)
        dur = rng.integers(-2, 8, n).astype(float)
        if case % 3 == 0:  # many points, at slices' starts and ends
            dur = np.where(rng.random(n) < 0.4, 0.0, dur)
        track = rng.integers(0, 3, n)
        got = timeline._depths(start, start + dur, track)
        assert got.dtype == np.int32
        assert np.array_equal(got, reference_depths(start, start + dur, track)), case


def test_depths_known_answers():
    # [0,10] holds [2,5] (depth 1); [4,12] crosses [2,5]: one deeper than it (2); the point at 5 lies in
    # all three (3): at the end of [2,5], the point stays inside it; two points at 20 are siblings; another track
    # starts over at 0
    start = np.array([0, 2, 5, 4, 20, 20, 0.0])
    end = np.array([10, 5, 5, 12, 20, 20, 1.0])
    track = np.array([0, 0, 0, 0, 0, 0, 1])
    assert timeline._depths(start, end, track).tolist() == [0, 1, 3, 2, 0, 0, 0]
    assert timeline._depths(start, end, track).tolist() == reference_depths(start, end, track).tolist()


@pytest.mark.corpus
def test_depths_equal_the_stack_loop_on_real_traces():
    seen = 0
    for path, trace in _real_traces():
        ev = trace.events
        timeline.timeline_index(trace)
        track = trace.derived["track_of"]
        got = timeline._depths(ev.ts, ev.ts + ev.dur, track)
        assert np.array_equal(got, reference_depths(ev.ts, ev.ts + ev.dur, track)), path
        seen += 1
    assert seen >= 12


def reference_allocation_pairs(trace) -> list[dict]:
    """The loop ``memory.allocation_pairs`` was (one Python iteration per memory event)."""
    from tb_plugin.analysis.memory import memory_data

    mem, data = trace.memory, memory_data(trace)
    rows = []
    t_rel = mem.ts - data.origin
    for i in np.flatnonzero((mem.addr >= 0) & (mem.bytes != 0)).tolist():
        lab, b = data.device[i], int(mem.bytes[i])
        if not lab or (b < 0 and data.ends[i] >= 0):
            continue
        t, j = float(t_rel[i]), int(data.freed_at[i])
        free_t = float(t_rel[j]) if b > 0 and j >= 0 else None
        op = int(data.op[i])
        rows.append(
            {
                "device": lab,
                "addr": int(mem.addr[i]),
                "size_bytes": abs(b),
                "alloc_us": t if b > 0 else None,
                "free_us": free_t if b > 0 else t,
                "duration_us": free_t - t if free_t is not None else None,
                "op": trace.strings[trace.events.name[op]] if op >= 0 else None,
            }
        )
    return rows


@pytest.mark.corpus
def test_allocation_pairs_and_device_masks_equal_the_loops_on_real_traces():
    from tb_plugin.analysis import memory

    with_pairs = 0
    for path, trace in _real_traces():
        got = memory.allocation_pairs(trace)
        expected = reference_allocation_pairs(trace) if memory.memory_data(trace).has_addr else []
        assert got["rows"] == expected, path
        assert [[type(v) for v in r.values()] for r in got["rows"]] == [[type(v) for v in r.values()] for r in expected]
        with_pairs += bool(expected)
        data = memory.memory_data(trace)
        for label in set(data.device) - {""}:
            assert np.array_equal(
                np.isin(data.device_code, [k + 1 for k, x in enumerate(data.labels) if x == label]),
                np.array([d == label for d in data.device], dtype=bool),
            )
    assert with_pairs >= 4


def reference_host_syncs(trace, top: int = 20) -> dict:
    """The loop ``insights.host_syncs`` was (one Python iteration per synchronizing call)."""
    from tb_plugin.analysis import insights

    full = insights.host_syncs(trace, top)  # the parts that were already vectorized
    ev = trace.events
    from tb_plugin.analysis.blocking import BLOCKING_COPY, SYNCHRONIZE, blocking_calls
    from tb_plugin.analysis.op_tree import op_tree

    bl = blocking_calls(trace)
    rows = np.sort(bl.rows[np.isin(bl.kind, (SYNCHRONIZE, BLOCKING_COPY))])
    parent = op_tree(trace).op_parent

    def issuer(r: int) -> int:
        """The innermost cpu_op around ``r``, else the innermost annotation that is not ProfilerStep#N."""
        node, fallback = int(parent[r]), -1
        while node >= 0:
            if ev.kind[node] == insights.Kind.CPU_OP:
                return node
            if (
                fallback < 0
                and ev.kind[node] == insights.Kind.USER_ANNOTATION
                and not trace.strings[ev.name[node]].startswith("ProfilerStep#")
            ):
                fallback = node
            node = int(parent[node])
        return fallback

    dev_starts = np.sort(ev.ts[np.flatnonzero(insights.device_mask(trace))])
    by_op: dict[str, dict] = {}
    spans_of: dict[str, list[tuple[float, float]]] = {}
    gaps: dict[int, float] = {}
    for r in rows.tolist():
        end = float(ev.ts[r] + ev.dur[r])
        i = np.searchsorted(dev_starts, end)
        idle = float(dev_starts[i] - end) if i < len(dev_starts) else 0.0
        gaps[r] = idle
        node = issuer(r)
        op = trace.strings[ev.name[node]] if node >= 0 else "(no operator)"
        entry = by_op.setdefault(op, {"op": op, "calls": 0, "sync_us": 0.0, "gpu_idle_after_us": 0.0, "apis": {}})
        entry["calls"] += 1
        entry["sync_us"] += float(ev.dur[r])
        spans_of.setdefault(op, []).append((end, end + idle))
        api_name = trace.strings[ev.name[r]]
        entry["apis"][api_name] = entry["apis"].get(api_name, 0) + 1

    def union_of(spans: list[tuple[float, float]]) -> float:
        """The time-union of the intervals (merged in a loop)."""
        union, reach = 0.0, -np.inf
        for a, b in sorted(spans):
            if b > reach:
                union += b - max(a, reach)
                reach = b
        return union

    # the total, and each operator's, is the union of the [end, next device start] intervals
    for entry in by_op.values():
        entry["gpu_idle_after_us"] = union_of(spans_of[entry["op"]])
    ranked = sorted(by_op.values(), key=lambda x: -x["sync_us"])
    spans = [(float(ev.ts[r] + ev.dur[r]), float(ev.ts[r] + ev.dur[r]) + gaps[r]) for r in rows.tolist()]
    return dict(full, gpu_idle_after_us=union_of(spans) if spans else 0.0, by_operator=ranked[:top])


@pytest.mark.corpus
def test_host_syncs_equal_the_loop_on_real_traces():
    from tb_plugin.analysis import insights

    with_syncs = 0
    for path, trace in _real_traces():
        got, expected = insights.host_syncs(trace), reference_host_syncs(trace)
        assert got == expected, path
        assert [list(o["apis"]) for o in got["by_operator"]] == [list(o["apis"]) for o in expected["by_operator"]]
        with_syncs += got["sync_calls"] > 0
    assert with_syncs >= 3


def reference_comm_kernels(trace) -> dict:
    """The loop ``distributed.comm_kernels`` was (one Python iteration per communication kernel)."""
    from tb_plugin.analysis import distributed as d

    ev = trace.events
    rows = np.flatnonzero(d.category_masks(trace)["communication"] & (ev.kind == d.Kind.KERNEL))
    rows = rows[np.argsort(ev.ts[rows], kind="stable")]
    launcher, parent = d.launch_of(trace), d.op_tree(trace).op_parent

    def comm_op(launch):
        node = int(parent[launch]) if launch >= 0 else -1
        first = node
        for _ in range(16):
            if node < 0:
                break
            if (
                ev.collective[node] > 0
                or ev.in_msg_nelems[node] >= 0
                or d.is_comm_op_name(trace.strings[ev.name[node]])
            ):
                return node
            node = int(parent[node])
        return first

    def is_comm(node):
        return ev.collective[node] > 0 or ev.in_msg_nelems[node] >= 0 or d.is_comm_op_name(trace.strings[ev.name[node]])

    def outermost(op):
        """The outermost communication op of the chain around ``op`` (c10d:: around nccl:)."""
        if op < 0 or not is_comm(op):
            return op
        for _ in range(16):
            up = int(parent[op])
            if up < 0 or not is_comm(up):
                break
            op = up
        return op

    out = {
        "rows": rows,
        "op": [],
        "collective": [],
        "group": [],
        "group_size": [],
        "bytes": [],
        "dtype": [],
        "seq": [],
        "size_from_buffers": [],
    }
    for r in rows.tolist():
        op = comm_op(int(launcher[r]))
        out["op"].append(op)
        coll = trace.string(int(ev.collective[r])) or (trace.string(int(ev.collective[op])) if op >= 0 else None)
        name = (
            d.normalize_collective(coll)
            or d.normalize_collective(trace.strings[ev.name[op]] if op >= 0 else None)
            or d.normalize_collective(trace.strings[ev.name[r]])
        )
        group = trace.string(int(ev.process_group[r])) or (trace.string(int(ev.process_group[op])) if op >= 0 else None)
        size = (
            int(ev.group_size[r])
            if ev.group_size[r] > 0
            else (int(ev.group_size[op]) if op >= 0 and ev.group_size[op] > 0 else None)
        )
        seq = int(ev.seq[r]) if ev.seq[r] >= 0 else (int(ev.seq[op]) if op >= 0 else -1)
        nbytes, dtype, hint = d.message(trace, r, op, outermost(op), name or "other")
        for k, v in (
            ("collective", name or "other"),
            ("group", group or "default"),
            ("group_size", size),
            ("bytes", nbytes),
            ("dtype", dtype),
            ("seq", seq),
            ("size_from_buffers", hint),
        ):
            out[k].append(v)
    return out


@pytest.mark.corpus
def test_comm_kernels_equal_the_loop_on_real_traces():
    from tb_plugin.analysis import distributed

    paths = [str(p) for p in sorted(sample("dlrm_8ranks").glob("*.json"))[:3]] + [
        str(p) for p in sorted(sample("hta").glob("*/*.gz")) if "memory" not in str(p)
    ]
    with_comm = 0
    for path in paths:
        trace = load_trace_file(path)
        got, expected = distributed.comm_kernels(trace), reference_comm_kernels(trace)
        assert np.array_equal(got["rows"], expected["rows"]) and list(got) == list(expected), path
        for key in expected:
            if key != "rows":
                assert got[key] == expected[key] and [type(v) for v in got[key]] == [type(v) for v in expected[key]], (
                    path,
                    key,
                )
        with_comm += len(expected["rows"]) > 0
    assert with_comm >= 4


def _module_traces():
    yield from (load_trace_file(str(p)) for p in sorted(sample("torch213_cpu").glob("*.json")))
    yield from (load_trace_file(str(p)) for p in sorted(sample("tracelens").glob("*/*.gz")))
    for seed in range(12):
        yield _random_module_trace(seed, lightning=seed % 4 == 3)


def _random_module_trace(seed: int, lightning: bool):
    """Random nested module calls (some deeper than MAX_DEPTH, repeated names, file order shuffled),
    operators inside them and fwdbwd flows between operators, on two threads."""
    import json

    from tb_plugin.trace.decode import decode_trace

    rng = np.random.default_rng(seed)
    events, flows, ops = [], [], []
    for tid in (1, 2):

        def call(lo, hi, depth):
            deep = depth < (130 if seed % 3 == 0 else 6)
            name = f"M_{rng.integers(3)}" if rng.random() < 0.7 else f"M_{depth}"
            if lightning:
                events.append(
                    {
                        "ph": "X",
                        "cat": "user_annotation",
                        "pid": 1,
                        "tid": tid,
                        "ts": lo,
                        "dur": hi - lo,
                        "name": f"[pl][module]torch.nn.{name}: layer.{rng.integers(2)}",
                    }
                )
            else:
                events.append(
                    {
                        "ph": "X",
                        "cat": "python_function",
                        "pid": 1,
                        "tid": tid,
                        "ts": lo,
                        "dur": hi - lo,
                        "name": f"nn.Module: {name}",
                    }
                )
            t = lo + 1
            while t + 4 < hi and deep and rng.random() < 0.8:
                span = int(rng.integers(2, max(3, (hi - t) // 2)))
                if rng.random() < 0.5 and depth < 140:
                    call(t, t + span, depth + 1)
                else:
                    events.append(
                        {
                            "ph": "X",
                            "cat": "cpu_op",
                            "pid": 1,
                            "tid": tid,
                            "ts": t,
                            "dur": span,
                            "name": f"aten::op{rng.integers(4)}",
                        }
                    )
                    ops.append((tid, t))
                t += span + int(rng.integers(0, 2))

        call(0, 100_000, 0)
    if seed % 3 == 0:  # a chain deeper than MAX_DEPTH, with operators at several depths
        for depth in range(130):
            name = f"[pl][module]torch.nn.Deep: d{depth % 5}" if lightning else f"nn.Module: Deep_{depth % 5}"
            kind = "user_annotation" if lightning else "python_function"
            events.append(
                {"ph": "X", "cat": kind, "pid": 1, "tid": 3, "ts": 10 * depth, "dur": 10_000 - 20 * depth, "name": name}
            )
            if depth % 20 == 19:
                events.append(
                    {
                        "ph": "X",
                        "cat": "cpu_op",
                        "pid": 1,
                        "tid": 3,
                        "ts": 10 * depth + 1,
                        "dur": 2,
                        "name": "aten::deep",
                    }
                )
                ops.append((3, 10 * depth + 1))
    for k in range(len(ops) // 2):
        a, b = rng.choice(len(ops), 2)
        for phase, (tid, ts) in (("s", ops[a]), ("f", ops[b])):
            flows.append(
                {
                    "ph": phase,
                    "cat": "fwdbwd",
                    "id": int(k % 7),
                    "pid": 1,
                    "tid": tid,
                    "ts": ts,
                    "name": "fwdbwd",
                    **({"bp": "e"} if phase == "f" else {}),
                }
            )
    everything = events + flows
    rng.shuffle(everything)
    return decode_trace(json.dumps({"traceEvents": everything}).encode())


@pytest.mark.corpus
def test_module_tree_equals_the_loops_on_real_traces():
    import orjson
    import reference_modules

    from tb_plugin.analysis import modules

    with_modules = folded = linked = 0
    for trace in _module_traces():
        got, expected = modules._module_tree(trace), reference_modules._module_tree(trace)
        assert orjson.dumps(got) == orjson.dumps(expected)  # values, key order and child order
        pairs = modules._forward_backward_pairs(trace)
        assert [tuple(p) for p in pairs.tolist()] == reference_modules._forward_backward_pairs(trace)
        with_modules += bool(expected)
        folded += '"folded_calls"' in orjson.dumps(got).decode()
        linked += len(pairs) > 0
    assert with_modules >= 17 and folded >= 2 and linked >= 10


def reference_op_path_tree(trace) -> dict:
    """The loop ``diff.op_path_tree`` was (one Python iteration per operator call)."""
    from tb_plugin.analysis import diff

    ev, tree, times = trace.events, diff.op_tree(trace), diff.op_times(trace)
    kept = diff.compute_steps(trace)
    steps = max(len(kept), 1)
    paths: dict[int, tuple] = {}
    nodes: dict[tuple, dict] = {}
    for row in tree.order[times.is_op[tree.order]].tolist():
        path = paths.get(int(tree.op_parent[row]), ()) + (diff._label(trace.strings[ev.name[row]]),)
        paths[row] = path
        # only calls that start inside a kept step's host range count (the diff's rule, METRICS.md)
        if len(kept) and not any(lo <= ev.ts[row] < hi for lo, hi in zip(kept.host_start, kept.host_end)):
            continue
        node = nodes.setdefault(path, dict.fromkeys(diff._FIELDS, 0.0))
        node["calls"] += 1
        node["host_self_us"] += float(times.host_self[row])
        node["host_total_us"] += float(ev.dur[row])
        node["device_self_us"] += float(times.device_self[row])
        node["device_total_us"] += float(times.device_total[row])
        node["graph_replay_self_us"] += float(times.replay_self[row])
    for node in nodes.values():
        for key in diff._FIELDS:
            node[key] /= steps
    return nodes


@pytest.mark.corpus
def test_op_path_tree_equals_the_loop_on_real_traces():
    import orjson

    from tb_plugin.analysis import diff

    seen = 0
    for path, trace in _real_traces():
        got, expected = diff.op_path_tree(trace), reference_op_path_tree(trace)
        assert sorted(got) == sorted(expected), path  # the same paths (the diff sorts its rows itself)
        keys = sorted(expected)
        assert orjson.dumps([got[k] for k in keys]) == orjson.dumps([expected[k] for k in keys]), path
        seen += len(expected) > 10
    assert seen >= 8


def reference_merge(starts, ends):
    """``intervals.merge`` as it was (a ``np.maximum.at`` per group into zeros)."""
    if len(starts) == 0:
        return np.zeros(0), np.zeros(0)
    from tb_plugin.analysis.intervals import sorted_groups  # unchanged: only the per-group maximum differs

    s, reach, new_group = sorted_groups(starts, ends)
    group = np.cumsum(new_group) - 1
    out_s = s[new_group]
    out_e = np.zeros(len(out_s))
    np.maximum.at(out_e, group, reach)
    return out_s, np.maximum(out_e, out_s)


def test_merge_equals_the_old_merge():
    from tb_plugin.analysis.intervals import merge

    rng = np.random.default_rng(5)
    for case in range(3000):
        n = int(rng.integers(0, 30))
        s = rng.integers(-10, 20, n).astype(float)
        e = s + rng.integers(-3, 8, n)  # inverted and empty intervals too, negative times
        if case % 10 == 0 and n:
            e[rng.integers(n)] = np.inf
        got, want = merge(s, e), reference_merge(s, e)
        assert all(np.array_equal(g, w) and g.dtype == w.dtype for g, w in zip(got, want)), case


def _pairs_queries():
    for device in (None, "", "GPU0", "CPU", "GPU9"):
        for lo, hi in ((None, None), (0.0, None), (None, 50_000.0), (1_000.0, 200_000.0)):
            for search in ("", "aten::empty", "ZZZ", "Add"):
                for sort in ("op", "device", "size_bytes", "alloc_us", "free_us", "duration_us", "addr"):
                    for descending in (True, False):
                        yield device, lo, hi, (0, 2**62) if search != "Add" else (1024, 10**6), search, sort, descending


@pytest.mark.corpus
def test_memory_event_table_equals_the_row_loop():
    from tb_plugin.analysis.memory import allocation_pairs
    from tb_plugin.registry import memory_events

    rng = np.random.default_rng(3)
    made = [
        {
            "device": str(rng.choice(["GPU0", "CPU", "gpu0"])),
            "addr": int(rng.integers(0, 5)),
            "size_bytes": int(rng.integers(0, 4)) * 1024,
            "alloc_us": None if rng.random() < 0.2 else float(rng.integers(0, 5)),
            "free_us": None if rng.random() < 0.3 else float(rng.integers(0, 9)),
            "duration_us": None,
            "op": None if rng.random() < 0.2 else str(rng.choice(["aten::empty", "aten::Add", "b", "B", ""])),
        }
        for _ in range(300)
    ]  # many ties, None values, names differing only by case
    tables = [made] + [allocation_pairs(trace)["rows"] for _, trace in _real_traces()]
    assert sum(len(t) > 100 for t in tables) >= 4
    for rows in tables:
        index = memory_events.build_index(rows)
        for device, lo, hi, (low, high), search, sort, descending in _pairs_queries():
            q = memory_events.PairsQuery(device, lo, hi, low, high, search, sort, descending)
            got = memory_events.select(index, q)
            want = memory_events.reference_select(rows, q)
            assert len(got) == len(want) and got[0 : len(got)] == want, (device, lo, hi, search, sort, descending)
    nan_rows = [dict(made[0], alloc_us=float("nan")), dict(made[1], alloc_us=1.0)]  # NaN keys: the loop's own order
    q = memory_events.PairsQuery(None, None, None, 0, 2**62, "", "alloc_us", True)
    assert list(memory_events.select(memory_events.build_index(nan_rows), q)) == memory_events.reference_select(
        nan_rows, q
    )


def reference_composer_steps(trace):
    """The loops ``steps._composer_steps`` was (one Python iteration per load and per batch)."""
    from tb_plugin.analysis import steps as st

    ev = trace.events
    batches = np.flatnonzero(trace.name_mask(lambda s: s == st.COMPOSER_BATCH) & (ev.dur > 0))
    if len(batches) == 0:
        return None
    batches = batches[np.argsort(ev.ts[batches], kind="stable")]
    loads = np.flatnonzero(trace.name_mask(lambda s: s.startswith(("dataloader/", "event/dataloader"))))
    load_start: dict[tuple, float] = {}
    for r in loads[np.argsort(ev.ts[loads], kind="stable")].tolist():
        load_start[(int(ev.epoch[r]), int(ev.batch[r]), int(ev.pid[r]), int(ev.tid[r]))] = float(ev.ts[r])
    names, starts, ends = [], [], []
    for r in batches.tolist():
        start = float(ev.ts[r])
        loaded = load_start.get((int(ev.epoch[r]), int(ev.batch[r]), int(ev.pid[r]), int(ev.tid[r])))
        if loaded is not None and loaded < start and (not ends or loaded >= ends[-1]):
            start = loaded
        names.append(str(int(ev.batch[r])) if ev.batch[r] >= 0 else str(len(names)))
        starts.append(start)
        ends.append(float(ev.ts[r] + ev.dur[r]))
    return names, np.array(starts), np.array(ends), True


@pytest.mark.corpus
def test_composer_steps_equal_the_loops():
    import json

    from synth.composer import composer_trace

    from tb_plugin.analysis import steps as st
    from tb_plugin.trace.decode import decode_trace

    traces = [load_trace_file(str(sample("composer") / "rank_0.trace.json"))]
    for rank in range(3):
        for load_us in (300.0, 5000.0):  # a load longer than a batch reaches back into the batch before
            doc = composer_trace(rank=rank, batches=6, load_us=load_us)
            traces.append(decode_trace(json.dumps(doc if isinstance(doc, dict) else {"traceEvents": doc}).encode()))

    def x(name, ts, dur, batch, tid=1):
        return {
            "name": name,
            "ph": "X",
            "cat": "event",
            "pid": 0,
            "tid": tid,
            "ts": ts,
            "dur": dur,
            "args": {"epoch": 0, "batch": batch},
        }

    # batch 1's load starts inside batch 0 (kept at its own start); batch 2's load is taken; two loads of
    # batch 3 (the later counts); batch −1 is named by its position; a load on another thread is not its
    traces.append(
        decode_trace(
            json.dumps(
                {
                    "traceEvents": [
                        x("event/batch", 100, 100, 0),
                        x("dataloader/train", 150, 140, 1),
                        x("event/batch", 300, 100, 1),
                        x("dataloader/train", 450, 40, 2),
                        x("event/batch", 500, 100, 2),
                        x("dataloader/train", 610, 10, 3),
                        x("dataloader/train", 640, 50, 3),
                        x("event/batch", 700, 50, 3),
                        x("event/batch", 800, 50, -1),
                        x("dataloader/train", 760, 30, 4, tid=2),
                        x("event/batch", 900, 50, 4),
                    ]
                }
            ).encode()
        )
    )
    checked = 0
    for trace in traces:
        got, want = st._composer_steps(trace), reference_composer_steps(trace)
        assert (got is None) == (want is None)
        if want is not None:
            assert got[0] == want[0] and got[3] == want[3]
            assert np.array_equal(got[1], want[1]) and np.array_equal(got[2], want[2])
            checked += 1
    assert checked >= 6
    last = st._composer_steps(traces[-1])
    assert last[0] == ["0", "1", "2", "3", "4", "4"] and last[1].tolist() == [100, 300, 450, 640, 800, 900]
