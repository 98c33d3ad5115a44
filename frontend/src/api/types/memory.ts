// Types of the memory routes (docs/http_api.md, "Memory"). Units are in the field names:
// _us microseconds, _bytes bytes. Snapshot times are µs since the first entry, or entry indices.
import type { SortOrder } from "./tables";

export interface Curve {
  ts_us: number[];
  bytes: number[];
}

export interface MemoryDevice {
  device: string;
  reconstructed: boolean;
  peak_allocated_bytes: number;
  peak_allocated_ts: number;
  peak_reserved_bytes: number | null;
  /** the peaks inside the requested window (the value held at its start counts); null before any event */
  range_peak_allocated_bytes: number | null;
  range_peak_allocated_ts: number | null;
  range_peak_reserved_bytes: number | null;
  allocated: Curve;
  reserved: Curve | null;
}

export interface MemoryReady {
  state: "ready";
  pairs_reason: string | null;
  devices: MemoryDevice[];
}

export interface MemoryEventRow {
  op: string | null;
  device: string;
  size_bytes: number;
  alloc_us: number | null;
  free_us: number | null;
  duration_us: number | null;
  addr: number | null;
}

export interface MemoryEventsReady {
  state: "ready";
  reason: string | null;
  sort: string;
  order: SortOrder;
  total_rows: number;
  offset: number;
  rows: MemoryEventRow[];
}

export interface MemoryStatRow {
  name: string;
  calls: number;
  size_increase_bytes: number;
  self_size_increase_bytes: number;
  allocations: number;
  self_allocations: number;
  allocation_bytes: number;
  self_allocation_bytes: number;
  /** null when the trace's memory events have no Addr */
  self_not_freed_bytes: number | null;
}

export interface MemoryStatsReady {
  state: "ready";
  sort: string;
  order: SortOrder;
  total_rows: number;
  offset: number;
  device: string;
  rows: MemoryStatRow[];
}

export interface SnapshotLargest {
  bytes: number;
  frame: string | null;
  stack: number;
  /** null for a block allocated before the history began */
  time: number | null;
  before_history: boolean;
}

export interface SnapshotMarker {
  action: "oom" | "snapshot" | string;
  time: number;
  bytes: number;
}

export interface SnapshotAnnotation {
  stage?: string;
  name?: string;
  device?: number;
  time_us?: number;
  [key: string]: unknown;
}

export interface SnapshotReady {
  state: "ready";
  path: string;
  layout: string;
  time_unit: "us" | "entry";
  history_recorded: boolean;
  /** peak_active_bytes counts requested bytes; allocated_at_dump_bytes the dump's block bytes
   * (= torch.cuda.memory_allocated() at the dump). */
  devices: { device: string; peak_active_bytes: number; peak_time: number | null;
    allocated_at_dump_bytes?: number; largest: SnapshotLargest[] }[];
  segment_devices: number[];
  annotations: SnapshotAnnotation[];
  markers: Record<string, SnapshotMarker[]>;
}

export interface SnapshotBand {
  alloc_time: number;
  free_time: number | null;
  bytes: number;
  stack: number;
  frame: string | null;
  /** ADDED: blocks allocated before the history began (drawn first, below the others). */
  before_history?: boolean;
  /** ADDED: how many blocks the band stands for (the blocks held from before the history to the dump are one band). */
  blocks?: number;
}

export interface SnapshotTimelineReady {
  state: "ready";
  device: string;
  start: number;
  end: number;
  time_unit: "us" | "entry";
  active_bytes: number[];
  reserved_bytes: number[];
  bands: SnapshotBand[];
  /** ADDED: the history's allocations alive in the window; `bands_left_out` of them are not drawn, none larger than `left_out_max_bytes`. */
  bands_alive?: number;
  bands_left_out?: number;
  left_out_max_bytes?: number | null;
  markers: SnapshotMarker[];
}

export type BlockState = "active_allocated" | "active_pending_free" | "inactive" | string;

export interface SnapshotBlock {
  address: number;
  size: number;
  requested_size: number;
  state: BlockState;
  /** Index for snapshot_stack; -1 when the block has no frames. */
  stack: number;
}

export interface SnapshotSegment {
  address: number;
  total_size: number;
  stream: number;
  segment_type: string;
  blocks: SnapshotBlock[];
}

export interface SnapshotSegmentsReady {
  state: "ready";
  device: string;
  segments: SnapshotSegment[];
}

export interface SnapshotAllocationRow {
  bytes: number;
  alloc_time: number | null;
  free_time: number | null;
  frame: string;
  stack: number;
}

export interface SnapshotAllocationsReady {
  state: "ready";
  device: string;
  rows: SnapshotAllocationRow[];
}

export interface StackFrameInfo {
  filename: string;
  line: number;
  name: string;
}

export interface SnapshotStackReady {
  state: "ready";
  frames: StackFrameInfo[];
}

export interface MemoryTimelineExportReady {
  state: "ready";
  path: string;
  form: "raw" | "times_sizes";
  categories: string[];
  times_us: number[];
  bytes: number[][];
  peak_bytes: number;
  peak_time_us: number;
}

/** finetuning-scheduler MemProfiler `rank_<r>_memory_stats.yaml` (route `memprofiler_stats`). */
export interface MemProfilerSnapshot {
  /** `<rank>.<function>.<iteration>.<phase>`, e.g. `0.training_step.2.start`. */
  key: string;
  rank: number;
  function: string;
  iteration: number;
  phase: "start" | "end";
  /** torch.cuda.memory_stats() keys (bytes or counts), rss/vms and npp/rss hook values (bytes). */
  values: Record<string, number | null>;
}

export interface MemProfilerMetric {
  key: string;
  label: string;
  unit: "bytes" | "count";
}

export interface MemProfilerStatsReady {
  state: "ready";
  path: string;
  rank: number | null;
  warnings: string[];
  metrics: MemProfilerMetric[];
  snapshots: MemProfilerSnapshot[];
}

/** A MemProfiler `fsdp_mem_*.log` text report (route `memprofiler_log`). */
export interface MemProfilerLogReady {
  state: "ready";
  path: string;
  text: string;
  size_bytes: number;
  truncated: boolean;
}
