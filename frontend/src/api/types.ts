// Types for the JSON the server sends. They mirror docs/http_api.md field by field; keep them in step.
// Units are in the field names: _us microseconds, _bytes bytes, _pct percent (0-100).

import type { ArtifactInfo } from "./memoryTypes";

export type SpanState = "queued" | "loading" | "ready" | "error";

export interface SpanInfo {
  /** 1-based position among the worker's files, as a string. */
  span: string;
  /** Path relative to the logdir. */
  path: string;
  size_bytes: number;
  state: SpanState;
  /** 0..1; meaningful while state is "loading". */
  progress: number;
  error: string | null;
  warnings: string[];
  /** About this file, nothing to act on; absent from an older server. */
  notes?: string[];
}

export interface WorkerInfo {
  worker: string;
  spans: SpanInfo[];
}

export interface RunInfo {
  /** Path relative to the logdir with "/" separators; "." is the logdir itself. */
  name: string;
  workers: WorkerInfo[];
  /** Allocator snapshots and memory-timeline exports of the run (issue 5); absent on old servers. */
  artifacts?: ArtifactInfo[];
}

export interface RunsResponse {
  logdir: string;
  loading: { files_total: number; files_done: number };
  runs: RunInfo[];
  /** Logdir-level notes, e.g. symlinks the listing did not follow; absent on old servers. */
  notices?: string[];
}

/** ``distributedInfo`` as the trace gives it: any field may be missing (null). */
export interface DistributedInfo {
  backend: string | null;
  rank: number | null;
  world_size: number | null;
}

export interface ClippedStep {
  step: string;
  host_end_us: number;
  clipped_to_us: number;
}

export interface Configuration {
  workers_in_run: number;
  device_type: "GPU" | "CPU" | string;
  gpu_count: number;
  step_count: number;
  steps_window_us: number;
  average_step_us: number;
  has_step_markers: boolean;
  /** Names of trailing steps left out because their device work was cut off; optional for old servers. */
  dropped_tail_steps?: string[];
  /** Steps whose annotation ran past the end of the profiler, cut there (µs from the first step's start). */
  clipped_steps?: ClippedStep[];
  distributed: DistributedInfo | null;
  trace_format: string;
  pytorch_version: string | null;
}

/** One step: `total_us` plus one `<category>_us` key per entry of `categories`. */
export interface StepBreakdown {
  step: string;
  start_us: number;
  end_us: number;
  total_us: number;
  [category: string]: number | string;
}

/** The average step: `total_us` plus one key per category. */
export type AverageBreakdown = { total_us: number } & Record<string, number>;

export interface GpuInfo {
  id: number;
  name: string | null;
  memory_bytes: number | null;
  /** "NVIDIA" | "AMD" | null (older servers leave it out). */
  vendor?: string | null;
  /** CUDA compute capability; null on AMD devices. */
  compute_capability: string | null;
  /** AMD gfx architecture ("gfx94x", "gfx942"); null on NVIDIA devices. */
  architecture?: string | null;
  utilization_pct: number | null;
  sm_efficiency_pct: number | null;
  /** Kernel time (µs) in the steps window with no launch geometry, left out of SM efficiency. */
  kernel_us_without_geometry?: number;
  achieved_occupancy_pct: number | null;
  tensor_core_pct: number | null;
}

export interface OverviewLoading {
  state: "loading" | "queued";
  progress?: number;
}

export interface OverviewError {
  state: "error";
  error: string;
}

export interface OverviewReady {
  state: "ready";
  run: string;
  worker: string;
  span: string;
  path: string;
  warnings: string[];
  /** About this file, nothing to act on (shown collapsed); absent from an older server. */
  notes?: string[];
  configuration: Configuration;
  categories: string[];
  steps: StepBreakdown[];
  average: AverageBreakdown;
  gpus: GpuInfo[];
  recommendations: string[];
}

export type OverviewResponse = OverviewLoading | OverviewError | OverviewReady;

/** Which file the UI shows. */
export interface Selection {
  run: string;
  worker: string;
  span: string;
}

// ---- Tables (issue 3): operators, operator_stacks, kernels, modules ----

/** Loading / failed answers share the overview's shape. */
export type TableNotReady = OverviewLoading | OverviewError;

export type OperatorGroupBy = "operator" | "input_shape" | "call_stack";
export type KernelGroupBy = "kernel" | "kernel_op_config";
export type SortOrder = "asc" | "desc";

export interface TopItem {
  name: string;
  value: number;
}

export interface OperatorRow {
  key: string;
  name: string;
  input_shape: string | null;
  call_stack: string | null;
  calls: number;
  host_self_us: number;
  host_total_us: number;
  device_self_us: number;
  device_total_us: number;
  tc_eligible: boolean;
  tc_self_pct: number | null;
  tc_total_pct: number | null;
  flops: number | null;
  tflops_per_s: number | null;
  /** Event row of the longest call ("show in trace"); absent from older servers. */
  longest_row?: number;
}

export type OperatorTimeKey = "device_self_us" | "device_total_us" | "host_self_us" | "host_total_us";

export interface OperatorsReady {
  state: "ready";
  group_by: OperatorGroupBy;
  has_device: boolean;
  default_sort: string;
  sort?: string;
  order?: SortOrder;
  offset?: number;
  total_rows: number;
  rows: OperatorRow[];
  top: Record<OperatorTimeKey, TopItem[]>;
}

export interface StackFrame {
  text: string;
  file: string | null;
  line: number | null;
  function: string | null;
}

export interface OperatorStack {
  calls: number;
  host_self_us: number;
  host_total_us: number;
  device_self_us: number;
  device_total_us: number;
  frames: StackFrame[];
}

export interface OperatorStacksReady {
  state?: "ready";
  stacks: OperatorStack[];
}

export interface KernelRow {
  key: string;
  name: string;
  op: string | null;
  grid: string | null;
  block: string | null;
  registers_per_thread: number | null;
  shared_memory_bytes: number | null;
  tc_eligible: boolean | null;
  calls: number;
  total_us: number;
  mean_us: number;
  min_us: number;
  max_us: number;
  blocks_per_sm: number | null;
  achieved_occupancy_pct: number | null;
  tensor_cores: boolean;
  longest_row?: number;
}

export interface KernelsReady {
  state: "ready";
  group_by: KernelGroupBy;
  sort?: string;
  order?: SortOrder;
  offset?: number;
  total_rows: number;
  rows: KernelRow[];
  top: TopItem[];
  tensor_core: { tensor_core_us: number; other_us: number };
}

export interface ModuleNode {
  name: string;
  occurrences: number;
  operators: number;
  host_total_us: number;
  host_self_us: number;
  device_total_us: number;
  device_self_us: number;
  children: ModuleNode[];
}

export interface ModulesReady {
  state: "ready";
  modules: ModuleNode[] | null;
}
