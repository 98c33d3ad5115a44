"""The hang analysis's vectorised core (tb_plugin/analysis/hang_table.py and its users): narrow columns,
the same findings whichever way cells and instances are numbered, and jobs the per-group questions
found awkward (only point-to-point ops, sparse sequence numbers). Dumps are extracted in this process
(no reader child): these are known answers of the analysis, not of the reader."""

from __future__ import annotations

import json

import numpy as np
import pytest
from synth.flight_recorder import Job, healthy

from tb_plugin.analysis import hang, hang_table
from tb_plugin.artifacts import flight_recorder as fr
from tb_plugin.registry.hang import compact, job_document


def records_of(dumps: dict[int, dict], shift_seq: int = 0) -> list[dict]:
    out = []
    for rank, dump in sorted(dumps.items()):
        for e in dump["entries"]:
            if shift_seq and not e["is_p2p"]:
                e["collective_seq_id"] += shift_seq
        rec = compact(fr.to_columns(fr.extract(dump, f"nccl_trace_rank_{rank}")))
        out.append(dict(rec, path=f"nccl_trace_rank_{rank}"))
    return out


def desync_job() -> Job:
    """Rank 3 enters the world's last all_reduce with other sizes; rank 1 skips tp_a's last all_gather."""
    job = Job(4, {"0": ("default_pg", [0, 1, 2, 3]), "1": ("tp_a", [0, 1]), "2": ("tp_b", [2, 3])})
    healthy(job)
    job.collective("0", "nccl:all_reduce", rank_sizes={3: ((7,),)})
    job.collective("1", "nccl:all_gather", ranks=[0], state="started")
    return job


def test_columns_are_narrow_and_times_stay_int64():
    t = hang_table.Table(records_of(desync_job().dumps()))
    for col in ("rank", "record_id", "pg_id", "seq", "pg_name", "op", "sizes", "dtypes"):
        assert getattr(t, col).dtype == np.int32, col
    assert t.created_ns.dtype == t.started_ns.dtype == np.int64
    assert t.created_ns.max() > 1 << 60  # ns since the epoch survive


def test_desync_and_missing_rank_known_answers():
    job = desync_job()
    world, tp_a = job.seq[(3, "0")], job.seq[(0, "1")]  # the last instances: the desync, the skipped one
    doc = hang.analyse(records_of(job.dumps()))
    got = sorted((f["kind"], f["pg_desc"], f["collective_seq_id"], tuple(f["missing_ranks"])) for f in doc["findings"])
    assert got == [("mismatch", "default_pg", world, (3,)), ("missing_ranks", "tp_a", tp_a, (1,))]
    mismatch = next(f for f in doc["findings"] if f["kind"] == "mismatch")
    assert mismatch["field"] == "sizes" and mismatch["ranks_present"] == [0, 1, 2, 3]


def test_sparse_sequence_numbers_give_the_same_findings():
    """Sequence numbers far apart are numbered by a sort instead of an offset: same findings."""
    dense = hang.analyse(records_of(desync_job().dumps()))["findings"]
    dumps = desync_job().dumps()
    for rank in (0, 1):  # one group's numbers jump by 10^12 on two ranks: no dense numbering fits
        for e in dumps[rank]["entries"]:
            if e["collective_seq_id"] >= 4 and e["process_group"][0] == "0":
                e["collective_seq_id"] += 10**12
    sparse = hang.analyse(records_of(dumps))["findings"]
    assert [f["kind"] for f in sparse] and len(sparse) >= len(dense)
    assert any(f["kind"] == "missing_ranks" and f["pg_desc"] == "default_pg" for f in sparse)


def test_cells_numbered_by_a_sort_give_the_same_document(monkeypatch):
    records = records_of(desync_job().dumps())
    dense = json.dumps(job_document(records, []), sort_keys=True, default=str)
    monkeypatch.setattr(hang_table, "MAX_CELLS", 0)
    sparse = json.dumps(job_document(records, []), sort_keys=True, default=str)
    assert dense == sparse


def test_a_job_of_point_to_point_ops_only_is_judged():
    """No collective at all: the group has no last enqueued instance on any rank (this crashed the
    per-group analysis before); rank 0's second send has no recv."""
    job = Job(2, {"0": ("default_pg", [0, 1])})
    job.p2p("0", 0, 1)
    job.p2p("0", 0, 1, recv=False)
    doc = job_document(records_of(job.dumps()), [])
    (f,) = doc["findings"]
    assert (f["kind"], f["op"], f["ranks_present"], f["missing_ranks"], f["p2p_index"]) == (
        "missing_ranks",
        "send",
        [0],
        [1],
        2,
    )


@pytest.mark.parametrize("bad", [1, 3])
def test_p2p_size_mismatch_names_the_first_differing_send(bad):
    job = Job(2, {"0": ("default_pg", [0, 1])})
    for k in range(4):
        job.p2p("0", 0, 1, sizes=((64,),) if k != bad else ((65,),), send=True, recv=False)
        job.p2p("0", 0, 1, sizes=((64,),), send=False, recv=True)
    (f,) = hang.analyse(records_of(job.dumps()))["findings"]
    assert (f["kind"], f["field"], f["p2p_index"]) == ("mismatch", "sizes", bad + 1)


def test_a_completed_collective_counts_as_started_without_timing():
    """Without timing NCCL's pg_status keeps ``last_started_collective`` at −1 while collectives complete
    (the dump PyTorch's flight-recorder docs print: its buffer holds collective #1, its pg_status says #2
    enqueued and completed, none started): no "never started" finding."""
    job = Job(2, {"0": ("default_pg", [0, 1])}, timing=False)
    healthy(job, steps=1)
    dumps = job.dumps()
    for dump in dumps.values():
        dump["entries"].pop()  # the last collective is in pg_status only
        for status in dump["pg_status"].values():
            status["last_started_collective"] = -1
    doc = hang.analyse(records_of(dumps))
    assert doc["findings"] == []
    last = doc["groups"][0]["per_rank"][0]
    assert (
        last["last_started"]
        == last["last_completed"]
        == last["last_enqueued"]
        == {
            "collective_seq_id": job.seq[(0, "0")],
            "op": None,
        }
    )


def test_sequence_numbers_at_the_ends_of_int64_are_judged_without_overflow():
    """A hostile dump's sequence numbers 0 and 2^63 − 1 in one group: numbered by a sort, no crash."""
    job = Job(2, {"0": ("default_pg", [0, 1])})
    healthy(job, steps=1)
    dumps = job.dumps()
    dumps[0]["entries"][0]["collective_seq_id"] = 0
    dumps[0]["entries"][-1]["collective_seq_id"] = (1 << 63) - 1
    doc = hang.analyse(records_of(dumps))
    assert {f["kind"] for f in doc["findings"]} <= {"missing_ranks", "mismatch"}
