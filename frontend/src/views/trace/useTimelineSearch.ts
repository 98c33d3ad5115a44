// Search of event names in every shown worker (`timeline_search`), merged in display-time order.
import { useEffect, useMemo, useState } from "react";
import { timelineSearchUrl } from "../../api/routes";
import type { Selection, TimelineSearchResponse } from "../../api/types";
import { useRemoteAll } from "../../hooks/useRemote";
import { workerSel } from "./useTimelineMetas";

export interface Match {
  worker: string;
  row: number;
  start: number;
  dur: number;
  track: number;
  name: string;
}

export interface TimelineSearch {
  matches: { list: Match[]; total: number } | null;
  error: string | null;
  /** The match visited (-1: none yet); reset when the query changes. */
  index: number;
  setIndex: (i: number) => void;
}

/** `query` (already debounced) in `workers`; nothing while it is blank or the metas are not there. */
export function useTimelineSearch(
  selection: Selection,
  workers: string[],
  offsets: Map<string, number>,
  query: string,
  regex: boolean,
  enabled: boolean,
): TimelineSearch {
  const q = query.trim();
  const urls = useMemo(
    () => (q === "" || !enabled ? [] : workers.map((w) => timelineSearchUrl(workerSel(selection, w), q, regex))),
    [q, regex, enabled, workers, selection],
  );
  const states = useRemoteAll<TimelineSearchResponse>(urls);
  const [index, setIndex] = useState(-1);
  useEffect(() => setIndex(-1), [q, regex, enabled, workers]);
  const failed = states.find((s) => s.kind === "fetch-error" || s.kind === "file-error");
  const ready = urls.length > 0 && states.length === urls.length && states.every((s) => s.kind === "ready");
  const matches = useMemo(() => {
    if (!ready) return null;
    const list: Match[] = [];
    let total = 0;
    states.forEach((s, k) => {
      const r = (s as { data: TimelineSearchResponse }).data;
      const w = workers[k]!;
      total += r.total;
      r.rows.forEach((row, i) => list.push({ worker: w, row, start: r.start_us[i]!, dur: r.dur_us[i]!, track: r.track[i]!, name: r.name[i]! }));
    });
    list.sort((a, b) => a.start + (offsets.get(a.worker) ?? 0) - (b.start + (offsets.get(b.worker) ?? 0)));
    return { list, total };
  }, [ready, states, workers, offsets]);
  const error = failed && (failed.kind === "fetch-error" || failed.kind === "file-error") ? failed.error : null;
  return { matches: error ? null : matches, error, index, setIndex };
}
