// Builders of the timeline answers the trace tests feed the views and the layout math.
import type { TimelineMeta, TimelineResponse, TimelineStep, TimelineTrack } from "../api/types";

/** A ready timeline_meta answer: the trace starts at `wall` µs (origin and wall origin) and is 1000 µs long. */
export function readyMeta(tracks: TimelineTrack[], steps: TimelineStep[], wall = 0): TimelineMeta {
  return { state: "ready", origin_us: wall, base_time_ns: null, wall_origin_us: wall, end_us: 1000, tracks, steps };
}

/** A ready timeline answer over [0, 1000) µs drawn `widthPx` wide. */
export function readyTimeline(
  widthPx: number,
  tracks: TimelineResponse["tracks"],
  names: TimelineResponse["names"],
  counters: TimelineResponse["counters"] = [],
): TimelineResponse {
  return { state: "ready", start_us: 0, end_us: 1000, width_px: widthPx, tracks, names, counters };
}
