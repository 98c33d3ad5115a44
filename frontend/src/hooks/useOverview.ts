// Fetches the Overview of the selected file once the registry says it is ready. A file that is still
// queued/loading or failed needs no request: the registry already says so. If the server answers
// "loading" anyway (it raced the registry), the request is retried.
import { useEffect, useState } from "react";
import { fetchOverview } from "../api/client";
import type { OverviewReady, Selection, SpanState } from "../api/types";

export type OverviewState =
  | { kind: "idle" }
  | { kind: "fetching" }
  | { kind: "ready"; data: OverviewReady }
  | { kind: "not-ready"; progress: number | null }
  | { kind: "file-error"; error: string }
  | { kind: "fetch-error"; error: string };

const RETRY_MS = 1500;

export function useOverview(sel: Selection | null, spanState: SpanState | undefined): OverviewState {
  const [state, setState] = useState<OverviewState>({ kind: "idle" });
  const run = sel?.run;
  const worker = sel?.worker;
  const span = sel?.span;

  useEffect(() => {
    if (run === undefined || worker === undefined || span === undefined || spanState !== "ready") {
      setState({ kind: "idle" });
      return;
    }
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const controller = new AbortController();

    const load = async () => {
      try {
        const body = await fetchOverview({ run, worker, span }, controller.signal);
        if (stopped) return;
        if (body.state === "ready") setState({ kind: "ready", data: body });
        else if (body.state === "error") setState({ kind: "file-error", error: body.error });
        else {
          setState({ kind: "not-ready", progress: body.progress ?? null });
          timer = setTimeout(load, RETRY_MS);
        }
      } catch (err) {
        if (stopped) return;
        setState({ kind: "fetch-error", error: err instanceof Error ? err.message : String(err) });
      }
    };

    setState({ kind: "fetching" });
    void load();
    return () => {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      controller.abort();
    };
  }, [run, worker, span, spanState]);

  return state;
}
