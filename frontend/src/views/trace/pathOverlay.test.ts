import { describe, expect, it } from "vitest";
import type { CriticalPathOverlay } from "../../api/types";
import { readyMeta } from "../../testing/timeline";
import { buildLayout, groupKey, type Geometry } from "./math";
import { flattenPath, pathRects } from "./pathOverlay";

const meta = readyMeta(
  [
    { id: 0, kind: "thread", process: "python (1)", name: "thread 1", max_depth: 1, events: 4 },
    { id: 3, kind: "stream", process: "GPU 0", name: "stream 7", max_depth: 0, events: 2 },
  ],
  [{ step: "1", start_us: 0, end_us: 1000 }],
  0,
);
const seg = (start_us: number[], dur_us: number[], category: ("kernel" | "cpu" | "waiting")[], track: number[]) => ({
  start_us,
  dur_us,
  category,
  track,
  name: start_us.map(() => "x"),
  row: start_us.map(() => 1),
});
const doc: CriticalPathOverlay = {
  state: "ready",
  rank: 0,
  worker: "w",
  cross_rank: false,
  messages: [],
  steps: [
    { step: "1", length_us: 1000, truncated: false, on_rank_us: 600, total: 2, shown: 2, segments: seg([0, 200], [200, 300], ["cpu", "kernel"], [0, 3]) },
    { step: "2", length_us: 500, truncated: false, on_rank_us: 100, total: 1, shown: 1, segments: seg([900], [100], ["waiting"], [3]) },
  ],
};

describe("critical-path overlay", () => {
  const layout = buildLayout([{ worker: "w", meta, counters: [] }], new Set());
  const g: Geometry = { win: { start: 0, end: 1000 }, x0: 100, width: 1000, y0: 0, offsets: new Map() };
  const rowY = (track: number) => layout.rows.find((r) => r.kind === "track" && r.track === track)!.y;

  it("flattens every step's segments and places each on its track at its time", () => {
    const path = flattenPath(doc, "w");
    expect(path.start).toEqual([0, 200, 900]);
    const rects = pathRects(layout, g, path);
    expect(rects.map((r) => [r.x, r.w, r.y, r.category])).toEqual([
      [100, 200, rowY(0), "cpu"],
      [300, 300, rowY(3), "kernel"],
      [1000, 100, rowY(3), "waiting"],
    ]);
  });

  it("leaves out segments outside the window, of other workers, and on collapsed tracks", () => {
    const path = flattenPath(doc, "w");
    expect(pathRects(layout, { ...g, win: { start: 450, end: 850 } }, path).map((r) => r.category)).toEqual(["kernel"]);
    expect(pathRects(layout, g, { ...path, worker: "other" })).toEqual([]);
    const collapsed = buildLayout([{ worker: "w", meta, counters: [] }], new Set([groupKey("w", "GPU 0")]));
    expect(pathRects(collapsed, g, path).map((r) => r.category)).toEqual(["cpu"]);
  });
});
