// OOM forensics of a snapshot (`snapshot_oom`), per-rank snapshots side by side
// (`snapshot_ranks`) and export_memory_timeline HTML files (`memory_html`). Units are in the names.

export interface OomStreamRow {
  /** The CUDA stream as the snapshot wrote it (an integer handle; text when beyond 64 bits). */
  stream: number | string | null;
  segments: number;
  reserved_bytes: number;
  allocated_bytes: number;
  free_bytes: number;
  largest_free_block_bytes: number;
  free_blocks: number;
  /** (1 − largest free block / free) × 100. */
  fragmentation_pct: number;
  is_oom_stream: boolean;
}

export interface OomLiveRow {
  bytes: number;
  stack: number;
  frame: string | null;
  time: number | null;
  before_history: boolean;
}

export interface OomGrowthRow {
  frame: string | null;
  stack: number;
  net_bytes: number;
  allocated_bytes: number;
  freed_bytes: number;
  allocs: number;
  frees: number;
}

export interface SnapshotOomReady {
  state: "ready";
  path: string;
  device: string | null;
  detected_by: "history" | "file_name" | null;
  oom: {
    index: number;
    time: number;
    requested_bytes: number;
    device_free_bytes: number | null;
    stream: number | string | null;
    active_bytes_at_oom: number;
    reserved_bytes_at_oom: number | null;
  } | null;
  ooms: { index: number; time: number; requested_bytes: number }[];
  /** "oom": the dump is the OOM's state; "reconstructed": rebuilt from the dump and the entries after the OOM. */
  state_at: "oom" | "reconstructed" | "dump";
  entries_after_oom: number | null;
  streams: OomStreamRow[];
  totals: Omit<OomStreamRow, "stream" | "is_oom_stream"> | null;
  /** The dump's own totals (differ from `totals` when state_at is "reconstructed"). */
  dump_totals: Omit<OomStreamRow, "stream" | "is_oom_stream"> | null;
  largest_live: OomLiveRow[];
  growth: { last_n: number; entries: number; start_time: number | null; net_bytes: number; rows: OomGrowthRow[] } | null;
}

export interface RankPeakRow {
  rank: number;
  run: string;
  path: string;
  state: string;
  error: string | null;
  peak_active_bytes: number | null;
  device: string | null;
  peak_time: number | null;
  /** peak / median of the ranks' peaks (1.0 is the median). */
  peak_to_median: number | null;
  /** (peak_to_median − 1) × 100: % above (+) or below (−) the median. */
  vs_median_pct: number | null;
}

export interface SnapshotRanksReady {
  state: "ready";
  path: string;
  ranks: RankPeakRow[];
  median_peak_bytes: number | null;
  max_peak_bytes: number | null;
  min_peak_bytes: number | null;
  outlier_rank: number | null;
  outlier_peak_to_median: number | null;
  /** The outlier's vs_median_pct (signed %). */
  outlier_vs_median_pct: number | null;
  /** |peak_to_median − 1| at which the outlier is named (0.1). */
  outlier_threshold: number;
  /** outlier_threshold in % (10). */
  outlier_threshold_pct: number;
}

export interface MemoryHtmlReady {
  state: "ready";
  path: string;
  content_type: "image/png";
  width_px: number;
  height_px: number;
  image_bytes: number;
  html_bytes: number;
}

/** One row of a `snapshot_attribution` table: bytes alive at the peak held by one operator/step/module/frame. */
export interface AliveRow {
  name: string;
  bytes: number;
  allocations: number;
  /** The stack of the row's largest allocation (for `snapshot_stack`); −1 for none. */
  stack: number;
}

/** `snapshot_attribution`: who holds the memory at a device's peak. */
export interface SnapshotAttributionReady {
  state: "ready";
  path: string;
  device: string;
  peak_active_bytes: number;
  /** Σ of every table (= peak_active_bytes). */
  alive_bytes: number;
  allocations: number;
  /** The run's trace of the same rank and GPU matched on the wall clock; null when none matches. */
  trace: { worker: string; span: string; path: string; overlap_us: number } | null;
  by_frame: AliveRow[];
  by_operator: AliveRow[] | null;
  by_step: AliveRow[] | null;
  by_module: AliveRow[] | null;
}
