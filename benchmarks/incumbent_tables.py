#!/usr/bin/env python3
"""The incumbent's Operator and Kernel tables (torch-tb-profiler 0.4.3), as reference data.

Run this with the python of the virtualenv that has ``torch-tb-profiler==0.4.3`` installed (see
benchmarks/INCUMBENT.md, section "Operator and Kernel tables"). Nothing of the incumbent is copied
here. The script loads each trace file through the incumbent's own path, exactly as
benchmarks/incumbent_reference.py does:

    data = RunProfileData.from_json(worker, span, json)          # = RunProfileData.parse minus the read
    profile = RunGenerator(worker, span, data).generate_run_profile()

and reads the aggregates behind the Operator and Kernel views, unrounded:

    ops_by_name          data.op_list_groupby_name        (OperatorAgg; Operator view, group by Operation)
    ops_by_name_input    data.op_list_groupby_name_input  (OperatorAgg; group by Operation + Input Shape)
    kernels_by_name      data.kernel_stat                 (pandas DataFrame; Kernel view, group by Kernel Name)
    kernels_by_name_op   data.kernel_list_groupby_name_op (KernelAggByNameOp; group by Kernel Properties + Op Name)

Rows are in the order the incumbent shows them (ops: device self desc when the Operator view has device
columns, else host self desc; kernels: total desc; ties keep the incumbent's order). Every row is
checked against the rounded table that RunGenerator produced for the UI (``displayed_check``).

Per file it also records ``zero_device_launchers``: operator names that launch device work according
to the raw trace (kernel -> runtime event with the same ``correlation`` -> that runtime's external id,
falling back to the kernel's own external id -> the ``cpu_op``/``Operator`` event with that external
id) but to which the incumbent gives device total 0. On PyTorch 2.x traces that is every launching
operator (the incumbent drops ``cuda_runtime`` events; see INCUMBENT.md).

Usage (from the repo root):

    /work/venv-incumbent/bin/python benchmarks/incumbent_tables.py \
        --out tests/data/incumbent_tables.json --full-for kineto/resnet50_num_workers_0 FILE_OR_GLOB...

``--full-for SUBSTR`` (repeatable) keeps ops_by_name_input and kernels_by_name_op only for files whose
key contains SUBSTR (to keep the JSON small); without it they are kept for every file.
"""

import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import incumbent_reference as ref
from incumbent_reference import _num, _worker_and_span, incumbent_profile

OP_CATS = ("cpu_op", "operator")  # lower-cased categories of operator events
RUNTIME_CATS = ("runtime", "cuda_runtime", "cuda_driver")
KERNEL_CATS = ("kernel",)


def _op_row(agg, with_input):
    row = {"name": agg.name}
    if with_input:
        row["input_shape"] = agg.input_shape
    row.update(
        {
            "calls": agg.calls,
            "host_self_us": _num(agg.self_host_duration),
            "host_total_us": _num(agg.host_duration),
            "device_self_us": _num(agg.self_device_duration),
            "device_total_us": _num(agg.device_duration),
            "tc_eligible": bool(agg.tc_eligible),
            "tc_self_pct": _num(100 * agg.tc_self_ratio),
            "tc_total_pct": _num(100 * agg.tc_total_ratio),
        }
    )
    return row


def _sorted_ops(op_list, show_gpu):
    # RunGenerator._generate_op_table's order (Python's sort is stable, like the incumbent's)
    return sorted(op_list, key=lambda x: x.self_device_duration if show_gpu else x.self_host_duration, reverse=True)


def _check_op_table(rows, table, show_gpu, with_input):
    """Compare our unrounded rows with the incumbent's displayed table (rounded with round())."""
    shown = table["data"]
    if len(shown) != len(rows):
        return f"row count {len(rows)} != displayed {len(shown)}"
    for ours, disp in zip(rows, shown):
        expect = {
            "name": ours["name"],
            "calls": ours["calls"],
            "host_self_duration": round(ours["host_self_us"]),
            "host_total_duration": round(ours["host_total_us"]),
            "tc_eligible": "Yes" if ours["tc_eligible"] else "No",
            "tc_self_ratio": round(ours["tc_self_pct"], 2),
            "tc_total_ratio": round(ours["tc_total_pct"], 2),
        }
        if show_gpu:
            expect["device_self_duration"] = round(ours["device_self_us"])
            expect["device_total_duration"] = round(ours["device_total_us"])
        if with_input:
            expect["input_shape"] = ours["input_shape"]
        for k, v in expect.items():
            if disp.get(k) != v:
                return "row {!r}: {} = {!r}, displayed {!r}".format(ours["name"], k, v, disp.get(k))
    return "ok"


#: our kernel-row key ← the incumbent's ``kernel_stat`` column (unrounded numbers)
KERNEL_STAT_COLUMNS = (
    ("calls", "count"),
    ("total_us", "sum"),
    ("mean_us", "mean"),
    ("max_us", "max"),
    ("min_us", "min"),
    ("mean_blocks_per_sm", "blocks_per_sm"),
    ("mean_occupancy_pct", "occupancy"),
)


def _kernel_rows(data):
    ks = data.kernel_stat
    if ks is None:
        return []
    rows = []
    for name, r in ks.iterrows():
        stats = {ours: _num(r[theirs]) for ours, theirs in KERNEL_STAT_COLUMNS}
        rows.append({"name": str(name), "tc_used": bool(r["tc_used"]), **stats})
    return rows


def _kernel_op_rows(data):
    aggs = sorted(data.kernel_list_groupby_name_op or [], key=lambda x: x.total_duration, reverse=True)
    rows = []
    for a in aggs:
        rows.append(
            {
                "name": a.name,
                "op_name": a.op_name,
                "grid": str(a.grid),
                "block": str(a.block),
                "registers_per_thread": str(a.regs_per_thread or "0"),
                "shared_memory": str(a.shared_memory or "0"),
                "tc_used": bool(a.tc_used),
                "op_tc_eligible": bool(a.op_tc_eligible),
                "calls": a.calls,
                "total_us": _num(a.total_duration),
                "mean_us": _num(a.avg_duration),
                "max_us": _num(a.max_duration),
                "min_us": _num(a.min_duration),
                "mean_blocks_per_sm": _num(a.avg_blocks_per_sm),
                "mean_occupancy_pct": _num(a.avg_occupancy),
            }
        )
    return rows


def _kernel_columns(ours):
    """The incumbent's kernel-by-name row for one of ours, as displayed (before the GPU metrics)."""
    return [
        ours["name"],
        "Yes" if ours["tc_used"] else "No",
        *(round(ours[k]) for k in ("calls", "total_us", "mean_us", "max_us", "min_us")),
    ]


def _kernel_op_columns(ours):
    """The incumbent's kernel-by-name-and-operator row for one of ours, as displayed (before the GPU metrics)."""
    geometry = [ours[k] for k in ("name", "op_name", "grid", "block", "registers_per_thread", "shared_memory")]
    tc = ["Yes" if ours[k] else "No" for k in ("tc_used", "op_tc_eligible")]
    return [*geometry, *tc, ours["calls"], ours["total_us"], round(ours["mean_us"]), ours["max_us"], ours["min_us"]]


def _check_kernel_table(rows, table, gm, by_op=False):
    """ "ok", or the first of our kernel ``rows`` the incumbent's displayed ``table`` shows otherwise
    (by kernel name, or with ``by_op`` by kernel name and launching operator)."""
    shown = table["data"]["rows"]
    if len(shown) != len(rows):
        return f"row count {len(rows)} != displayed {len(shown)}"
    for ours, disp in zip(rows, shown):
        expect = _kernel_op_columns(ours) if by_op else _kernel_columns(ours)
        if gm.has_blocks_per_sm:
            expect.append(round(ours["mean_blocks_per_sm"], 2))
        if gm.has_occupancy:
            expect.append(round(ours["mean_occupancy_pct"], 2))
        if list(disp) != expect:
            where = repr(ours["name"]) + (f"/{ours['op_name']!r}" if by_op else "")
            return f"row {where}: ours {expect!r}, displayed {list(disp)!r}"
    return "ok"


def _raw_launchers(trace_json):
    """Operator name -> kernels it launched, from the raw trace (independent of the incumbent)."""
    events = [e for e in trace_json.get("traceEvents", []) if e.get("ph") == "X"]

    def ext(e):
        a = e.get("args") or {}
        x = a.get("External id")
        return a.get("external id") if x is None else x

    ext2op = {}
    corr2ext = {}
    kernels = []
    for e in events:
        cat = (e.get("cat") or "").lower()
        if cat in OP_CATS:
            x = ext(e)
            if x:
                ext2op[x] = e.get("name")
        elif cat in RUNTIME_CATS:
            c = (e.get("args") or {}).get("correlation")
            if c is not None:
                corr2ext[c] = ext(e)
        elif cat in KERNEL_CATS:
            kernels.append(e)
    by_op = collections.defaultdict(lambda: [0, 0.0])
    unattributed = [0, 0.0]
    for k in kernels:
        c = (k.get("args") or {}).get("correlation")
        x = corr2ext.get(c) or ext(k)
        name = ext2op.get(x) if x else None
        slot = by_op[name] if name is not None else unattributed
        slot[0] += 1
        slot[1] += k.get("dur") or 0
    return by_op, unattributed, len(kernels)


def load_one(path, full):
    data, profile, trace_json, seconds = incumbent_profile(path)
    worker = _worker_and_span(path)[0]

    show_gpu = bool(data.has_kernel or data.has_memcpy_or_memset)
    gm = data.gpu_metrics_parser
    out = {
        "worker": worker,
        "views": [v.display_name for v in profile.views],
        "op_view_shows_device_columns": show_gpu,
        "kernel_view_shows_blocks_per_sm": bool(data.has_kernel and gm.has_blocks_per_sm),
        "kernel_view_shows_occupancy": bool(data.has_kernel and gm.has_occupancy),
    }

    ops = [_op_row(a, False) for a in _sorted_ops(data.op_list_groupby_name, show_gpu)]
    ops_in = [_op_row(a, True) for a in _sorted_ops(data.op_list_groupby_name_input, show_gpu)]
    kernels = _kernel_rows(data) if data.has_kernel else []
    kernels_op = _kernel_op_rows(data) if data.has_kernel else []
    checks = {
        "ops_by_name": _check_op_table(ops, profile.operation_table_by_name, show_gpu, False),
        "ops_by_name_input": _check_op_table(ops_in, profile.operation_table_by_name_input, show_gpu, True),
    }
    if data.has_kernel:
        checks["kernels_by_name"] = _check_kernel_table(kernels, profile.kernel_table, gm)
        checks["kernels_by_name_op"] = _check_kernel_table(kernels_op, profile.kernel_op_table, gm, by_op=True)
    out["displayed_check"] = checks

    # Totals, to see at a glance what the tables cover.
    op_nodes = data.op_list_groupby_name
    out["totals"] = {
        "op_rows": len(ops),
        "op_calls": sum(a.calls for a in op_nodes),
        "op_device_self_us": _num(sum(a.self_device_duration for a in op_nodes)),
        "op_host_self_us": _num(sum(a.self_host_duration for a in op_nodes)),
        "op_by_name_input_rows": len(ops_in),
        "kernel_rows": len(kernels),
        "kernel_calls": sum(r["calls"] for r in kernels),
        "kernel_us": _num(sum(r["total_us"] for r in kernels)),
        "kernel_by_name_op_rows": len(kernels_op),
        "kernel_by_name_op_calls": sum(r["calls"] for r in kernels_op),
        "kernel_by_name_op_us": _num(sum(r["total_us"] for r in kernels_op)),
        "kernel_by_name_op_per_op_name": _per_op_name(kernels_op),
    }

    by_op, unattributed, n_kernels = _raw_launchers(trace_json)
    inc = {a.name: a for a in op_nodes}
    zero = []
    for name, (cnt, us) in sorted(by_op.items(), key=lambda kv: -kv[1][1]):
        a = inc.get(name)
        if a is not None and a.device_duration == 0 and cnt > 0:
            zero.append({"name": name, "raw_kernels": cnt, "raw_kernel_us": _num(us), "calls": a.calls})
    out["zero_device_launchers"] = zero
    out["raw_kernel_attribution"] = {
        "kernels": n_kernels,
        "launching_op_names": len(by_op),
        "unattributed_kernels": unattributed[0],
        "unattributed_kernel_us": _num(unattributed[1]),
        "launching_op_names_not_in_op_table": sorted(n for n in by_op if n not in inc),
    }

    out["ops_by_name"] = ops
    if full:
        out["ops_by_name_input"] = ops_in
    out["kernels_by_name"] = kernels
    if full:
        out["kernels_by_name_op"] = kernels_op
    out["timing_s"] = seconds
    return out


def _per_op_name(kernels_op):
    acc = collections.defaultdict(lambda: [0, 0])
    for r in kernels_op:
        acc[r["op_name"]][0] += r["calls"]
        acc[r["op_name"]][1] += r["total_us"]
    top = sorted(acc.items(), key=lambda kv: -kv[1][1])
    # only the op names that matter for the surprises: N/A and CallTreeRoot, plus the top 3
    keep = {k for k, _ in top[:3]} | {"N/A", "CallTreeRoot"}
    return {k: {"calls": v[0], "us": _num(v[1])} for k, v in top if k in keep}


def _full_for(args, key):
    """Whether the file keyed ``key`` keeps its full tables (``--full-for``)."""
    return args.full_for is None or any(s in key for s in args.full_for)


def main():
    ap = ref.parser(__doc__)
    ap.add_argument(
        "--full-for",
        action="append",
        default=None,
        metavar="SUBSTR",
        help="keep ops_by_name_input and kernels_by_name_op only for keys containing SUBSTR",
    )
    args = ap.parse_args()

    note = (
        "Unrounded incumbent aggregates in µs (occupancy and tc_* in %). Rows in the incumbent's "
        "display order. ops_by_name_input/kernels_by_name_op only where full_tables_for matches. "
        "timing_s is machine-dependent. Keys other than _meta are paths relative to the samples root."
    )
    m = ref.meta("benchmarks/incumbent_tables.py", note)
    m["full_tables_for"] = args.full_for or ["*"]
    return ref.collect(args, m, lambda path, key: load_one(path, _full_for(args, key)), _summary)


def _summary(r):
    """One file's line in the run's log."""
    return "{} op rows, {} kernel rows, {} zero-device launchers, checks {}".format(
        r["totals"]["op_rows"], r["totals"]["kernel_rows"], len(r["zero_device_launchers"]), r["displayed_check"]
    )


if __name__ == "__main__":
    sys.exit(main())
