// The replay bands' data: fetched per shown worker when the toggle is on, flattened for drawing.
import { graphReplaysUrl } from "../../api/routes";
import type { GraphReplayBands, Selection } from "../../api/types";
import { flattenBands, type ReplayBandSet } from "./replayBands";
import { usePerWorker } from "./usePerWorker";

export interface ReplayBandsState {
  sets: ReplayBandSet[];
  /** Bands in the primary worker's trace and how many were sent (the first in time past the cap). */
  total: number | null;
  shown: number | null;
  error: string | null;
}

export function useReplayBands(selection: Selection, workers: string[], on: boolean): ReplayBandsState {
  const { doc, flat, error } = usePerWorker<GraphReplayBands, ReplayBandSet>(selection, workers, on, graphReplaysUrl, flattenBands);
  return { sets: flat, total: doc ? doc.total : null, shown: doc ? doc.shown : null, error };
}
