// One route's answer per shown worker of the Trace view (an overlay's data), fetched while `on`, each
// flattened for drawing; the primary worker's answer and the first error are kept apart.
import { useMemo } from "react";
import type { Selection } from "../../api/types";
import { remoteData, useRemoteAll } from "../../hooks/useRemote";
import { workerSel } from "./useTimelineMetas";

export interface PerWorker<T, F> {
  /** The primary worker's answer (null until it arrives). */
  doc: T | null;
  /** Each shown worker's flattened answer, for those that have arrived. */
  flat: F[];
  /** How many shown workers have their answer. */
  drawn: number;
  error: string | null;
}

export function usePerWorker<T, F>(
  selection: Selection,
  workers: string[],
  on: boolean,
  url: (sel: Selection) => string,
  flatten: (doc: T, worker: string) => F,
): PerWorker<T, F> {
  const states = useRemoteAll<T>(on ? workers.map((w) => url(workerSel(selection, w))) : []);
  const docs = states.map((s) => remoteData(s));
  const flat = useMemo(
    () => states.flatMap((s, i) => {
      const d = remoteData(s);
      return d ? [flatten(d, workers[i]!)] : [];
    }),
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [states, workers],
  );
  const primary = workers.indexOf(selection.worker);
  const failed = states.find((s) => s.kind === "fetch-error" || s.kind === "file-error");
  const error = failed && (failed.kind === "fetch-error" || failed.kind === "file-error") ? failed.error : null;
  return { doc: primary >= 0 ? (docs[primary] ?? null) : null, flat, drawn: docs.filter((d) => d !== null).length, error };
}
