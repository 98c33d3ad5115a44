// One URL builder per route of docs/http_api.md, in its order. Every URL is relative (see http.ts);
// numbers go out rounded so that equal requests give equal URLs.
import type { Selection, SortOrder } from "./types";

/** run, worker, span: the file a per-file route answers about. */
function fileParams(sel: Selection, extra: Record<string, string | number> = {}): URLSearchParams {
  const p = new URLSearchParams({ run: sel.run, worker: sel.worker, span: sel.span });
  for (const [k, v] of Object.entries(extra)) p.set(k, String(v));
  return p;
}

/** Times go to the server with 3 decimals (ns), enough for any trace and stable in URLs. */
export function fmtUs(us: number): string {
  return String(Math.round(us * 1000) / 1000);
}

const widthPx = (px: number) => String(Math.max(1, Math.round(px)));

// ---- runs, overview

export function runsUrl(): string {
  return "runs";
}

export function overviewUrl(sel: Selection): string {
  return `overview?${fileParams(sel).toString()}`;
}

// ---- tables: operators, operator_stacks, kernels, modules

/** What a table request asks for besides the file: sorting, paging, filters, grouping. */
export interface TableQuery {
  group_by?: string;
  /** Empty or undefined: the server's default sort. */
  sort?: string;
  order?: SortOrder;
  offset?: number;
  limit?: number;
  search?: string;
  op_search?: string;
}

const TABLE_KEYS = ["group_by", "sort", "order", "search", "op_search", "offset", "limit"] as const;

/**
 * The query string of a table route: run, worker, span, then the non-empty table parameters in a
 * fixed order. `paged: false` leaves out offset/limit (the CSV download: every row, same filters).
 */
export function tableQueryString(sel: Selection, q: TableQuery, paged = true): string {
  const params = fileParams(sel);
  for (const key of TABLE_KEYS) {
    if (!paged && (key === "offset" || key === "limit")) continue;
    const value = q[key];
    if (value === undefined || value === "") continue;
    params.set(key, String(value));
  }
  return params.toString();
}

/** Reads a table query string back (the inverse of tableQueryString, for tests and links). */
export function parseTableQuery(qs: string): { selection: Selection; query: TableQuery } {
  const p = new URLSearchParams(qs.startsWith("?") ? qs.slice(1) : qs);
  const query: TableQuery = {};
  for (const key of TABLE_KEYS) {
    const v = p.get(key);
    if (v === null) continue;
    if (key === "offset" || key === "limit") query[key] = Number(v);
    else if (key === "order") query.order = v === "asc" ? "asc" : "desc";
    else query[key] = v;
  }
  return { selection: { run: p.get("run") ?? "", worker: p.get("worker") ?? "", span: p.get("span") ?? "" }, query };
}

export type TableRoute = "operators" | "kernels";

export function tableUrl(route: TableRoute, sel: Selection, q: TableQuery): string {
  return `${route}?${tableQueryString(sel, q)}`;
}

/** The CSV of exactly what the table shows: same grouping, sort and filters, every page. */
export function tableCsvUrl(route: TableRoute, sel: Selection, q: TableQuery): string {
  return `${route}.csv?${tableQueryString(sel, q, false)}`;
}

export function operatorStacksUrl(sel: Selection, key: string, groupBy: string): string {
  return `operator_stacks?${fileParams(sel, { key, group_by: groupBy }).toString()}`;
}

export function modulesUrl(sel: Selection): string {
  return `modules?${fileParams(sel).toString()}`;
}

// ---- timeline

export const timelineMetaUrl = (sel: Selection) => `timeline_meta?${fileParams(sel).toString()}`;
/** ADDED: the critical path's segments on this file's timeline (the Trace view's overlay). */
export const criticalPathUrl = (sel: Selection) => `critical_path?${fileParams(sel).toString()}`;
/** CUDA graph replays as bands on this file's stream tracks (the Trace view's replay bands). */
export const graphReplaysUrl = (sel: Selection) => `graph_replays?${fileParams(sel).toString()}`;

export function timelineUrl(sel: Selection, startUs: number, endUs: number, width: number): string {
  // Rounded to the ns: the server's bins do not need more, and equal windows give equal URLs.
  const r = (v: number) => Math.round(v * 1000) / 1000;
  return `timeline?${fileParams(sel, { start_us: r(startUs), end_us: r(endUs), width_px: widthPx(width) }).toString()}`;
}

/** Exact statistics of the events in [startUs, endUs] on `tracks` (every track when absent). */
export function timelineRangeUrl(sel: Selection, startUs: number, endUs: number, tracks?: readonly number[], top = 10): string {
  const p = fileParams(sel, { start_us: fmtUs(Math.min(startUs, endUs)), end_us: fmtUs(Math.max(startUs, endUs)), top });
  if (tracks) p.set("tracks", [...tracks].sort((a, b) => a - b).join(","));
  return `timeline_range?${p.toString()}`;
}

export function timelineSearchUrl(sel: Selection, q: string, regex: boolean): string {
  return `timeline_search?${fileParams(sel, regex ? { q, regex: 1 } : { q }).toString()}`;
}

export const timelineEventUrl = (sel: Selection, row: number) => `timeline_event?${fileParams(sel, { row }).toString()}`;
export const traceFileUrl = (sel: Selection) => `trace_file?${fileParams(sel).toString()}`;

// ---- memory

/** A time range in µs since the trace's first event; null ends are open. */
export interface TimeRange {
  start_us: number;
  end_us: number;
}

function setRange(p: URLSearchParams, range: TimeRange | null): void {
  if (!range) return;
  p.set("start_us", fmtUs(range.start_us));
  p.set("end_us", fmtUs(range.end_us));
}

export function memoryUrl(sel: Selection, range: TimeRange | null, width: number): string {
  const p = fileParams(sel);
  setRange(p, range);
  p.set("width_px", widthPx(width));
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

// ---- artifacts: allocator snapshots, memory-timeline exports, MemProfiler output

/** An artifact of a run: a snapshot pickle or a memory-timeline export. */
export interface ArtifactRef {
  run: string;
  path: string;
}

/** The URL of an artifact route: `route?run=…&path=…`, then `extra`'s parameters in their order. */
function artifactUrl(route: string, a: ArtifactRef, extra: Record<string, string> = {}): string {
  return `${route}?${new URLSearchParams({ run: a.run, path: a.path, ...extra }).toString()}`;
}

/** The URL builder of an artifact route that takes no parameter beyond the artifact's own. */
function artifactRoute(route: string): (a: ArtifactRef) => string {
  return (a) => artifactUrl(route, a);
}

export const snapshotUrl = artifactRoute("snapshot");

export function snapshotTimelineUrl(
  a: ArtifactRef,
  device: number,
  window: { start: number; end: number } | null,
  width: number,
): string {
  const range: Record<string, string> = window ? { start: fmtUs(window.start), end: fmtUs(window.end) } : {};
  return artifactUrl("snapshot_timeline", a, { device: String(device), ...range, width_px: widthPx(width) });
}

export function snapshotSegmentsUrl(a: ArtifactRef, device: number): string {
  return artifactUrl("snapshot_segments", a, { device: String(device) });
}

export function snapshotAllocationsUrl(a: ArtifactRef, device: number, limit = 100): string {
  return artifactUrl("snapshot_allocations", a, { device: String(device), limit: String(limit) });
}

export function snapshotStackUrl(a: ArtifactRef, stack: number): string {
  return artifactUrl("snapshot_stack", a, { stack: String(stack) });
}

/** "GPU3" -> 3; a number stays itself (the `device` parameter of the snapshot routes). */
export function deviceIndex(device: string | number): number {
  if (typeof device === "number") return device;
  const n = Number.parseInt(device.replace(/^GPU/i, ""), 10);
  return Number.isFinite(n) ? n : 0;
}

export function snapshotOomUrl(a: ArtifactRef, lastN = 1000, top = 20): string {
  return artifactUrl("snapshot_oom", a, { last_n: String(lastN), top: String(top) });
}

export function snapshotAttributionUrl(a: ArtifactRef, device: number): string {
  return artifactUrl("snapshot_attribution", a, { device: String(device) });
}

export const snapshotRanksUrl = artifactRoute("snapshot_ranks");
export const memoryHtmlUrl = artifactRoute("memory_html");
/** The PNG extracted from a memory-timeline HTML file (an <img> source, never a page). */
export const memoryHtmlImageUrl = artifactRoute("memory_html_image");
export const memoryTimelineExportUrl = artifactRoute("memory_timeline_export");
export const memprofilerStatsUrl = artifactRoute("memprofiler_stats");
export const memprofilerLogUrl = artifactRoute("memprofiler_log");

// ---- distributed, insights

export function distributedUrl(run: string, span: string, step?: string): string {
  return `distributed?${new URLSearchParams(step === undefined ? { run, span } : { run, span, step }).toString()}`;
}

export function insightsUrl(sel: Selection): string {
  return `insights?${fileParams(sel).toString()}`;
}

export const graphsUrl = (sel: Selection) => `graphs?${fileParams(sel).toString()}`;

// ---- diff

/** Baseline and experiment. */
export interface DiffSelection {
  base: Selection;
  exp: Selection;
}

/** `diff?base_run=…&base_worker=…&base_span=…&exp_run=…&exp_worker=…&exp_span=…[&path=[…]]`. */
export function diffUrl(sel: DiffSelection, path: readonly string[] = []): string {
  const params = new URLSearchParams();
  for (const [prefix, side] of [["base", sel.base], ["exp", sel.exp]] as const) {
    params.set(`${prefix}_run`, side.run);
    params.set(`${prefix}_worker`, side.worker);
    params.set(`${prefix}_span`, side.span);
  }
  if (path.length > 0) params.set("path", JSON.stringify(path));
  return `diff?${params.toString()}`;
}

// ---- hang (flight-recorder dumps of a run)

export function hangUrl(run: string): string {
  return `hang?${new URLSearchParams({ run }).toString()}`;
}

export function hangEntriesUrl(run: string, rank: number): string {
  return `hang_entries?${new URLSearchParams({ run, rank: String(rank) }).toString()}`;
}
