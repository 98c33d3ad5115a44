// Polls the run registry: every 1.5 s while any file is queued or loading, every 30 s otherwise (new
// runs and files appear without restarting TensorBoard), and with a back-off after a failed request.
// The last good response is kept when a request fails.
import { useEffect, useState } from "react";
import { fetchJson } from "../api/http";
import { runsUrl } from "../api/routes";
import type { RunsResponse } from "../api/types";
import { isAnythingLoading } from "../state/selection";
import { stableRuns } from "../state/stableRuns";

export const POLL_WHILE_LOADING_MS = 1500;
export const POLL_IDLE_MS = 30_000;
export const POLL_AFTER_ERROR_MS = 5000;

export interface RunsState {
  data: RunsResponse | null;
  error: string | null;
}

export function nextPollDelay(data: RunsResponse | null, failed: boolean): number {
  if (failed) return POLL_AFTER_ERROR_MS;
  if (data && isAnythingLoading(data)) return POLL_WHILE_LOADING_MS;
  return POLL_IDLE_MS;
}

export function useRuns(): RunsState {
  const [state, setState] = useState<RunsState>({ data: null, error: null });

  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let controller: AbortController | undefined;

    const poll = async () => {
      controller = new AbortController();
      let data: RunsResponse | null = null;
      let failed = false;
      try {
        data = await fetchJson<RunsResponse>(runsUrl(), controller.signal);
        if (stopped) return;
        const fresh = data;
        // Unchanged parts keep their identity: no re-render, no flicker, selection untouched.
        setState((prev) => {
          const next = stableRuns(prev.data, fresh);
          return next === prev.data && prev.error === null ? prev : { data: next, error: null };
        });
      } catch (err) {
        if (stopped) return;
        failed = true;
        const message = err instanceof Error ? err.message : String(err);
        setState((prev) => ({ data: prev.data, error: message }));
      }
      if (!stopped) timer = setTimeout(poll, nextPollDelay(data, failed));
    };

    void poll();
    return () => {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      controller?.abort();
    };
  }, []);

  return state;
}
