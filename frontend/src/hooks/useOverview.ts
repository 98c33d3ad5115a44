// Fetches the Overview of the selected file. A queued or loading file is asked for too: the request
// tells the server that a user waits for it, so it is loaded ahead of the queue, and the
// "loading" answers, retried by useRemote, carry its progress. A failed file needs no request.
import { overviewUrl } from "../api/routes";
import type { OverviewReady, Selection, SpanState } from "../api/types";
import { useRemote } from "./useRemote";

export type OverviewState =
  | { kind: "idle" }
  | { kind: "fetching" }
  | { kind: "ready"; data: OverviewReady }
  | { kind: "not-ready"; progress: number | null }
  | { kind: "file-error"; error: string }
  | { kind: "fetch-error"; error: string };

export function useOverview(sel: Selection | null, spanState: SpanState | undefined): OverviewState {
  const wanted = spanState === "ready" || spanState === "queued" || spanState === "loading";
  const state = useRemote<OverviewReady>(sel && wanted ? overviewUrl(sel) : null);
  // Unlike a table, the Overview never shows the previous file's data while the next one loads.
  if (state.kind === "fetching") return { kind: "fetching" };
  if (state.kind === "fetch-error") return { kind: "fetch-error", error: state.error };
  return state;
}
