// The HTTP client. Every URL is relative: the plugin iframe's <base href> is "plugin/kinetoscope/", so
// "runs" resolves to <tensorboard>/data/plugin/kinetoscope/runs, with any --path_prefix kept.
import type { OverviewResponse, RunsResponse, Selection } from "./types";

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

function defaultFetch(input: string, init?: RequestInit): Promise<Response> {
  return fetch(input, init);
}
