// The "Selected range" statistics: exact counts and times of the events in the box, from the server
// (`timeline_range`, on the events themselves), so they do not change with the zoom. With several
// workers their answers are summed per name.
import { useMemo } from "react";
import { timelineRangeUrl } from "../../api/routes";
import type { Selection, TimelineRangeResponse } from "../../api/types";
import { useDebounced } from "../../hooks/useDebounced";
import { remoteData, useRemoteAll } from "../../hooks/useRemote";
import type { Layout } from "./math";
import { workerSel } from "./useTimelineMetas";

export interface Box {
  t0: number;
  t1: number;
  y0: number;
  y1: number;
}

export interface NameStat {
  name: string;
  count: number;
  totalUs: number;
}

export interface RangeStats {
  durationUs: number;
  count: number;
  totalUs: number;
  top: NameStat[];
}

const TOP = 10;
/** Names asked of each worker when several are summed (the server's cap): enough for an exact top 10. */
const TOP_MERGED = 1000;

/** The tracks a box covers, per worker; undefined when the box is a time range only (no height). */
export function tracksInBox(layout: Layout, box: Box): Map<string, number[]> | undefined {
  if (Math.abs(box.y1 - box.y0) <= 4) return undefined;
  const lo = Math.min(box.y0, box.y1);
  const hi = Math.max(box.y0, box.y1);
  const out = new Map<string, number[]>();
  for (const r of layout.rows) {
    if (r.kind !== "track" || r.y + r.h <= lo || r.y >= hi) continue;
    out.set(r.worker, [...(out.get(r.worker) ?? []), r.track]);
  }
  return out;
}

/** Sums the workers' answers: counts and times add, names merge, the top TOP by time in range. */
export function mergeRange(answers: readonly TimelineRangeResponse[], durationUs: number): RangeStats {
  const byName = new Map<string, NameStat>();
  let count = 0;
  let totalUs = 0;
  for (const a of answers) {
    count += a.count;
    totalUs += a.total_us;
    for (const t of a.top) {
      const st = byName.get(t.name) ?? { name: t.name, count: 0, totalUs: 0 };
      st.count += t.count;
      st.totalUs += t.total_us;
      byName.set(t.name, st);
    }
  }
  const top = [...byName.values()]
    .sort((a, b) => b.totalUs - a.totalUs || b.count - a.count || (a.name < b.name ? -1 : 1))
    .slice(0, TOP);
  return { durationUs, count, totalUs, top };
}

export function useRangeStats(
  selection: Selection,
  workers: string[],
  offsets: Map<string, number>,
  layout: Layout,
  box: Box | null,
): RangeStats | null {
  const urls = useMemo(() => {
    if (!box) return [];
    const tracks = tracksInBox(layout, box);
    const top = workers.length > 1 ? TOP_MERGED : TOP;
    return workers
      .filter((w) => !tracks || tracks.has(w))
      .map((w) => {
        const off = offsets.get(w) ?? 0;
        return timelineRangeUrl(workerSel(selection, w), box.t0 - off, box.t1 - off, tracks?.get(w), top);
      });
  }, [box, layout, workers, offsets, selection]);
  const sent = useDebounced(urls.join("\n"), 120);
  const states = useRemoteAll<TimelineRangeResponse>(useMemo(() => (sent === "" ? [] : sent.split("\n")), [sent]));
  const answers = states.map((s) => remoteData(s));
  const durationUs = box ? Math.abs(box.t1 - box.t0) : 0;
  if (!box || answers.length === 0 || answers.some((a) => a === null)) return box && urls.length === 0 ? mergeRange([], durationUs) : null;
  return mergeRange(answers as TimelineRangeResponse[], durationUs);
}
