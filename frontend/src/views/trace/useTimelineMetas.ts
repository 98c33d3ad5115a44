// The timeline_meta of every shown worker, and what follows from them: each worker's shift onto the
// shared clock (µs) and the bounds of the whole view.
import { useMemo } from "react";
import { timelineMetaUrl } from "../../api/routes";
import type { Selection, TimelineMeta } from "../../api/types";
import { useRemoteAll } from "../../hooks/useRemote";
import { alignOffsets, type Bounds } from "./math";

export const workerSel = (s: Selection, worker: string): Selection => ({ run: s.run, worker, span: s.span });

export interface TimelineMetas {
  metas: Map<string, TimelineMeta>;
  /** Every shown worker's meta is there. */
  ready: boolean;
  error: string | null;
  offsets: Map<string, number>;
  bounds: Bounds | null;
}

export function useTimelineMetas(selection: Selection, workers: string[]): TimelineMetas {
  const states = useRemoteAll<TimelineMeta>(workers.map((w) => timelineMetaUrl(workerSel(selection, w))));
  const failed = states.find((s) => s.kind === "fetch-error" || s.kind === "file-error");
  const error = failed && (failed.kind === "fetch-error" || failed.kind === "file-error") ? failed.error : null;
  const ready = states.length === workers.length && states.every((s) => s.kind === "ready");
  const metas = useMemo(() => {
    const out = new Map<string, TimelineMeta>();
    if (ready) workers.forEach((w, i) => out.set(w, (states[i] as { data: TimelineMeta }).data));
    return out;
  }, [ready, states, workers]);
  const offsets = useMemo(() => {
    if (!ready) return new Map<string, number>();
    if (workers.length === 1) return new Map([[workers[0]!, 0]]);
    return alignOffsets(
      workers.map((w) => {
        const m = metas.get(w)!;
        return { worker: w, wall_origin_us: m.wall_origin_us, origin_us: m.origin_us, clock: m.clock };
      }),
    );
  }, [ready, workers, metas]);
  const bounds = useMemo(() => {
    if (!ready) return null;
    let end = 0;
    for (const w of workers) end = Math.max(end, (offsets.get(w) ?? 0) + metas.get(w)!.end_us);
    return { start: 0, end: Math.max(end, 1) };
  }, [ready, workers, offsets, metas]);
  return { metas, ready, error, offsets, bounds };
}
