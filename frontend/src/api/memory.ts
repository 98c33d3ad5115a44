// URLs of the memory routes. Relative like every other request (the iframe's <base href>).
import type { Selection, SortOrder } from "./types";

/** A time range in µs since the trace's first event; null ends are open. */
export interface TimeRange {
  start_us: number;
  end_us: number;
}

function fileParams(sel: Selection): URLSearchParams {
  return new URLSearchParams({ run: sel.run, worker: sel.worker, span: sel.span });
}

/** Times go to the server with 3 decimals (ns), enough for any trace and stable in URLs. */
export function fmtUs(us: number): string {
  return String(Math.round(us * 1000) / 1000);
}

function setRange(p: URLSearchParams, range: TimeRange | null): void {
  if (!range) return;
  p.set("start_us", fmtUs(range.start_us));
  p.set("end_us", fmtUs(range.end_us));
}

export function memoryUrl(sel: Selection, range: TimeRange | null, widthPx: number): string {
  const p = fileParams(sel);
  setRange(p, range);
  p.set("width_px", String(Math.max(1, Math.round(widthPx))));
  return `memory?${p.toString()}`;
}

/** The fields both memory tables take besides their filters. */
interface MemoryTableFields {
  device: string;
  range: TimeRange | null;
  search?: string;
  sort?: string;
  order?: SortOrder;
  offset?: number;
  limit?: number;
}

export interface MemoryEventsQuery extends MemoryTableFields {
  min_bytes?: number | null;
  max_bytes?: number | null;
}

/**
 * route?… with the file, device, range, the route's own filters (setFilters), the search, the sort
 * (order only with a sort) and, when paged, offset and limit; with paged false, route.csv?… (every
 * row, so no offset/limit).
 */
function memoryTableUrl(
  route: string,
  sel: Selection,
  q: MemoryTableFields,
  paged: boolean,
  setFilters?: (p: URLSearchParams) => void,
): string {
  const p = fileParams(sel);
  p.set("device", q.device);
  setRange(p, q.range);
  setFilters?.(p);
  if (q.search) p.set("search", q.search);
  if (q.sort) p.set("sort", q.sort);
  if (q.sort && q.order) p.set("order", q.order);
  if (paged) {
    if (q.offset !== undefined) p.set("offset", String(q.offset));
    if (q.limit !== undefined) p.set("limit", String(q.limit));
  }
  return `${paged ? route : `${route}.csv`}?${p.toString()}`;
}

/** memory_events?… (paged) or, with paged false, memory_events.csv?… with the same filters. */
export function memoryEventsUrl(sel: Selection, q: MemoryEventsQuery, paged = true): string {
  return memoryTableUrl("memory_events", sel, q, paged, (p) => {
    if (q.min_bytes !== null && q.min_bytes !== undefined) p.set("min_bytes", String(Math.round(q.min_bytes)));
    if (q.max_bytes !== null && q.max_bytes !== undefined) p.set("max_bytes", String(Math.round(q.max_bytes)));
  });
}

export type MemoryStatsQuery = MemoryTableFields;

export function memoryStatsUrl(sel: Selection, q: MemoryStatsQuery, paged = true): string {
  return memoryTableUrl("memory_stats", sel, q, paged);
}

/** An artifact of a run: a snapshot pickle or a memory-timeline export. */
export interface ArtifactRef {
  run: string;
  path: string;
}

function artifactParams(a: ArtifactRef): URLSearchParams {
  return new URLSearchParams({ run: a.run, path: a.path });
}

export function snapshotUrl(a: ArtifactRef): string {
  return `snapshot?${artifactParams(a).toString()}`;
}

export function snapshotTimelineUrl(
  a: ArtifactRef,
  device: number,
  window: { start: number; end: number } | null,
  widthPx: number,
): string {
  const p = artifactParams(a);
  p.set("device", String(device));
  if (window) {
    p.set("start", fmtUs(window.start));
    p.set("end", fmtUs(window.end));
  }
  p.set("width_px", String(Math.max(1, Math.round(widthPx))));
  return `snapshot_timeline?${p.toString()}`;
}

export function snapshotSegmentsUrl(a: ArtifactRef, device: number): string {
  const p = artifactParams(a);
  p.set("device", String(device));
  return `snapshot_segments?${p.toString()}`;
}

export function snapshotAllocationsUrl(a: ArtifactRef, device: number, limit = 100): string {
  const p = artifactParams(a);
  p.set("device", String(device));
  p.set("limit", String(limit));
  return `snapshot_allocations?${p.toString()}`;
}

export function snapshotStackUrl(a: ArtifactRef, stack: number): string {
  const p = artifactParams(a);
  p.set("stack", String(stack));
  return `snapshot_stack?${p.toString()}`;
}

export function memoryTimelineExportUrl(a: ArtifactRef): string {
  return `memory_timeline_export?${artifactParams(a).toString()}`;
}

/** "GPU3" -> 3; a number stays itself. */
export function deviceIndex(device: string | number): number {
  if (typeof device === "number") return device;
  const n = Number.parseInt(device.replace(/^GPU/i, ""), 10);
  return Number.isFinite(n) ? n : 0;
}

export function memprofilerStatsUrl(a: ArtifactRef): string {
  return `memprofiler_stats?${artifactParams(a).toString()}`;
}

export function memprofilerLogUrl(a: ArtifactRef): string {
  return `memprofiler_log?${artifactParams(a).toString()}`;
}
