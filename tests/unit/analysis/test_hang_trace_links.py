"""Hang findings linked to the profiler traces of the same ranks by process-group name and ``Seq``
(tb_plugin/analysis/hang_traces.py), known answers from a synthetic dump + trace pair, through the
CLI's document (``kinetoscope hang``; the notebook builds the same one)."""

from __future__ import annotations

import io
import json
import types

from synth.comm import Coll, rank_doc
from synth.flight_recorder import Job, healthy, write

from tb_plugin.cli import hang as cli_hang
from tb_plugin.registry import hang


def hung_job_with_traces(folder) -> None:
    """Rank 3 never enters all_reduce #4 of group "2" (tp_b, ranks 2–3); rank 2 waits in it. Both left
    a trace: rank 2's holds group 2's Seq 1–4, rank 3's Seq 1–3 and, in its last step, a 500 µs
    ``aten::index_select`` (what it was doing instead)."""
    job = Job(4, {"0": ("default_pg", [0, 1, 2, 3]), "1": ("tp_a", [0, 1]), "2": ("tp_b", [2, 3])})
    healthy(job)
    job.collective("2", "all_reduce", ranks=[2], state="started")
    write(folder, job.dumps())
    for rank, last in ((2, 4), (3, 3)):
        colls = [Coll("allreduce", 100.0 * s, 100.0 * s + 20, group="2", seq=s) for s in range(1, last + 1)]
        doc = rank_doc(rank, colls, world_size=4)
        if rank == 3:
            doc["traceEvents"].append(
                {
                    "ph": "X",
                    "cat": "cpu_op",
                    "name": "aten::index_select",
                    "pid": 1,
                    "tid": 1,
                    "ts": 330.0,
                    "dur": 500.0,
                    "args": {},
                }
            )
            step = next(e for e in doc["traceEvents"] if e["name"].startswith("ProfilerStep"))
            step["dur"] = 900.0
        with open(folder / f"rank{rank}.1700000000000.pt.trace.json", "w") as f:
            json.dump(doc, f)


def test_the_stuck_instance_is_found_in_the_traces_by_group_and_seq(tmp_path):
    hung_job_with_traces(tmp_path)
    doc = hang.folder_document(str(tmp_path))
    first = doc["findings"][0]
    assert (first["kind"], first["pg_name"], first["collective_seq_id"], first["missing_ranks"]) == (
        "missing_ranks",
        "2",
        4,
        [3],
    )
    links = first["in_traces"]
    assert sorted(links) == ["2", "3"]
    suspect, waiting = links["3"], links["2"]
    assert (suspect["last_seq"], suspect["has_instance"], suspect["instance"]) == (3, False, None)
    assert suspect["last_step"]["top_ops"][0] == {"name": "aten::index_select", "dur_us": 500.0}
    assert waiting["has_instance"] and waiting["instance"]["collective"] == "allreduce"
    assert waiting["instance"]["ts_us"] == 400.0 and waiting["instance"]["dur_us"] == 20.0
    assert "Rank 3's trace ends before all_reduce #4 (its last Seq in group 2 is 3)" in first["trace_note"]
    assert "in its last recorded step (step 1) its longest ops were aten::index_select (500 µs)" in first["trace_note"]
    assert "the traces of rank 2 have it (allreduce, 20 µs on rank 2)" in first["trace_note"]


def test_the_cli_prints_what_the_traces_say_and_keeps_its_json_keys(tmp_path):
    hung_job_with_traces(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    status = cli_hang.run(types.SimpleNamespace(dir=str(tmp_path), json=False, executor="local"), out, err)
    assert status == 3
    assert "in the traces, finding 1: Rank 3's trace ends before all_reduce #4" in out.getvalue()
    out = io.StringIO()
    cli_hang.run(types.SimpleNamespace(dir=str(tmp_path), json=True, executor="local"), out, err)
    got = json.loads(out.getvalue())
    assert list(got) == ["folder", "verdict", "ranks", "groups", "findings", "unreadable", "traces"]
    assert list(got["findings"][0])[:11] == list(cli_hang.FINDING_KEYS)
    assert got["findings"][0]["in_traces"]["3"]["last_seq"] == 3


def test_an_unreadable_trace_is_listed_and_the_findings_still_come(tmp_path):
    hung_job_with_traces(tmp_path)
    (tmp_path / "rank3.1700000000000.pt.trace.json").write_text("{not json")
    doc = hang.folder_document(str(tmp_path))
    assert [e["rank"] for e in doc["trace_errors"]] == [3]
    assert doc["findings"][0]["missing_ranks"] == [3] and sorted(doc["findings"][0]["in_traces"]) == ["2"]


def test_a_trace_without_seq_is_not_said_to_end_before_the_instance(tmp_path):
    """Traces whose collectives carry no ``Seq`` (Gloo CPU traces, older PyTorch): nothing is claimed
    about how far they got."""
    hung_job_with_traces(tmp_path)
    for rank in (2, 3):
        path = tmp_path / f"rank{rank}.1700000000000.pt.trace.json"
        doc = json.loads(path.read_text())
        for e in doc["traceEvents"]:
            e["args"].pop("Seq", None)
        path.write_text(json.dumps(doc))
    first = hang.folder_document(str(tmp_path))["findings"][0]
    assert first["in_traces"]["3"]["last_seq"] == -1 and first["in_traces"]["2"]["instance"] is None
    assert first["trace_note"].startswith("Rank 3's trace records no Seq of group 2; in its last recorded step")
    assert "the traces of rank 2 record no Seq of group 2" in first["trace_note"]
    assert "ends before" not in first["trace_note"]
