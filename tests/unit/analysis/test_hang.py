"""Hang forensics from flight-recorder dumps: known answers on dumps built from the schema
(tests/synth/flight_recorder.py), the real Gloo dumps in samples/fr_gloo_skip (RECORDED.json says
what was injected), hostile and truncated dumps, and the ``kinetoscope hang`` command's JSON and exit
statuses."""

from __future__ import annotations

import io
import json
import os
import pickle
import shutil
import subprocess
import sys
import types

import conftest
import pytest
from synth.flight_recorder import Job, healthy, write

from tb_plugin.artifacts import flight_recorder as fr
from tb_plugin.cli import hang as cli_hang
from tb_plugin.registry import hang
from tb_plugin.storage.sniff import looks_like_flight_recorder

REPO = str(conftest.REPO)
SAMPLE = os.path.join(REPO, "samples", "fr_gloo_skip")


def run_hang(folder, *extra) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    args = types.SimpleNamespace(dir=str(folder), json="--json" in extra, executor="local")
    status = cli_hang.run(args, out, err)
    return status, out.getvalue(), err.getvalue()


def doc_of(folder) -> dict:
    return hang.folder_document(str(folder))


def kinds(doc) -> list[str]:
    return [f["kind"] for f in doc["findings"]]


def test_missing_rank_in_nested_group_is_the_root_cause(tmp_path):
    """Rank 6 skips tp_b's all_reduce #4; ranks 4, 5, 7 wait in it, so the world all_reduce that
    ranks 0-3 and 6 enter misses 4, 5, 7: the world's wait is explained by tp_b's missing rank 6."""
    job = Job(8, {"0": ("default_pg", list(range(8))), "1": ("tp_a", [0, 1, 2, 3]), "2": ("tp_b", [4, 5, 6, 7])})
    healthy(job)
    job.collective("1", "all_reduce")
    job.collective("2", "all_reduce", ranks=[4, 5, 7], state="started")
    job.collective("0", "all_reduce", ranks=[0, 1, 2, 3, 6], state="started")
    write(tmp_path, job.dumps())
    doc = doc_of(tmp_path)
    first, second = doc["findings"][:2]
    assert (first["kind"], first["pg_desc"], first["pg_name"], first["op"], first["collective_seq_id"]) == (
        "missing_ranks",
        "tp_b",
        "2",
        "all_reduce",
        4,
    )
    assert first["missing_ranks"] == [6] and first["ranks_present"] == [4, 5, 7] and first["root_cause"]
    assert (second["pg_desc"], second["collective_seq_id"], second["missing_ranks"]) == ("default_pg", 7, [4, 5, 7])
    assert second["explained_by"] == 0 and not second["root_cause"]
    assert (
        doc["verdict"][0] == "Rank 6 never entered all_reduce #4 of tp_b (pg 2, ranks 4–7); ranks 4, 5, 7 wait in it."
    )
    assert "held in all_reduce #4 of tp_b" in doc["verdict"][1]
    assert len(doc["findings"]) == 2 and doc["unreadable"] == []
    tp_b = next(g for g in doc["groups"] if g["pg_desc"] == "tp_b")
    assert tp_b["ranks"] == [4, 5, 6, 7] and tp_b["ranks_from"] == "pg_config"
    row6 = next(r for r in tp_b["per_rank"] if r["rank"] == 6)
    assert row6["last_enqueued"] == {"collective_seq_id": 3, "op": "all_reduce"}
    assert row6["last_completed"]["collective_seq_id"] == 3
    row4 = next(r for r in tp_b["per_rank"] if r["rank"] == 4)
    assert (
        row4["last_enqueued"]["collective_seq_id"],
        row4["last_started"]["collective_seq_id"],
        row4["last_completed"]["collective_seq_id"],
    ) == (4, 4, 3)


def test_desync_of_sizes_is_a_mismatch(tmp_path):
    job = Job(4, {"0": ("default_pg", [0, 1, 2, 3])})
    healthy(job, 2)
    job.collective("0", "all_reduce", sizes=((1024,),), rank_sizes={2: ((512,),)})
    write(tmp_path, job.dumps(), protocol=5)
    doc = doc_of(tmp_path)
    assert kinds(doc) == ["mismatch"]
    f = doc["findings"][0]
    assert (f["collective_seq_id"], f["field"], f["missing_ranks"], f["ranks_present"]) == (
        5,
        "sizes",
        [2],
        [0, 1, 2, 3],
    )
    assert "rank 2: [[[512]],[[512]]]" in f["detail"]


def test_p2p_send_without_recv(tmp_path):
    job = Job(2, {"0": ("default_pg", [0, 1])})
    healthy(job, 1)
    job.p2p("0", 0, 1)
    job.p2p("0", 0, 1, recv=False)
    write(tmp_path, job.dumps(), protocol=4)
    doc = doc_of(tmp_path)
    assert kinds(doc) == ["missing_ranks"]
    f = doc["findings"][0]
    assert (f["op"], f["ranks_present"], f["missing_ranks"], f["p2p_index"]) == ("send", [0], [1], 2)
    assert doc["verdict"][0].startswith("Rank 0's send #2 to rank 1 has no matching recv on rank 1")


def test_started_never_completed_with_time_since(tmp_path):
    job = Job(4, {"0": ("default_pg", [0, 1, 2, 3])})
    healthy(job, 2)
    job.collective("0", "all_reduce", state={2: "started"})
    job.collective("0", "all_reduce", ranks=[0, 1, 3], state="started")  # the others moved on, then waited
    write(tmp_path, job.dumps())
    doc = doc_of(tmp_path)
    assert kinds(doc)[0] == "missing_ranks"  # rank 2 never enqueued #6
    assert doc["findings"][0]["missing_ranks"] == [2]
    job2 = Job(4, {"0": ("default_pg", [0, 1, 2, 3])})
    healthy(job2, 2)
    job2.collective("0", "all_reduce", state={2: "started"})
    write(tmp_path / "b", job2.dumps())
    doc2 = doc_of(tmp_path / "b")
    assert kinds(doc2) == ["not_completed"]
    f = doc2["findings"][0]
    assert (f["collective_seq_id"], f["missing_ranks"]) == (5, [2])
    # started at T+1000 ns; the latest time in the dumps is the others' completion at T+5000 ns
    assert f["since_s"] == pytest.approx(4000 / 1e9)


def test_not_started(tmp_path):
    job = Job(2, {"0": ("default_pg", [0, 1])})
    healthy(job, 1)
    job.collective("0", "all_reduce", state={0: "scheduled", 1: "started"})
    write(tmp_path, job.dumps())
    doc = doc_of(tmp_path)
    assert kinds(doc) == ["not_started"] and doc["findings"][0]["missing_ranks"] == [0]


def test_only_some_ranks_dumped(tmp_path):
    job = Job(4, {"0": ("default_pg", [0, 1, 2, 3])})
    healthy(job, 2)
    write(tmp_path, job.dumps(), ranks=[0, 1, 3])
    doc = doc_of(tmp_path)
    assert kinds(doc) == ["no_dump"] and doc["findings"][0]["missing_ranks"] == [2]
    group = doc["groups"][0]
    assert next(r for r in group["per_rank"] if r["rank"] == 2)["dump"] == "none"


def test_wrapped_ring_buffer_is_not_missing(tmp_path):
    """Ranks 2 and 3 ran 20 more pair collectives: their 8-entry buffers hold no world entry any more.
    They are unknown in the world group, never missing."""
    job = Job(4, {"0": ("default_pg", [0, 1, 2, 3]), "1": ("pair", [2, 3])}, buffer=8)
    for _ in range(4):
        job.collective("0", "all_reduce")
    for _ in range(20):
        job.collective("1", "all_reduce")
    write(tmp_path, job.dumps())
    doc = doc_of(tmp_path)
    assert doc["findings"] == []
    assert doc["verdict"] == ["No hang found: every group's ranks reached the same collectives."]
    assert [r["wrapped"] for r in doc["ranks"]] == [False, False, True, True]
    # the same with a rank truly behind: rank 1 misses world #5; 2 and 3 stay unknown
    job.collective("0", "all_reduce", ranks=[0], state="started")
    write(tmp_path / "b", job.dumps())
    doc = doc_of(tmp_path / "b")
    f = doc["findings"][0]
    assert (f["kind"], f["missing_ranks"], f["ranks_present"]) == ("missing_ranks", [1], [0])


def test_timing_off(tmp_path):
    job = Job(2, {"0": ("default_pg", [0, 1])}, timing=False)
    healthy(job, 1)
    job.collective("0", "all_reduce", state={1: "started"})
    write(tmp_path, job.dumps(), form="json")
    doc = doc_of(tmp_path)
    assert [r["timing"] for r in doc["ranks"]] == [False, False]
    f = doc["findings"][0]
    assert (f["kind"], f["missing_ranks"]) == ("not_completed", [1])
    assert f["since_s"] is not None and f["since_s"] >= 0  # from the creation time


def test_rank_field_and_pickle_protocols_agree(tmp_path):
    job = Job(4, {"0": ("default_pg", [0, 1, 2, 3])})
    healthy(job, 2)
    job.collective("0", "all_reduce", ranks=[0, 1, 2])
    docs = []
    for protocol in (2, 3, 4, 5):
        write(tmp_path / str(protocol), job.dumps(with_rank=True), protocol=protocol, prefix="dump_")
        docs.append(doc_of(tmp_path / str(protocol)))
    assert all(d["findings"] == docs[0]["findings"] for d in docs)
    assert [r["rank_from"] for r in docs[0]["ranks"]] == ["field"] * 4


def test_hostile_and_truncated_dumps_are_per_file_errors(tmp_path):
    job = Job(4, {"0": ("default_pg", [0, 1, 2, 3])})
    healthy(job, 2)
    job.collective("0", "all_reduce", ranks=[0, 1])
    write(tmp_path, job.dumps(), ranks=[0, 1])
    good = pickle.dumps(job.dumps()[2], protocol=2)
    (tmp_path / "nccl_trace_rank_2").write_bytes(good[: len(good) // 2])  # truncated
    evil = (
        b"\x80\x02"
        + b"}q\x00(X\x07\x00\x00\x00versionq\x01X\x04\x00\x00\x002.10X\x07\x00\x00\x00entries"
        + b"cos\nsystem\n(X\x04\x00\x00\x00trueuR."
    )
    (tmp_path / "nccl_trace_rank_3").write_bytes(evil)
    deep = (
        b"\x80\x02}(X\x07\x00\x00\x00versionX\x04\x00\x00\x002.10X\x07\x00\x00\x00entries"
        + b")"
        + b"\x85" * 200000
        + b"K\x01s."
    )  # a tuple 200 000 deep as a dict key: crashes an unbounded reader
    (tmp_path / "nccl_trace_rank_4").write_bytes(deep)
    doc = doc_of(tmp_path)
    assert [r["rank"] for r in doc["ranks"]] == [0, 1]
    bad = {u["rank"]: u["error"] for u in doc["unreadable"]}
    assert sorted(bad) == [2, 3, 4]
    assert "refused to load global 'os.system'" in bad[3]
    assert "unreadable" in doc["verdict"][-1] and "ranks 2–4" in doc["verdict"][-1]
    status, out, _ = run_hang(tmp_path)
    assert status == 3 and "unreadable: nccl_trace_rank_3" in out


def test_real_gloo_dumps_name_the_skipping_rank():
    """samples/fr_gloo_skip: 4 CPU processes, Gloo, torch 2.13; rank 3 skipped pair_b's all_reduce."""
    with open(os.path.join(SAMPLE, "RECORDED.json")) as f:
        recorded = json.load(f)
    expected = recorded["expected"]
    for folder in (SAMPLE, os.path.join(SAMPLE, "json")):
        doc = doc_of(folder)
        root = doc["findings"][0]
        assert root["root_cause"] and root["kind"] == "missing_ranks"
        assert (root["pg_desc"], root["missing_ranks"], root["op"]) == (
            expected["root_cause"]["group_desc"],
            expected["root_cause"]["missing_ranks"],
            expected["root_cause"]["op"],
        )
        assert root["ranks_present"] == [2]
        world = doc["findings"][1]
        assert world["pg_desc"] == "default_pg" and world["missing_ranks"] == expected["explained"]["missing_ranks"]
        assert world["explained_by"] == 0
        assert all(not r["states_tracked"] for r in doc["ranks"])  # Gloo records no states: none judged
        assert len(doc["findings"]) == 2
    assert doc_of(SAMPLE)["traces"] == {}


def test_traces_of_the_same_ranks_are_linked(tmp_path):
    shutil.copytree(SAMPLE, tmp_path / "job")
    (tmp_path / "job" / "rank3.1.pt.trace.json").write_text('{"traceEvents": []}')
    doc = doc_of(tmp_path / "job")
    assert doc["traces"] == {"3": {"path": "rank3.1.pt.trace.json", "worker": "rank3", "span": "1"}}
    assert doc["findings"][0]["trace_ranks"] == [3]


def test_sniff_by_content():
    with open(os.path.join(SAMPLE, "nccl_trace_rank_0"), "rb") as f:
        assert looks_like_flight_recorder(f.read(4096))
    with open(os.path.join(SAMPLE, "json", "fr_rank_0.json"), "rb") as f:
        assert looks_like_flight_recorder(f.read(4096))
    assert not looks_like_flight_recorder(pickle.dumps({"segments": [], "device_traces": [], "version": 1}))
    assert not looks_like_flight_recorder(b'{"traceEvents": [], "version": 1, "entries": []}')


def test_cli_json_shape_and_exit_codes(tmp_path):
    status, out, _ = run_hang(SAMPLE, "--json")
    assert status == 3
    doc = json.loads(out)
    assert set(doc) >= {"ranks", "groups", "findings", "unreadable"}
    assert list(doc["findings"][0])[:11] == list(cli_hang.FINDING_KEYS)
    job = Job(2, {"0": ("default_pg", [0, 1])})
    healthy(job, 2)
    write(tmp_path / "ok", job.dumps())
    assert run_hang(tmp_path / "ok")[0] == 0
    (tmp_path / "empty").mkdir()
    assert run_hang(tmp_path / "empty")[0] == 2
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "nccl_trace_rank_0").write_bytes(b"\x80\x02}(X\x07\x00\x00\x00versionX\x07\x00\x00\x00entries")
    status, _, err = run_hang(tmp_path / "bad")
    assert status == 2 and "could be read" in err


def test_console_script_runs_this_checkout():
    env = dict(os.environ, PYTHONPATH=REPO)
    done = subprocess.run(
        [sys.executable, "-m", "tb_plugin.cli", "hang", SAMPLE],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )
    assert done.returncode == 3, done.stderr
    assert "1. Rank 3 never entered all_reduce #4 of pair_b" in done.stdout
    done = subprocess.run(
        [sys.executable, "-m", "tb_plugin.cli", "hang"], capture_output=True, text=True, env=env, cwd=REPO, timeout=120
    )
    assert done.returncode == 2


def test_rank_entries_have_frames():
    records, _ = hang.read_dumps(
        [
            (n, os.path.join(SAMPLE, n), os.path.getsize(os.path.join(SAMPLE, n)))
            for n in ("nccl_trace_rank_2", "nccl_trace_rank_3")
        ]
    )
    got = hang.rank_entries(records, 2)
    assert got["entries_total"] == 10 and got["entries"][-1]["op"] == "gloo:all_reduce"
    assert got["entries"][-1]["frames"][0].startswith("all_reduce (")
    assert hang.rank_entries(records, 9) is None
    assert fr.rank_from_name("nccl_trace_rank_12") == 12 and fr.rank_from_name("fr_rank_3.json") == 3


def test_findings_say_where_the_ranks_traces_stand():
    """A rank's trace whose last all_reduce of group "5" is Seq 3: the stuck instance #4 is not in it."""
    from synth.comm import Coll, rank_trace

    from tb_plugin.analysis import hang_traces

    trace = rank_trace(
        2,
        [Coll("allreduce", 10.0 * i, 10.0 * i + 5, group="5", seq=i) for i in (1, 2, 3)]
        + [Coll("allgather", 40.0, 45.0, group="0", seq=9)],
    )
    got = hang_traces.rank_collectives(trace)
    assert {g: (v["last_seq"], v["kernels"]) for g, v in got["groups"].items()} == {"0": (9, 1), "5": (3, 3)}
    assert got["last_step"]["name"] and got["last_step"]["collectives"][-1] == {
        "collective": "allgather",
        "group": "0",
        "seq": 9,
    }
    findings = [
        {"kind": "missing_ranks", "pg_name": "5", "collective_seq_id": 4, "ranks_present": [1], "missing_ranks": [2]},
        {"kind": "no_dump", "pg_name": None, "collective_seq_id": None, "ranks_present": [], "missing_ranks": [7]},
    ]
    hang_traces.link_findings(findings, {2: got})
    assert findings[0]["in_traces"] == {
        "2": {"last_seq": 3, "has_instance": False, "instance": None, "last_step": got["last_step"]}
    }
    assert findings[0]["trace_note"].startswith(
        "Rank 2's trace ends before collective #4 (its last Seq in group 5 is 3)"
    )
    assert "in_traces" not in findings[1]


HOSTILE = [None, "x", "12", 2**70, -5, 1.5, [], {}, [[[]]], True, "nccl:send 9999999999->-1", ("a",)]
FIELDS = [
    "record_id",
    "pg_id",
    "process_group",
    "collective_seq_id",
    "p2p_seq_id",
    "profiling_name",
    "time_created_ns",
    "input_sizes",
    "output_dtypes",
    "state",
    "time_discovered_started_ns",
    "time_discovered_completed_ns",
    "is_p2p",
    "frames",
    "timeout_ms",
]


def test_every_field_of_the_wrong_type_is_a_value_not_a_crash():
    """Each entry field of rank 1's dump set to each hostile value (one pickle each, one reader child for
    all): every dump reads, and the job's analysis runs (rank 0 and 1 together)."""
    job = Job(2, {"0": ("default_pg", [0, 1])})
    healthy(job, 2)
    job.p2p("0", 0, 1)
    dumps = job.dumps()
    files = [("nccl_trace_rank_0", pickle.dumps(dumps[0], protocol=4))]
    for field in FIELDS:
        for i, value in enumerate(HOSTILE):
            bad = pickle.loads(pickle.dumps(dumps[1]))
            for e in bad["entries"]:
                e[field] = value
            files.append((f"{field}.{i}_1", pickle.dumps(bad, protocol=4)))
    odd_tops = (
        [dict(dumps[1], pg_status=v) for v in HOSTILE]
        + [dict(dumps[1], pg_config=v) for v in HOSTILE]
        + [dict(dumps[1], entries=v) for v in HOSTILE]
        + [dict(dumps[1], pg_config={"0": {"ranks": "[" * 100000}})]
    )
    files += [(f"top.{i}_1", pickle.dumps(d, protocol=4)) for i, d in enumerate(odd_tops)]
    got = fr.read_pickles(files)
    assert not any(isinstance(v, fr.DumpError) for v in got.values()), [
        k for k, v in got.items() if isinstance(v, fr.DumpError)
    ]
    from tb_plugin.analysis import hang as analysis
    from tb_plugin.analysis import hang_verdict

    good = dict(fr.to_columns(got["nccl_trace_rank_0"]), path="r0")
    for name, rec in got.items():
        if name == "nccl_trace_rank_0":
            continue
        doc = hang_verdict.rank_findings(analysis.analyse([good, dict(fr.to_columns(rec), path=name)]))
        assert doc["verdict"] and [r["rank"] for r in doc["ranks"]] == [0, 1], name


def test_rank_numbers_cannot_amplify_the_answer(tmp_path):
    """A dump claiming rank 16 000 000 beside ranks 0 and 1 does not make 16 million no-dump findings."""
    job = Job(2, {"0": ("default_pg", [0, 1])})
    healthy(job, 1)
    write(tmp_path, job.dumps())
    far = dict(job.dumps(with_rank=True)[1], rank=16_000_000)
    (tmp_path / "far_dump").write_bytes(pickle.dumps(far, protocol=2))
    neg = dict(job.dumps(with_rank=True)[1], rank=-3)
    (tmp_path / "neg_dump").write_bytes(pickle.dumps(neg, protocol=2))
    doc = doc_of(tmp_path)
    assert [r["rank"] for r in doc["ranks"]] == [0, 1, 16_000_000]
    assert [f["kind"] for f in doc["findings"]] == []
    assert [u["path"] for u in doc["unreadable"]] == ["neg_dump"]


def test_a_dump_that_asks_for_gigabytes_is_its_own_error():
    """89 bytes that make CPython's unpickler resize and zero its memo for index 750 000 000 (~6 GB): the
    reader child's memory limit for that size turns it into that file's error; the next dump in the same
    child is still read."""
    job = Job(2, {"0": ("default_pg", [0, 1])})
    healthy(job, 2)
    good = pickle.dumps(job.dumps()[0], protocol=4)
    memo_bomb = b"\x80\x04}r" + (750_000_000).to_bytes(4, "little") + b"."
    out = fr.read_pickles([("bomb", memo_bomb), ("good", good)])
    assert isinstance(out["bomb"], fr.DumpError), out["bomb"]
    assert "MemoryError" in str(out["bomb"]) or "crashed" in str(out["bomb"])
    assert not isinstance(out["good"], fr.DumpError) and out["good"]["rank"] in (0, None)
