import { describe, expect, it } from "vitest";
import segmentsFixture from "../../__fixtures__/memory/snapshot_segments.json";
import timelineFixture from "../../__fixtures__/memory/snapshot_timeline.json";
import exportFixture from "../../__fixtures__/memory/memory_timeline_export.json";
import memoryFixture from "../../__fixtures__/memory/memory.json";
import type { MemoryDevice, MemoryTimelineExportReady, SnapshotBand, SnapshotSegment, SnapshotTimelineReady } from "../../api/types";
import { formatBytes } from "../../util/format";
import { argMax, bandBottomAt, binCenters, formatAddress, layoutSegments, normalizeRange, overlaps, parseBytes, stackBands } from "./layout";
import { bandOutline, curvePeak, exportOption, memoryCurveOption, snapshotTimelineOption } from "./options";

const band = (alloc_time: number, free_time: number | null, bytes: number): SnapshotBand => ({
  alloc_time,
  free_time,
  bytes,
  stack: 0,
  frame: "f.py:1:g",
});

describe("parseBytes", () => {
  it("reads plain numbers, binary and decimal units, and rejects junk", () => {
    expect(parseBytes("")).toBeNull();
    expect(parseBytes("   ")).toBeNull();
    expect(parseBytes("4096")).toBe(4096);
    expect(parseBytes("1,048,576")).toBe(1048576);
    expect(parseBytes("1 KiB")).toBe(1024);
    expect(parseBytes("1.5 MiB")).toBe(1572864);
    expect(parseBytes("2k")).toBe(2048);
    expect(parseBytes("2G")).toBe(2 * 1024 ** 3);
    expect(parseBytes("3 MB")).toBe(3_000_000);
    expect(parseBytes("0.5gib")).toBe(512 * 1024 ** 2);
    expect(parseBytes("12 parsecs")).toBeUndefined();
    expect(parseBytes("-5")).toBeUndefined();
    expect(parseBytes("MiB")).toBeUndefined();
  });
});

describe("byte formatting of memory values", () => {
  it("uses binary units with one decimal", () => {
    expect(formatBytes(101305344)).toBe("96.6 MiB");
    expect(formatBytes(256025600)).toBe("244.2 MiB");
    expect(formatBytes(512)).toBe("512 B");
    expect(formatBytes(-1048576)).toBe("-1.0 MiB");
    expect(formatBytes(null)).toBe("\u2013");
    expect(formatAddress(140586292084736)).toBe("0x7fdccc000000");
    expect(formatAddress(null)).toBe("\u2013");
  });
});

describe("stackBands", () => {
  it("stacks in allocation order and moves bands down when a band below them is freed", () => {
    const placed = stackBands([band(0, 10, 100), band(1, 20, 50), band(5, null, 30), band(12, 18, 80), band(15, 16, 200)], 30);
    expect(placed.map((p) => p.steps.map((s) => [s.x, s.y0]))).toEqual([
      [[0, 0]], // first band at the bottom
      [[1, 100], [10, 0]], // on top of the first, down to 0 when it is freed at 10
      [[5, 150], [10, 50], [20, 0]], // on both; steps down at each free below it
      [[12, 80]], // on the two still alive (50 + 30)
      [[15, 160]], // on the three alive: 50 + 30 + 80
    ]);
    expect(placed.map((p) => [p.y0, p.y1])).toEqual([[0, 100], [100, 150], [150, 180], [80, 160], [160, 360]]);
    // an unfreed band runs to the window's end
    expect(placed[2]!.x1).toBe(30);
    expect(placed[1]!.x0).toBe(1);
    expect(bandBottomAt(placed[2]!, 9.9)).toBe(150);
    expect(bandBottomAt(placed[2]!, 10)).toBe(50);
    expect(bandBottomAt(placed[2]!, 30)).toBeNull();
  });

  it("never overlaps two bands alive at the same time (real snapshot window)", () => {
    const tl = timelineFixture as unknown as SnapshotTimelineReady;
    const placed = stackBands(tl.bands, tl.end);
    expect(placed).toHaveLength(tl.bands.length);
    expect(placed.length).toBeGreaterThan(100);
    for (let i = 0; i < placed.length; i++) {
      const a = placed[i]!;
      expect(a.y1 - a.y0).toBe(a.band.bytes);
    }
    // at every time something changes, the live bands tile [0, their total bytes) exactly: no overlap, no gap,
    // so the stack is never taller than the memory those allocations hold
    const times = [...new Set(placed.flatMap((p) => p.steps.map((s) => s.x)))];
    for (const t of times) {
      const live = placed
        .map((p) => ({ p, y: bandBottomAt(p, t) }))
        .filter((e) => e.y !== null)
        .sort((a, b) => a.y! - b.y!);
      let top = 0;
      for (const { p, y } of live) {
        expect(y).toBe(top);
        top += p.band.bytes;
      }
      // and never above the active curve (its per-bin maximum) at that time
      const n = tl.active_bytes.length;
      const bin = Math.min(n - 1, Math.max(0, Math.floor(((t - tl.start) / (tl.end - tl.start)) * n)));
      if (t >= tl.start && t <= tl.end) expect(top).toBeLessThanOrEqual(tl.active_bytes[bin]!);
    }
    // placed in input order, so the series index maps back to the band
    expect(placed.map((p) => p.index)).toEqual(tl.bands.map((_, i) => i));
  });
});

describe("layoutSegments", () => {
  it("places blocks by address as percentages of their segment", () => {
    const seg: SnapshotSegment = {
      address: 1000,
      total_size: 400,
      stream: 0,
      segment_type: "large",
      blocks: [
        { address: 1300, size: 100, requested_size: 90, state: "inactive", stack: -1 },
        { address: 1000, size: 200, requested_size: 200, state: "active_allocated", stack: 3 },
        { address: 1200, size: 100, requested_size: 64, state: "active_pending_free", stack: 4 },
      ],
    };
    const small = { ...seg, address: 5000, total_size: 4, blocks: [] };
    const [row, smallRow] = layoutSegments([seg, small]);
    expect(row!.blocks.map((b) => [b.block.address, b.leftPct, b.widthPct])).toEqual([
      [1000, 0, 50],
      [1200, 50, 25],
      [1300, 75, 25],
    ]);
    expect(row!.widthPct).toBe(100);
    expect(row!.activeBytes).toBe(300);
    expect(smallRow!.widthPct).toBe(2); // 1 % of the largest, shown at the 2 % minimum
  });

  it("fills every real segment without overflow", () => {
    const rows = layoutSegments((segmentsFixture as { segments: SnapshotSegment[] }).segments);
    expect(rows.length).toBe(segmentsFixture.segments.length);
    for (const r of rows) {
      const total = r.blocks.reduce((a, b) => a + b.widthPct, 0);
      expect(total).toBeCloseTo(100, 6);
      let end = 0;
      for (const b of r.blocks) {
        expect(b.leftPct).toBeCloseTo(end, 6); // contiguous, by address
        end = b.leftPct + b.widthPct;
      }
    }
  });
});

describe("small helpers", () => {
  it("bins, maxima, ranges and overlaps", () => {
    expect(binCenters(0, 100, 4)).toEqual([12.5, 37.5, 62.5, 87.5]);
    expect(binCenters(0, 1, 0)).toEqual([]);
    expect(argMax([3, 9, 9, 1])).toEqual([1, 9]);
    expect(argMax([])).toEqual([-1, 0]);
    expect(normalizeRange(50, 10, 0, 40)).toEqual({ start: 10, end: 40 });
    expect(normalizeRange(50, 60, 0, 40)).toBeNull();
    expect(overlaps(10, 20, 20, 30)).toBe(true);
    expect(overlaps(10, 20, 21, 30)).toBe(false);
    expect(overlaps(null, 5, 0, 1)).toBe(true);
    expect(overlaps(40, null, 0, 39)).toBe(false);
  });
});

describe("chart options", () => {
  const gpu = (memoryFixture as { devices: MemoryDevice[] }).devices.find((d) => d.device === "GPU0")!;

  it("memory curve: step lines, the window's peak marked with its value, the selected lifetime shaded", () => {
    const option = memoryCurveOption({ device: gpu, textColor: "#000", highlight: { start: 5, end: 9, label: "1.0 MiB" }, extent: null });
    const series = option.series as { name: string; step: string; data: [number, number][]; markPoint?: { data: { coord: [number, number] }[]; label: { formatter: () => string } }; markArea?: { data: { xAxis: number }[][] } }[];
    expect(series.map((s) => [s.name, s.step])).toEqual([
      ["Allocated", "end"],
      ["Reserved", "end"],
    ]);
    expect(series[0]!.data).toHaveLength(gpu.allocated.ts_us.length);
    const peak = curvePeak(gpu.allocated.ts_us, gpu.allocated.bytes)!;
    expect(peak[1]).toBe(gpu.peak_allocated_bytes); // the downsampled curve keeps the exact peak
    expect(series[0]!.markPoint!.data[0]!.coord).toEqual(peak);
    expect(series[0]!.markPoint!.label.formatter()).toBe("peak 96.6 MiB");
    expect(series[0]!.markArea!.data[0]!.map((p) => p.xAxis)).toEqual([5, 9]);
    expect((option as { brush: { brushType: string } }).brush.brushType).toBe("lineX");
  });

  it("snapshot timeline: one custom item per band, per-bin curves at bin centers, markers as lines", () => {
    const tl = { ...(timelineFixture as unknown as SnapshotTimelineReady), markers: [{ action: "oom", time: 100, bytes: 5 }] };
    const { option, placed } = snapshotTimelineOption(tl, "#000", { start: tl.start, end: tl.end }, null);
    const series = option.series as { type: string; data: unknown[]; markLine?: { data: { name: string; xAxis: number }[] } }[];
    expect(series[0]!.type).toBe("custom");
    expect(series[0]!.data).toHaveLength(placed.length);
    expect(series[1]!.data).toHaveLength(tl.active_bytes.length);
    expect(series[1]!.markLine!.data).toEqual([{ name: "OOM", xAxis: 100 }]);
  });

  it("memory-timeline export: one stacked area per category, the peak line on top", () => {
    const data = exportFixture as unknown as MemoryTimelineExportReady;
    const option = exportOption(data, "#000");
    const series = option.series as { name: string; stack: string; data: [number, number][]; markLine?: { data: { xAxis: number }[] } }[];
    expect(series.map((s) => s.name)).toEqual(data.categories);
    expect(series.every((s) => s.stack === "total")).toBe(true);
    expect(series[series.length - 1]!.markLine!.data[0]!.xAxis).toBe(data.peak_time_us);
  });
});

describe("bandOutline", () => {
  it("traces the bottom steps left to right and the top back", () => {
    const placed = stackBands([band(0, 10, 100), band(1, 20, 50), band(5, null, 30)], 30);
    const identity = (v: [number, number]): [number, number] => [v[0], v[1] === 0 ? 0 : -v[1]]; // y up, as on screen
    expect(bandOutline(placed[2]!, identity)).toEqual([
      [5, -150], [10, -150], [10, -50], [20, -50], [20, 0], [30, 0], // bottom
      [30, -30], [20, -30], [20, -80], [10, -80], [10, -180], [5, -180], // top, back
    ]);
  });
});
