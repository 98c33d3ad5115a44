"""One load per file under concurrent requests, a slow artifact delays
nobody else, per-entry work of snapshots and MemProfiler YAML stays linear in the file's size, and
memos keyed by request parameters stay bounded. Every file is written by the test."""

from __future__ import annotations

import collections
import json
import pickle
import threading
import time

import pytest
import yaml
from conftest import write_json
from fuzz_inputs import time_bound
from synth.events import complete

from tb_plugin import api
from tb_plugin.analysis import distributed as distributed_analysis
from tb_plugin.analysis import memory as memory_analysis
from tb_plugin.artifacts import memprofiler
from tb_plugin.artifacts.snapshot import load_snapshot
from tb_plugin.registry import artifacts as registry_artifacts
from tb_plugin.registry import loader
from tb_plugin.registry.runs import LOADING, READY, RunRegistry


# -- item 3: concurrent distributed requests parse each rank once ------------------------------------
def _rank_trace(rank: int, compute_us: float) -> dict:
    """One step: a GEMM, then an all-reduce kernel (rank 1 computes longer: it arrives last)."""

    ev = complete
    end = 10 + compute_us
    return {
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2},
        "traceEvents": [
            ev("ProfilerStep#1", "user_annotation", 0, 5),
            ev("cudaLaunchKernel", "cuda_runtime", 1.5, 1, correlation=1),
            ev("nccl:all_reduce", "cpu_op", 3, 1, **{"In msg nelems": 1000, "dtype": "Float", "Group size": 2}),
            ev("cudaLaunchKernel", "cuda_runtime", 3.2, 0.5, correlation=2),
            ev("gemm", "kernel", 10, compute_us, correlation=1, device=0, stream=7),
            ev(
                "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                "kernel",
                end,
                60 + 10 + 40 - end,
                correlation=2,
                device=0,
                stream=7,
            ),
        ],
    }


def test_concurrent_distributed_requests_parse_each_rank_once(tmp_path, monkeypatch):
    write_json(tmp_path / "job" / "rank0.pt.trace.json", _rank_trace(0, 40))
    write_json(tmp_path / "job" / "rank1.pt.trace.json", _rank_trace(1, 60))
    parsed, reduced = collections.Counter(), collections.Counter()
    real_parse, real_reduce = loader.parse_entry, distributed_analysis.rank_reduce

    def slow_parse(fs, path, *args, **kwargs):  # wide enough that every request arrives during it
        parsed[path.rsplit("/", 1)[-1]] += 1
        time.sleep(0.3)
        return real_parse(fs, path, *args, **kwargs)

    def counted_reduce(trace):
        reduced[id(trace)] += 1
        return real_reduce(trace)

    monkeypatch.setattr(loader, "parse_entry", slow_parse)
    monkeypatch.setattr(distributed_analysis, "rank_reduce", counted_reduce)
    reg = RunRegistry(str(tmp_path))
    reg.scan()
    start = threading.Barrier(6)
    answers: list = [None] * 6

    def request(i):
        start.wait()
        answers[i] = api.distributed(reg, {"run": "job"})

    threads = [threading.Thread(target=request, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert dict(parsed) == {"rank0.pt.trace.json": 1, "rank1.pt.trace.json": 1}
    assert sorted(reduced.values()) == [1, 1]  # one aggregate per rank, shared by the six requests
    codes = [code for code, _ in answers]
    docs = [json.dumps(doc, sort_keys=True) for _, doc in answers]
    assert codes == [200] * 6 and len(set(docs)) == 1
    doc = answers[0][1]
    assert doc["ranks_loaded"] == 2 and doc["view"]["world_size"] == 2
    by = {r["rank"]: r for r in doc["view"]["ranks"]}  # rank 1 computes 20 µs longer: rank 0 waits for it
    assert [by[r]["computation_us"] for r in (0, 1)] == pytest.approx([40.0, 60.0])
    assert [by[r]["sync_us"] for r in (0, 1)] == pytest.approx([20.0, 0.0])
    assert [by[r]["transfer_us"] for r in (0, 1)] == pytest.approx([40.0, 40.0])
    # a later request, and the background loader, find the files loaded: nothing is parsed again
    assert api.distributed(reg, {"run": "job"})[1] == doc
    for st in reg.files():
        reg.ensure_loaded(st)
    assert sum(parsed.values()) == 2


# -- item 4: shared frames, slow artifacts, the YAML loader ----------------------------------------------
FRAME_COUNT = 10_000
ENTRY_COUNT = 200_000


def test_snapshot_whose_entries_share_one_frames_list_parses_in_seconds():
    frames = [{"filename": f"model/layer{i % 97}.py", "line": i, "name": f"fn{i}"} for i in range(FRAME_COUNT)]
    same_content = [dict(f) for f in frames]  # equal frames, another list object: the same stack
    other = frames[:3]
    entries = [
        {
            "action": "alloc" if i % 2 == 0 else "free_completed",
            "addr": 4096 * (i // 2),
            "size": 512,
            "time_us": float(i),
            "frames": frames,
        }
        for i in range(ENTRY_COUNT)
    ]
    entries[1]["frames"] = same_content
    entries[2]["frames"] = other
    data = pickle.dumps(
        {
            "segments": [
                {
                    "device": 0,
                    "address": 0,
                    "total_size": 1 << 20,
                    "stream": 0,
                    "blocks": [{"size": 512, "state": "active_allocated", "frames": frames}],
                }
            ],
            "device_traces": [entries],
        },
        protocol=4,
    )
    assert len(data) < 12 << 20  # the pickle memo stores the 10,000 frames once (copies would take ~60 GB)
    with time_bound(120):  # a hang guard: it was ~2.7 ms per entry (~9 min); ~0.3 s here
        snap = load_snapshot(data)
    stack = snap.devices[0].stack
    assert len(stack) == ENTRY_COUNT and len(snap.stacks) == 2
    shared = int(stack[0])
    assert (stack == shared).sum() == ENTRY_COUNT - 1 and int(stack[2]) != shared
    assert snap.stack_frames(shared) == frames
    assert snap.stack_frames(int(stack[2])) == other
    assert snap.segments[0]["blocks"][0]["stack"] == shared


def _snapshot_pickle(size: int) -> bytes:
    frames = [{"filename": "train.py", "line": 7, "name": "step"}]
    entries = [
        {"action": "alloc", "addr": 0, "size": size, "time_us": 1.0, "frames": frames},
        {"action": "free_completed", "addr": 0, "size": size, "time_us": 2.0, "frames": frames},
    ]
    return pickle.dumps({"segments": [], "device_traces": [entries]})


def test_a_slow_artifact_delays_no_other_artifact_nor_trace(tmp_path, monkeypatch):
    (tmp_path / "slow").mkdir()
    (tmp_path / "fast").mkdir()
    slow_bytes = _snapshot_pickle(111)
    (tmp_path / "slow" / "snap.pickle").write_bytes(slow_bytes)
    (tmp_path / "fast" / "snap.pickle").write_bytes(_snapshot_pickle(222))
    release, reading, slow_read = threading.Event(), threading.Event(), threading.Event()
    real_load = registry_artifacts.load_snapshot_blocks  # local snapshots go to the reader child in blocks

    def blocking_load(blocks, size):
        if str(blocks.path).endswith("slow/snap.pickle"):
            reading.set()
            release.wait(60)  # a request that waited for this read would return only after it: slow_read set
            try:
                return real_load(blocks, size)
            finally:
                slow_read.set()
        return real_load(blocks, size)

    monkeypatch.setattr(registry_artifacts, "load_snapshot_blocks", blocking_load)
    reg = RunRegistry(str(tmp_path), reload_interval=1)
    reg.scan()
    fast = {"run": "fast", "path": "fast/snap.pickle"}
    slow = {"run": "slow", "path": "slow/snap.pickle"}
    code, doc = api.snapshot(reg, fast)
    assert code == 200 and doc["devices"][0]["peak_active_bytes"] == 222
    reg.start()  # the artifact loader picks the queued slow snapshot and blocks in it
    try:
        assert reading.wait(10)
        write_json(
            tmp_path / "late" / "w.pt.trace.json",
            {"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 25}]},
        )
        reg.scan()
        for route in (api.snapshot, api.snapshot_timeline, api.snapshot_allocations):
            code, doc = route(reg, fast)
            assert not slow_read.is_set() and code == 200 and doc["state"] == "ready", route
        code, doc = api.snapshot(reg, slow)  # being read by the loader: answered at once, the UI polls
        assert not slow_read.is_set() and (code, doc) == (200, {"state": LOADING, "path": slow["path"]})
        deadline = time.monotonic() + 20
        while True:  # the new trace is loaded by the trace loader meanwhile
            code, doc = api.overview(reg, {"run": "late", "worker": "w", "span": "1"})
            assert not slow_read.is_set() and code == 200
            if doc["state"] == "ready" or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert doc["state"] == "ready" and doc["average"]["total_us"] == 25
        assert reg.find_artifact("slow", slow["path"]).state == LOADING
    finally:
        release.set()
        reg.stop()
    art = reg.load_artifact(reg.find_artifact("slow", slow["path"]))  # waits for the loader's read
    assert art.state == READY and api.snapshot(reg, slow)[1]["devices"][0]["peak_active_bytes"] == 111


def _stats_yaml(snapshots: int, values: int) -> bytes:
    doc = {
        f"0.training_step.{i}.start": {f"allocated_bytes.all.v{j}": i * 1000 + j for j in range(values)}
        for i in range(snapshots)
    }
    return yaml.dump(collections.defaultdict(dict, doc)).encode()  # the defaultdict tag, as MemProfiler writes


@pytest.mark.skipif(not getattr(yaml, "__with_libyaml__", False), reason="PyYAML built without libyaml")
def test_large_memprofiler_yaml_uses_the_c_loader(monkeypatch):
    """The C loader is the one called (how much faster it is: benchmarks/bench_yaml_loader.py)."""
    data = _stats_yaml(1200, 60)
    assert len(data) > 2 << 20
    used = []
    real_load = yaml.load

    def recording_load(stream, Loader):
        used.append(Loader)
        return real_load(stream, Loader)

    monkeypatch.setattr(memprofiler.yaml, "load", recording_load)
    doc = memprofiler.load_stats("rank_0_memory_stats.yaml", data)
    assert len(used) == 1 and issubclass(used[0], yaml.CSafeLoader)
    assert len(doc["snapshots"]) == 1200 and doc["snapshots"][5]["values"]["allocated_bytes.all.v7"] == 5007

    class PurePython(yaml.SafeLoader):
        pass

    # the C loader with our constructors reads what the pure-Python one reads (on a small file: the
    # pure-Python loader takes ~10 s on the large one)
    PurePython.yaml_constructors = memprofiler._Loader.yaml_constructors
    small = _stats_yaml(30, 60)
    assert real_load(small, Loader=PurePython) == real_load(small, Loader=memprofiler._Loader)


@pytest.mark.parametrize(
    "data", [b"- " * 200_000 + b"1", b"[" * 200_000, b"{a: " * 200_000], ids=["block", "flow-sequence", "flow-mapping"]
)
def test_deeply_nested_yaml_is_an_error_not_a_crash(data):
    """libyaml's composer recurses in C: without the depth check these crash the process (SIGSEGV). The
    message is ours ("nested more than 64 levels") or, where PyYAML >= 6.0.4's own nesting limit fires
    first, PyYAML's: only our prefix is checked."""
    with pytest.raises(memprofiler.MemProfilerError, match="^invalid YAML: "):
        memprofiler.load_stats("rank_0_memory_stats.yaml", data)


def test_yaml_aliases_cannot_multiply_the_work_or_the_answer():
    values = "{" + ", ".join(f"k{j}: {j}" for j in range(2000)) + "}"
    data = (
        f"0.training_step.0.start: &v {values}\n" + "".join(f"0.training_step.{i}.end: *v\n" for i in range(1, 100_000))
    ).encode()
    assert len(data) < 3 << 20
    doc = memprofiler.load_stats("rank_0_memory_stats.yaml", data)  # seconds, not minutes: bench_bounds.py
    assert sum(len(s["values"]) for s in doc["snapshots"]) <= memprofiler.MAX_VALUES
    assert len(doc["snapshots"]) == memprofiler.MAX_VALUES // 2000
    assert doc["snapshots"][0]["values"]["k1999"] == 1999
    assert doc["warnings"] == [
        "showing the first 2000 of 100000 snapshots",
        f"showing the first 200 of 2000 snapshots ({memprofiler.MAX_VALUES} values at most)",
    ]


# -- item 8: request-keyed memos stay bounded ------------------------------------------------------------
def _mem(ts, nbytes, addr, total, dev_type=1):
    return {
        "ph": "i",
        "s": "t",
        "name": "[memory]",
        "pid": 1,
        "tid": 1,
        "ts": ts,
        "args": {"Bytes": nbytes, "Addr": addr, "Total Allocated": total, "Device Type": dev_type, "Device Id": 0},
    }


def test_memory_stats_of_unknown_devices_compute_and_memoize_nothing(tmp_path, monkeypatch):
    write_json(
        tmp_path / "run" / "w.pt.trace.json",
        {
            "traceEvents": [
                {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 1, "ts": 0, "dur": 50},
                _mem(10, 4096, 1, 4096),
                _mem(20, 64, 2, 64, dev_type=0),
            ]
        },
    )
    reg = RunRegistry(str(tmp_path))
    reg.scan()
    (st,) = reg.files()
    reg.load(st)
    file = {"run": "run", "worker": "w", "span": "1"}
    code, doc = api.memory_stats(reg, dict(file, device="GPU0"))
    assert code == 200 and [(r["name"], r["allocation_bytes"]) for r in doc["rows"]] == [("aten::empty", 4096)]
    views = reg.views(st)
    assert views.memory_devices() == ["CPU", "GPU0"]
    memo = len(views._memo)
    computed = []
    real_stats = memory_analysis.operator_stats
    monkeypatch.setattr(memory_analysis, "operator_stats", lambda *a: computed.append(a) or real_stats(*a))
    for i in range(2000):
        code, doc = api.memory_stats(reg, dict(file, device=f"GPU{i + 1}" + "x" * 3000))
        assert code == 200 and doc["rows"] == [] and doc["total_rows"] == 0
    assert api.memory_stats(reg, dict(file, device="GPU7", start_us="0", end_us="5"))[1]["rows"] == []
    assert computed == [] and len(views._memo) == memo and len(views._key_locks) <= memo
    code, doc = api.memory_stats(reg, dict(file, device="CPU"))
    assert code == 200 and [r["allocation_bytes"] for r in doc["rows"]] == [64]
    assert len(views._memo) == memo + 1 and len(computed) == 1


def test_snapshot_segments_of_devices_without_segments_are_not_memoized(tmp_path):
    snap = {
        "segments": [
            {
                "device": 1,
                "address": 4096,
                "total_size": 8192,
                "stream": 0,
                "blocks": [{"size": 8192, "state": "active_allocated"}],
            }
        ],
        "device_traces": [],
    }
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "snap.pickle").write_bytes(pickle.dumps(snap))
    reg = RunRegistry(str(tmp_path))
    reg.scan()
    q = {"run": "run", "path": "run/snap.pickle"}
    code, doc = api.snapshot_segments(reg, dict(q, device="1"))
    assert code == 200 and [(s["address"], s["total_size"]) for s in doc["segments"]] == [(4096, 8192)]
    views = reg.find_artifact("run", q["path"]).views
    memo = len(views._memo)
    for device in range(1025):
        code, doc = api.snapshot_segments(reg, dict(q, device=str(device)))
        assert code == 200 and len(doc["segments"]) == (device == 1)
    assert len(views._memo) == memo
