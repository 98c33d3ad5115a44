// Pure helpers for the Distributed and Insights views: histogram bin labels, the exposed-time shares,
// straggler lookup. No React, no ECharts, so they are unit-tested directly.
import type { DistributedResponse } from "../../api/types";
import type { Histogram, ExposedParts } from "../../api/types";
import { formatNumber } from "../../util/format";
import { stackParts } from "./stackedBars";

/** An edge in µs as text without a unit: 0.5 -> "0.5", 5000 -> "5" (the caller picks ms). */
function edgeValue(us: number, unit: "µs" | "ms"): string {
  const v = unit === "ms" ? us / 1000 : us;
  return Number.isInteger(v) ? String(v) : formatNumber(v, v < 1 ? 2 : 1);
}

function unitOf(us: number): "µs" | "ms" {
  return us >= 1000 ? "ms" : "µs";
}

/** One bin's label: [1, 2) -> "1–2 µs", [500, 1000) -> "500 µs–1 ms", [10000, ∞) -> "≥10 ms". */
export function binLabel(lo: number, hi: number | null): string {
  const lu = unitOf(lo);
  if (hi === null) return `\u2265${edgeValue(lo, lu)} ${lu}`;
  const hu = unitOf(hi);
  if (lu === hu || lo === 0) return `${edgeValue(lo, hu)}\u2013${edgeValue(hi, hu)} ${hu}`;
  return `${edgeValue(lo, lu)} ${lu}\u2013${edgeValue(hi, hu)} ${hu}`;
}

/** Every bin of a histogram as { label, count }; edges has one more entry than counts. */
export function histogramBins(h: Histogram): { label: string; count: number }[] {
  const out: { label: string; count: number }[] = [];
  for (let i = 0; i < h.counts.length; i++) {
    const lo = h.edges_us[i];
    if (lo === null || lo === undefined) break;
    const hi = h.edges_us[i + 1];
    out.push({ label: binLabel(lo, hi === undefined ? null : hi), count: h.counts[i] ?? 0 });
  }
  return out;
}

export const EXPOSED_PARTS = stackParts([
  ["compute_us", "Computation", "#4e79a7"],
  ["exposed_comm_us", "Exposed communication", "#b07aa1"],
  ["exposed_memcpy_us", "Exposed memcpy/memset", "#f28e2b"],
  ["idle_us", "Idle", "#bab0ac"],
]);

export type ExposedKey = (typeof EXPOSED_PARTS)[number]["key"];

/**
 * The four exposed parts as percentages of their sum, rounded to one decimal by largest remainder so
 * they add up to exactly 100 (they add up to the window on the server). All zero: all 0.
 */
export function exposedPercents(parts: ExposedParts): { key: ExposedKey; label: string; color: string; us: number; pct: number }[] {
  const values = EXPOSED_PARTS.map((p) => Math.max(0, Number.isFinite(parts[p.key]) ? parts[p.key] : 0));
  const total = values.reduce((a, b) => a + b, 0);
  if (total <= 0) return EXPOSED_PARTS.map((p, i) => ({ ...p, us: values[i] ?? 0, pct: 0 }));
  const raw = values.map((v) => (v / total) * 1000); // tenths of a percent
  const floors = raw.map(Math.floor);
  let left = 1000 - floors.reduce((a, b) => a + b, 0);
  const order = raw.map((r, i) => [r - Math.floor(r), i] as const).sort((a, b) => b[0] - a[0] || a[1] - b[1]);
  for (const [, i] of order) {
    if (left <= 0) break;
    floors[i] = (floors[i] ?? 0) + 1;
    left -= 1;
  }
  return EXPOSED_PARTS.map((p, i) => ({ ...p, us: values[i] ?? 0, pct: (floors[i] ?? 0) / 10 }));
}

/** "0.65" -> "65.0 %"; null -> dash. */
export function shareText(share: number | null | undefined): string {
  if (share === null || share === undefined || !Number.isFinite(share)) return "\u2013";
  return `${(share * 100).toFixed(1)} %`;
}

/** Bandwidth in GB/s with two decimals; null -> dash. */
export function gbpsText(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return "\u2013";
  return `${formatNumber(v, 2)} GB/s`;
}

/**
 * Why there is no distributed view, worded from the server's `reason_code` (a file that failed is not
 * a rank, so "N of M files failed" rather than "fewer than two ranks have this span"). Without a code
 * (an older server) the server's own `reason` is shown.
 */
export function noViewReason(
  d: Pick<DistributedResponse, "run" | "span" | "spans" | "files" | "ranks_loaded" | "reason" | "reason_code">,
): string {
  const head = `No distributed view for run ${d.run} at span ${d.span}`;
  let why: string;
  if (d.reason_code === "no_file") why = "no file of this run has this span";
  else if (d.reason_code === "one_file") why = "only one file (one rank) has this span";
  else if (d.reason_code === "ranks_failed" && d.files !== undefined && d.ranks_loaded !== undefined) {
    const failed = d.files - d.ranks_loaded;
    why = `${failed} of ${d.files} files of span ${d.span} failed to load, leaving ${d.ranks_loaded} rank${d.ranks_loaded === 1 ? "" : "s"}; comparing needs two`;
  } else why = d.reason ?? "fewer than two ranks loaded at this span";
  const others = d.spans.filter((s) => s !== d.span);
  return `${head}: ${why}.${others.length > 0 ? ` Other spans of this run: ${others.join(", ")}.` : ""}`;
}

/** A group's ranks as short text: consecutive runs joined ("0\u20137"), steps listed ("0, 2, 4"), at
 * most `max` items, then "… (N ranks)"; "\u2013" when unknown. */
export function ranksText(ranks: number[] | null | undefined, max = 6): string {
  if (!ranks || ranks.length === 0) return "\u2013";
  const sorted = [...ranks].sort((a, b) => a - b);
  const items: string[] = [];
  let start = sorted[0]!;
  let prev = start;
  const flush = () => items.push(prev === start ? String(start) : prev === start + 1 ? `${start}, ${prev}` : `${start}\u2013${prev}`);
  for (const r of sorted.slice(1)) {
    if (r === prev + 1) {
      prev = r;
      continue;
    }
    flush();
    start = prev = r;
  }
  flush();
  const text = items.length > max ? `${items.slice(0, max).join(", ")}, \u2026` : items.join(", ");
  return items.length > max ? `${text} (${formatNumber(sorted.length)} ranks)` : text;
}
