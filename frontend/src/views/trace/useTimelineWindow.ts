// The drawable items of the shown window, per worker: one `timeline` request per worker in its own
// relative time, sent once the window has been still for 30 ms; the previous answer stays drawn (at
// the new scale) until the next arrives.
import { useEffect, useMemo, useRef } from "react";
import { timelineUrl } from "../../api/routes";
import type { Selection, TimelineResponse } from "../../api/types";
import { useDebounced } from "../../hooks/useDebounced";
import { remoteData, useRemoteAll } from "../../hooks/useRemote";
import type { TimeWindow } from "./math";
import { workerSel } from "./useTimelineMetas";

export interface TimelineWindowData {
  data: Map<string, TimelineResponse>;
  /** The data on screen was answered for the current window (the e2e hook `settled`). */
  settled: boolean;
  error: string | null;
  /** `timeline` requests sent so far (perf hook). */
  requests: number;
}

export function useTimelineWindow(
  selection: Selection,
  workers: string[],
  offsets: Map<string, number>,
  win: TimeWindow | null,
  plotW: number,
  enabled: boolean,
): TimelineWindowData {
  const urls = useMemo(
    () =>
      enabled && win
        ? workers.map((w) => {
            const off = offsets.get(w) ?? 0;
            return timelineUrl(workerSel(selection, w), win.start - off, win.end - off, plotW);
          })
        : [],
    [enabled, win, workers, offsets, selection, plotW],
  );
  const wanted = urls.join("\n");
  const sent = useDebounced(wanted, 30);
  const states = useRemoteAll<TimelineResponse>(useMemo(() => (sent === "" ? [] : sent.split("\n")), [sent]));
  const requests = useRef(0);
  useEffect(() => {
    if (sent !== "") requests.current += sent.split("\n").length;
  }, [sent]);
  // each worker keeps its last drawable answer, also while a later window loads
  const kept = useRef(new Map<string, TimelineResponse>());
  const sentUrls = sent === "" ? [] : sent.split("\n");
  states.forEach((s, i) => {
    const r = remoteData(s);
    const w = new URLSearchParams((sentUrls[i] ?? "").split("?")[1] ?? "").get("worker");
    if (w !== null && r && r.state === "ready" && Array.isArray(r.tracks)) kept.current.set(w, r);
  });
  const failed = states.find((s) => s.kind === "fetch-error");
  const dataKey = states.map((s) => s.kind).join(",") + sent;
  // eslint-disable-next-line react-hooks/exhaustive-deps
  const data = useMemo(() => new Map(kept.current), [dataKey]);
  return {
    data,
    settled: wanted !== "" && sent === wanted && states.length === urls.length && states.every((s) => s.kind === "ready"),
    error: failed && failed.kind === "fetch-error" ? failed.error : null,
    requests: requests.current,
  };
}
