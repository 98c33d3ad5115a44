"""Allocator-snapshot timeline: the blocks live before the history are drawn (one band below the
others, plus one per such block freed during the history), Reserved counts the segments that existed
before the history and is never below Active, and the answer says what "the largest N" leaves out.
Known answers on tests/synth/snapshot.py, and the H200 snapshots of samples/gpu_snapshot."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import REPO
from synth.snapshot import snapshot_with_blocks_before_history

from tb_plugin.analysis.snapshot import active_bytes, reserved_bytes, timeline
from tb_plugin.artifacts.snapshot import load_snapshot, parse_snapshot

H200 = REPO / "samples" / "gpu_snapshot"


def _stacked_at(bands: list[dict], t: float, end: float) -> int:
    """Bytes of the bands alive at ``t`` (a band lives over [alloc, free), to ``end`` when not freed)."""
    return sum(
        b["bytes"] for b in bands if b["alloc_time"] <= t < (b["free_time"] if b["free_time"] is not None else end + 1)
    )


def test_known_answer_bands_reserved_and_left_out():
    """Before the history: 400 B held to the dump and 300 B freed at 10 µs; history: 100 B over
    [0, 30), 50 B from 20 µs. One segment of 64 KiB, no segment event: Reserved is 64 KiB throughout."""
    snap = parse_snapshot(snapshot_with_blocks_before_history()[0])
    tl = timeline(snap, 0, None, None, 4)
    bands = [(b["alloc_time"], b["free_time"], b["bytes"], b["before_history"], b["blocks"]) for b in tl["bands"]]
    assert bands == [
        (0.0, None, 400, True, 1),
        (0.0, 10.0, 300, True, 1),
        (0.0, 30.0, 100, False, 1),
        (20.0, None, 50, False, 1),
    ]
    # drawn whole, the stack is the active curve at every entry
    t = np.array([0.0, 10.0, 20.0, 30.0])
    assert [_stacked_at(tl["bands"], x, tl["end"]) for x in t] == [800, 500, 550, 450]
    assert tl["reserved_bytes"] == [1 << 16] * 4
    assert (tl["bands_alive"], tl["bands_left_out"], tl["left_out_max_bytes"]) == (2, 0, None)
    one = timeline(snap, 0, None, None, 4, bands=1)
    assert (one["bands_alive"], one["bands_left_out"], one["left_out_max_bytes"]) == (2, 1, 50)
    assert [b["bytes"] for b in one["bands"] if not b["before_history"]] == [100]


def test_a_window_after_an_early_free_leaves_it_out():
    snap = parse_snapshot(snapshot_with_blocks_before_history()[0])
    tl = timeline(snap, 0, 15.0, 40.0, 4)
    assert [(b["bytes"], b["before_history"]) for b in tl["bands"]] == [(400, True), (100, False), (50, False)]


def test_no_segment_information_gives_no_reserved_curve():
    obj, _ = snapshot_with_blocks_before_history()
    obj["segments"] = []
    snap = parse_snapshot(obj)
    assert not reserved_bytes(snap, 0).any()


@pytest.mark.parametrize(
    "name, before_bytes, blocks",
    [("h200_after_build.pickle", 264_351_744, 61), ("h200_from_start.pickle", 204_472_320, 9)],
)
def test_h200_snapshots(name, before_bytes, blocks):
    """Before: Reserved peaked at 688 MiB (after_build) under a 919 MiB Active peak, and the blocks
    allocated before the history (the model's weights) were in no band. The dump holds 1028 MiB of
    segments, 340 MiB of them from before the history (after_build)."""
    snap = load_snapshot((H200 / name).read_bytes())
    active, reserved = active_bytes(snap, 0), reserved_bytes(snap, 0)
    assert active.max() == 963_813_656  # 919.2 MiB
    assert reserved.max() == 1028 << 20 and (reserved >= active).all()
    tl = timeline(snap, 0, None, None, 800)
    assert all(r >= a for r, a in zip(tl["reserved_bytes"], tl["active_bytes"]))
    first = tl["bands"][0]
    assert (first["before_history"], first["bytes"], first["blocks"], first["free_time"]) == (
        True,
        before_bytes,
        blocks,
        None,
    )
    assert sum(b["before_history"] for b in tl["bands"]) == 1
    drawn = len(tl["bands"]) - 1
    assert drawn == 200 and tl["bands_left_out"] == tl["bands_alive"] - drawn > 0
    assert tl["left_out_max_bytes"] <= min(b["bytes"] for b in tl["bands"][1:])
