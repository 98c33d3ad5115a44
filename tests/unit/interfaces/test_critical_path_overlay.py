"""The critical path overlaid on the Trace view (`critical_path` route,
analysis/critical_path_overlay.py).

Known answers on the synthesized single-rank chain and the slow-data-loader job (tests/synth/critical.py),
and on the real DLRM sample: every rank's overlay holds exactly that rank's share of the path
(Σ over ranks = the step's length, each = the distributed view's ``by_rank``), on tracks its timeline has.
"""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import loaded_registry, sample, write_json
from synth.critical import CHAIN_EXPECTED, DATALOADER, chain_doc, dataloader_docs, dataloader_expected

from tb_plugin import api


def _segs(step: dict) -> list[tuple]:
    s = step["segments"]
    return list(zip(s["category"], s["name"], s["start_us"], s["dur_us"], s["row"], s["track"]))


def test_single_rank_overlay_is_every_segment_on_its_track(tmp_path):
    """One rank: all ten segments of the known chain (not only the ten longest: here all), tiling
    the step [0, 1000] in time order; kernels on the stream track, cpu and host gaps on the thread's,
    the 5 µs launch wait on the stream track (the kernel that waited)."""
    write_json(tmp_path / "one" / "w.pt.trace.json", chain_doc())
    reg = loaded_registry(tmp_path)
    code, doc = api.critical_path(reg, {"run": "one", "worker": "w", "span": "1"})
    assert code == 200 and doc["state"] == "ready" and doc["cross_rank"] is False and doc["rank"] == 0
    (step,) = doc["steps"]
    assert (step["step"], step["length_us"], step["on_rank_us"], step["total"], step["shown"]) == (
        "1",
        1000.0,
        1000.0,
        10,
        10,
    )
    segs = _segs(step)
    assert sorted((c, n, a, d) for c, n, a, d, _, _ in segs) == sorted(CHAIN_EXPECTED["segments"])
    starts = [a for _, _, a, _, _, _ in segs]
    assert starts == sorted(starts) and all(
        a + d == b for (_, _, a, d, _, _), (_, _, b, _, _, _) in zip(segs, segs[1:])
    )
    _, meta = api.timeline_meta(reg, {"run": "one", "worker": "w", "span": "1"})
    kind = {t["id"]: t["kind"] for t in meta["tracks"]}
    for cat, name, _, _, row, track in segs:
        want = "stream" if cat == "kernel" or name == "idle" else "thread"
        assert kind[track] == want, (cat, name)
        assert (row >= 0) == (cat != "waiting")


def test_cross_rank_overlay_splits_the_path_by_rank(tmp_path):
    """Slow data loader on rank 1 in step 2: rank 1's overlay is its data loader, aten::mm's self time,
    the launch, the launch wait and gemm (dl + 110 µs), on its timeline's clock; rank 0's is the all-reduce's
    transfer and the end of aten::item (60 µs); in step 1 rank 0 holds all of it."""
    dl = [[60, 50], [50, 500]]
    for r, doc in enumerate(dataloader_docs(dl)):
        write_json(tmp_path / "job" / f"rank{r}.pt.trace.json", doc)
    reg = loaded_registry(tmp_path)
    docs = {r: api.critical_path(reg, {"run": "job", "worker": f"rank{r}", "span": "1"})[1] for r in range(2)}
    assert all(d["cross_rank"] for d in docs.values())
    for k in range(2):
        want = dataloader_expected(dl, k)
        got = {r: docs[r]["steps"][k] for r in range(2)}
        assert got[0]["length_us"] == got[1]["length_us"] == pytest.approx(want["length_us"])
        assert {r: got[r]["on_rank_us"] for r in range(2) if got[r]["on_rank_us"]} == pytest.approx(want["by_rank"])
    late = _segs(docs[1]["steps"][1])
    assert [(c, n) for c, n, *_ in late] == [
        ("cpu", DATALOADER),
        ("cpu", "aten::mm"),
        ("cpu", "cudaLaunchKernel"),
        ("waiting", "idle"),
        ("kernel", "gemm"),
    ]
    # on rank 1's timeline: its own clock (true time − 1000) less its first event's time (−1000)
    assert late[0][2] == 2000.0 and late[0][3] == 500.0
    (comm,) = [s for s in _segs(docs[0]["steps"][1]) if s[0] == "communication"]
    assert comm[3] == 50.0


@pytest.mark.corpus
def test_dlrm_overlays_tile_each_step(tmp_path):
    """On the 8-rank DLRM sample: per step, the ranks' overlays add up to the step's length and each
    equals that rank's ``by_rank`` in the distributed view; every segment lies on one of its tracks."""
    shutil.copytree(sample("dlrm_8ranks"), tmp_path / "job")
    reg = loaded_registry(tmp_path)
    _, dist = api.distributed(reg, {"run": "job"})
    paths = {p["step"]: p for p in dist["view"]["critical_path"]}
    total = {name: 0.0 for name in paths}
    for row in dist["view"]["ranks"]:
        q = {"run": "job", "worker": row["worker"], "span": "1"}
        code, doc = api.critical_path(reg, q)
        assert code == 200 and doc["rank"] == row["rank"] and doc["cross_rank"]
        tracks = {t["id"] for t in api.timeline_meta(reg, q)[1]["tracks"]}
        for step in doc["steps"]:
            path = paths[step["step"]]
            assert step["length_us"] == path["length_us"]
            mine = {b["rank"]: b["us"] for b in path["by_rank"]}.get(row["rank"], 0.0)
            assert step["on_rank_us"] == pytest.approx(mine, abs=1e-3)
            assert sum(step["segments"]["dur_us"]) == pytest.approx(mine, abs=1e-3)
            assert set(step["segments"]["track"]) <= tracks
            total[step["step"]] += step["on_rank_us"]
    assert total == pytest.approx({name: p["length_us"] for name, p in paths.items()}, abs=1e-3)
    assert sum(1 for v in total.values() if v > 0) == len(paths) >= 1


def test_unknown_file_is_json(tmp_path):
    write_json(tmp_path / "one" / "w.pt.trace.json", json.loads(json.dumps(chain_doc())))
    reg = loaded_registry(tmp_path)
    code, doc = api.critical_path(reg, {"run": "one", "worker": "nope", "span": "1"})
    assert code == 404 and "error" in doc


def test_many_steps_are_capped_in_all(tmp_path, monkeypatch):
    """The answer's bound: with a total cap of 2 segments over 2 steps (and no floor per step: 100 in
    production), each step keeps its longest one and says how many it had."""
    from tb_plugin.analysis import critical_path_overlay as ov

    monkeypatch.setattr(ov, "MAX_TOTAL", 2)
    monkeypatch.setattr(ov, "MIN_PER_STEP", 1)
    dl = [[60, 50], [50, 500]]
    for r, doc in enumerate(dataloader_docs(dl)):
        write_json(tmp_path / "job" / f"rank{r}.pt.trace.json", doc)
    reg = loaded_registry(tmp_path)
    doc = api.critical_path(reg, {"run": "job", "worker": "rank1", "span": "1"})[1]
    step = doc["steps"][1]
    assert (step["total"], step["shown"]) == (5, 1)
    assert _segs(step)[0][:2] == ("cpu", DATALOADER) and step["on_rank_us"] == 610.0  # the share counts them all
