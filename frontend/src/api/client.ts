// The HTTP client. Every URL is relative: the plugin iframe's <base href> is "plugin/kinetoscope/", so
// "runs" resolves to <tensorboard>/data/plugin/kinetoscope/runs, with any --path_prefix kept.
import type { OverviewResponse, RunsResponse, Selection, SortOrder } from "./types";

/** A request that failed: network error, non-2xx status, or a body that is not JSON. */
export class ApiError extends Error {
  readonly status: number | null;
  constructor(message: string, status: number | null) {
    super(message);
    this.name = "ApiError";
    this.status = status;
  }
}

export type FetchLike = (input: string, init?: RequestInit) => Promise<Response>;

async function getJson<T>(url: string, fetchImpl: FetchLike, signal?: AbortSignal): Promise<T> {
  let response: Response;
  try {
    response = await fetchImpl(url, { signal, headers: { Accept: "application/json" } });
  } catch (err) {
    if (err instanceof DOMException && err.name === "AbortError") throw err;
    throw new ApiError(`Cannot reach the server (${String(err)})`, null);
  }
  let body: unknown = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  if (!response.ok) {
    const detail =
      body !== null && typeof body === "object" && typeof (body as { error?: unknown }).error === "string"
        ? (body as { error: string }).error
        : response.statusText;
    throw new ApiError(`HTTP ${response.status}: ${detail}`, response.status);
  }
  if (body === null || typeof body !== "object") {
    throw new ApiError(`The server sent a response that is not JSON (${url.split("?")[0]})`, response.status);
  }
  return body as T;
}

export function runsUrl(): string {
  return "runs";
}

export function overviewUrl(sel: Selection): string {
  const params = new URLSearchParams({ run: sel.run, worker: sel.worker, span: sel.span });
  return `overview?${params.toString()}`;
}

export function fetchRuns(signal?: AbortSignal, fetchImpl: FetchLike = defaultFetch): Promise<RunsResponse> {
  return getJson<RunsResponse>(runsUrl(), fetchImpl, signal);
}

export function fetchOverview(
  sel: Selection,
  signal?: AbortSignal,
  fetchImpl: FetchLike = defaultFetch,
): Promise<OverviewResponse> {
  return getJson<OverviewResponse>(overviewUrl(sel), fetchImpl, signal);
}

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
  const params = new URLSearchParams({ run: sel.run, worker: sel.worker, span: sel.span });
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
  const params = new URLSearchParams({ run: sel.run, worker: sel.worker, span: sel.span, key, group_by: groupBy });
  return `operator_stacks?${params.toString()}`;
}

export function modulesUrl(sel: Selection): string {
  const params = new URLSearchParams({ run: sel.run, worker: sel.worker, span: sel.span });
  return `modules?${params.toString()}`;
}

/** GET any JSON route by its relative URL. */
export function fetchJson<T>(url: string, signal?: AbortSignal, fetchImpl: FetchLike = defaultFetch): Promise<T> {
  return getJson<T>(url, fetchImpl, signal);
}

function defaultFetch(input: string, init?: RequestInit): Promise<Response> {
  return fetch(input, init);
}
