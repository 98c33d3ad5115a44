// The critical-path overlay's data: fetched per shown worker when the toggle is on (with
// "all ranks on one clock", every rank's share of the path), flattened for drawing.
import { useMemo } from "react";
import { criticalPathUrl } from "../../api/routes";
import type { CriticalPathOverlay, Selection } from "../../api/types";
import { remoteData, useRemoteAll } from "../../hooks/useRemote";
import { flattenPath, type PathSegments } from "./pathOverlay";
import { workerSel } from "./useTimelineMetas";

export interface PathOverlayState {
  /** The primary worker's answer (the summary line's). */
  doc: CriticalPathOverlay | null;
  /** Each shown worker's segments that have arrived. */
  segments: PathSegments[];
  /** How many shown workers have their answer. */
  workersDrawn: number;
  error: string | null;
  loading: boolean;
}

export function usePathOverlay(selection: Selection, workers: string[], on: boolean): PathOverlayState {
  const states = useRemoteAll<CriticalPathOverlay>(on ? workers.map((w) => criticalPathUrl(workerSel(selection, w))) : []);
  const docs = states.map((s) => remoteData(s));
  const segments = useMemo(
    () => states.flatMap((s, i) => {
      const d = remoteData(s);
      return d ? [flattenPath(d, workers[i]!)] : [];
    }),
    [states, workers],
  );
  const primary = workers.indexOf(selection.worker);
  const doc = primary >= 0 ? (docs[primary] ?? null) : null;
  const failed = states.find((s) => s.kind === "fetch-error" || s.kind === "file-error");
  const error = failed && (failed.kind === "fetch-error" || failed.kind === "file-error") ? failed.error : null;
  return { doc, segments, workersDrawn: docs.filter((d) => d !== null).length, error, loading: on && doc === null && error === null };
}
