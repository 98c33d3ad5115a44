// The critical-path overlay's data: fetched per shown worker when the toggle is on (with
// "all ranks on one clock", every rank's share of the path), flattened for drawing.
import { criticalPathUrl } from "../../api/routes";
import type { CriticalPathOverlay, Selection } from "../../api/types";
import { flattenPath, type PathSegments } from "./pathOverlay";
import { usePerWorker } from "./usePerWorker";

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
  const { doc, flat, drawn, error } = usePerWorker<CriticalPathOverlay, PathSegments>(selection, workers, on, criticalPathUrl, flattenPath);
  return { doc, segments: flat, workersDrawn: drawn, error, loading: on && doc === null && error === null };
}
