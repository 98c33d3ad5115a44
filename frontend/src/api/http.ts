// The one place the frontend talks HTTP: every request goes through `fetch` here (hooks/useRemote and
// hooks/useRuns call it; views never do). Every URL is relative (api/routes.ts): the plugin iframe's
// <base href> is "plugin/kinetoscope/", so "runs" resolves to <tensorboard>/data/plugin/kinetoscope/runs,
// with any --path_prefix kept.

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

function defaultFetch(input: string, init?: RequestInit): Promise<Response> {
  return fetch(input, init);
}

async function send(url: string, fetchImpl: FetchLike, init: RequestInit): Promise<Response> {
  try {
    return await fetchImpl(url, init);
  } catch (err) {
    if (err instanceof DOMException && err.name === "AbortError") throw err;
    throw new ApiError(`Cannot reach the server (${String(err)})`, null);
  }
}

/** GET a JSON route by its relative URL (api/routes.ts). */
export async function fetchJson<T>(url: string, signal?: AbortSignal, fetchImpl: FetchLike = defaultFetch): Promise<T> {
  const response = await send(url, fetchImpl, { signal, headers: { Accept: "application/json" } });
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

/** GET a file route (`trace_file`): its bytes and the name the server gives it (Content-Disposition). */
export async function fetchFile(url: string, fetchImpl: FetchLike = defaultFetch): Promise<{ bytes: ArrayBuffer; disposition: string | null }> {
  const response = await send(url, fetchImpl, {});
  if (!response.ok) throw new ApiError(`HTTP ${response.status} fetching the trace`, response.status);
  return { bytes: await response.arrayBuffer(), disposition: response.headers.get("Content-Disposition") };
}
