// Canvas painting of the timeline: the time axis (its own canvas) and the lanes (track labels, slices,
// merged items, counters, the step band, selection, search matches, flow arrows, box selection).
// Everything here is drawing only; positions come from math.ts.
import { formatBytes } from "../../util/format";
import { chooseTicks, colorFor, formatTimeUs, itemName, LANE_H, LABEL_W, rectOfRow, textColorOn, timeToX, type Geometry, type Layout } from "./math";
import type { TimelineMeta, TimelineResponse } from "../../api/types";
import { drawPath, type PathRect } from "./pathOverlay";
import { drawReplays, type ReplayRect } from "./replayBands";

export interface Palette {
  bg: string;
  surface: string;
  surface2: string;
  border: string;
  text: string;
  muted: string;
  accent: string;
}

export function readPalette(el: Element): Palette {
  const cs = getComputedStyle(el);
  const v = (name: string, fallback: string) => cs.getPropertyValue(name).trim() || fallback;
  return {
    bg: v("--bg", "#f5f6f8"),
    surface: v("--surface", "#ffffff"),
    surface2: v("--surface-2", "#f0f2f5"),
    border: v("--border", "#dfe2e7"),
    text: v("--text", "#212121"),
    muted: v("--muted", "#5f6368"),
    accent: v("--accent", "#f57c00"),
  };
}

export interface FlowArrow {
  fromWorker: string;
  fromTrack: number;
  fromRow: number;
  fromUs: number;
  toWorker: string;
  toTrack: number;
  toRow: number;
  toUs: number;
}

export interface DrawState {
  layout: Layout;
  data: ReadonlyMap<string, TimelineResponse>;
  metas: ReadonlyMap<string, TimelineMeta>;
  g: Geometry;
  width: number;
  height: number;
  palette: Palette;
  selected: { worker: string; row: number } | null;
  matches: ReadonlySet<string>;
  matchTimes: number[];
  flows: FlowArrow[];
  box: { t0: number; t1: number } | null;
  /** The critical-path overlay's bands (pathOverlay.ts), when it is on. */
  path?: PathRect[];
  /** The CUDA graph replay bands (replayBands.ts), when they are on. */
  replays?: ReplayRect[];
}

const FONT = "11px system-ui, -apple-system, 'Segoe UI', Roboto, Arial, sans-serif";
const BOLD = "600 11px system-ui, -apple-system, 'Segoe UI', Roboto, Arial, sans-serif";

let hatchCache: { ctx: CanvasRenderingContext2D; pattern: CanvasPattern | null } | null = null;

function hatch(ctx: CanvasRenderingContext2D): CanvasPattern | null {
  if (hatchCache?.ctx === ctx) return hatchCache.pattern;
  let pattern: CanvasPattern | null = null;
  try {
    const c = document.createElement("canvas");
    c.width = 6;
    c.height = 6;
    const p = c.getContext("2d");
    if (p) {
      p.strokeStyle = "rgba(255,255,255,0.55)";
      p.lineWidth = 1.5;
      p.beginPath();
      p.moveTo(0, 6);
      p.lineTo(6, 0);
      p.stroke();
      pattern = ctx.createPattern(c, "repeat");
    }
  } catch {
    pattern = null;
  }
  hatchCache = { ctx, pattern };
  return pattern;
}

/** Prepares a canvas for CSS-px drawing at the device pixel ratio. */
export function sizeCanvas(canvas: HTMLCanvasElement, width: number, height: number, dpr: number): CanvasRenderingContext2D | null {
  const w = Math.max(1, Math.round(width * dpr));
  const h = Math.max(1, Math.round(height * dpr));
  if (canvas.width !== w) canvas.width = w;
  if (canvas.height !== h) canvas.height = h;
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  const ctx = canvas.getContext("2d");
  if (!ctx) return null;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  return ctx;
}

function truncate(ctx: CanvasRenderingContext2D, text: string, maxW: number, charW: number): string | null {
  if (maxW < charW * 2) return null;
  const maxChars = Math.floor(maxW / charW);
  if (text.length <= maxChars) return text;
  if (maxChars < 3) return null;
  let s = `${text.slice(0, maxChars - 1)}…`;
  while (s.length > 2 && ctx.measureText(s).width > maxW) s = `${s.slice(0, -2)}…`;
  return s;
}

/** The axis canvas: ticks and labels, search-match marks, the box selection's duration. */
export function drawAxis(ctx: CanvasRenderingContext2D, s: DrawState, axisH: number): void {
  const { g, palette: p } = s;
  ctx.clearRect(0, 0, s.width, axisH);
  ctx.fillStyle = p.surface;
  ctx.fillRect(0, 0, s.width, axisH);
  ctx.strokeStyle = p.border;
  ctx.beginPath();
  ctx.moveTo(0, axisH - 0.5);
  ctx.lineTo(s.width, axisH - 0.5);
  ctx.stroke();
  ctx.font = FONT;
  ctx.textBaseline = "middle";
  ctx.fillStyle = p.muted;
  ctx.fillText(`Window ${formatTimeUs(g.win.end - g.win.start)}`, 8, axisH / 2);
  const ticks = chooseTicks(g.win, g.width);
  ctx.save();
  ctx.beginPath();
  ctx.rect(g.x0, 0, g.width, axisH);
  ctx.clip();
  ctx.strokeStyle = p.muted;
  ctx.fillStyle = p.text;
  for (const t of ticks.ticks) {
    const x = Math.round(timeToX(t.t, g.win, g.x0, g.width)) + 0.5;
    ctx.beginPath();
    ctx.moveTo(x, axisH - 7);
    ctx.lineTo(x, axisH);
    ctx.stroke();
    // a label that would run past the right edge (and be cut) goes left of its tick
    const w = ctx.measureText(t.label).width;
    ctx.fillText(t.label, x + 3 + w > g.x0 + g.width ? x - 3 - w : x + 3, axisH / 2 - 2);
  }
  ctx.fillStyle = "#fbc02d";
  for (const t of s.matchTimes) {
    const x = timeToX(t, g.win, g.x0, g.width);
    if (x >= g.x0 && x <= g.x0 + g.width) ctx.fillRect(x - 1, axisH - 5, 2, 5);
  }
  if (s.box) {
    const x1 = timeToX(Math.min(s.box.t0, s.box.t1), g.win, g.x0, g.width);
    const x2 = timeToX(Math.max(s.box.t0, s.box.t1), g.win, g.x0, g.width);
    ctx.fillStyle = "rgba(26,115,232,0.18)";
    ctx.fillRect(x1, 0, x2 - x1, axisH);
    const label = formatTimeUs(Math.abs(s.box.t1 - s.box.t0));
    ctx.font = BOLD;
    const w = ctx.measureText(label).width + 8;
    const cx = Math.max(g.x0, Math.min(g.x0 + g.width - w, (x1 + x2) / 2 - w / 2));
    ctx.fillStyle = "#1a73e8";
    ctx.fillRect(cx, 3, w, axisH - 8);
    ctx.fillStyle = "#fff";
    ctx.fillText(label, cx + 4, axisH / 2 - 1);
  }
  ctx.restore();
}

/** The lanes canvas. Returns the number of slices drawn. */
export function drawLanes(ctx: CanvasRenderingContext2D, s: DrawState): number {
  const { g, layout, palette: p } = s;
  ctx.clearRect(0, 0, s.width, s.height);
  ctx.fillStyle = p.surface;
  ctx.fillRect(0, 0, s.width, s.height);
  ctx.font = FONT;
  ctx.textBaseline = "middle";
  const charW = ctx.measureText("abcdefghijklmnopqrstuvwxyz").width / 26 || 6;
  const xEnd = g.x0 + g.width;
  const span = g.win.end - g.win.start;
  const pattern = hatch(ctx);
  let drawn = 0;

  // grid lines under everything
  const ticks = chooseTicks(g.win, g.width);
  ctx.strokeStyle = p.border;
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (const t of ticks.ticks) {
    const x = Math.round(timeToX(t.t, g.win, g.x0, g.width)) + 0.5;
    ctx.moveTo(x, 0);
    ctx.lineTo(x, s.height);
  }
  ctx.stroke();

  for (const r of layout.rows) {
    const y = g.y0 + r.y;
    if (r.kind === "group") {
      ctx.fillStyle = p.surface2;
      ctx.fillRect(0, y, s.width, r.h);
      ctx.strokeStyle = p.border;
      ctx.beginPath();
      ctx.moveTo(0, y + r.h - 0.5);
      ctx.lineTo(s.width, y + r.h - 0.5);
      ctx.stroke();
      ctx.fillStyle = p.text;
      ctx.font = BOLD;
      const label = `${r.collapsed ? "▸" : "▾"} ${r.label}${r.collapsed ? ` (${r.tracks})` : ""}`;
      ctx.fillText(truncate(ctx, label, s.width - 12, charW * 1.05) ?? "", 6, y + r.h / 2);
      ctx.font = FONT;
      continue;
    }
    if (r.kind === "steps") {
      const meta = s.metas.get(r.worker);
      const off = g.offsets.get(r.worker) ?? 0;
      ctx.save();
      ctx.beginPath();
      ctx.rect(g.x0, y, g.width, r.h);
      ctx.clip();
      (meta?.steps ?? []).forEach((st, i) => {
        const x1 = Math.max(g.x0 - 1, timeToX(st.start_us + off, g.win, g.x0, g.width));
        const x2 = Math.min(xEnd + 1, timeToX(st.end_us + off, g.win, g.x0, g.width));
        if (x2 < g.x0 || x1 > xEnd) return;
        ctx.fillStyle = i % 2 === 0 ? "#90a4ae" : "#b0bec5";
        ctx.fillRect(x1, y + 1, Math.max(1, x2 - x1 - 1), r.h - 2);
        const t = truncate(ctx, `step ${st.step}`, x2 - x1 - 6, charW);
        if (t) {
          ctx.fillStyle = "#111";
          ctx.fillText(t, Math.max(x1, g.x0) + 3, y + r.h / 2);
        }
      });
      ctx.restore();
      ctx.fillStyle = p.muted;
      ctx.fillText(r.label, 8, y + r.h / 2);
      continue;
    }
    // labels column
    ctx.fillStyle = p.text;
    const labelY = r.kind === "track" ? y + Math.min(r.h, LANE_H) / 2 + 1 : y + 10;
    ctx.fillText(truncate(ctx, r.label, LABEL_W - 20, charW) ?? "", 14, labelY);
    ctx.strokeStyle = p.border;
    ctx.beginPath();
    ctx.moveTo(0, y + r.h - 0.5);
    ctx.lineTo(s.width, y + r.h - 0.5);
    ctx.stroke();
    const resp = s.data.get(r.worker);
    if (!resp) continue;
    const off = g.offsets.get(r.worker) ?? 0;
    if (r.kind === "counter") {
      ctx.fillStyle = p.muted;
      ctx.fillText(counterScale(resp, r.name, r.unit), 14, y + 24);
    }
    ctx.save();
    ctx.beginPath();
    ctx.rect(g.x0, y, g.width, r.h);
    ctx.clip();
    if (r.kind === "counter") {
      drawCounter(ctx, s, resp, r.name, r.unit, y, r.h, off);
      ctx.restore();
      continue;
    }
    const td = resp.tracks.find((t) => t.id === r.track);
    if (td) {
      const it = td.items;
      const n = it.start.length;
      for (let i = 0; i < n; i++) {
        const st = it.start[i]! + off;
        const en = st + it.dur[i]!;
        if (en < g.win.start || st > g.win.end) continue;
        const x1 = timeToX(st, g.win, g.x0, g.width);
        const x2 = timeToX(en, g.win, g.x0, g.width);
        const w = Math.max(x2 - x1, 1);
        const yy = y + 1 + it.depth[i]! * LANE_H;
        const name = itemName(resp, it.name[i]!);
        const color = colorFor(name);
        const merged = it.count[i]! > 1;
        ctx.globalAlpha = merged ? 0.55 : 1;
        ctx.fillStyle = color;
        ctx.fillRect(x1, yy, w, LANE_H - 1);
        if (merged && pattern && w > 3) {
          ctx.fillStyle = pattern;
          ctx.fillRect(x1, yy, w, LANE_H - 1);
        }
        ctx.globalAlpha = 1;
        if (s.matches.has(`${r.worker}:${it.row[i]}`)) {
          ctx.strokeStyle = "#fbc02d";
          ctx.lineWidth = 2;
          ctx.strokeRect(x1 + 1, yy + 1, Math.max(w - 2, 1), LANE_H - 3);
          ctx.lineWidth = 1;
        }
        if (w > 24) {
          const vx1 = Math.max(x1, g.x0);
          const vx2 = Math.min(x1 + w, xEnd);
          const t = truncate(ctx, merged ? `${name} (×${it.count[i]})` : name, vx2 - vx1 - 6, charW);
          if (t) {
            ctx.fillStyle = textColorOn(color);
            ctx.fillText(t, vx1 + 3, yy + LANE_H / 2);
          }
        }
        drawn++;
      }
    }
    ctx.restore();
  }

  // overlays over the slices, clipped to the plot: replay bands, then the critical path on top
  const overlays: [unknown[] | undefined, () => void][] = [
    [s.replays, () => drawReplays(ctx, s.replays!)],
    [s.path, () => drawPath(ctx, s.path!)],
  ];
  for (const [items, paint] of overlays) {
    if (!items || items.length === 0) continue;
    ctx.save();
    ctx.beginPath();
    ctx.rect(g.x0, 0, g.width, s.height);
    ctx.clip();
    paint();
    ctx.restore();
  }
  // selection outline and flow arrows on top
  if (s.selected) {
    const rect = rectOfRow(layout, s.data, g, s.selected.worker, s.selected.row);
    if (rect) {
      ctx.save();
      ctx.beginPath();
      ctx.rect(g.x0, 0, g.width, s.height);
      ctx.clip();
      ctx.strokeStyle = p.text;
      ctx.lineWidth = 2;
      ctx.strokeRect(rect.x - 1, rect.y - 1, rect.w + 2, rect.h + 2);
      ctx.restore();
    }
  }
  if (s.flows.length > 0) drawFlows(ctx, s);
  if (s.box) {
    const x1 = timeToX(Math.min(s.box.t0, s.box.t1), g.win, g.x0, g.width);
    const x2 = timeToX(Math.max(s.box.t0, s.box.t1), g.win, g.x0, g.width);
    ctx.fillStyle = "rgba(26,115,232,0.12)";
    ctx.fillRect(x1, 0, x2 - x1, s.height);
    ctx.strokeStyle = "#1a73e8";
    ctx.strokeRect(x1 + 0.5, 0.5, x2 - x1 - 1, s.height - 1);
  }
  // label column border
  ctx.strokeStyle = p.border;
  ctx.beginPath();
  ctx.moveTo(g.x0 - 0.5, 0);
  ctx.lineTo(g.x0 - 0.5, s.height);
  ctx.stroke();
  void span;
  return drawn;
}

function drawCounter(
  ctx: CanvasRenderingContext2D,
  s: DrawState,
  resp: TimelineResponse,
  name: string,
  unit: string,
  y: number,
  h: number,
  off: number,
): void {
  const c = resp.counters.find((k) => k.name === name);
  if (!c || c.values.length === 0) return;
  const { g } = s;
  const n = c.values.length;
  const bw = (resp.end_us - resp.start_us) / n;
  const isFraction = unit === "fraction";
  let max = 0;
  for (const v of c.values) if (v > max) max = v;
  const top = isFraction ? 1 : unit === "percent" ? Math.max(100, max) : max || 1;
  const color = isFraction ? (name.includes("SM") ? "#7e57c2" : "#2e7d32") : unit === "percent" ? "#ef6c00" : "#1e88e5";
  const base = y + h - 2;
  const scale = (h - 6) / top;
  ctx.beginPath();
  ctx.moveTo(timeToX(resp.start_us + off, g.win, g.x0, g.width), base);
  for (let i = 0; i < n; i++) {
    const v = Math.min(c.values[i]!, top);
    const xa = timeToX(resp.start_us + off + i * bw, g.win, g.x0, g.width);
    const xb = timeToX(resp.start_us + off + (i + 1) * bw, g.win, g.x0, g.width);
    const yy = base - v * scale;
    ctx.lineTo(xa, yy);
    ctx.lineTo(xb, yy);
  }
  ctx.lineTo(timeToX(resp.end_us + off, g.win, g.x0, g.width), base);
  ctx.closePath();
  ctx.globalAlpha = 0.35;
  ctx.fillStyle = color;
  ctx.fill();
  ctx.globalAlpha = 1;
  ctx.strokeStyle = color;
  ctx.stroke();
}

/** The counter's scale, shown under its name: "0–100 %" or "max 2.6 GiB" (of the current answer). */
function counterScale(resp: TimelineResponse, name: string, unit: string): string {
  const c = resp.counters.find((k) => k.name === name);
  if (unit === "fraction") return "0–100 %";
  let max = 0;
  for (const v of c?.values ?? []) if (v > max) max = v;
  if (unit === "percent") return max <= 100 ? "0–100 %" : `0–${max.toPrecision(3)} %`;
  return unit === "bytes" ? `max ${formatBytes(max)}` : `max ${max.toPrecision(3)}`;
}

function drawFlows(ctx: CanvasRenderingContext2D, s: DrawState): void {
  const { g } = s;
  const point = (worker: string, track: number, row: number, us: number): { x: number; y: number } | null => {
    const rect = rectOfRow(s.layout, s.data, g, worker, row);
    const off = g.offsets.get(worker) ?? 0;
    const x = timeToX(us + off, g.win, g.x0, g.width);
    if (rect) return { x, y: rect.y + rect.h / 2 };
    const lr = s.layout.rows.find((r) => r.kind === "track" && r.worker === worker && r.track === track);
    return lr ? { x, y: g.y0 + lr.y + LANE_H / 2 } : null;
  };
  ctx.save();
  ctx.beginPath();
  ctx.rect(g.x0, 0, g.width, s.height);
  ctx.clip();
  ctx.strokeStyle = "#d81b60";
  ctx.fillStyle = "#d81b60";
  ctx.lineWidth = 1.5;
  for (const f of s.flows) {
    const a = point(f.fromWorker, f.fromTrack, f.fromRow, f.fromUs);
    const b = point(f.toWorker, f.toTrack, f.toRow, f.toUs);
    if (!a || !b) continue;
    const my = (a.y + b.y) / 2;
    ctx.beginPath();
    ctx.moveTo(a.x, a.y);
    ctx.bezierCurveTo(a.x, my, b.x, my, b.x, b.y - (b.y > a.y ? 6 : -6));
    ctx.stroke();
    const dir = b.y > a.y ? 1 : -1;
    ctx.beginPath();
    ctx.moveTo(b.x, b.y - dir * 1);
    ctx.lineTo(b.x - 4, b.y - dir * 8);
    ctx.lineTo(b.x + 4, b.y - dir * 8);
    ctx.closePath();
    ctx.fill();
  }
  ctx.restore();
}
