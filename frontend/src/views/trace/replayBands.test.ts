import { describe, expect, it } from "vitest";
import type { GraphReplayBands } from "../../api/types";
import { readyMeta } from "../../testing/timeline";
import { buildLayout, groupKey, type Geometry } from "./math";
import { flattenBands, replayAt, replayRects, replayText } from "./replayBands";

const meta = readyMeta(
  [
    { id: 0, kind: "thread", process: "python (1)", name: "thread 1", max_depth: 1, events: 4 },
    { id: 3, kind: "stream", process: "GPU 0", name: "stream 7", max_depth: 0, events: 2 },
    { id: 4, kind: "stream", process: "GPU 0", name: "stream 20", max_depth: 0, events: 2 },
  ],
  [{ step: "1", start_us: 0, end_us: 1000 }],
  0,
);
// replay 0 of graph 0 on streams 7 and 20; replay 1 of graph 1 (no capture) on stream 7
const doc: GraphReplayBands = {
  state: "ready",
  total: 3,
  shown: 3,
  graphs: [
    { graph: 0, status: "attributed", replays: 1 },
    { graph: 1, status: "no_capture", replays: 1 },
  ],
  bands: {
    start_us: [100, 120, 600],
    end_us: [300, 350, 700],
    track: [3, 4, 3],
    replay: [0, 0, 1],
    graph: [0, 0, 1],
    kernels: [4, 4, 1],
    busy_us: [230, 230, 100],
  },
};

describe("graph replay bands", () => {
  const layout = buildLayout([{ worker: "w", meta, counters: [] }], new Set());
  const g: Geometry = { win: { start: 0, end: 1000 }, x0: 100, width: 1000, y0: 0, offsets: new Map() };
  const row = (track: number) => layout.rows.find((r) => r.kind === "track" && r.track === track)!;

  it("places each band on its stream track from its start to its end, colored by its graph's status", () => {
    const set = flattenBands(doc, "w");
    expect(set.status).toEqual(["attributed", "attributed", "no_capture"]);
    const rects = replayRects(layout, g, set);
    expect(rects.map((r) => [r.x, r.w, r.y, r.h, r.i, r.status])).toEqual([
      [200, 200, row(3).y, row(3).h - 1, 0, "attributed"],
      [220, 230, row(4).y, row(4).h - 1, 1, "attributed"],
      [700, 100, row(3).y, row(3).h - 1, 2, "no_capture"],
    ]);
  });

  it("clips to the window, follows the worker's clock offset, and skips collapsed tracks and other workers", () => {
    const set = flattenBands(doc, "w");
    expect(replayRects(layout, { ...g, win: { start: 250, end: 650 } }, set).map((r) => [r.i, r.x, r.w])).toEqual([
      [0, 100, 125],
      [1, 100, 250],
      [2, 975, 125],
    ]);
    const shifted = replayRects(layout, { ...g, offsets: new Map([["w", 50]]) }, set);
    expect(shifted[0]!.x).toBe(250);
    expect(replayRects(layout, g, { ...set, worker: "other" })).toEqual([]);
    const collapsed = buildLayout([{ worker: "w", meta, counters: [] }], new Set([groupKey("w", "GPU 0")]));
    expect(replayRects(collapsed, g, set)).toEqual([]);
  });

  it("finds the band under a point and says its graph, replay, kernels, busy time and status", () => {
    const set = flattenBands(doc, "w");
    const rects = replayRects(layout, g, set);
    const hit = replayAt(rects, 250, row(4).y + 2)!;
    expect(hit.i).toBe(1);
    expect(replayAt(rects, 500, row(3).y + 2)).toBeNull();
    expect(replayText(set, hit.i)).toEqual(["CUDA graph 0 · replay 0", "4 kernels · busy 230.000 µs", "kernels attributed to the operators that captured them"]);
    expect(replayText(set, 2)[2]).toContain("captured before the profile");
  });
});
