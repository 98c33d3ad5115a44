"""Views benchmark: Operator, Kernel and Module views vs. the JSON floor, in one run.

    python benchmarks/bench_views.py TRACE

Prints the floor (gunzip + ``orjson.loads``, own subprocess), the time to compute all three views
of the loaded trace (own subprocess; parsing excluded, every grouping included), and the slowest
answer of each table route once the views exist (server-side paging and sorting). Then two restarts
(fresh processes on the parse cache the second filled): the first answer of every table route and tab
with the analysis cache empty (computed, then stored), and again with it filled (read back, nothing
recomputed). Last line: ``floor_s=… views_s=… views_over_floor=… slowest_table_ms=… restart_load_s=…
slowest_first_ms_uncached=… slowest_first_ms_cached=…``.
"""

from __future__ import annotations

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks._common import CHILD_REGISTRY, REPO, print_figures, run_child
from benchmarks.bench_load import FLOOR

VIEWS = (
    CHILD_REGISTRY
    + r"""
(state,) = [s for s in reg.files() if s.entry.name == os.path.basename(path)]
trace = reg._loader._parse(state, lambda _: None)
from tb_plugin.registry.views import FileViews
t = time.perf_counter()
views = FileViews(trace)
for g in ("operator", "input_shape", "call_stack"):
    views.operators(g)
for g in ("kernel", "kernel_op_config"):
    views.kernels(g)
views.modules()
views.tensor_core_split()
views_s = time.perf_counter() - t
reg.load(state)
reg._loader.view_cache.remember(state.entry.rel, views)
q = {"run": state.run, "worker": state.worker, "span": state.span}
timings = {}
requests = [("operators", api.operators, dict(q, group_by=g, sort=s, search=f)) for g in ("operator", "input_shape", "call_stack")
            for s in ("device_self_us", "name") for f in ("", "aten")]
requests += [("kernels", api.kernels, dict(q, group_by=g, sort=s)) for g in ("kernel", "kernel_op_config") for s in ("total_us", "name")]
requests += [("modules", api.modules, q)]
_, ops = api.operators(reg, q)
requests += [("operator_stacks", api.operator_stacks, dict(q, key=ops["rows"][0]["key"]))]
for name, fn, args in requests:
    t = time.perf_counter()
    code, _ = fn(reg, args)
    assert code == 200, (name, args)
    timings[name] = max(timings.get(name, 0), (time.perf_counter() - t) * 1000)
print(json.dumps({"views_s": views_s, "table_ms": timings, "rows": {g: len(views.operators(g)) for g in ("operator", "input_shape", "call_stack")}}))
"""
)


RESTART = (
    CHILD_REGISTRY
    + r"""
(state,) = [s for s in reg.files() if s.entry.name == os.path.basename(path)]
t = time.perf_counter()
reg.load(state)  # parse cache hit, Overview from the analysis cache
load_s = time.perf_counter() - t
q = {"run": state.run, "worker": state.worker, "span": state.span}
requests = [("operators", api.operators, dict(q, group_by=g)) for g in ("operator", "input_shape", "call_stack")]
requests += [("kernels", api.kernels, dict(q, group_by=g)) for g in ("kernel", "kernel_op_config")]
requests += [("modules", api.modules, q), ("memory", api.memory, q), ("memory_events", api.memory_events, q),
             ("insights", api.insights, q), ("overview", api.overview, q)]
_, mem = api.memory(reg, q)
requests += [("memory_stats", api.memory_stats, dict(q, device=d["device"])) for d in mem.get("devices", [])]
timings = {}
for name, fn, args in requests:
    t = time.perf_counter()
    code, _ = fn(reg, args)
    assert code == 200, (name, args)
    timings[name] = max(timings.get(name, 0), (time.perf_counter() - t) * 1000)
print(json.dumps({"load_s": load_s, "first_ms": timings}))
"""
)


def main() -> int:
    trace = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory(prefix="kinetoscope-bench-") as cache_dir:
        env = dict(os.environ, KINETOSCOPE_CACHE_DIR=cache_dir)
        floor = run_child(FLOOR, [trace], env)
        ours = run_child(VIEWS, [trace, REPO], env)
        filling = run_child(RESTART, [trace, REPO], env)
        restart = run_child(RESTART, [trace, REPO], env)
    slowest = max(ours["table_ms"].values())
    print(f"trace: {trace}")
    print(f"floor (gunzip + orjson.loads):   {floor['seconds']:8.2f} s")
    print(f"all three views (every grouping): {ours['views_s']:8.2f} s   operator rows {ours['rows']}")
    for name, ms in ours["table_ms"].items():
        print(f"slowest {name:<16} answer: {ms:8.1f} ms")
    print(
        f"restart, file ready in {filling['load_s']:.2f} s (analysis cache empty) / {restart['load_s']:.2f} s "
        "(filled); first answer per route, analysis cache empty / filled:"
    )
    for name, ms in restart["first_ms"].items():
        print(f"  first {name:<16} answer: {filling['first_ms'][name]:8.1f} ms / {ms:8.1f} ms")
    print_figures(
        floor_s=floor["seconds"],
        views_s=ours["views_s"],
        views_over_floor=ours["views_s"] / floor["seconds"],
        slowest_table_ms=(slowest, 1),
        restart_load_s=restart["load_s"],
        slowest_first_ms_uncached=(max(filling["first_ms"].values()), 1),
        slowest_first_ms_cached=(max(restart["first_ms"].values()), 1),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
