// The MemProfiler stats model on the server's answer for samples/fts_memprofiler rank 1
// (tests/synth/fts.py: the values are known by construction).
import { describe, expect, it } from "vitest";
import stats from "../../__fixtures__/memory/memprofiler_stats_rank1.json";
import type { MemProfilerStatsReady } from "../../api/types";
import { formatStat, snapshotLabel, statsChartOption, statsTable, statUnit } from "./memprofiler";

const data = stats as unknown as MemProfilerStatsReady;
const MiB = 1 << 20;

describe("MemProfiler stats table", () => {
  it("has a column per snapshot and an end − start column per iteration", () => {
    const { columns, rows } = statsTable(data, false);
    expect(columns.map((c) => c.label)).toEqual(["training_step #2 start", "training_step #2 end", "Δ training_step #2"]);
    const alloc = rows.find((r) => r.key === "allocated_bytes.all.current")!;
    // synth_fts: 512 MiB + 16 MiB·rank at the start, 64 MiB more at the end
    expect(alloc.cells).toEqual([528 * MiB, 592 * MiB, 64 * MiB]);
    const npp = rows.find((r) => r.key === "npp_post_forward")!;
    expect(npp.cells).toEqual([0, 708 * MiB, 708 * MiB]);
    expect(rows.map((r) => r.key)).toEqual(data.metrics.map((m) => m.key));
  });

  it("lists every stat when asked, headline first, with units from the stat names", () => {
    const { rows } = statsTable(data, true);
    expect(rows.length).toBe(Object.keys(data.snapshots[0]!.values).length);
    expect(rows.slice(0, data.metrics.length).map((r) => r.key)).toEqual(data.metrics.map((m) => m.key));
    expect(statUnit("inactive_split_bytes.small_pool.peak")).toBe("bytes");
    expect(statUnit("segment.all.current")).toBe("count");
  });

  it("formats bytes, counts and negative deltas", () => {
    expect(formatStat(592 * MiB, "bytes")).toBe("592.0 MiB");
    expect(formatStat(-6 * MiB, "bytes")).toBe("\u22126.0 MiB");
    expect(formatStat(1030, "count")).toBe("1,030");
    expect(formatStat(null, "bytes")).toBe("\u2013");
    expect(snapshotLabel({ function: "training_step", iteration: 2, phase: "end" })).toBe("training_step #2 end");
  });

  it("draws one bar group per snapshot and one series per byte metric", () => {
    const option = statsChartOption(data, "#000") as { xAxis: { data: string[] }; series: { name: string; data: number[] }[] };
    expect(option.xAxis.data).toEqual(["training_step #2 start", "training_step #2 end"]);
    const reserved = option.series.find((s) => s.name === "CUDA reserved")!;
    expect(reserved.data).toEqual([2080 * MiB, 2208 * MiB]);
    expect(option.series.length).toBe(6);
  });
});
