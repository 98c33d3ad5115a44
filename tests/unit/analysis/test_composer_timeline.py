"""Composer traces in the Trace view: system metric counter tracks, and ranks aligned on
``clock_sync_timestamp_us`` (synth_composer: several ranks whose clocks are offset by known amounts)."""

from __future__ import annotations

import shutil

import pytest
from conftest import sample
from synth.composer import SERIES, composer_trace, counter_value, dumps, write_ranks

from tb_plugin import api
from tb_plugin.analysis.clock import shared_origin
from tb_plugin.analysis.counters import counters
from tb_plugin.registry.parse import load_trace_file
from tb_plugin.registry.runs import RunRegistry
from tb_plugin.trace.decode import decode_trace

OFFSETS = (0.0, 2500.0, -1300.0, 40_000.0)


def test_system_metrics_become_counter_tracks_with_known_values():
    load, compute = 300.0, 700.0
    trace = decode_trace(dumps(composer_trace(rank=1, batches=4, load_us=load, compute_us=compute)))
    a0 = float(trace.events.ts.min())
    batch = load + compute
    # one bin per batch: each bin holds exactly the sample taken at that batch's start
    got = {c["name"]: c for c in counters(trace, a0, a0 + 4 * batch, 4)}
    for series in SERIES:
        assert got[series]["values"] == [pytest.approx(counter_value(series, b, 1)) for b in range(4)], series
    assert got["cpu/cpu_percent"]["unit"] == "percent" and got["memory/used"]["unit"] == "bytes"
    assert got["network/bytes_sent"]["unit"] == "bytes" and got["memory/percent"]["unit"] == "percent"
    # a bin between samples holds the earlier sample; the max of the bin wins when several fall inside
    two = {c["name"]: c["values"] for c in counters(trace, a0, a0 + 4 * batch, 2)}
    assert two["cpu/cpu_percent"] == [
        pytest.approx(counter_value("cpu/cpu_percent", 1, 1)),
        pytest.approx(counter_value("cpu/cpu_percent", 3, 1)),
    ]
    half = {c["name"]: c["values"] for c in counters(trace, a0 + batch / 2, a0 + batch, 1)}
    assert half["disk/read_bytes"] == [pytest.approx(counter_value("disk/read_bytes", 0, 1))]


@pytest.mark.corpus
def test_real_composer_sample_has_the_cpu_counter_track():
    trace = load_trace_file(str(sample("composer/rank_0.trace.json")))
    a0 = float(trace.events.ts.min())
    a1 = float((trace.events.ts + trace.events.dur).max())
    cpu = next(c for c in counters(trace, a0, a1, 50) if c["name"] == "cpu/cpu_percent")
    assert cpu["unit"] == "percent" and len(cpu["values"]) == 50
    origin, clock = shared_origin(trace, a0)
    assert clock == "clock_sync" and origin == a0 - 1646775076631081  # the sample's clock_sync_timestamp_us


def test_ranks_align_on_clock_sync(tmp_path):
    """Offsets between the ranks' clocks vanish on the shared clock; on raw timestamps they stay."""
    shutil.rmtree(tmp_path / "job", ignore_errors=True)
    write_ranks(tmp_path / "job", offsets=OFFSETS, batches=3)
    reg = RunRegistry(str(tmp_path))
    reg.scan()
    metas, first_batch = {}, {}
    for st in reg.files():
        reg.load(st)
        q = {"run": "job", "worker": st.worker, "span": st.span}
        code, meta = api.timeline_meta(reg, q)
        assert code == 200 and meta["clock"] == "clock_sync", meta
        metas[st.worker] = meta
        hit = api.timeline_search(reg, dict(q, q="event/batch"))[1]
        first_batch[st.worker] = hit["start_us"][0]
        code, doc = api.timeline(reg, dict(q, width_px="300"))
        assert {c["name"] for c in doc["counters"]} >= set(SERIES)
    assert len(metas) == len(OFFSETS)
    # what the UI's alignOffsets does: shift each worker by its shared origin minus the smallest
    low = min(m["wall_origin_us"] for m in metas.values())
    aligned = {w: metas[w]["wall_origin_us"] - low + first_batch[w] for w in metas}
    assert max(aligned.values()) - min(aligned.values()) == pytest.approx(0, abs=1e-6)
    raw_low = min(m["origin_us"] for m in metas.values())
    raw = sorted(metas[w]["origin_us"] - raw_low + first_batch[w] for w in metas)
    assert raw[-1] - raw[0] == pytest.approx(max(OFFSETS) - min(OFFSETS))  # what the offsets would leave
