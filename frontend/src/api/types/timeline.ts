// Types of the timeline routes (docs/http_api.md, "Timeline"). Times are µs relative to the
// file's origin; a worker's wall time is wall_origin_us + start_us.

export interface TimelineTrack {
  id: number;
  kind: "thread" | "stream" | "memcpy" | "memset" | string;
  process: string;
  name: string;
  max_depth: number;
  events: number;
}

export interface TimelineStep {
  step: string;
  start_us: number;
  end_us: number;
}

export interface TimelineMeta {
  state: "ready";
  origin_us: number;
  base_time_ns: number | null;
  wall_origin_us: number;
  /** The clock wall_origin_us is on: Composer's clock sync, Kineto's baseTimeNanoseconds, or raw µs. */
  clock?: "clock_sync" | "base_time" | "raw";
  end_us: number;
  tracks: TimelineTrack[];
  steps: TimelineStep[];
}

export interface TimelineItems {
  start: number[];
  dur: number[];
  depth: number[];
  name: (string | number)[];
  count: number[];
  row: number[];
}

export interface TimelineTrackData {
  id: number;
  level: number;
  bucket_us: number;
  items: TimelineItems;
  hidden_events: number;
}

export interface TimelineCounter {
  name: string;
  unit: "fraction" | "bytes" | string;
  values: number[];
  /** A matched allocator snapshot's active-memory track: the snapshot's logdir-relative path. */
  snapshot?: string;
}

export interface TimelineResponse {
  state: "ready";
  start_us: number;
  end_us: number;
  width_px: number;
  tracks: TimelineTrackData[];
  names: Record<string, string>;
  flows?: unknown;
  counters: TimelineCounter[];
}

export interface TimelineSearchResponse {
  total: number;
  rows: number[];
  start_us: number[];
  dur_us: number[];
  track: number[];
  name: string[];
}

export interface TimelineEventRef {
  row: number;
  name: string;
  start_us: number;
  dur_us: number;
}

export interface TimelineFlow extends TimelineEventRef {
  type: "launch" | "device" | string;
  track: number;
}

export interface TimelineEvent {
  row: number;
  name: string;
  category: string;
  start_us: number;
  dur_us: number;
  track: number;
  args: Record<string, unknown>;
  parents: TimelineEventRef[];
  flows: TimelineFlow[];
}

/** `timeline_range` (ADDED): exact statistics of the events in a range, not of drawn items. */
export interface TimelineRangeName {
  name: string;
  count: number;
  total_us: number;
}

export interface TimelineRangeResponse {
  state: "ready";
  start_us: number;
  end_us: number;
  duration_us: number;
  count: number;
  total_us: number;
  /** Distinct names among the events. */
  names: number;
  top: TimelineRangeName[];
}
