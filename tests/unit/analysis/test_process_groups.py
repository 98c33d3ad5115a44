"""Process groups (analysis/process_groups.py).

Known answers on a synthesized FSDP + TP job (tests/synth/comm.py ``fsdp_tp_job``), the fallback to
one group, a single rank seeing its own groups, the report, and the real DLRM and HTA samples.
"""

from __future__ import annotations

import gzip
import json
import shutil

import pytest
from conftest import sample, sample_ranks
from synth.comm import Coll, fsdp_tp_job, rank_doc

from tb_plugin.analysis.distributed import distributed_view, rank_reduce
from tb_plugin.analysis.process_groups import combine_groups, group_role, parse_ranks
from tb_plugin.trace.decode import decode_trace


def _by_key(groups):
    return {(g["name"], tuple(g["ranks"])): g for g in groups}


def test_fsdp_tp_groups_known_by_construction():
    ranks, want = fsdp_tp_job()
    view = distributed_view(ranks)
    got = _by_key(view["groups"])
    assert set(got) == set(want)
    for key, w in want.items():
        g = got[key]
        assert g["role"] == w["role"]
        assert g["size"] == 2 and g["ranks_loaded"] == 2 and g["calls"] == 1
        assert g["time_us"] == pytest.approx(w["time_us"])
        assert g["exposed_us"] == pytest.approx(w["exposed_us"])
        assert g["bytes"] == w["bytes"]
        assert g["bandwidth_gbps"] == pytest.approx(w["bytes"] / (w["time_us"] * 1e3))
        assert {r["rank"]: (r["time_us"], r["exposed_us"]) for r in g["by_rank"]} == {
            r: pytest.approx(v) for r, v in w["by_rank"].items()
        }
    assert g["description"] in ("mesh_dp_shard", "mesh_tp")
    assert view["groups_messages"] == []
    # longest time first: the FSDP groups (100 µs) before the TP groups (50 µs)
    assert [g["role"] for g in view["groups"]] == ["FSDP shard", "FSDP shard", "TP", "TP"]


def test_a_single_rank_sees_its_own_groups():
    ranks, want = fsdp_tp_job()
    rank, _, trace = ranks[3]
    found = combine_groups([(rank, rank_reduce(trace)["groups"])], 4)
    got = _by_key(found["groups"])
    assert set(got) == {("2", (1, 3)), ("4", (2, 3))}
    assert got[("4", (2, 3))]["exposed_us"] == pytest.approx(40.0)  # rank 3 is the TP group's higher rank
    assert got[("4", (2, 3))]["time_us"] == pytest.approx(40.0)
    assert found["messages"] == []


def test_fallback_one_group_with_a_message():
    """No process-group args: one group ``default`` over the world (4 ranks), holding every collective;
    exposed per rank = 40 (all-gather) + 50 or 40 (all-reduce)."""
    ranks, _ = fsdp_tp_job(named=False)
    view = distributed_view(ranks)
    assert len(view["groups"]) == 1
    g = view["groups"][0]
    assert (g["name"], g["ranks"], g["size"], g["calls"], g["role"]) == ("default", [0, 1, 2, 3], 4, 2, None)
    assert {r["rank"]: r["exposed_us"] for r in g["by_rank"]} == pytest.approx({0: 90.0, 1: 80.0, 2: 90.0, 3: 80.0})
    assert g["time_us"] == pytest.approx((160 + 140 + 160 + 140) / 4)
    assert g["bytes"] == 8192 + 4096
    assert len(view["groups_messages"]) == 1 and "one group" in view["groups_messages"][0]


def test_pg_config_gives_description_and_ranks():
    """Kernels name group "5" only; distributedInfo.pg_config gives its description and ranks."""
    docs = []
    for r in range(2):
        doc = rank_doc(r, [Coll("allreduce", 0.0, 50.0, group="5")], 2)
        doc["distributedInfo"]["pg_config"] = [{"pg_name": "5", "pg_desc": "mesh_ep", "pg_size": 2, "ranks": [0, 1]}]
        docs.append((r, f"rank{r}", decode_trace(json.dumps(doc).encode())))
    (g,) = distributed_view(docs)["groups"]
    assert (g["name"], g["description"], g["role"], g["ranks"], g["size"]) == ("5", "mesh_ep", "EP", [0, 1], 2)
    assert g["exposed_us"] == pytest.approx(50.0)  # no compute at all


def test_kernels_without_a_group_among_named_ones_are_a_message():
    docs = []
    for r in range(2):
        colls = [Coll("allreduce", 0.0, 50.0, group="1"), Coll("allreduce", 100.0, 120.0, group=None)]
        docs.append((r, f"rank{r}", decode_trace(json.dumps(rank_doc(r, colls, 2)).encode())))
    view = distributed_view(docs)
    assert {g["name"]: g["time_us"] for g in view["groups"]} == {"1": 50.0, "default": 20.0}
    assert view["groups_messages"] == [
        "some collective kernels name no process group (rank 0: 1, rank 1: 1): they are counted in group 'default'"
    ]


@pytest.mark.parametrize("uid,name", [(7, "3"), (9, "9")])
def test_process_group_id_of_older_traces(uid, name):
    """PyTorch 2.1-2.2: the op carries ``Process Group ID`` only; pg_config's entry with that ``uid``
    names the group (uid 7 → pg_name "3", with its description and ranks); an ID that no entry has is
    the group's name as text."""
    docs = []
    for r in range(2):
        doc = rank_doc(r, [Coll("allreduce", 0.0, 50.0, group=None)], 2)
        for e in doc["traceEvents"]:
            if e["name"] == "record_param_comms":
                e["args"]["Process Group ID"] = uid
        doc["distributedInfo"]["pg_config"] = [
            {"pg_name": "3", "uid": 7, "pg_desc": "mesh_tp", "pg_size": 2, "ranks": [0, 1]}
        ]
        docs.append((r, f"rank{r}", decode_trace(json.dumps(doc).encode())))
    view = distributed_view(docs)
    (g,) = view["groups"]
    assert g["name"] == name and g["calls"] == 1 and view["groups_messages"] == []
    if name == "3":
        assert (g["role"], g["ranks"], g["size"]) == ("TP", [0, 1], 2)


@pytest.mark.parametrize(
    "desc,role",
    [
        ("default_pg", "world"),
        ("mesh_dp_shard", "FSDP shard"),
        ("mesh_dp_replicate", "FSDP replicate"),
        ("mesh_dp_shard_cp", "FSDP shard"),
        ("mesh_tp", "TP"),
        ("mesh_pp", "PP"),
        ("mesh_ep", "EP"),
        ("mesh_cp", "CP"),
        ("ddp", "DDP"),
        ("undefined", None),
        (None, None),
        ("stepped", None),
    ],
)
def test_roles_from_description_words(desc, role):
    assert group_role(desc) == role


def test_parse_ranks():
    assert parse_ranks("[0, 1, 2]") == [0, 1, 2]
    assert parse_ranks([4, 5]) == [4, 5]
    assert parse_ranks("[]") is None and parse_ranks("0,1") is None and parse_ranks("[a]") is None


@pytest.mark.corpus
def test_dlrm_has_no_group_args_so_one_world_group():
    """DLRM (PyTorch 2.0, 8 V100s): ``nccl:*`` ops without process-group args and a distributedInfo
    without pg_config: one group over the 8 ranks. Each rank's exposed time is its communication-only
    time of the step overlap (the one step spans every collective), e.g. rank 0: 5537 µs of its
    5798 µs of NCCL kernels."""
    view = distributed_view(sample_ranks("dlrm_8ranks"))
    (g,) = view["groups"]
    assert (g["name"], g["ranks"], g["size"], g["calls"], g["ranks_loaded"]) == ("default", list(range(8)), 8, 8, 8)
    assert g["bytes"] == 2549700
    rows = {r["rank"]: r for r in view["ranks"]}
    for r in g["by_rank"]:
        assert r["exposed_us"] == pytest.approx(rows[r["rank"]]["communication_us"])
        assert r["time_us"] == pytest.approx(rows[r["rank"]]["latency_us"])
    assert (g["by_rank"][0]["time_us"], g["by_rank"][0]["exposed_us"]) == (5798.0, 5537.0)
    assert view["groups_messages"]


@pytest.mark.corpus
def test_hta_sample_default_pg_from_args():
    """HTA's nccl_parser_config (PyTorch 2.1, 2 A100s, rank 0 loaded): 21 NCCL kernels on group "0"
    (``default_pg``, ranks [0, 1])."""
    trace = decode_trace(gzip.open(sample("hta/nccl_parser_config/nccl_data.json.gz")).read())
    found = combine_groups([(0, rank_reduce(trace)["groups"])], 2)
    (g,) = found["groups"]
    assert (g["name"], g["description"], g["role"], g["ranks"], g["size"], g["calls"]) == (
        "0",
        "default_pg",
        "world",
        [0, 1],
        2,
        21,
    )
    assert 0 < g["exposed_us"] <= g["time_us"]
    assert found["messages"] == []


def test_report_json_has_groups(tmp_path, capsys):
    """The report: a multi-rank run's ``distributed.groups``; a single-rank run's worker sees its own."""
    from tb_plugin.cli import main

    job = tmp_path / "job"
    job.mkdir()
    single = tmp_path / "single"
    single.mkdir()
    compute = [("sm80_xmma_gemm", 40.0, 60.0), ("sm80_xmma_gemm", 190.0, 20.0)]
    for r in range(2):
        colls = [Coll("allgather", 0.0, 100.0, 1024, 2048, group="1", group_ranks="[0, 1]", group_desc="mesh_dp_shard")]
        (job / f"rank{r}.pt.trace.json").write_text(json.dumps(rank_doc(r, colls, 2, compute=compute)))
    shutil.copy(job / "rank0.pt.trace.json", single / "rank0.pt.trace.json")
    assert main(["report", str(tmp_path), "--json", "--no-cache"]) == 0
    doc = json.loads(capsys.readouterr().out)
    runs = {r["name"]: r for r in doc["runs"]}
    (g,) = runs["job"]["distributed"]["groups"]
    assert (g["name"], g["role"], g["ranks"], g["time_us"], g["exposed_us"], g["bytes"]) == (
        "1",
        "FSDP shard",
        [0, 1],
        100.0,
        40.0,
        8192,
    )
    assert [r["rank"] for r in g["by_rank"]] == [0, 1]
    (w,) = runs["single"]["workers"]
    (g1,) = w["distributed"]["groups"]
    assert (g1["name"], g1["exposed_us"], g1["by_rank"]) == (
        "1",
        40.0,
        [{"rank": 0, "calls": 1, "time_us": 100.0, "bytes": 8192, "exposed_us": 40.0}],
    )


@pytest.mark.corpus
def test_computation_kernels_are_the_breakdowns():
    """rank_groups takes computation kernels as every kernel but the communication ones: the step
    breakdown's ``kernel`` category, on a real trace."""
    import numpy as np

    from tb_plugin.analysis.breakdown import category_masks
    from tb_plugin.analysis.distributed import comm_kernels
    from tb_plugin.trace.categories import Kind

    trace = decode_trace(gzip.open(sample("hta/nccl_parser_config/nccl_data.json.gz")).read())
    comp = trace.events.kind == Kind.KERNEL
    comp[comm_kernels(trace)["rows"]] = False
    assert comp.sum() > 0 and np.array_equal(comp, category_masks(trace)["kernel"])


@pytest.mark.parametrize(
    "args",
    [
        {"Process Group Name": {"a": 1}, "Process Group Ranks": {"x": 1}, "Process Group Description": 5},
        {"Process Group Name": 3, "Process Group Ranks": [0, "b"], "Process Group ID": "seven"},
        {"Process Group Ranks": "[0, 1", "Process Group ID": 10**30, "Process Group Description": ["tp"]},
    ],
)
def test_odd_group_args_never_crash(args):
    """Odd values are text or ignored: the collective still lands in one group, without an exception."""
    docs = []
    for r in range(2):
        doc = rank_doc(r, [Coll("allreduce", 0.0, 50.0, group=None)], 2)
        for e in doc["traceEvents"]:
            if e["name"] == "record_param_comms":
                e["args"].update(args)
        docs.append((r, f"rank{r}", decode_trace(json.dumps(doc).encode())))
    groups = distributed_view(docs)["groups"]
    assert sum(g["calls"] * g["ranks_loaded"] for g in groups) == 2
    assert all(g["description"] is None or isinstance(g["description"], str) for g in groups)


def test_distributed_route_single_rank_shows_its_own_groups(tmp_path):
    """`/distributed` of a run with one rank (rank 3 of the FSDP + TP job): no comparison (view null,
    one_file), but ``single_rank`` holds that rank's own groups (its shard group [1, 3] and TP group
    [2, 3], exposed 40 µs each by construction) and its critical path (the step's length: its
    ``ProfilerStep#1`` spans [−10, 401])."""
    from synth.comm import fsdp_tp_docs

    from tb_plugin import api
    from tb_plugin.registry.runs import RunRegistry

    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "rank3.pt.trace.json").write_text(json.dumps(fsdp_tp_docs()[3]))
    reg = RunRegistry(str(tmp_path))
    reg.scan()
    code, doc = api.distributed(reg, {"run": "one"})
    assert code == 200 and doc["view"] is None and doc["reason_code"] == "one_file"
    own = doc["single_rank"]
    assert (own["rank"], own["worker"]) == (3, "rank3")
    got = _by_key(own["groups"])
    assert set(got) == {("2", (1, 3)), ("4", (2, 3))}
    assert got[("2", (1, 3))]["exposed_us"] == pytest.approx(40.0) == got[("4", (2, 3))]["exposed_us"]
    assert [r["rank"] for r in got[("4", (2, 3))]["by_rank"]] == [3] and own["groups_messages"] == []
    (path,) = own["critical_path"]
    assert path["length_us"] == pytest.approx(411.0) and path["by_rank"] == [
        {"rank": 3, "us": path["length_us"], "pct": 100.0}
    ]
