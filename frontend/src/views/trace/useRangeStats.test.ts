import { describe, expect, it } from "vitest";
import type { TimelineRangeResponse } from "../../api/types";
import { buildLayout } from "./math";
import { mergeRange, tracksInBox } from "./useRangeStats";
import { readyMeta } from "../../testing/timeline";

const answer = (count: number, total_us: number, top: [string, number, number][]): TimelineRangeResponse => ({
  state: "ready",
  start_us: 0,
  end_us: 100,
  duration_us: 100,
  count,
  total_us,
  names: top.length,
  top: top.map(([name, c, t]) => ({ name, count: c, total_us: t })),
});

describe("range statistics from the server", () => {
  it("takes one worker's answer as it is", () => {
    const s = mergeRange([answer(4, 210, [["ProfilerStep#1", 1, 170], ["aten::relu", 1, 20], ["sgemm", 2, 20]])], 170);
    expect(s).toEqual({
      durationUs: 170,
      count: 4,
      totalUs: 210,
      top: [
        { name: "ProfilerStep#1", count: 1, totalUs: 170 },
        { name: "sgemm", count: 2, totalUs: 20 },
        { name: "aten::relu", count: 1, totalUs: 20 },
      ],
    });
  });

  it("sums workers per name and keeps the top 10 by time", () => {
    const names = Array.from({ length: 12 }, (_, i) => `k${i}`);
    const a = answer(12, 78, names.map((n, i) => [n, 1, i + 1] as [string, number, number]));
    const b = answer(2, 100, [["k0", 2, 100]]);
    const s = mergeRange([a, b], 50);
    expect(s.count).toBe(14);
    expect(s.totalUs).toBe(178);
    expect(s.top).toHaveLength(10);
    expect(s.top[0]).toEqual({ name: "k0", count: 3, totalUs: 101 });
    expect(s.top[1]!.name).toBe("k11");
  });

  it("a box with height selects the tracks it covers, per worker", () => {
    const meta = readyMeta(
      [
        { id: 0, kind: "thread", process: "python", name: "thread 1", max_depth: 0, events: 1 },
        { id: 3, kind: "stream", process: "GPU 0", name: "stream 7", max_depth: 0, events: 1 },
      ],
      [],
    );
    const layout = buildLayout([{ worker: "w0", meta, counters: [] }], new Set());
    const gpu = layout.rows.find((r) => r.kind === "track" && r.track === 3)!;
    expect(tracksInBox(layout, { t0: 0, t1: 10, y0: gpu.y + 1, y1: gpu.y + gpu.h - 1 })).toEqual(new Map([["w0", [3]]]));
    expect(tracksInBox(layout, { t0: 0, t1: 10, y0: 5, y1: 7 })).toBeUndefined();
  });
});
