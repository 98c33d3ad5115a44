// The only fetch path of the views: follows JSON routes by URL. A "loading" answer is retried, an
// "error" answer is a file error, a failed request is a fetch error. A null URL fetches nothing. The
// previous data stays visible while the next URL loads (paging, sorting and zooming do not blank it).
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

/** The state to show while a new URL loads: the last data stays. */
function fetchingAfter<T>(prev: RemoteState<T> | undefined): RemoteState<T> {
  const previous =
    prev === undefined
      ? null
      : prev.kind === "ready"
        ? prev.data
        : prev.kind === "fetching" || prev.kind === "fetch-error"
          ? (prev.previous ?? null)
          : null;
  return { kind: "fetching", previous };
}

/**
 * Fetches `url` until it answers something other than loading/queued, reporting each state through
 * `set` (which receives the previous state). Returns the function that stops it.
 */
function follow<T>(url: string, set: (next: (prev: RemoteState<T>) => RemoteState<T>) => void): () => void {
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const controller = new AbortController();
  const load = async () => {
    try {
      const body = await fetchJson<{ state?: string; progress?: number; error?: string }>(url, controller.signal);
      if (stopped) return;
      if (body.state === "error") set(() => ({ kind: "file-error", error: body.error ?? "Unknown error" }));
      else if (body.state === "loading" || body.state === "queued") {
        set(() => ({ kind: "not-ready", progress: body.progress ?? null }));
        timer = setTimeout(load, RETRY_MS);
      } else set(() => ({ kind: "ready", data: body as T }));
    } catch (err) {
      if (stopped) return;
      const error = err instanceof Error ? err.message : String(err);
      // A failed page keeps the last good one on screen (with the error above it), so the
      // pager and sort headers stay there to step back.
      set((prev) => ({ kind: "fetch-error", error, previous: prev.kind === "fetching" ? prev.previous : null }));
    }
  };
  void load();
  return () => {
    stopped = true;
    if (timer !== undefined) clearTimeout(timer);
    controller.abort();
  };
}

export function useRemote<T>(url: string | null): RemoteState<T> {
  const [state, setState] = useState<RemoteState<T>>({ kind: "idle" });
  useEffect(() => {
    if (url === null) {
      setState({ kind: "idle" });
      return;
    }
    setState((prev) => fetchingAfter(prev));
    return follow<T>(url, setState);
  }, [url]);
  return state;
}

/**
 * `useRemote` of several URLs at once (one per worker of the Trace view): one state per URL, in
 * order. A URL that stays the same between renders is not fetched again; the others keep their
 * previous data while they load.
 */
export function useRemoteAll<T>(urls: readonly string[]): RemoteState<T>[] {
  const key = urls.join("\n");
  const [states, setStates] = useState<{ key: string; list: RemoteState<T>[] }>({ key: "", list: [] });
  useEffect(() => {
    const list = key === "" ? [] : key.split("\n");
    setStates((prev) => ({ key, list: list.map((_, i) => fetchingAfter(prev.list[i])) }));
    const stops = list.map((url, i) =>
      follow<T>(url, (next) =>
        setStates((prev) => {
          if (prev.key !== key) return prev;
          const copy = [...prev.list];
          copy[i] = next(copy[i] ?? { kind: "idle" });
          return { key, list: copy };
        }),
      ),
    );
    return () => stops.forEach((stop) => stop());
  }, [key]);
  return states.key === key ? states.list : urls.map((_, i) => fetchingAfter(states.list[i]));
}

/** The data to show: the current answer, or the previous one while the next loads. */
export function remoteData<T>(state: RemoteState<T>): T | null {
  if (state.kind === "ready") return state.data;
  if (state.kind === "fetching" || state.kind === "fetch-error") return state.previous ?? null;
  return null;
}
