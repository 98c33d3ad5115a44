"""Allocator snapshots count the blocks allocated before the history began."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from conftest import REPO, SAMPLES
from synth.snapshot import LAYOUTS, replay_peak, snapshot_with_blocks_before_history, synthesize_snapshot

from tb_plugin.analysis.snapshot import device_summary, timeline
from tb_plugin.artifacts.snapshot import load_snapshot, parse_snapshot
from tb_plugin.artifacts.unpickle import restricted_loads

SNAPSHOTS = sorted(SAMPLES.glob("**/*.pickle")) + sorted((REPO / "samples").glob("**/*.pickle"))


def test_blocks_before_history_known_answer():
    obj, peak = snapshot_with_blocks_before_history()
    snap = parse_snapshot(obj)
    summary = device_summary(snap, 0)
    assert summary["peak_active_bytes"] == peak == replay_peak(obj) == 800
    largest = {(r["bytes"], r["before_history"], r["frame"]) for r in summary["largest"]}
    # alive at the peak: the history alloc (100), the block freed later (300), the block held to the end (400)
    assert largest == {(100, False, None), (300, True, None), (400, True, "train.py:12:build_model")}
    # 4 bins over 0–30 µs, each holding its largest value: 800 | 800 → 500 | 550 | 550 → 450
    assert timeline(snap, 0, None, None, 4)["active_bytes"] == [800, 800, 550, 550]


@pytest.mark.corpus
def test_sample_snapshots_cover_every_file():
    names = {p.name for p in SNAPSHOTS}
    assert {"memory_forward_bf16_128.pickle", "mem_snapshot.pickle"} <= names


@pytest.mark.corpus
@pytest.mark.parametrize("path", SNAPSHOTS, ids=lambda p: p.name)
def test_peak_equals_memory_viz_rule_on_every_snapshot(path: Path):
    data = path.read_bytes()
    obj = restricted_loads(data)
    snap = load_snapshot(data)
    for device in snap.devices:
        summary = device_summary(snap, device)
        assert summary["peak_active_bytes"] == replay_peak(obj, device)
        assert max(timeline(snap, device, None, None, 500)["active_bytes"]) == summary["peak_active_bytes"]


@pytest.mark.corpus
def test_bf16_forward_peak_includes_the_weights():
    """memory_viz's Active Memory Timeline peaks at ~780 MB here; replaying from 0 read 256,025,600 B."""
    snap = load_snapshot((SAMPLES / "memory_snapshots" / "memory_forward_bf16_128.pickle").read_bytes())
    summary = device_summary(snap, 0)
    assert summary["peak_active_bytes"] == 779_837_440
    assert any(r["before_history"] for r in summary["largest"])


@pytest.mark.parametrize("layout", [l for l in LAYOUTS if l in ("current", "no_time")])
def test_synthesized_snapshots_match_the_reference(layout):
    obj = synthesize_snapshot(layout, entries=400, seed=3)
    snap = load_snapshot(pickle.dumps(obj))
    assert device_summary(snap, 0)["peak_active_bytes"] == replay_peak(obj)


def test_blocks_without_address_follow_the_one_before():
    obj, _ = snapshot_with_blocks_before_history()
    for b in obj["segments"][0]["blocks"]:
        del b["address"]
    obj["segments"][0]["blocks"][1]["size"] = 0x1000  # 0x1000 + 512 → 0x1200; + 0x1000 → 0x2200
    blocks = parse_snapshot(obj).segments[0]["blocks"]
    assert [b["address"] for b in blocks] == [0x1000, 0x1200, 0x2200]
