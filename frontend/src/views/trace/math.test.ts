import { describe, expect, it } from "vitest";
import { alignOffsets, buildLayout, chooseTicks, clampWindow, colorFor, focusWindow, formatTimeUs, groupKey, hitTest, keyAction, KEY_PAN, KEY_ZOOM, LANE_H, GROUP_H, STEP_H, COUNTER_H, panByPixels, rectOfRow, rowAt, tickStep, timeToX, unitFor, wheelFactor, xToTime, zoomAround, type Geometry } from "./math";
import type { TimelineMeta, TimelineResponse } from "../../api/types";
import { readyMeta, readyTimeline } from "../../testing/timeline";

const meta: TimelineMeta = readyMeta(
  [
    { id: 0, kind: "thread", process: "python (1)", name: "thread 1", max_depth: 2, events: 10 },
    { id: 1, kind: "thread", process: "python (1)", name: "thread 2", max_depth: 0, events: 3 },
    { id: 3, kind: "stream", process: "GPU 0", name: "stream 7", max_depth: 0, events: 5 },
  ],
  [{ step: "1", start_us: 0, end_us: 500 }],
  1e15,
);

// track 0: a parent [100, 400) at depth 0 with two children; track 3: a kernel and a merged item
const resp: TimelineResponse = readyTimeline(
  1000,
  [
    { id: 0, level: 0, bucket_us: 0, hidden_events: 0, items: { start: [100, 110, 300], dur: [300, 50, 20], depth: [0, 1, 1], name: [1, 2, 3], count: [1, 1, 1], row: [10, 11, 12] } },
    { id: 1, level: 0, bucket_us: 0, hidden_events: 0, items: { start: [], dur: [], depth: [], name: [], count: [], row: [] } },
    { id: 3, level: 1, bucket_us: 1, hidden_events: 5, items: { start: [120, 600], dur: [40, 10], depth: [0, 0], name: [4, 4], count: [1, 6], row: [20, -1] } },
  ],
  { "1": "ProfilerStep#1", "2": "aten::conv2d", "3": "aten::relu", "4": "sgemm_kernel" },
  [{ name: "GPU 0 Utilization", unit: "fraction", values: [0, 1] }],
);

describe("time axis", () => {
  it("picks the unit from the magnitude", () => {
    expect(unitFor(0.5)).toBe("ns");
    expect(unitFor(5)).toBe("µs");
    expect(unitFor(5000)).toBe("ms");
    expect(unitFor(5e6)).toBe("s");
    expect(formatTimeUs(2)).toBe("2.000 µs");
    expect(formatTimeUs(1234.5)).toBe("1.235 ms"); // the one rounding rule (toFixed gave 1.234: 1.2345 is 1.23449… in binary)
    expect(formatTimeUs(0.25)).toBe("250.0 ns");
    expect(formatTimeUs(2_500_000)).toBe("2.500 s");
  });

  it("uses 1-2-5 steps at least minPx apart", () => {
    expect(tickStep(1000, 1000, 90)).toBe(100);
    expect(tickStep(1000, 1000, 150)).toBe(200);
    expect(tickStep(1000, 1000, 300)).toBe(500);
    expect(tickStep(1, 1000, 90)).toBeCloseTo(0.1, 12);
  });

  it("labels ticks in the step's unit with enough decimals", () => {
    const s = chooseTicks({ start: 0, end: 1_000_000 }, 1000);
    expect(s.unit).toBe("ms");
    expect(s.step).toBe(100_000);
    expect(s.ticks.map((t) => t.label).slice(0, 3)).toEqual(["0 ms", "100 ms", "200 ms"]);
    expect(s.ticks).toHaveLength(11);

    const fine = chooseTicks({ start: 1000.25, end: 1000.75 }, 500);
    expect(fine.unit).toBe("ns");
    expect(fine.ticks[0]!.t).toBeGreaterThanOrEqual(1000.25);
    expect(fine.ticks[0]!.label).toBe("1000300 ns");

    const mid = chooseTicks({ start: 163_700, end: 165_200 }, 1000);
    expect(mid.unit).toBe("µs");
    expect(mid.ticks.every((t) => t.t >= 163_700 && t.t <= 165_200)).toBe(true);

    const frac = chooseTicks({ start: 0, end: 3 }, 1000);
    expect(frac.step).toBeCloseTo(0.5, 12);
    expect(frac.ticks[1]!.label).toBe("500 ns");
    const ms = chooseTicks({ start: 0, end: 3000 }, 1000);
    expect(ms.ticks[1]!.label).toBe("500 µs");
    expect(chooseTicks({ start: 0, end: 10_000 }, 1000).ticks[1]!.label).toBe("1 ms");
  });
});

describe("zoom and pan", () => {
  it("zooming around the cursor keeps the time under it fixed", () => {
    const win = { start: 100, end: 1100 };
    const x0 = 200;
    const width = 800;
    const cursorX = 450;
    const t = xToTime(cursorX, win, x0, width);
    for (const f of [0.5, 0.1, 2, wheelFactor(-120, 0, false)]) {
      const z = zoomAround(win, f, t);
      expect(z.end - z.start).toBeCloseTo(1000 * f, 9);
      expect(timeToX(t, z, x0, width)).toBeCloseTo(cursorX, 9);
      expect(xToTime(cursorX, z, x0, width)).toBeCloseTo(t, 9);
    }
  });

  it("does not zoom in below 10 ns", () => {
    const z = zoomAround({ start: 0, end: 0.02 }, 0.01, 0.01);
    expect(z.end - z.start).toBeCloseTo(0.01, 12);
  });

  it("W/S zoom around the anchor, A/D pan by a fixed share, other keys do nothing", () => {
    const win = { start: 0, end: 1000 };
    const w = keyAction("w", win, 250)!;
    expect(w.end - w.start).toBeCloseTo(1000 * KEY_ZOOM);
    expect((250 - w.start) / (w.end - w.start)).toBeCloseTo(0.25);
    const s = keyAction("S", win)!;
    expect(s.end - s.start).toBeCloseTo(1000 / KEY_ZOOM);
    expect((s.start + s.end) / 2).toBeCloseTo(500);
    expect(keyAction("a", win)).toEqual({ start: -1000 * KEY_PAN, end: 1000 - 1000 * KEY_PAN });
    expect(keyAction("d", win)).toEqual({ start: 1000 * KEY_PAN, end: 1000 + 1000 * KEY_PAN });
    expect(keyAction("x", win)).toBeNull();
    // clamped to the trace with a 5 % margin
    const far = keyAction("a", { start: -40, end: 960 }, undefined, { start: 0, end: 1000 })!;
    expect(far.start).toBeCloseTo(-50);
    expect(far.end - far.start).toBeCloseTo(1000);
  });

  it("wheel: down zooms out, up zooms in; pinch is more sensitive", () => {
    expect(wheelFactor(100, 0, false)).toBeGreaterThan(1);
    expect(wheelFactor(-100, 0, false)).toBeLessThan(1);
    expect(wheelFactor(-10, 0, true)).toBeLessThan(wheelFactor(-10, 0, false));
    expect(wheelFactor(3, 1, false)).toBeCloseTo(wheelFactor(48, 0, false));
  });

  it("drag-to-pan moves the time under the pointer with it", () => {
    const win = { start: 0, end: 1000 };
    const p = panByPixels(win, 100, 500);
    expect(p).toEqual({ start: -200, end: 800 });
  });

  it("clamps to the bounds and keeps a minimum span", () => {
    expect(clampWindow({ start: -5000, end: 5000 }, { start: 0, end: 1000 })).toEqual({ start: -50, end: 1050 });
    const c = clampWindow({ start: 10, end: 10 }, { start: 0, end: 1000 });
    expect(c.end - c.start).toBeCloseTo(0.01);
  });

  it("focuses an event at 3x its duration", () => {
    expect(focusWindow(100, 10)).toEqual({ start: 90, end: 120 });
    expect(focusWindow(100, 0)).toEqual({ start: 99.5, end: 100.5 });
  });
});

describe("layout", () => {
  const counters = [{ name: "GPU 0 Utilization", unit: "fraction" }];

  it("groups tracks by process, one lane per depth, counters and steps first", () => {
    const l = buildLayout([{ worker: "w0", meta, counters }], new Set());
    expect(l.rows.map((r) => r.kind)).toEqual(["steps", "group", "counter", "group", "track", "track", "group", "track"]);
    const t0 = l.rows[4]!;
    expect(t0.kind === "track" && t0.lanes).toBe(3);
    expect(t0.y).toBe(STEP_H + GROUP_H + COUNTER_H + GROUP_H);
    expect(t0.h).toBe(3 * LANE_H + 2);
    expect(l.rows.filter((r) => r.kind === "group").map((r) => r.label)).toEqual(["Counters", "python (1)", "GPU 0"]);
    expect(l.height).toBe(STEP_H + 3 * GROUP_H + COUNTER_H + (3 * LANE_H + 2) + 2 * (LANE_H + 2));
  });

  it("a collapsed group keeps only its header and moves the rows below up", () => {
    const open = buildLayout([{ worker: "w0", meta, counters }], new Set());
    const closed = buildLayout([{ worker: "w0", meta, counters }], new Set([groupKey("w0", "python (1)")]));
    const header = closed.rows.find((r) => r.kind === "group" && r.label === "python (1)")!;
    expect(header.kind === "group" && header.collapsed).toBe(true);
    expect(closed.rows.filter((r) => r.kind === "track")).toHaveLength(1);
    expect(closed.height).toBe(open.height - (3 * LANE_H + 2) - (LANE_H + 2));
    const gpu = closed.rows.find((r) => r.kind === "track")!;
    expect(gpu.kind === "track" && gpu.track).toBe(3);
    expect(rowAt(closed, gpu.y + 1)).toBe(gpu);
    expect(rowAt(closed, -1)).toBeNull();
    expect(rowAt(closed, closed.height + 1)).toBeNull();
  });

  it("stacks several workers as their own groups, labeled by worker", () => {
    const l = buildLayout(
      [
        { worker: "w0", meta, counters: [] },
        { worker: "w1", meta, counters: [] },
      ],
      new Set([groupKey("w1", "GPU 0")]),
    );
    const groups = l.rows.filter((r) => r.kind === "group").map((r) => r.label);
    expect(groups).toEqual(["w0 · python (1)", "w0 · GPU 0", "w1 · python (1)", "w1 · GPU 0"]);
    expect(l.rows.filter((r) => r.kind === "track" && r.worker === "w1")).toHaveLength(2);
  });
});

describe("hit-testing", () => {
  const layout = buildLayout([{ worker: "w0", meta, counters: [] }], new Set());
  const data = new Map([["w0", resp]]);
  // 1 px = 1 µs: x = 100 + t
  const g: Geometry = { win: { start: 0, end: 1000 }, x0: 100, width: 1000, y0: 26, offsets: new Map([["w0", 0]]) };
  const trackY = (id: number) => {
    const r = layout.rows.find((x) => x.kind === "track" && x.track === id)!;
    return g.y0 + r.y + 1;
  };

  it("finds the slice under the point in the right lane", () => {
    const y0 = trackY(0);
    expect(hitTest(layout, data, g, 100 + 200, y0 + 5)).toMatchObject({ row: 10, name: "ProfilerStep#1", depth: 0, count: 1 });
    expect(hitTest(layout, data, g, 100 + 130, y0 + LANE_H + 5)).toMatchObject({ row: 11, name: "aten::conv2d", depth: 1 });
    expect(hitTest(layout, data, g, 100 + 310, y0 + LANE_H + 5)).toMatchObject({ row: 12, name: "aten::relu" });
    // depth 1 has nothing at t=200, depth 2 nothing at all
    expect(hitTest(layout, data, g, 100 + 200, y0 + LANE_H + 5)).toBeNull();
    expect(hitTest(layout, data, g, 100 + 200, y0 + 2 * LANE_H + 5)).toBeNull();
    // the label column and group headers are not slices
    expect(hitTest(layout, data, g, 50, y0 + 5)).toBeNull();
    expect(hitTest(layout, data, g, 300, g.y0 + 1)).toBeNull();
  });

  it("has a 2 px tolerance and reports merged items", () => {
    const y = trackY(3) + 5;
    expect(hitTest(layout, data, g, 100 + 161.5, y)).toMatchObject({ row: 20 });
    expect(hitTest(layout, data, g, 100 + 165, y)).toBeNull();
    expect(hitTest(layout, data, g, 100 + 605, y)).toMatchObject({ row: -1, count: 6, name: "sgemm_kernel" });
  });

  it("applies the worker's clock offset, and rectOfRow is where hitTest finds the item", () => {
    const shifted: Geometry = { ...g, offsets: new Map([["w0", 50]]) };
    expect(hitTest(layout, data, shifted, 100 + 130 + 50, trackY(3) + 5)).toMatchObject({ row: 20 });
    const rect = rectOfRow(layout, data, shifted, "w0", 20)!;
    expect(rect.x).toBeCloseTo(100 + 170);
    expect(rect.w).toBeCloseTo(40);
    expect(hitTest(layout, data, shifted, rect.x + rect.w / 2, rect.y + rect.h / 2)).toMatchObject({ row: 20 });
    expect(rectOfRow(layout, data, shifted, "w0", 999)).toBeNull();
  });
});

describe("wall-clock alignment", () => {
  it("offsets each worker by its wall origin minus the earliest", () => {
    const o = alignOffsets([
      { worker: "w0", wall_origin_us: 1_000_500 },
      { worker: "w1", wall_origin_us: 1_000_000 },
      { worker: "w2", wall_origin_us: 1_002_000 },
    ]);
    expect(Object.fromEntries(o)).toEqual({ w0: 500, w1: 0, w2: 2000 });
  });
  it("aligns Composer ranks on their clock sync: known clock offsets vanish", () => {
    // synth_composer: the first event is 500 µs after the sync on every rank; clocks offset 0, +2500, -1300 µs
    const raw = [0, 2500, -1300].map((off, r) => ({ worker: `rank${r}`, origin_us: 1e15 + off, wall_origin_us: 500, clock: "clock_sync" }));
    expect(Object.fromEntries(alignOffsets(raw))).toEqual({ rank0: 0, rank1: 0, rank2: 0 });
  });
  it("falls back to raw timestamps when workers are on different clocks", () => {
    const o = alignOffsets([
      { worker: "a", origin_us: 1_000_100, wall_origin_us: 500, clock: "clock_sync" },
      { worker: "b", origin_us: 1_000_000, wall_origin_us: 9e15, clock: "base_time" },
    ]);
    expect(Object.fromEntries(o)).toEqual({ a: 100, b: 0 });
  });
});

describe("colors", () => {
  it("are stable per name", () => {
    expect(colorFor("aten::conv2d")).toBe(colorFor("aten::conv2d"));
    expect(colorFor("aten::conv2d")).toMatch(/^#[0-9a-f]{6}$/);
    const distinct = new Set(["a", "b", "c", "d", "e", "f", "g", "h"].map(colorFor));
    expect(distinct.size).toBeGreaterThan(3);
  });
});
