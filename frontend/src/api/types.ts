// Types for the JSON the server sends. They mirror docs/http_api.md field by field; keep them in step.
// Units are in the field names: _us microseconds, _bytes bytes, _pct percent (0-100).

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
}

export interface WorkerInfo {
  worker: string;
  spans: SpanInfo[];
}

export interface RunInfo {
  /** Path relative to the logdir with "/" separators; "." is the logdir itself. */
  name: string;
  workers: WorkerInfo[];
}

export interface RunsResponse {
  logdir: string;
  loading: { files_total: number; files_done: number };
  runs: RunInfo[];
}

export interface DistributedInfo {
  backend: string;
  rank: number;
  world_size: number;
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
  compute_capability: string | null;
  utilization_pct: number | null;
  sm_efficiency_pct: number | null;
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
