// Pure timeline math: time axis ticks and units, zoom/pan, lane layout, hit-testing, wall-clock
// alignment and range statistics. No DOM here, so all of it is unit-tested.
import { SERIES_PALETTE } from "../../charts/palette";
import type { TimelineMeta, TimelineResponse } from "../../api/types";
import { toFixedHalfAway } from "../../util/format";

/** A visible time range in display µs (a worker's relative µs plus its clock offset). */
export interface TimeWindow {
  start: number;
  end: number;
}

/** Smallest window: 10 ns. */
export const MIN_SPAN_US = 0.01;

// ---------------------------------------------------------------------------------------------
// Units and ticks

export type TimeUnit = "ns" | "µs" | "ms" | "s";

const UNIT_US: Record<TimeUnit, number> = { ns: 0.001, "µs": 1, ms: 1000, s: 1e6 };

/** The unit a span of `us` reads best in. */
export function unitFor(us: number): TimeUnit {
  const a = Math.abs(us);
  if (a < 1) return "ns";
  if (a < 1000) return "µs";
  if (a < 1e6) return "ms";
  return "s";
}

/** A time or duration with an adaptive unit and 3 decimals: 2 -> "2.000 µs", 1234.5 -> "1.234 ms". */
export function formatTimeUs(us: number, digits = 3): string {
  if (!Number.isFinite(us)) return "–";
  const unit = unitFor(us);
  if (unit === "ns") return `${toFixedHalfAway(us * 1000, digits > 1 ? 1 : 0)} ns`;
  return `${toFixedHalfAway(us / UNIT_US[unit], digits)} ${unit}`;
}

export interface Tick {
  t: number;
  label: string;
}

export interface TickSet {
  step: number;
  unit: TimeUnit;
  ticks: Tick[];
}

/** A 1-2-5 step (µs) that leaves at least `minPx` between ticks. */
export function tickStep(spanUs: number, widthPx: number, minPx = 90): number {
  const raw = (spanUs * minPx) / Math.max(1, widthPx);
  const pow = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) {
    if (m * pow >= raw * (1 - 1e-9)) return m * pow;
  }
  return 10 * pow;
}

/** Ticks for the axis: positions every `step` µs, labeled in the step's unit with just enough decimals. */
export function chooseTicks(win: TimeWindow, widthPx: number, minPx = 90): TickSet {
  const span = win.end - win.start;
  const step = tickStep(span, widthPx, minPx);
  const unit = unitFor(step);
  const inUnit = step / UNIT_US[unit];
  const decimals = Math.max(0, Math.min(6, -Math.floor(Math.log10(inUnit) + 1e-9)));
  const ticks: Tick[] = [];
  const first = Math.ceil(win.start / step - 1e-9);
  for (let i = first; i * step <= win.end + step * 1e-9 && ticks.length < 1000; i++) {
    const t = i * step;
    const v = t / UNIT_US[unit];
    ticks.push({ t, label: `${(Math.abs(v) < 1e-12 ? 0 : v).toFixed(decimals)} ${unit}` });
  }
  return { step, unit, ticks };
}

// ---------------------------------------------------------------------------------------------
// Zoom and pan

export interface Bounds {
  start: number;
  end: number;
}

/** Keeps the window inside the trace (with a 5 % margin) and at least MIN_SPAN_US wide. */
export function clampWindow(win: TimeWindow, bounds: Bounds): TimeWindow {
  const full = Math.max(MIN_SPAN_US, bounds.end - bounds.start);
  const lo = bounds.start - full * 0.05;
  const hi = bounds.end + full * 0.05;
  let span = Math.min(Math.max(win.end - win.start, MIN_SPAN_US), hi - lo);
  let start = win.start;
  if (!Number.isFinite(start) || !Number.isFinite(span)) return { start: bounds.start, end: bounds.end };
  if (start < lo) start = lo;
  if (start + span > hi) start = hi - span;
  span = Math.max(span, MIN_SPAN_US);
  return { start, end: start + span };
}

/** Scales the window by `factor` (< 1 zooms in) keeping time `anchor` at the same screen position. */
export function zoomAround(win: TimeWindow, factor: number, anchor: number, bounds?: Bounds): TimeWindow {
  const span = win.end - win.start;
  let f = factor;
  if (span * f < MIN_SPAN_US) f = MIN_SPAN_US / span;
  const out = { start: anchor - (anchor - win.start) * f, end: anchor + (win.end - anchor) * f };
  return bounds ? clampWindow(out, bounds) : out;
}

/** Moves the window by `fraction` of its width (negative: left). */
export function panBy(win: TimeWindow, fraction: number, bounds?: Bounds): TimeWindow {
  const d = (win.end - win.start) * fraction;
  const out = { start: win.start + d, end: win.end + d };
  return bounds ? clampWindow(out, bounds) : out;
}

/** Moves the window by a pixel distance (drag-to-pan: dragging right moves the view to earlier times). */
export function panByPixels(win: TimeWindow, dxPx: number, widthPx: number, bounds?: Bounds): TimeWindow {
  return panBy(win, -dxPx / Math.max(1, widthPx), bounds);
}

/** The zoom factor of one wheel event; positive deltaY zooms out. Pinch (ctrl) is more sensitive. */
export function wheelFactor(deltaY: number, deltaMode: number, ctrlKey: boolean): number {
  const px = deltaMode === 1 ? deltaY * 16 : deltaMode === 2 ? deltaY * 400 : deltaY;
  const k = ctrlKey ? 0.01 : 0.002;
  return Math.exp(Math.max(-0.5, Math.min(0.5, px * k)));
}

export const KEY_ZOOM = 0.8;
export const KEY_PAN = 0.15;

/** W/S zoom in/out around `anchor` (the cursor, else the center), A/D pan; null for other keys. */
export function keyAction(key: string, win: TimeWindow, anchor?: number, bounds?: Bounds): TimeWindow | null {
  const a = anchor ?? (win.start + win.end) / 2;
  switch (key.toLowerCase()) {
    case "w":
      return zoomAround(win, KEY_ZOOM, a, bounds);
    case "s":
      return zoomAround(win, 1 / KEY_ZOOM, a, bounds);
    case "a":
      return panBy(win, -KEY_PAN, bounds);
    case "d":
      return panBy(win, KEY_PAN, bounds);
    default:
      return null;
  }
}

/** A window about 3× an event's duration, centered on it (at least 1 µs wide). */
export function focusWindow(start: number, dur: number): TimeWindow {
  const span = Math.max(3 * dur, 1);
  const mid = start + dur / 2;
  return { start: mid - span / 2, end: mid + span / 2 };
}

export function timeToX(t: number, win: TimeWindow, x0: number, width: number): number {
  return x0 + ((t - win.start) / (win.end - win.start)) * width;
}

export function xToTime(x: number, win: TimeWindow, x0: number, width: number): number {
  return win.start + ((x - x0) / Math.max(1, width)) * (win.end - win.start);
}

// ---------------------------------------------------------------------------------------------
// Wall-clock alignment

/** Per worker, what to add to its relative times: wall_origin_us - the smallest wall_origin_us. */
export function alignOffsets(
  metas: { worker: string; wall_origin_us: number; origin_us?: number; clock?: string }[],
): Map<string, number> {
  // Shared origins compare only on one clock (all Composer clock sync, or all baseTimeNanoseconds);
  // workers on different clocks fall back to the raw timestamps of their first events.
  const clocks = new Set(metas.map((m) => m.clock ?? "base_time"));
  const at = (m: (typeof metas)[number]) => (clocks.size > 1 ? (m.origin_us ?? m.wall_origin_us) : m.wall_origin_us);
  const min = Math.min(...metas.map(at));
  return new Map(metas.map((m) => [m.worker, at(m) - min]));
}

// ---------------------------------------------------------------------------------------------
// Layout

export const AXIS_H = 26;
export const STEP_H = 16;
export const GROUP_H = 20;
export const LANE_H = 18;
export const COUNTER_H = 34;
export const LABEL_W = 190;

export interface WorkerLayoutInput {
  worker: string;
  meta: TimelineMeta;
  counters: { name: string; unit: string }[];
}

export type LayoutRow =
  | { kind: "steps"; worker: string; y: number; h: number; label: string }
  | { kind: "group"; key: string; worker: string; y: number; h: number; label: string; collapsed: boolean; tracks: number }
  | { kind: "counter"; worker: string; name: string; unit: string; y: number; h: number; label: string }
  | { kind: "track"; worker: string; track: number; lanes: number; y: number; h: number; label: string };

export interface Layout {
  rows: LayoutRow[];
  height: number;
}

export function groupKey(worker: string, process: string): string {
  return `${worker}\u0000${process}`;
}

/**
 * Rows top to bottom (y from the top of the lanes area): the first worker's step band, then per worker a
 * "Counters" group and one group per process, each a header and, unless collapsed, its rows; a track
 * has one lane per depth. With several workers the group labels name the worker.
 */
export function buildLayout(workers: WorkerLayoutInput[], collapsed: ReadonlySet<string>): Layout {
  const rows: LayoutRow[] = [];
  let y = 0;
  const multi = workers.length > 1;
  const first = workers[0];
  if (first && first.meta.steps.length > 0) {
    rows.push({ kind: "steps", worker: first.worker, y, h: STEP_H, label: "Steps" });
    y += STEP_H;
  }
  for (const w of workers) {
    const prefix = multi ? `${w.worker} · ` : "";
    if (w.counters.length > 0) {
      const key = groupKey(w.worker, "\u0001counters");
      const isCollapsed = collapsed.has(key);
      rows.push({ kind: "group", key, worker: w.worker, y, h: GROUP_H, label: `${prefix}Counters`, collapsed: isCollapsed, tracks: w.counters.length });
      y += GROUP_H;
      if (!isCollapsed)
        for (const c of w.counters) {
          rows.push({ kind: "counter", worker: w.worker, name: c.name, unit: c.unit, y, h: COUNTER_H, label: c.name });
          y += COUNTER_H;
        }
    }
    const order: string[] = [];
    const byProcess = new Map<string, TimelineMeta["tracks"]>();
    for (const t of w.meta.tracks) {
      let list = byProcess.get(t.process);
      if (!list) {
        list = [];
        byProcess.set(t.process, list);
        order.push(t.process);
      }
      list.push(t);
    }
    for (const process of order) {
      const tracks = byProcess.get(process) ?? [];
      const key = groupKey(w.worker, process);
      const isCollapsed = collapsed.has(key);
      rows.push({ kind: "group", key, worker: w.worker, y, h: GROUP_H, label: `${prefix}${process}`, collapsed: isCollapsed, tracks: tracks.length });
      y += GROUP_H;
      if (isCollapsed) continue;
      for (const t of tracks) {
        const lanes = Math.max(1, t.max_depth + 1);
        rows.push({ kind: "track", worker: w.worker, track: t.id, lanes, y, h: lanes * LANE_H + 2, label: t.name });
        y += lanes * LANE_H + 2;
      }
    }
  }
  return { rows, height: y };
}

/** The layout row under a y (lanes-area coordinates), by binary search. */
export function rowAt(layout: Layout, y: number): LayoutRow | null {
  const rows = layout.rows;
  let lo = 0;
  let hi = rows.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const r = rows[mid]!;
    if (y < r.y) hi = mid - 1;
    else if (y >= r.y + r.h) lo = mid + 1;
    else return r;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Hit-testing

export interface Hit {
  worker: string;
  track: number;
  index: number;
  row: number;
  name: string;
  start: number;
  dur: number;
  count: number;
  depth: number;
}

export function itemName(resp: TimelineResponse, id: string | number): string {
  return resp.names[String(id)] ?? String(id);
}

export interface Geometry {
  win: TimeWindow;
  /** x of the plot's left edge and its width, CSS px. */
  x0: number;
  width: number;
  /** y of the lanes area's top inside the canvas, CSS px. */
  y0: number;
  offsets: ReadonlyMap<string, number>;
}

/** The item under (x, y) (canvas CSS px): same lane, containing the time within a 2 px tolerance. */
export function hitTest(layout: Layout, data: ReadonlyMap<string, TimelineResponse>, g: Geometry, x: number, y: number): Hit | null {
  if (x < g.x0 || x > g.x0 + g.width) return null;
  const r = rowAt(layout, y - g.y0);
  if (!r || r.kind !== "track") return null;
  const lane = Math.floor((y - g.y0 - r.y - 1) / LANE_H);
  if (lane < 0 || lane >= r.lanes) return null;
  const resp = data.get(r.worker);
  const td = resp?.tracks.find((t) => t.id === r.track);
  if (!resp || !td) return null;
  const off = g.offsets.get(r.worker) ?? 0;
  const t = xToTime(x, g.win, g.x0, g.width) - off;
  const tol = (2 * (g.win.end - g.win.start)) / Math.max(1, g.width);
  const it = td.items;
  let best = -1;
  let bestDist = Infinity;
  for (let i = 0; i < it.start.length; i++) {
    if (it.depth[i] !== lane) continue;
    const s = it.start[i]!;
    const e = s + it.dur[i]!;
    const dist = t < s ? s - t : t > e ? t - e : 0;
    if (dist <= tol && (dist < bestDist || (dist === bestDist && best >= 0 && it.dur[i]! < it.dur[best]!))) {
      best = i;
      bestDist = dist;
    }
  }
  if (best < 0) return null;
  return {
    worker: r.worker,
    track: r.track,
    index: best,
    row: it.row[best]!,
    name: itemName(resp, it.name[best]!),
    start: it.start[best]!,
    dur: it.dur[best]!,
    count: it.count[best]!,
    depth: lane,
  };
}

/** Where an event (by row) is drawn: its box in canvas CSS px, or null when not in the data. */
export function rectOfRow(
  layout: Layout,
  data: ReadonlyMap<string, TimelineResponse>,
  g: Geometry,
  worker: string,
  row: number,
): { x: number; y: number; w: number; h: number; track: number; depth: number } | null {
  const resp = data.get(worker);
  if (!resp) return null;
  for (const td of resp.tracks) {
    const i = td.items.row.indexOf(row);
    if (i < 0) continue;
    const lr = layout.rows.find((r) => r.kind === "track" && r.worker === worker && r.track === td.id);
    if (!lr) return null;
    const off = g.offsets.get(worker) ?? 0;
    const x1 = timeToX(td.items.start[i]! + off, g.win, g.x0, g.width);
    const x2 = timeToX(td.items.start[i]! + td.items.dur[i]! + off, g.win, g.x0, g.width);
    const depth = td.items.depth[i]!;
    return { x: x1, y: g.y0 + lr.y + 1 + depth * LANE_H, w: Math.max(1, x2 - x1), h: LANE_H - 1, track: td.id, depth };
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Colors

const PALETTE = SERIES_PALETTE;

/** FNV-1a of the name: the same name always gets the same color. */
export function nameHash(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export function colorFor(name: string): string {
  return PALETTE[nameHash(name) % PALETTE.length]!;
}

/** Black or white, whichever reads better on a #rrggbb background. */
export function textColorOn(hex: string): string {
  const n = parseInt(hex.slice(1), 16);
  const r = (n >> 16) & 255;
  const g = (n >> 8) & 255;
  const b = n & 255;
  return 0.299 * r + 0.587 * g + 0.114 * b > 150 ? "#111" : "#fff";
}
