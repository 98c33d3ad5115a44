// CUDA graph replays over the Trace view: each replay as a band on every stream track it ran on (from
// the first start to the last end of its work there), from the server's `graph_replays` route. The
// band's words (graph, replay, kernels, busy µs, attribution status) come from the server as they are.
import type { GraphReplayBands, GraphStatus } from "../../api/types";
import { formatNumber } from "../../util/format";
import { formatTimeUs, type Geometry, type Layout } from "./math";
import { spanPlacer } from "./pathOverlay";

/** One worker's bands (µs, its own clock) with each band's graph status. */
export interface ReplayBandSet {
  worker: string;
  start: number[];
  end: number[];
  track: number[];
  replay: number[];
  graph: number[];
  kernels: number[];
  busy: number[];
  status: GraphStatus[];
}

export interface ReplayRect {
  x: number;
  y: number;
  w: number;
  h: number;
  /** The band's index in its set. */
  i: number;
  worker: string;
  status: GraphStatus;
}

const COLOR: Record<GraphStatus, string> = { attributed: "#59a14f", ambiguous: "#f28e2b", partial: "#f28e2b", no_capture: "#9c755f", other_trace: "#76b7b2" };

export const STATUS_TEXT: Record<GraphStatus, string> = {
  attributed: "kernels attributed to the operators that captured them",
  ambiguous: "capture ambiguous (several captures of this size): not attributed",
  partial: "no complete capture of this size in the profile: not attributed",
  no_capture: "captured before the profile: not attributed",
  other_trace: "kernels attributed from the capture in another trace of this run",
};

export function flattenBands(doc: GraphReplayBands, worker: string): ReplayBandSet {
  const status = new Map(doc.graphs.map((g) => [g.graph, g.status]));
  const b = doc.bands;
  return {
    worker,
    start: b.start_us,
    end: b.end_us,
    track: b.track,
    replay: b.replay,
    graph: b.graph,
    kernels: b.kernels,
    busy: b.busy_us,
    status: b.graph.map((g) => status.get(g) ?? "no_capture"),
  };
}

/** The on-screen rectangles (CSS px) of the bands in the window, on expanded tracks. */
export function replayRects(layout: Layout, g: Geometry, set: ReplayBandSet): ReplayRect[] {
  const place = spanPlacer(layout, g, set.worker);
  const rects: ReplayRect[] = [];
  for (let i = 0; i < set.start.length; i++) {
    const r = place(set.track[i]!, set.start[i]!, set.end[i]!);
    if (r) rects.push({ ...r, i, worker: set.worker, status: set.status[i]! });
  }
  return rects;
}

/** The band under a point (the last drawn, i.e. the top one), or null. */
export function replayAt(rects: ReplayRect[], x: number, y: number): ReplayRect | null {
  for (let k = rects.length - 1; k >= 0; k--) {
    const r = rects[k]!;
    if (x >= r.x && x <= r.x + r.w && y >= r.y && y <= r.y + r.h) return r;
  }
  return null;
}

/** What a band says: its graph and replay, the replay's kernels and busy time, the graph's status. */
export function replayText(set: ReplayBandSet, i: number): string[] {
  return [
    `CUDA graph ${set.graph[i]} · replay ${formatNumber(set.replay[i]!)}`,
    `${formatNumber(set.kernels[i]!)} kernels · busy ${formatTimeUs(set.busy[i]!)}`,
    STATUS_TEXT[set.status[i]!],
  ];
}

/** Draws the bands: a light fill and a bar along the top edge, colored by attribution status. */
export function drawReplays(ctx: CanvasRenderingContext2D, rects: ReplayRect[]): void {
  ctx.save();
  for (const r of rects) {
    const color = COLOR[r.status];
    ctx.globalAlpha = 0.15;
    ctx.fillStyle = color;
    ctx.fillRect(r.x, r.y, r.w, r.h);
    ctx.globalAlpha = 0.9;
    ctx.fillRect(r.x, r.y, r.w, Math.min(3, r.h));
  }
  ctx.restore();
}
