// Types of `distributed` and `insights` (docs/http_api.md, "Distributed and insights"; definitions in
// tb_plugin/analysis/distributed.py and insights.py). Times are µs, sizes bytes, bandwidths GB/s.

import type { DistributedInfo, GpuInfo, RecommendationDetail } from "./overview";

// `distributed?run=&span=`: the run's workers compared as ranks of one job at one span.
export interface RankStep {
  step: string;
  computation_us: number;
  overlap_us: number;
  communication_us: number;
  other_us: number;
  total_us: number;
}

export interface CommOp {
  name: string;
  calls: number;
  total_bytes: number | null;
  mean_bytes: number | null;
  latency_us: number;
  transfer_us: number | null;
  sync_us: number | null;
}

export interface RankRow {
  rank: number;
  worker: string;
  /** Averages per step. */
  computation_us: number;
  overlap_us: number;
  communication_us: number;
  other_us: number;
  total_us: number;
  /** Sums over collectives. */
  transfer_us: number | null;
  sync_us: number | null;
  latency_us: number | null;
  /** Per-step rows: sent by older servers only; now paged with `?rank=` (`view.rank_steps`). */
  steps?: RankStep[];
  /** How many per-step rows the rank has (absent from older servers). */
  steps_total?: number;
  comm_ops: CommOp[];
  /** ADDED: the rank's devices, as its own overview has them; absent from older servers. */
  distributed?: DistributedInfo | null;
  gpus?: GpuInfo[];
}

export interface Collective {
  name: string;
  calls: number;
  bytes: number | null;
  transfer_us: number | null;
  sync_us: number | null;
  group_size: number | null;
  algbw_gbps: number | null;
  busbw_gbps: number | null;
  /** busbw ÷ algbw for this collective and communicator size (absent from older servers). */
  bus_factor?: number;
  /** ADDED: calls whose message size is unknown (left out of `bytes`; `bytes` is null when all are). */
  calls_without_bytes?: number;
}

/** Per rank: how often it arrived last at a matched collective instance and how long the others waited. */
export interface Arrival {
  rank: number;
  instances: number;
  last: number;
  last_share: number;
  /** µs: the others' wait for this rank, summed over the instances it was last at, and per such instance. */
  wait_total_us: number;
  wait_mean_us: number;
  /** Binomial probability of being last this often by chance. */
  chance: number;
  straggler: boolean;
  by_type: { name: string; last: number; instances: number }[];
  /** The evidence in words. */
  text: string;
}

export interface Matching {
  method: string;
  by_type: { name: string; matched: number; unmatched: number }[];
  messages: string[];
}

/** ADDED: one rank's share of a process group (µs, bytes). */
export interface GroupRank {
  rank: number;
  calls: number;
  time_us: number;
  bytes: number;
  /** The group's kernel time on this rank not overlapped by computation kernels. */
  exposed_us: number;
}

/** ADDED: a process group of the loaded ranks' collectives; time/bytes/exposed are means per loaded member rank. */
export interface ProcessGroup {
  name: string;
  description: string | null;
  /** FSDP shard, TP, PP, EP, CP, DDP, world…, read from the description; null when it says none. */
  role: string | null;
  ranks: number[] | null;
  size: number | null;
  ranks_loaded: number;
  calls: number;
  time_us: number;
  bytes: number;
  exposed_us: number;
  bandwidth_gbps: number | null;
  by_rank: GroupRank[];
}

/** ADDED: one segment of a step's critical path (µs). */
export interface CriticalPathSegment {
  rank: number;
  category: "kernel" | "cpu" | "communication" | "waiting";
  name: string;
  /** The segment's event row in that rank's trace (kernel or leaf host event); -1 for waiting. */
  row: number;
  /** On the rank's own trace clock (what its timeline shows). */
  start_us: number;
  /** From the step window's start on the common clock. */
  at_us: number;
  dur_us: number;
  /** Communication segments only: the rank whose kernel started last, how long `rank` waited for it, and its work before. */
  late_rank?: number | null;
  wait_us?: number;
  late_work?: { name: string; category: string; dur_us: number; annotation?: string | null } | null;
  /** Host segments: the enclosing annotation and Python frame (context, never the segment's name); absent from older servers. */
  annotation?: string | null;
  python?: string | null;
}

/** Work on the path grouped by category and name: total µs and number of segments. */
export interface CriticalPathItem {
  category: CriticalPathSegment["category"];
  name: string;
  us: number;
  segments: number;
}

/** ADDED: a step's critical path across the loaded ranks; Σ by_category = Σ by_rank + by_rank_other.us = length_us. */
export interface CriticalPathStep {
  step: string;
  length_us: number;
  by_category: { kernel: number; cpu: number; communication: number; waiting: number };
  /** Each category's share of length_us (%; null for a path of length 0), as the CLI prints it. */
  by_category_pct: { kernel: number | null; cpu: number | null; communication: number | null; waiting: number | null };
  /** The ranks of most time on the path (at most 16), in rank order; pct: the rank's share of length_us (%; null for a path of length 0). */
  by_rank: { rank: number; us: number; pct: number | null }[];
  /** The ranks left out of `by_rank` and their time (absent from older servers). */
  by_rank_other?: { ranks: number; us: number };
  /** False: the segment lists were left out (one step per answer has them; ask with `?step=`). Absent from older servers (always detailed). */
  detailed?: boolean;
  /** The ten longest segments (absent when not `detailed`). */
  segments?: CriticalPathSegment[];
  /** The ten collectives on the path whose rank waited longest for a late rank (absent when not `detailed`). */
  collectives?: CriticalPathSegment[];
  truncated: boolean;
  /** The ten items of most time on the path (absent from older servers). */
  top_items?: CriticalPathItem[];
  /** Path time while the host sat in a blocking call waiting for that device work (absent from older servers). */
  host_blocked_us?: number;
}

export interface DistributedData {
  world_size: number | null;
  ranks_present: number;
  instances: { matched: number; total: number };
  stragglers: number[];
  /** Absent from older servers. */
  arrivals?: Arrival[];
  matching?: Matching;
  collectives: Collective[];
  /** ADDED: with k of n ranks loaded, why the bandwidths are lower bounds; null otherwise. */
  bandwidth_caveat?: string | null;
  ranks: RankRow[];
  /** ADDED; absent from older servers. */
  groups?: ProcessGroup[];
  /** ADDED: e.g. no process-group args, so one group (also in the response's messages). */
  groups_messages?: string[];
  /** ADDED: one entry per step; absent from older servers. */
  critical_path?: CriticalPathStep[];
  /** The number of critical-path steps (those listed are the first 1000). */
  critical_path_total?: number;
  /** One page of a rank's per-step rows, with `?rank=R&offset=&limit=`; null otherwise. */
  rank_steps?: { rank: number; found: boolean; total: number; offset: number; rows: RankStep[] } | null;
}

export interface DistributedResponse {
  state: "ready";
  run: string;
  span: string;
  /** Every span of the run. */
  spans: string[];
  /** The run's files at this span, and how many of them loaded (the ranks compared); absent from older servers. */
  files?: number;
  ranks_loaded?: number;
  /** Why `view` is null, in words; null with a view. */
  reason?: string | null;
  /** ADDED: why `view` is null, as a code the UI words; null with a view. */
  reason_code?: "no_file" | "one_file" | "ranks_failed" | null;
  messages: string[];
  /** With one loaded rank: how its rank was read (no distributedInfo), a note rather than a warning. */
  notes?: string[];
  view: DistributedData | null;
  /** The advice that holds on several ranks, said once for the run (as the text report's); null for fewer than two ranks, absent from older servers. */
  recommendations?: RunRecommendation[] | null;
  /** ADDED: with one loaded rank (view null), that rank's own process groups and critical path; null otherwise, absent from older servers. */
  single_rank?: SingleRank | null;
}

/** A recommendation that holds on several ranks: `text` starts "Ranks 0–7: …" and ends with the spread. */
export interface RunRecommendation {
  rule: string;
  key: string;
  ranks: number[];
  ranks_text: string;
  rank_count: number;
  addressed_us?: { min: number; median: number; max: number };
  addressed_bytes?: { min: number; median: number; max: number };
  threshold_us?: { min: number; median: number; max: number };
  text: string;
}

/** ADDED: one rank's own process groups and critical path (the walk without cross-rank edges). */
export interface SingleRank {
  rank: number;
  worker: string;
  groups: ProcessGroup[];
  groups_messages: string[];
  critical_path: CriticalPathStep[];
  critical_path_total?: number;
}

/** Bin i spans [edges_us[i], edges_us[i+1]); the last edge null means +∞. */
export interface Histogram {
  edges_us: (number | null)[];
  counts: number[];
}

/** Idle split of one GPU over the steps window: idle = window − union of busy time over all its streams. */
export interface GpuIdle {
  device: number;
  window_us: number;
  busy_us: number;
  idle_us: number;
  host_wait_us: number;
  short_gap_us: number;
  other_us: number;
  /** Host-wait gaps ended by a kernel shorter than its launch call. */
  launch_bound_us: number;
  launch_bound_gaps: number;
}

/** Idle split of one stream alone (window − that stream's busy time); never summed across streams. */
export interface StreamIdle {
  device: number;
  stream: number;
  carries: "compute" | "communication" | "copy";
  busy_us: number;
  idle_us: number;
  host_wait_us: number;
  short_gap_us: number;
  other_us: number;
}

export interface IdleInsights {
  short_gap_threshold_us: number;
  window_us: number;
  gpus: GpuIdle[];
  per_stream: StreamIdle[];
  gap_histogram: Histogram;
}

/** p50/p95 per kernel (null without kernels) and the time-union of the kernels' intervals in the steps window, µs. */
export interface Spread {
  p50: number | null;
  p95: number | null;
  union_us: number;
}

export interface LaunchInsights {
  kernels: number;
  p50: number | null;
  p95: number | null;
  max: number | null;
  short_kernel_share: number | null;
  /** Part of each launch delay during which the kernel's GPU was idle. */
  overhead_us: Spread;
  /** Part of each launch delay during which the GPU was busy with earlier work. */
  queueing_us: Spread;
  graphs: { replays: number; captures: number };
  delay_histogram: Histogram;
  duration_histogram: Histogram;
}

export interface ExposedParts {
  compute_us: number;
  exposed_comm_us: number;
  exposed_memcpy_us: number;
  idle_us: number;
}

export interface ExposedInsights extends ExposedParts {
  window_us: number;
  gpus: (ExposedParts & { device: number })[];
}

export interface SyncByOperator {
  op: string;
  calls: number;
  sync_us: number;
  gpu_idle_after_us: number;
  apis: Record<string, number>;
}

export interface SyncInsights {
  sync_calls: number;
  sync_us: number;
  cuda_sync_events: number;
  cuda_sync_us: number;
  gpu_idle_after_us: number;
  by_operator: SyncByOperator[];
}

export interface InsightsReady {
  state: "ready";
  idle: IdleInsights;
  launch: LaunchInsights;
  exposed: ExposedInsights;
  syncs: SyncInsights;
  /** The file's one list of recommendations (the Overview's). */
  recommendations: string[];
  recommendation_details?: RecommendationDetail[];
}

/** ADDED: `critical_path?run=&worker=&span=`: every segment of each step's critical path on this file's rank (µs on the timeline's clock, as `timeline` items), in time order. */
export interface CriticalPathOverlayStep {
  step: string;
  length_us: number;
  truncated: boolean;
  /** The path's time on this rank. */
  on_rank_us: number;
  /** The step's items of most time on the path (all ranks; absent from older servers). */
  top_items?: CriticalPathItem[];
  host_blocked_us?: number;
  /** Segments on this rank, and how many are listed (the longest, past the server's cap). */
  total: number;
  shown: number;
  segments: {
    start_us: number[];
    dur_us: number[];
    category: CriticalPathSegment["category"][];
    name: string[];
    /** The event (timeline_event?row=); -1 for waiting. */
    row: number[];
    /** The timeline track it is drawn on (waiting: the track of the work that waited). */
    track: number[];
  };
}

export interface CriticalPathOverlay {
  state: "ready";
  rank: number;
  worker: string;
  /** False for a single-rank run (the path without cross-rank edges). */
  cross_rank: boolean;
  messages: string[];
  steps: CriticalPathOverlayStep[];
}
