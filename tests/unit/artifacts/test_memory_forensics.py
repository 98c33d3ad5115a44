"""OOM forensics, per-rank snapshots side by side, Composer memory timelines
(``*.pt.trace.memory.html``) listed with their trace and served as a PNG only."""

from __future__ import annotations

import argparse
import json
import pickle
import shutil
import time

import pytest
from conftest import sample
from synth.composer import composer_trace, dumps
from synth.memory_html import hostile_memory_html, png, torch_memory_html
from synth.oom import MIB, frame, oom_snapshot, rank_snapshot
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

from tb_plugin import api
from tb_plugin.analysis.snapshot_oom import oom_report, streams_at, streams_state
from tb_plugin.analysis.snapshot_ranks import compare
from tb_plugin.artifacts.memory_html import MemoryHtmlError, extract_png
from tb_plugin.artifacts.snapshot import load_snapshot, pack_snapshot, unpack_snapshot
from tb_plugin.plugin import KinetoscopePlugin
from tb_plugin.registry.runs import RunRegistry
from tb_plugin.storage.naming import artifact_kind, snapshot_rank


# -- item 3: OOM forensics ---------------------------------------------------------------------------
def test_oom_snapshot_forensics_equal_the_construction():
    snap = load_snapshot(pickle.dumps(oom_snapshot()))
    doc = oom_report(snap, None, False, 1000, 3)
    assert doc["device"] == "GPU0" and doc["detected_by"] == "history" and doc["state_at"] == "oom"
    assert doc["entries_after_oom"] == 0
    oom = doc["oom"]
    assert (oom["index"], oom["time"], oom["requested_bytes"]) == (14, 140.0, 10 * MIB)
    assert (oom["device_free_bytes"], oom["stream"]) == (5 * MIB, 0)
    assert oom["active_bytes_at_oom"] == 16 * MIB  # X 8 + Y 4 + Z 1 + P 3 (requested size, before history)
    assert oom["reserved_bytes_at_oom"] == 42 * MIB  # A 20 + B 2 + C 16 + D 4
    s0, s7 = doc["streams"]
    assert (s0["stream"], s0["segments"], s0["reserved_bytes"], s0["allocated_bytes"]) == (0, 3, 26 * MIB, 17 * MIB)
    assert (s0["free_bytes"], s0["largest_free_block_bytes"], s0["free_blocks"]) == (9 * MIB, 6 * MIB, 3)
    assert s0["fragmentation_pct"] == pytest.approx(100 / 3) and s0["is_oom_stream"]
    assert (s7["stream"], s7["free_bytes"], s7["largest_free_block_bytes"], s7["fragmentation_pct"]) == (
        7,
        16 * MIB,
        16 * MIB,
        0.0,
    ) and not s7["is_oom_stream"]
    tot = doc["totals"]
    assert (tot["reserved_bytes"], tot["free_bytes"], tot["largest_free_block_bytes"]) == (42 * MIB, 25 * MIB, 16 * MIB)
    assert tot["fragmentation_pct"] == pytest.approx(36.0)
    assert [(r["bytes"], r["frame"], r["before_history"]) for r in doc["largest_live"]] == [
        (8 * MIB, frame("X"), False),
        (4 * MIB, frame("Y"), False),
        (3 * MIB, frame("P"), True),
    ]
    assert snap.stack_frames(doc["largest_live"][0]["stack"])[1]["name"] == "build_weights"
    growth = doc["growth"]
    assert (growth["entries"], growth["net_bytes"], growth["start_time"]) == (14, 13 * MIB, 0.0)
    assert [(r["frame"], r["net_bytes"], r["allocs"], r["frees"]) for r in growth["rows"]] == [
        (frame("X"), 8 * MIB, 1, 0),
        (frame("Y"), 4 * MIB, 1, 0),
        (frame("Z"), 1 * MIB, 1, 0),
    ]
    last5 = oom_report(snap, None, False, 5, 10)["growth"]  # rows 9-13: Z +1 MiB, W +16 −16
    assert (last5["entries"], last5["net_bytes"], last5["start_time"]) == (5, 1 * MIB, 90.0)
    assert [(r["frame"], r["net_bytes"], r["allocated_bytes"], r["freed_bytes"]) for r in last5["rows"]] == [
        (frame("Z"), MIB, MIB, 0),
        (frame("W"), 0, 16 * MIB, 16 * MIB),
    ]
    # the same answers from the parse cache's packed form
    again = oom_report(unpack_snapshot(*pack_snapshot(snap)), None, False, 1000, 3)
    assert again == doc


def test_oom_followed_by_more_entries_is_reconstructed_to_the_state_at_the_oom():
    """The same OOM, dumped after three more entries (X freed, segment C released): the per-stream state is
    rebuilt to equal the snapshot taken on the OOM; the dump's own totals are kept beside it."""
    at_oom = oom_report(load_snapshot(pickle.dumps(oom_snapshot())), None, False, 1000, 2)
    snap = load_snapshot(pickle.dumps(oom_snapshot(after_oom=True)))
    doc = oom_report(snap, None, False, 1000, 2)
    assert doc["state_at"] == "reconstructed" and doc["entries_after_oom"] == 3
    assert doc["streams"] == at_oom["streams"] and doc["totals"] == at_oom["totals"]
    assert doc["streams"][1]["stream"] == 7  # segment C's stream, from its segment_free entry
    dump = doc["dump_totals"]
    assert (dump["reserved_bytes"], dump["free_bytes"], dump["largest_free_block_bytes"]) == (
        26 * MIB,
        17 * MIB,
        10 * MIB,
    )
    assert doc["oom"]["reserved_bytes_at_oom"] == 42 * MIB == doc["totals"]["reserved_bytes"]
    assert doc["oom"]["active_bytes_at_oom"] == 16 * MIB
    assert [(r["bytes"], r["frame"]) for r in doc["largest_live"]] == [(8 * MIB, frame("X")), (4 * MIB, frame("Y"))]
    again = oom_report(unpack_snapshot(*pack_snapshot(snap)), None, False, 1000, 2)
    assert again == doc


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["mem_snapshot.pickle", "memory_forward_bf16_128.pickle"])
def test_state_rebuilt_at_the_last_entry_equals_the_dump(name):
    """At the last history entry nothing is undone and every live block is in the dump: the rebuilt
    state must equal the dump's segment for segment."""
    snap = load_snapshot(sample(f"memory_snapshots/{name}").read_bytes())
    last = len(snap.devices[0].action) - 1
    assert streams_at(snap, 0, last) == streams_state(snap, 0)


def test_snapshot_named_oom_without_history_opens_on_the_dump():
    obj = oom_snapshot()
    obj["device_traces"] = []
    snap = load_snapshot(pickle.dumps(obj))
    assert oom_report(snap, None, False)["detected_by"] is None
    doc = oom_report(snap, None, True, 1000, 2)
    assert doc["detected_by"] == "file_name" and doc["oom"] is None and doc["totals"]["free_bytes"] == 25 * MIB
    assert [(r["bytes"], r["frame"]) for r in doc["largest_live"]] == [(8 * MIB, frame("X")), (4 * MIB, frame("Y"))]


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["mem_snapshot.pickle", "memory_forward_bf16_128.pickle"])
def test_real_snapshots_have_no_oom_and_their_allocator_state_equals_a_direct_sum(name):
    data = sample(f"memory_snapshots/{name}").read_bytes()
    raw = pickle.loads(data)  # the samples are plain containers; trusted in this test
    doc = oom_report(load_snapshot(data), None, False)
    assert doc["oom"] is None and doc["detected_by"] is None and doc["growth"] is None
    blocks = [b for s in raw["segments"] for b in s["blocks"]]
    free = [b["size"] for b in blocks if b["state"] == "inactive"]
    assert doc["totals"]["reserved_bytes"] == sum(s["total_size"] for s in raw["segments"]) > 0
    assert doc["totals"]["free_bytes"] == sum(free) and doc["totals"]["largest_free_block_bytes"] == max(free)
    assert doc["totals"]["fragmentation_pct"] == pytest.approx((1 - max(free) / sum(free)) * 100)


def test_oom_route_and_its_bounds(tmp_path):
    (tmp_path / "job").mkdir()
    (tmp_path / "job" / "rank0_oom.pickle").write_bytes(pickle.dumps(oom_snapshot()))
    reg = RunRegistry(str(tmp_path))
    reg.scan()
    q = {"run": "job", "path": "job/rank0_oom.pickle"}
    code, doc = api.snapshot_oom(reg, dict(q, last_n="5", top="2"))
    assert code == 200 and doc["state"] == "ready" and doc["oom"]["requested_bytes"] == 10 * MIB
    assert doc["growth"]["net_bytes"] == MIB and len(doc["largest_live"]) == 2
    assert api.snapshot_oom(reg, dict(q, top="1001"))[0] == 400
    assert api.snapshot_oom(reg, dict(q, last_n="0"))[0] == 400
    assert api.snapshot_oom(reg, {"run": "job", "path": "nope.pickle"})[0] == 404


# -- item 4: per-rank snapshots --------------------------------------------------------------------
def test_rank_names_group_by_everything_but_the_rank():
    assert snapshot_rank("j/iteration_5/rank3_memory_snapshot.pickle") == (
        "j/iteration_5/rank*_memory_snapshot.pickle",
        3,
    )
    assert snapshot_rank("j/rank_2/snapshot.pickle") == ("j/rank_*/snapshot.pickle", 2)
    assert snapshot_rank("j/frank1.pickle") is None and snapshot_rank("j/snapshot.pickle") is None


def test_compare_names_the_outlier_by_its_distance_from_the_median():
    doc = compare([{"rank": r, "peak_active_bytes": p} for r, p in enumerate([100, 102, 98, 150])])
    assert doc["median_peak_bytes"] == 101 and doc["outlier_rank"] == 3
    assert doc["outlier_peak_to_median"] == pytest.approx(150 / 101)
    assert [r["peak_to_median"] for r in doc["ranks"]] == pytest.approx([100 / 101, 102 / 101, 98 / 101, 150 / 101])
    even = compare([{"rank": r, "peak_active_bytes": p} for r, p in enumerate([100, 105, 96])])
    assert even["outlier_rank"] is None  # within 10 % of the median
    low = compare(
        [
            {"rank": 0, "peak_active_bytes": 100},
            {"rank": 1, "peak_active_bytes": 100},
            {"rank": 2, "peak_active_bytes": 40},
            {"rank": 3, "peak_active_bytes": None},
        ]
    )
    assert low["outlier_rank"] == 2 and low["ranks"][3]["peak_to_median"] is None
    edge = compare(
        [
            {"rank": 0, "peak_active_bytes": 100},
            {"rank": 1, "peak_active_bytes": 100},
            {"rank": 2, "peak_active_bytes": 110},
        ]
    )
    assert edge["outlier_rank"] == 2  # exactly 10 % above the median is named
    assert compare([{"rank": 0, "peak_active_bytes": 5}])["outlier_rank"] is None


def test_per_rank_snapshots_side_by_side(tmp_path):
    peaks = {0: 100 * MIB, 1: 102 * MIB, 2: 98 * MIB, 3: 150 * MIB}
    folder = tmp_path / "job" / "iteration_5"
    folder.mkdir(parents=True)
    for rank, peak in peaks.items():
        (folder / f"rank{rank}_memory_snapshot.pickle").write_bytes(pickle.dumps(rank_snapshot(peak, rank)))
    other = tmp_path / "job" / "iteration_10"
    other.mkdir()
    (other / "rank0_memory_snapshot.pickle").write_bytes(pickle.dumps(rank_snapshot(7 * MIB)))
    reg = RunRegistry(str(tmp_path))
    reg.scan()
    listed = {a["path"]: a for r in reg.runs_document()["runs"] for a in r["artifacts"]}
    assert listed["job/iteration_5/rank3_memory_snapshot.pickle"]["rank"] == 3
    code, doc = api.snapshot_ranks(
        reg, {"run": "job/iteration_5", "path": "job/iteration_5/rank1_memory_snapshot.pickle"}
    )
    assert code == 200 and [r["rank"] for r in doc["ranks"]] == [0, 1, 2, 3]
    assert [r["peak_active_bytes"] for r in doc["ranks"]] == [peaks[r] for r in range(4)]
    assert doc["outlier_rank"] == 3 and doc["median_peak_bytes"] == 101 * MIB
    assert doc["ranks"][3]["device"] == "GPU0" and doc["ranks"][3]["state"] == "ready"
    # while another thread still reads one rank, the table answers "loading" (the client polls)
    other = reg.find_artifact("job/iteration_5", "job/iteration_5/rank2_memory_snapshot.pickle")
    with other.lock:  # held as by the thread reading it
        other.state = "loading"
        q = {"run": "job/iteration_5", "path": "job/iteration_5/rank1_memory_snapshot.pickle"}
        assert api.snapshot_ranks(reg, q) == (200, {"state": "loading", "path": q["path"]})
        other.state = "ready"
    code, alone = api.snapshot_ranks(
        reg, {"run": "job/iteration_10", "path": "job/iteration_10/rank0_memory_snapshot.pickle"}
    )
    assert [r["peak_active_bytes"] for r in alone["ranks"]] == [7 * MIB] and alone["outlier_rank"] is None
    # one folder per rank: each folder is a run, the group spans them
    for rank, peak in ((0, 10 * MIB), (1, 30 * MIB)):
        (tmp_path / "fsdp" / f"rank_{rank}").mkdir(parents=True)
        (tmp_path / "fsdp" / f"rank_{rank}" / "snapshot.pickle").write_bytes(pickle.dumps(rank_snapshot(peak)))
    reg.scan()
    code, split = api.snapshot_ranks(reg, {"run": "fsdp/rank_1", "path": "fsdp/rank_1/snapshot.pickle"})
    assert [(r["rank"], r["run"], r["peak_active_bytes"]) for r in split["ranks"]] == [
        (0, "fsdp/rank_0", 10 * MIB),
        (1, "fsdp/rank_1", 30 * MIB),
    ]
    assert split["outlier_rank"] == 1  # the tie on distance goes to the larger peak


# -- item 5: Composer memory timelines -------------------------------------------------------------
def test_png_is_extracted_from_torchs_page_and_nothing_else():
    image = png(7, 5)
    got = extract_png(torch_memory_html(image))
    assert got["png"] == image and (got["width_px"], got["height_px"]) == (7, 5)
    hostile = extract_png(hostile_memory_html(image))
    assert hostile["png"] == image  # the SVG, the fake PNG and the markup are skipped
    for bad in (
        b"<html><script>alert(1)</script></html>",
        b"<img src='data:image/png;base64,!!!'>",
        b"",
        b"<img src='data:image/svg+xml;base64,PHN2Zz4='>",
    ):
        with pytest.raises(MemoryHtmlError, match="no embedded PNG"):
            extract_png(bad)


def _plugin(logdir) -> dict:
    ctx = base_plugin.TBContext(logdir=str(logdir), flags=argparse.Namespace(reload_interval=2.0))
    return KinetoscopePlugin(ctx).get_plugin_apps()


def _get(apps, route, **query):
    """GET a route, asking again while the artifact is being read by the background loader."""
    for _ in range(200):
        r = Client(apps["/" + route]).get("/" + route, query_string=query)
        if r.headers["Content-Type"] != "application/json" or json.loads(r.data).get("state") != "loading":
            return r
        time.sleep(0.05)
    return r


def test_composer_memory_html_is_listed_with_its_trace_and_served_as_png_only(tmp_path):
    run = tmp_path / "composer"
    run.mkdir()
    image = png(9, 4)
    for batch in (1, 2):
        (run / f"rank0.{batch}.pt.trace.json").write_bytes(dumps(composer_trace(rank=0, batches=2)))
        (run / f"rank0.{batch}.pt.trace.memory.html").write_bytes(torch_memory_html(image))
    (run / "rank1.2.pt.trace.memory.html").write_bytes(hostile_memory_html(image))  # no rank-1 trace
    (run / "rank0.2.pt.trace.memory.raw.json").write_text(json.dumps([[1000, 2, 64, 5], [2000, 4, -64, 5]]))
    (run / "broken.pt.trace.memory.html").write_bytes(b"<html><script>alert(1)</script></html>")
    (run / "rank0.1.pt.trace.memory.json").write_text(json.dumps([[1000, 2000], [[64, 0], [0, 64]]]))  # sniffed
    assert artifact_kind("rank0.1.pt.trace.memory.html") == "memory_html"
    apps = _plugin(tmp_path)
    runs = json.loads(_get(apps, "runs").data)["runs"]
    arts = {a["path"]: a for r in runs if r["name"] == "composer" for a in r["artifacts"]}
    workers = {w["worker"]: w for r in runs if r["name"] == "composer" for w in r["workers"]}
    spans = {s["path"]: s["span"] for s in workers["rank0"]["spans"]}
    for batch in (1, 2):
        a = arts[f"composer/rank0.{batch}.pt.trace.memory.html"]
        assert a["kind"] == "memory_html" and (a["rank"], a["batch"]) == (0, batch)
        assert a["trace"] == {"worker": "rank0", "span": spans[f"composer/rank0.{batch}.pt.trace.json"]}
    raw = arts["composer/rank0.2.pt.trace.memory.raw.json"]
    assert raw["kind"] == "memory_timeline" and raw["trace"] == {
        "worker": "rank0",
        "span": spans["composer/rank0.2.pt.trace.json"],
    }
    assert arts["composer/rank1.2.pt.trace.memory.html"]["trace"] is None
    sniffed = arts["composer/rank0.1.pt.trace.memory.json"]
    assert sniffed["kind"] == "memory_timeline" and (sniffed["rank"], sniffed["batch"]) == (0, 1)
    assert sniffed["trace"] == {"worker": "rank0", "span": spans["composer/rank0.1.pt.trace.json"]}
    assert arts["composer/rank1.2.pt.trace.memory.html"]["rank"] == 1
    q = {"run": "composer", "path": "composer/rank0.1.pt.trace.memory.html"}
    meta = json.loads(_get(apps, "memory_html", **q).data)
    assert meta == {
        "state": "ready",
        "path": q["path"],
        "content_type": "image/png",
        "width_px": 9,
        "height_px": 4,
        "image_bytes": len(image),
        "html_bytes": len(torch_memory_html(image)),
    }
    for path in (q["path"], "composer/rank1.2.pt.trace.memory.html"):
        r = _get(apps, "memory_html_image", run="composer", path=path)
        assert r.status_code == 200 and r.data == image and r.headers["Content-Type"] == "image/png"
        assert r.headers["X-Content-Type-Options"] == "nosniff"
        csp = r.headers["Content-Security-Policy"]
        assert "default-src 'none'" in csp and "sandbox" in csp and "frame-ancestors 'self'" in csp
        assert b"<" not in r.data[:8]
    broken = _get(apps, "memory_html_image", run="composer", path="composer/broken.pt.trace.memory.html")
    assert broken.headers["Content-Type"] == "application/json" and b"alert" not in broken.data
    assert json.loads(broken.data)["state"] == "error"
    missing = _get(apps, "memory_html_image", run="composer", path="../etc/passwd")
    assert missing.status_code == 404 and missing.headers["Content-Type"] == "application/json"
    wrong_kind = _get(apps, "memory_html_image", run="composer", path="composer/rank0.2.pt.trace.memory.raw.json")
    assert wrong_kind.status_code == 404


@pytest.mark.corpus
def test_real_composer_sample_gains_a_memory_html_beside_it(tmp_path):
    run = tmp_path / "c"
    run.mkdir()
    shutil.copy(sample("composer/rank_0.trace.json"), run / "rank0.3.pt.trace.json")
    (run / "rank0.3.pt.trace.memory.html").write_bytes(torch_memory_html(png(3, 3)))
    reg = RunRegistry(str(tmp_path))
    reg.scan()
    (art,) = reg.runs_document()["runs"][0]["artifacts"]
    assert art["trace"] == {"worker": "rank0", "span": "1"} and (art["rank"], art["batch"]) == (0, 3)


def test_report_names_the_oom_and_the_outlier_rank(tmp_path, capsys):
    from tb_plugin.cli import main

    job = tmp_path / "job"
    job.mkdir()
    (job / "rank0_oom.pickle").write_bytes(pickle.dumps(oom_snapshot()))  # peaks at 32 MiB
    for rank, peak in ((1, 32 * MIB), (2, 33 * MIB), (3, 64 * MIB)):
        (job / f"rank{rank}_oom.pickle").write_bytes(pickle.dumps(rank_snapshot(peak, rank)))
    assert main(["report", str(tmp_path), "--json", "--no-cache"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    snaps = {s["path"]: s for s in run["snapshots"]}
    oom = snaps["job/rank0_oom.pickle"]["oom"]
    assert (oom["requested_bytes"], oom["device_free_bytes"], oom["stream_largest_free_block_bytes"]) == (
        10 * MIB,
        5 * MIB,
        6 * MIB,
    )
    assert oom["fragmentation_pct"] == pytest.approx(36.0) and oom["state_at"] == "oom"
    assert [r["bytes"] for r in oom["largest_live"]] == [8 * MIB, 4 * MIB, 3 * MIB, 1 * MIB]
    assert snaps["job/rank3_oom.pickle"]["oom"]["detected_by"] == "file_name"  # named so, no OOM entry
    (group,) = run["snapshot_ranks"]
    assert [r["peak_active_bytes"] for r in group["ranks"]] == [32 * MIB, 32 * MIB, 33 * MIB, 64 * MIB]
    assert group["outlier_rank"] == 3 and group["median_peak_bytes"] == 32.5 * MIB
    assert main(["report", str(tmp_path), "--no-cache"]) == 0
    text = capsys.readouterr().out
    assert "OOM on GPU0: requested 10.0 MiB, largest free block on its stream 6.0 MiB, fragmentation 36.0 %" in text
    assert (
        "peak per rank: rank 0 32.0 MiB, rank 1 32.0 MiB, rank 2 33.0 MiB, rank 3 64.0 MiB; outlier: rank 3 "
        "(+96.9 % vs the median)" in text
    )


def test_a_two_row_raw_export_is_not_read_as_times_and_sizes():
    from tb_plugin.artifacts.timeline_export import load_timeline_export

    raw = load_timeline_export(b"[[1000, 2, 64, 5], [2000, 4, -64, 5]]")  # 64 B of gradient (category 5)
    assert raw["form"] == "raw" and raw["times_us"].tolist() == [0.0, 1.0] and raw["bytes"][5].tolist() == [64, 0]
    pair = load_timeline_export(b"[[1000, 2000], [[64, 0], [0, 64]]]")
    assert pair["form"] == "times_sizes" and pair["bytes"].tolist() == [[64, 0], [0, 64]]
