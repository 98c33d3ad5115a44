// Fetches one JSON route by URL and follows it: a "loading" answer is retried, an "error" answer is a
// file error, a failed request is a fetch error. A null URL fetches nothing. The previous data stays
// visible while the next URL loads (paging and sorting do not blank the table).
import { useEffect, useState } from "react";
import { fetchJson } from "../api/http";

export type RemoteState<T> =
  | { kind: "idle" }
  | { kind: "fetching"; previous: T | null }
  | { kind: "ready"; data: T }
  | { kind: "not-ready"; progress: number | null }
  | { kind: "file-error"; error: string }
  | { kind: "fetch-error"; error: string; previous?: T | null };

const RETRY_MS = 1500;

export function useRemote<T>(url: string | null): RemoteState<T> {
  const [state, setState] = useState<RemoteState<T>>({ kind: "idle" });

  useEffect(() => {
    if (url === null) {
      setState({ kind: "idle" });
      return;
    }
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const controller = new AbortController();
    const load = async () => {
      try {
        const body = await fetchJson<{ state?: string; progress?: number; error?: string }>(url, controller.signal);
        if (stopped) return;
        if (body.state === "error") setState({ kind: "file-error", error: body.error ?? "Unknown error" });
        else if (body.state === "loading" || body.state === "queued") {
          setState({ kind: "not-ready", progress: body.progress ?? null });
          timer = setTimeout(load, RETRY_MS);
        } else setState({ kind: "ready", data: body as T });
      } catch (err) {
        if (stopped) return;
        const error = err instanceof Error ? err.message : String(err);
        // A failed page keeps the last good one on screen (with the error above it), so the
        // pager and sort headers stay there to step back.
        setState((prev) => ({ kind: "fetch-error", error, previous: prev.kind === "fetching" ? prev.previous : null }));
      }
    };
    setState((prev) => ({
      kind: "fetching",
      previous:
        prev.kind === "ready" ? prev.data : prev.kind === "fetching" || prev.kind === "fetch-error" ? (prev.previous ?? null) : null,
    }));
    void load();
    return () => {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      controller.abort();
    };
  }, [url]);

  return state;
}

/** The data to show: the current answer, or the previous one while the next loads. */
export function remoteData<T>(state: RemoteState<T>): T | null {
  if (state.kind === "ready") return state.data;
  if (state.kind === "fetching" || state.kind === "fetch-error") return state.previous ?? null;
  return null;
}
