"""Collectives on 2026 jobs: bytes of an all-gather from the enclosing c10d op (not the inner shard),
the communicator size's precedence, uneven all-to-all matched in order, unknown bytes null (never
0 B / 0.0 GB/s), and the k-of-N caveat. Known answers by construction."""

from __future__ import annotations

import json

import pytest
from synth.comm import Coll, job
from synth.events import complete

from tb_plugin.analysis.distributed import bus_factor, distributed_view
from tb_plugin.trace.decode import decode_trace

SHARD, WHOLE = 16_777_216, 1_073_741_824  # elements: one rank's shard, the gathered buffer (64 shards)
BF16 = "c10::BFloat16"


def _fsdp_rank(
    rank: int,
    arrive: float,
    end: float = 100_000.0,
    world: int = 128,
    pg: dict | None = None,
    inner_args: dict | None = None,
    outer: bool = True,
) -> tuple[int, str, object]:
    """One rank's all-gather as PyTorch 2.x FSDP writes it without message sizes: ``c10d::_allgather_base_``
    (Input Dims: output, input) > ``nccl:_all_gather_base`` (the input shard) > its kernel [arrive, end)."""
    events = [complete("ProfilerStep#1", "user_annotation", 0, end + 100)]
    if outer:
        events.append(
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "c10d::_allgather_base_",
                "pid": 1,
                "tid": 1,
                "ts": 10,
                "dur": 30,
                "args": {
                    "Input Dims": [[WHOLE], [SHARD], [], [], []],
                    "Input type": [BF16, BF16, "", "Scalar", "Scalar"],
                },
            }
        )
    events += [
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "nccl:_all_gather_base",
            "pid": 1,
            "tid": 1,
            "ts": 12,
            "dur": 20,
            "args": {"Input Dims": [[SHARD]], "Input type": [BF16], **(inner_args or {})},
        },
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 1,
            "tid": 1,
            "ts": 14,
            "dur": 5,
            "args": {"correlation": 7},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
            "pid": 0,
            "tid": 7,
            "ts": arrive,
            "dur": end - arrive,
            "args": {"correlation": 7, "device": 0, "stream": 7},
        },
    ]
    info = {"backend": "nccl", "rank": rank, "world_size": world, **(pg or {})}
    doc = {"schemaVersion": 1, "traceEvents": events, "distributedInfo": info}
    return rank, f"rank{rank}", decode_trace(json.dumps(doc).encode())


def _two_of_128(**kw):
    return distributed_view([_fsdp_rank(0, 1000.0, **kw), _fsdp_rank(1, 100.0, **kw)])


def test_allgather_bytes_from_the_enclosing_op_and_n_from_output_over_input():
    """2 of 128 ranks; the gathered buffer is 1 Gi BF16 elements = 2 GiB, 64 shards: n = 64 (not the
    world's 128). Transfer = the shortest kernel, 99 000 µs: algbw = 2 147 483 648 B ÷ 99 000 µs
    = 21.69 GB/s (before: the 32 MiB shard, 0.34 GB/s, with n = 128)."""
    view = _two_of_128()
    (c,) = view["collectives"]
    assert (c["name"], c["calls"], c["bytes"], c["group_size"]) == ("allgather", 1, 2 * WHOLE, 64)
    assert c["transfer_us"] == 99_000.0
    assert c["algbw_gbps"] == pytest.approx(2 * WHOLE / 99_000 / 1e3)
    assert c["busbw_gbps"] == pytest.approx(c["algbw_gbps"] * 63 / 64) and c["bus_factor"] == bus_factor(
        "allgather", 64
    )
    assert view["bandwidth_caveat"].startswith("2 of 64 ranks loaded")
    assert "62 absent ranks is inside transfer" in view["bandwidth_caveat"]


def test_without_the_enclosing_op_the_shard_is_all_there_is():
    (c,) = _two_of_128(outer=False)["collectives"]
    assert c["bytes"] == 2 * SHARD and c["group_size"] == 128  # one tensor: no ratio, the world size


@pytest.mark.parametrize(
    "inner_args, pg, want",
    [
        ({"Group size": 32}, None, 32),  # the named group's size first
        ({"Process Group Ranks": list(range(16)), "Process Group Name": "3"}, None, 16),
        ({"Process Group Name": "3"}, {"pg_config": [{"pg_name": "3", "pg_size": 8, "ranks": list(range(8))}]}, 8),
        ({}, None, 64),  # else output ÷ input of the all-gather
    ],
)
def test_group_size_precedence(inner_args, pg, want):
    (c,) = _two_of_128(inner_args=inner_args, pg=pg)["collectives"]
    assert c["group_size"] == want


def test_world_size_last_and_loaded_ranks_only_with_a_message():
    """An all-reduce has no shard ratio: the world size; with no world size either, the loaded ranks."""
    colls = {r: [Coll("allreduce", 100.0 + r, 200.0, nelems=1024, group=None)] for r in range(2)}
    (c,) = distributed_view(job(colls, world_size=16))["collectives"]
    assert c["group_size"] == 16
    view = distributed_view(job(colls))
    assert view["collectives"][0]["group_size"] == 2
    assert any("assumes the 2 loaded ranks" in m for m in view["matching"]["messages"])
    assert view["bandwidth_caveat"] is None  # every rank of the communicator is loaded


def test_uneven_all_to_all_matches_in_order():
    """Four all-to-alls whose split sizes differ per rank (rank 0 sends 1000·k elements, rank 1
    3000·k): all four match in order (before: 0 of 4, since the bytes differ), and an instance's
    bytes are the mean of the ranks' (2000·k float32 elements)."""

    def chain(per):
        return [
            Coll("all_to_all", 1000.0 * k + 10, 1000.0 * k + 60, nelems=per * (k + 1), group_size=2) for k in range(4)
        ]

    view = distributed_view(job({0: chain(1000), 1: chain(3000)}, world_size=2))
    assert view["instances"] == {"matched": 4, "total": 4}
    (c,) = view["collectives"]
    assert c["name"] == "alltoall" and c["bytes"] == 4 * 2000 * (1 + 2 + 3 + 4)


def _unknown_bytes_doc(rank: int) -> dict:
    """An all-reduce kernel under ``nccl:all_reduce`` with no message size and no Input Dims."""
    events = [
        complete("ProfilerStep#1", "user_annotation", 0, 500),
        {"ph": "X", "cat": "cpu_op", "name": "nccl:all_reduce", "pid": 1, "tid": 1, "ts": 10, "dur": 20},
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 1,
            "tid": 1,
            "ts": 12,
            "dur": 5,
            "args": {"correlation": 3},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
            "pid": 0,
            "tid": 7,
            "ts": 100 + rank,
            "dur": 100 - rank,
            "args": {"correlation": 3, "device": 0, "stream": 7},
        },
    ]
    return {"traceEvents": events, "distributedInfo": {"rank": rank, "world_size": 2}}


def test_cli_report_shows_a_dash_for_unknown_bytes(tmp_path, capsys):
    from conftest import write_json

    from tb_plugin.cli import main

    for r in range(2):
        write_json(tmp_path / "job" / f"rank{r}.1.pt.trace.json", _unknown_bytes_doc(r))
    assert main(["report", str(tmp_path), "--no-cache"]) == 0
    text = capsys.readouterr().out
    assert "allreduce n=2: 1 calls, \u2013, algbw \u2013, busbw \u2013" in text
    assert main(["report", str(tmp_path), "--no-cache", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (c,) = doc["runs"][0]["distributed"]["collectives"]
    assert (c["bytes"], c["calls_without_bytes"], c["algbw_gbps"]) == (None, 1, None)


def test_unknown_bytes_are_null_not_zero():
    """Kernels with no message size and no Input Dims anywhere: bytes, algbw, busbw are null in the
    collectives, the per-rank ops and the process groups (shown "–"), never 0 B or 0.0 GB/s."""

    def doc(rank):
        return rank, f"rank{rank}", decode_trace(json.dumps(_unknown_bytes_doc(rank)).encode())

    view = distributed_view([doc(0), doc(1)])
    (c,) = view["collectives"]
    assert (c["bytes"], c["calls_without_bytes"], c["algbw_gbps"], c["busbw_gbps"]) == (None, 1, None, None)
    (op,) = view["ranks"][0]["comm_ops"]
    assert (op["total_bytes"], op["mean_bytes"]) == (None, None)
    (g,) = view["groups"]
    assert (g["bytes"], g["bandwidth_gbps"]) == (None, None)
    assert all(r["bytes"] is None for r in g["by_rank"])
