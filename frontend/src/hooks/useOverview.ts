// Fetches the Overview of the selected file once the registry says it is ready. A file that is still
// queued/loading or failed needs no request: the registry already says so. If the server answers
// "loading" anyway (it raced the registry), useRemote retries the request.
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
  const state = useRemote<OverviewReady>(sel && spanState === "ready" ? overviewUrl(sel) : null);
  // Unlike a table, the Overview never shows the previous file's data while the next one loads.
  if (state.kind === "fetching") return { kind: "fetching" };
  if (state.kind === "fetch-error") return { kind: "fetch-error", error: state.error };
  return state;
}
