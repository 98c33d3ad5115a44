#!/usr/bin/env python3
"""The incumbent's Memory view (torch-tb-profiler 0.4.3), as reference data.

Run this with the python of the virtualenv that has ``torch-tb-profiler==0.4.3`` installed (see
benchmarks/INCUMBENT.md, section "Memory view"). Nothing of the incumbent is copied here. The script
loads each trace file through the incumbent's own path, as benchmarks/incumbent_reference.py does:

    data = RunProfileData.from_json(worker, span, json)   # builds data.memory_snapshot (MemoryParser)
    profile = RunGenerator(worker, span, data).generate_run_profile()

and then calls the three methods behind the Memory view's HTTP routes (plugin.py ``/memory``,
``/memory_curve``, ``/memory_events``) on the incumbent's ``RunProfile``:

    profile.get_memory_stats(...)    the per-operator table, per device
    profile.get_memory_curve(...)    allocated/reserved curves and peaks, per device
    profile.get_memory_events(...)   the alloc/free pairs table, per device

Each method is called twice:

* in bytes and µs with the incumbent's ``DisplayRounder`` replaced, for that call only, by an identity
  function (``run.DisplayRounder`` is looked up at call time), so the values are the incumbent's
  own numbers, unrounded (the plain fields); the curve is taken without the step-plot patch;
* with the units of the UI's requests (it sends none, so the plugin.py route defaults apply: stats KB,
  curve ms/MB, events ms/KB), exactly as displayed (``*_displayed`` fields).

The unrounded per-op stats are checked against ``MemorySnapshot.get_memory_statistics`` (the raw
lists) and against the displayed KB table (``displayed_check``).

Output per file (keyed by path relative to --root): see INCUMBENT.md. Curves are cut to the first
--max-curve-points points (full counts kept), events to the first --max-event-rows rows per device.

Usage (from the repo root):

    /work/venv-incumbent/bin/python benchmarks/incumbent_memory.py \
        --out tests/data/incumbent_memory.json FILE_OR_GLOB...
"""

import collections
import contextlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import incumbent_reference as ref
from incumbent_reference import _num, _worker_and_span, incumbent_profile

# incumbent MemoryMetrics order in its raw lists; index 6 is calls (appended by get_memory_statistics)
STAT_FIELDS = [
    "self_increase_bytes",
    "self_alloc_bytes",
    "self_alloc_count",
    "increase_bytes",
    "alloc_bytes",
    "alloc_count",
]
# our names <- the incumbent's displayed column order in get_memory_stats rows
ROW_FIELDS = [
    "name",
    "calls",
    "increase_bytes",
    "self_increase_bytes",
    "alloc_count",
    "self_alloc_count",
    "alloc_bytes",
    "self_alloc_bytes",
]


@contextlib.contextmanager
def unrounded():
    """Make the incumbent's run.DisplayRounder an identity for the duration of one call."""
    from torch_tb_profiler import run as inc_run

    orig = inc_run.DisplayRounder

    class Identity:
        def __init__(self, ndigits):
            pass

        def __call__(self, v):
            return v

    inc_run.DisplayRounder = Identity
    try:
        yield
    finally:
        inc_run.DisplayRounder = orig


def _clean(v):
    if isinstance(v, float) and v != v:
        return None
    return _num(v)


def _whole(v):
    """Bytes and counts: the incumbent's B conversion multiplies by 1.0; give back the int it was."""
    v = _clean(v)
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def _stats(profile, data):
    """Per-op memory stats per device, unrounded bytes, in the incumbent's row order (by name)."""
    with unrounded():
        table = profile.get_memory_stats(memory_metric="B")
    displayed = profile.get_memory_stats()  # the UI's request: memory_metric=KB, no time range
    raw = data.memory_snapshot.get_memory_statistics(data.tid2tree)

    out = {}
    checks = {}
    for dev, rows in table["rows"].items():
        dev_rows = [dict(zip(ROW_FIELDS, [r[0]] + [_whole(x) for x in r[1:]])) for r in rows]
        out[dev] = dev_rows
        # check 1: equal to the raw lists of MemorySnapshot.get_memory_statistics
        problem = None
        raw_dev = raw.get(dev, {})
        if len(raw_dev) != len(dev_rows):
            problem = f"row count {len(dev_rows)} != raw {len(raw_dev)}"
        for r in dev_rows:
            if problem:
                break
            vals = raw_dev.get(r["name"])
            expect = dict(zip(STAT_FIELDS, vals[:6]))
            expect["calls"] = vals[6]
            for k, v in expect.items():
                if r[k] != v:
                    problem = "row {!r}: {} = {!r}, raw {!r}".format(r["name"], k, r[k], v)
                    break
        # check 2: rounding our bytes to the displayed KB gives the displayed rows
        shown = displayed["rows"].get(dev, [])
        if not problem and len(shown) != len(dev_rows):
            problem = f"row count {len(dev_rows)} != displayed {len(shown)}"
        if not problem:
            for ours, disp in zip(dev_rows, shown):
                expect = [
                    ours["name"],
                    ours["calls"],
                    _kb(ours["increase_bytes"]),
                    _kb(ours["self_increase_bytes"]),
                    ours["alloc_count"],
                    ours["self_alloc_count"],
                    _kb(ours["alloc_bytes"]),
                    _kb(ours["self_alloc_bytes"]),
                ]
                if list(disp) != expect:
                    problem = "row {!r}: ours {!r}, displayed {!r}".format(ours["name"], expect, list(disp))
                    break
        checks[dev] = problem or "ok"
    return out, displayed["metadata"], checks


def _kb(b):
    """What the incumbent shows for b bytes in KB: its own DisplayRounder(ndigits=2) on b / 1024."""
    from torch_tb_profiler.utils import DisplayRounder

    return DisplayRounder(ndigits=2)(b / 1024)


def _curves(profile, max_points):
    with unrounded():
        raw = profile.get_memory_curve(time_metric="us", memory_metric="B", patch_for_step_plot=False)
    # the UI's request: /memory_curve without units -> plugin.py route defaults ms and MB (the method's
    # own default would be KB); with the step-plot patch
    displayed = profile.get_memory_curve(time_metric="ms", memory_metric="MB")
    curves = {}
    for dev, pts in raw["rows"].items():
        pts = [[_num(p[0]), _whole(p[1]), _whole(p[2])] for p in pts]
        curves[dev] = {
            "points": len(pts),
            "points_displayed": len(displayed["rows"].get(dev, [])),
            "truncated": len(pts) > max_points,
            "peak_allocated_bytes": max(p[1] for p in pts) if pts else None,
            "max_reserved_bytes": max(p[2] for p in pts) if pts else None,
            # [time_us since first_ts, total allocated bytes, total reserved bytes]
            "rows": pts[:max_points],
        }
    md = displayed["metadata"]
    meta_out = {
        "default_device": md["default_device"],
        "devices": md["devices"],
        "peaks_displayed": md["peaks"],
        "totals": md["totals"],
        "first_ts": _clean(md["first_ts"]),
        "time_metric_displayed": md["time_metric"],
        "memory_metric_displayed": md["memory_metric"],
        "columns_displayed": [c["name"] for c in displayed["columns"]],
    }
    sample = {dev: rows[:5] for dev, rows in displayed["rows"].items()}
    return curves, meta_out, sample


def _events(profile, max_rows):
    with unrounded():
        raw = profile.get_memory_events(time_metric="us", memory_metric="B")
    displayed = profile.get_memory_events()  # the UI's request: ms, KB
    out = {}
    for dev, rows in raw["rows"].items():
        rows = [[r[0], _whole(r[1]), _clean(r[2]), _clean(r[3]), _clean(r[4])] for r in rows]
        paired = sum(1 for r in rows if r[2] is not None and r[3] is not None)
        out[dev] = {
            "rows": len(rows),
            "paired": paired,
            "alloc_only": sum(1 for r in rows if r[3] is None),
            "free_only": sum(1 for r in rows if r[2] is None),
            # [name, size_bytes, alloc_time_us, release_time_us, duration_us] (times since first_ts)
            "first_rows": rows[:max_rows],
            "first_rows_displayed": [list(r) for r in displayed["rows"].get(dev, [])[:max_rows]],
        }
    return out, displayed["metadata"]["default_device"]


def _attribution(data):
    """How the incumbent's MemoryParser placed the records (from the snapshot it keeps)."""
    from torch_tb_profiler.profiler.node import is_operator_node

    snap = data.memory_snapshot
    records = snap.memory_records
    in_table = collections.Counter()
    placed = set()
    free_other_op = collections.Counter()
    free_same_op = collections.Counter()
    free_unpaired = collections.Counter()
    for node, recs in snap.op_memory_table.items():
        assert is_operator_node(node)
        for r in recs:
            dev = r.device_name or "None"
            in_table[dev] += 1
            placed.add(id(r))
            if r.bytes <= 0:
                # get_preprocessed_records copied the allocating op's name onto paired frees (Addr only)
                if r.addr is None or r.op_name is None:
                    free_unpaired[dev] += 1
                elif r.op_name == node.name:
                    free_same_op[dev] += 1
                else:
                    free_other_op[dev] += 1
    by_dev = collections.Counter(r.device_name or "None" for r in records)
    allocs = collections.Counter(r.device_name or "None" for r in records if r.bytes > 0)
    with_addr = collections.Counter(r.device_name or "None" for r in records if r.addr is not None)
    with_total = collections.Counter(r.device_name or "None" for r in records if r.total_allocated == r.total_allocated)
    # Where the records that no op got fell (our own containment search, not the incumbent's code):
    # the innermost host node of the record's thread with start <= ts < end.
    unplaced = collections.defaultdict(collections.Counter)
    for r in records:
        if id(r) in placed:
            continue
        dev = r.device_name or "None"
        root = data.tid2tree.get(r.tid)
        if root is None:
            where = "no host tree for the tid"
        elif root.start_time is None or r.ts < root.start_time:
            where = "before the thread's first op"
        elif r.ts >= root.end_time:
            where = "after the thread's last op"
        else:
            node = root
            while True:
                inner = next(
                    (c for c in node.children if c.start_time is not None and c.start_time <= r.ts < c.end_time), None
                )
                if inner is None:
                    break
                node = inner
            name = "ProfilerStep#*" if node.name.startswith("ProfilerStep#") else node.name
            if type(node).__name__ == "ModuleNode":
                name = "nn.Module: *"
            where = f"innermost {type(node).__name__} {name!r} (type {node.type})"
        unplaced[dev]["{} ({})".format(where, "alloc" if r.bytes > 0 else "free")] += 1
    out = {}
    for dev in sorted(by_dev):
        out[dev] = {
            "records": by_dev[dev],
            "allocations": allocs[dev],
            "frees": by_dev[dev] - allocs[dev],
            "with_addr": with_addr[dev],
            "with_total_allocated": with_total[dev],
            "attributed_to_an_op": in_table[dev],
            "not_attributed": by_dev[dev] - in_table[dev],
            "frees_in_op_other_than_allocator": free_other_op[dev],
            "frees_in_allocating_op": free_same_op[dev],
            "frees_without_known_allocator": free_unpaired[dev],
            "not_attributed_where": dict(unplaced[dev].most_common()),
        }
    return out


def load_one(path, max_points, max_rows):
    data, profile, _, seconds = incumbent_profile(path)
    worker = _worker_and_span(path)[0]

    out = {
        "worker": worker,
        "views": [v.display_name for v in profile.views],
        "has_memory_view": data.memory_snapshot is not None,
        "profiler_start_ts": _clean(profile.profiler_start_ts),
    }
    if data.memory_snapshot is None:
        out["note"] = "no [memory] events: the incumbent has no Memory view for this file"
        return out

    peaks = data.memory_snapshot.get_peak_memory()
    out["peak_allocated_bytes"] = {("CPU" if dt == 0 else f"GPU{di}"): _num(v) for (dt, di), v in sorted(peaks.items())}
    out["attribution"] = _attribution(data)
    stats, stats_md, checks = _stats(profile, data)
    out["stats_default_device"] = stats_md["default_device"]
    out["displayed_check"] = checks
    out["curve"], out["curve_meta"], out["curve_displayed_sample"] = _curves(profile, max_points)
    out["events"], out["events_default_device"] = _events(profile, max_rows)
    out["stats"] = stats  # last: the big part
    out["timing_s"] = seconds
    return out


def main():
    ap = ref.parser(__doc__)
    ap.add_argument("--max-curve-points", type=int, default=2000)
    ap.add_argument("--max-event-rows", type=int, default=50)
    args = ap.parse_args()

    note = (
        "Incumbent Memory view. stats: unrounded bytes, rows in the incumbent's order (by name). "
        "curve rows: [µs since curve_meta.first_ts, allocated B, reserved B], first "
        f"{args.max_curve_points} points, no step-plot patch. events first_rows: [op, size B, alloc µs, release µs, "
        f"duration µs], first {args.max_event_rows} rows per device, unrounded; *_displayed as the UI gets them. "
        "timing_s is machine-dependent. Keys other than _meta are paths relative to the samples "
        "root."
    )
    m = ref.meta("benchmarks/incumbent_memory.py", note)
    load = lambda path, _: load_one(path, args.max_curve_points, args.max_event_rows)
    return ref.collect(args, m, load, _summary, breaks=('},{"name"', "],["))


def _summary(r):
    """One file's line in the run's log."""
    if "stats" not in r:
        return r["note"]
    return "stats rows {}, curve points {}, event rows {}, peaks {}, checks {}".format(
        {d: len(v) for d, v in r["stats"].items()},
        {d: v["points"] for d, v in r["curve"].items()},
        {d: v["rows"] for d, v in r["events"].items()},
        r["peak_allocated_bytes"],
        r["displayed_check"],
    )


if __name__ == "__main__":
    sys.exit(main())
