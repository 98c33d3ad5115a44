// The critical path over the Trace view: each segment of the path on this file's rank as a
// band on its track (kernel and communication: the stream; cpu: the thread; waiting: the track of
// the work that waited), colored by category as the Distributed tab's critical-path chart.
import type { CriticalPathOverlay } from "../../api/types";
import { PATH_CATEGORIES } from "../distributed/criticalPathCharts";
import { timeToX, type Geometry, type Layout } from "./math";

/** The overlay's segments flattened over the steps, for one worker's tracks (µs, its own clock). */
export interface PathSegments {
  worker: string;
  start: number[];
  dur: number[];
  category: string[];
  track: number[];
}

export interface PathRect {
  x: number;
  y: number;
  w: number;
  h: number;
  category: string;
}

const COLOR: Record<string, string> = Object.fromEntries(PATH_CATEGORIES.map((c) => [c.key, c.color]));

export function flattenPath(doc: CriticalPathOverlay, worker: string): PathSegments {
  const out: PathSegments = { worker, start: [], dur: [], category: [], track: [] };
  for (const st of doc.steps) {
    out.start.push(...st.segments.start_us);
    out.dur.push(...st.segments.dur_us);
    out.category.push(...st.segments.category);
    out.track.push(...st.segments.track);
  }
  return out;
}

/** Places spans of one worker's tracks on screen: ``(track, start µs, end µs on its own clock)`` → the
 * rectangle (CSS px) clipped to the window, or null outside it or on a collapsed track. */
export function spanPlacer(layout: Layout, g: Geometry, worker: string) {
  const rowOf = new Map<number, { y: number; h: number }>();
  for (const r of layout.rows) if (r.kind === "track" && r.worker === worker) rowOf.set(r.track, { y: g.y0 + r.y, h: r.h });
  const off = g.offsets.get(worker) ?? 0;
  return (track: number, start: number, end: number): { x: number; y: number; w: number; h: number } | null => {
    const row = rowOf.get(track);
    const st = start + off;
    const en = end + off;
    if (!row || en < g.win.start || st > g.win.end) return null;
    const x1 = Math.max(g.x0, timeToX(st, g.win, g.x0, g.width));
    const x2 = Math.min(g.x0 + g.width, timeToX(en, g.win, g.x0, g.width));
    return { x: x1, y: row.y, w: Math.max(x2 - x1, 1), h: row.h - 1 };
  };
}

/** The on-screen rectangles (CSS px) of the segments in the window, on expanded tracks. */
export function pathRects(layout: Layout, g: Geometry, path: PathSegments): PathRect[] {
  const place = spanPlacer(layout, g, path.worker);
  const rects: PathRect[] = [];
  for (let i = 0; i < path.start.length; i++) {
    const r = place(path.track[i]!, path.start[i]!, path.start[i]! + path.dur[i]!);
    if (r) rects.push({ ...r, category: path.category[i]! });
  }
  return rects;
}

/** Draws the bands: a translucent fill and a solid outline per segment (over the slices). */
export function drawPath(ctx: CanvasRenderingContext2D, rects: PathRect[]): void {
  ctx.save();
  ctx.lineWidth = 2;
  for (const r of rects) {
    const color = COLOR[r.category] ?? "#e15759";
    ctx.globalAlpha = r.category === "waiting" ? 0.35 : 0.25;
    ctx.fillStyle = color;
    ctx.fillRect(r.x, r.y, r.w, r.h);
    ctx.globalAlpha = 1;
    ctx.strokeStyle = color;
    ctx.strokeRect(r.x + 1, r.y + 1, Math.max(r.w - 2, 1), Math.max(r.h - 2, 1));
  }
  ctx.restore();
}
