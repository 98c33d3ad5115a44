"""CI-sized: a 64-rank job with two kinds of process groups goes through the
distributed analysis (groups, matching, stragglers, cross-rank critical path) with only per-rank
summaries travelling: the Dask view equals the local one byte for byte, the parent process grows by
little, and each summary stays small. ``benchmarks/bench_ranks.py`` runs the same at 512 ranks.

The job (benchmarks/rank_job.py, ``groups=True``): rank ``r`` is DLRM rank ``r % 8`` (8 NCCL kernels:
3 all-reduces on group ``"0"`` over the 64 ranks, 5 send/recv on the 8-rank group ``str(1 + r // 8)``).
"""

from __future__ import annotations

import json
import os
import pickle
import sys

import numpy as np
import pytest
from conftest import REPO

from tb_plugin.analysis.collective_matching import match_collectives
from tb_plugin.analysis.process_groups import pack_ranks, unpack_ranks

distributed = pytest.importorskip("distributed")
sys.path.insert(0, os.path.join(str(REPO), "benchmarks"))
from bench_ranks import check_workers_code, scale_run
from rank_job import build_rank_job

RANKS = 64
# pickled per-rank summary (distributed + insights aggregate, critical-path chains included): measured
# 6.3 KB mean, 6.7 KB max at 64 ranks, and the same at 512 (group rank lists travel as runs; as plain
# lists they made it 6.5 / 6.8 KB at 64 ranks and 7.6 / 8.0 KB at 512); each of the ~9 chains a rank
# sends now carries its ten items of most time and its host segments' annotations: 7.9 KB mean, 8.4 KB
# max at 512 ranks
SUMMARY_BOUND = 10 * 1024
# the measured process's peak RSS (VmHWM) above its own peak before it opened the registry: measured
# 13 MB (local: ranks parsed one after the other in this process, none kept) and 27 MB (Dask client),
# against ~95 MB more when the 64 parsed ranks are kept (RunRegistry.distributed with ranks too few for
# a process pool: they are loaded for the detail views too)
PARENT_GROWTH_BOUND_MB = 64


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    out = tmp_path_factory.mktemp("ranks64g")
    build_rank_job(str(out), ranks=RANKS, copies=1, groups=True)
    return str(out)


@pytest.fixture(scope="module")
def runs(job, tmp_path_factory):
    docs = tmp_path_factory.mktemp("views")
    out = {}
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=":0"
    ) as c:
        spec = c.scheduler_address.replace("tcp://", "dask://")
        check_workers_code(c)  # this checkout's code on the workers, not an installed kinetoscope
        out["dask"] = scale_run(job, spec, str(docs / "dask.json"))
    out["local"] = scale_run(job, "local", str(docs / "local.json"))  # 45 MB: in this process, one by one
    for name, fname in (("dask", "dask.json"), ("local", "local.json")):
        out[name]["text"] = (docs / fname).read_text(encoding="utf-8")
    return out


@pytest.mark.corpus
def test_dask_view_equals_local_byte_for_byte(runs):
    assert runs["dask"]["text"] == runs["local"]["text"]  # the pool's: test_registry_sends_many_…
    assert "Dask cluster" in runs["dask"]["where"] and runs["local"]["where"] == "the local process pool"
    for r in runs.values():
        assert r["failed"] == {} and r["warnings"] == [] and r["ranks"] == RANKS


@pytest.mark.corpus
def test_view_has_the_groups_and_the_cross_rank_path(runs):
    view = json.loads(runs["local"]["text"])["view"]
    groups = {g["name"]: g for g in view["groups"]}
    assert sorted(groups, key=int) == [str(i) for i in range(9)]  # the world group and 8 blocks of 8
    assert groups["0"]["ranks"] == list(range(RANKS)) and groups["0"]["size"] == RANKS
    assert groups["0"]["role"] == "world" and groups["0"]["ranks_loaded"] == RANKS
    for b in range(8):
        g = groups[str(1 + b)]
        assert g["ranks"] == list(range(8 * b, 8 * b + 8)) and g["role"] == "EP" and g["calls"] == 5
        assert [x["rank"] for x in g["by_rank"]] == g["ranks"]
    # every instance matched: 3 all-reduces on the world, 5 send/recv on each of the 8 blocks
    assert view["instances"] == {"matched": 3 + 8 * 5, "total": 3 + 8 * 5}
    (step,) = view["critical_path"]
    assert step["length_us"] > 0 and sum(step["by_category"].values()) == pytest.approx(step["length_us"])
    assert sum(r["us"] for r in step["by_rank"]) == pytest.approx(step["length_us"])
    # the path crosses ranks: a collective on it waited for a late rank, whose work is named
    hop = [c for c in step["collectives"] if c["late_rank"] not in (None, c["rank"])]
    assert hop and hop[0]["wait_us"] > 0 and hop[0]["late_work"]["name"]
    assert len(step["by_rank"]) >= 2


@pytest.mark.corpus
def test_parent_grows_little_and_summaries_are_small(runs):
    for name, r in runs.items():
        assert r["parent_mb"] - r["start_mb"] <= PARENT_GROWTH_BOUND_MB, (name, r["parent_mb"], r["start_mb"])
        assert 2048 < r["summary_max"] <= SUMMARY_BOUND, (name, r["summary_max"])


def _comm(groups: list[str]) -> dict:
    n = len(groups)
    return {
        "collective": ["allreduce"] * n,
        "group": groups,
        "dtype": ["float32"] * n,
        "bytes": [4] * n,
        "seq": [-1] * n,
        "dur": [1.0] * n,
    }


def test_matching_members_by_one_sort():
    """Groups are split out of all ranks' kernels with one sort: each group gets exactly its member
    ranks and, per rank, its kernels' positions in that rank's own list (interleaved groups too)."""
    kernels = {0: _comm(["a", "b", "a"]), 1: _comm(["b", "a", "a"]), 2: _comm(["b"]), 5: _comm([])}
    m = match_collectives(kernels)
    by = {g.group: g for g in m.groups}
    assert sorted(by) == ["a", "b"]
    assert by["a"].ranks == [0, 1] and by["a"].index.tolist() == [[0, 1], [2, 2]]
    assert by["b"].ranks == [0, 1, 2] and by["b"].index.tolist() == [[1, 0, 0]]
    assert m.by_type == {"allreduce": [3, 0]}


@pytest.mark.corpus
def test_summary_has_no_event_columns(job):
    """What a rank sends: lists and numbers, no numpy array (an event column would be one)."""
    from tb_plugin.registry.executors import RankJob, reduce_rank

    path = sorted(os.listdir(job))[0]
    full = os.path.join(job, path)
    res = reduce_rank(RankJob(key=path, url=full, version="v", size=os.path.getsize(full)))
    assert res.error is None
    stack = [res.aggregate]
    while stack:
        obj = stack.pop()
        assert not isinstance(obj, np.ndarray)
        if isinstance(obj, dict):
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple)):
            stack.extend(obj)
    assert len(pickle.dumps(res.aggregate)) <= SUMMARY_BOUND


@pytest.mark.parametrize(
    "ranks, runs",
    [
        (list(range(64)), [[0, 64, 1]]),  # the world group: one run, whatever the world size
        ([0, 8, 16, 24], [[0, 4, 8]]),  # a strided (TP-like) group
        ([3, 1, 2, 7, 8, 9, 5], [[3], [1], [2], [7, 3, 1], [5]]),
        ([4, 4, 4], [[4, 3, 0]]),
        ([0, 1], [[0], [1]]),
        ([], []),
        (None, None),
    ],
)
@pytest.mark.corpus
def test_rank_lists_travel_as_runs(ranks, runs):
    assert pack_ranks(ranks) == runs
    assert unpack_ranks(runs) == ranks


@pytest.mark.corpus
def test_registry_sends_many_unloaded_ranks_to_the_local_pool(job, runs, tmp_path):
    """TensorBoard's path (``RunRegistry.distributed``, no remote executor): ranks enough for a pool
    (here ``local:2``; by default once they total PARALLEL_MIN_BYTES) are reduced in worker processes,
    not parsed and kept here; the view is the same, and their parses wait in the parse cache."""
    from tb_plugin.registry.cache import ParseCache
    from tb_plugin.registry.runs import RunRegistry

    reg = RunRegistry(job, cache=ParseCache(str(tmp_path)), executor="local:2")
    reg.scan()
    files = reg.files()
    view = reg.distributed(files[0].run, files[0].span)
    assert json.dumps(view) == runs["local"]["text"]
    assert all(st.state == "queued" and st.aggregate is not None for st in files)  # nothing parsed here
    assert reg.memory_in_use() == {}  # no parsed rank kept in this process
    st = files[5]
    reg.load(st)
    assert st.state == "ready" and st.from_cache  # the pool's parse, read back from the cache
    small = RunRegistry(job, cache=ParseCache(str(tmp_path / "c2")))  # 45 MB: below a pool, loaded here
    small.scan()
    assert json.dumps(small.distributed(files[0].run, files[0].span)) == runs["local"]["text"]
    assert all(st.state == "ready" for st in small.files()) and len(small.memory_in_use()) > 0
