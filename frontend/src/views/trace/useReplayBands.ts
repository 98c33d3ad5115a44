// The replay bands' data: fetched per shown worker when the toggle is on, flattened for drawing.
import { useMemo } from "react";
import { graphReplaysUrl } from "../../api/routes";
import type { GraphReplayBands, Selection } from "../../api/types";
import { remoteData, useRemoteAll } from "../../hooks/useRemote";
import { flattenBands, type ReplayBandSet } from "./replayBands";
import { workerSel } from "./useTimelineMetas";

export interface ReplayBandsState {
  sets: ReplayBandSet[];
  /** Bands in the primary worker's trace and how many were sent (the first in time past the cap). */
  total: number | null;
  shown: number | null;
  error: string | null;
}

export function useReplayBands(selection: Selection, workers: string[], on: boolean): ReplayBandsState {
  const states = useRemoteAll<GraphReplayBands>(on ? workers.map((w) => graphReplaysUrl(workerSel(selection, w))) : []);
  const sets = useMemo(
    () => states.flatMap((s, i) => {
      const d = remoteData(s);
      return d ? [flattenBands(d, workers[i]!)] : [];
    }),
    [states, workers],
  );
  const primary = workers.indexOf(selection.worker);
  const primaryState = primary >= 0 ? states[primary] : undefined;
  const doc = primaryState ? remoteData(primaryState) : null;
  const failed = states.find((s) => s.kind === "fetch-error" || s.kind === "file-error");
  const error = failed && (failed.kind === "fetch-error" || failed.kind === "file-error") ? failed.error : null;
  return { sets, total: doc ? doc.total : null, shown: doc ? doc.shown : null, error };
}
