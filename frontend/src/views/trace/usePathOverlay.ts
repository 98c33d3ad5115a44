// The critical-path overlay's data (issue 20): fetched when the toggle is on, flattened for drawing.
import { useMemo } from "react";
import { criticalPathUrl } from "../../api/routes";
import type { CriticalPathOverlay, Selection } from "../../api/types";
import { useRemote } from "../../hooks/useRemote";
import { flattenPath, type PathSegments } from "./pathOverlay";

export interface PathOverlayState {
  doc: CriticalPathOverlay | null;
  segments: PathSegments | null;
  error: string | null;
  loading: boolean;
}

export function usePathOverlay(selection: Selection, on: boolean): PathOverlayState {
  const state = useRemote<CriticalPathOverlay>(on ? criticalPathUrl(selection) : null);
  const doc = state.kind === "ready" ? state.data : null;
  const segments = useMemo(() => (doc ? flattenPath(doc, selection.worker) : null), [doc, selection.worker]);
  const error = state.kind === "fetch-error" || state.kind === "file-error" ? state.error : null;
  return { doc, segments, error, loading: on && doc === null && error === null };
}
