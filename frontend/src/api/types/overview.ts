// Types of `overview` (docs/http_api.md, "GET overview"). Units are in the field names: _us µs, _bytes bytes, _pct percent (0-100).

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
  /** Kernel time (µs) in the steps window whose occupancy is unknown (Kineto's 0 for "not
   * computed", e.g. Hopper nvjet/wgmma kernels), left out of achieved occupancy. */
  kernel_us_without_occupancy?: number;
  tensor_core_pct: number | null;
  /** ADDED: "GPU" (CUDA, ROCm) or the accelerator's name ("MTIA"), whose card leaves out the GPU-only measures. */
  device_type?: string;
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
  /** Display name per category key (ADDED); absent from older servers. */
  category_labels?: Record<string, string>;
  steps: StepBreakdown[];
  average: AverageBreakdown;
  /** Each category's share of the average step (%, per category key; null without steps), as the CLI prints it. */
  average_pct: Record<string, number | null>;
  gpus: GpuInfo[];
  recommendations: string[];
  /** The same recommendations with their rule, addressed time and threshold; absent from an older server. */
  recommendation_details?: RecommendationDetail[];
  /** "About this trace" warnings; absent from an older server. */
  about?: AboutNote[];
  /** The runtime-calls table; absent from an older server. */
  runtime_calls?: RuntimeCalls;
}

/** One recommendation of the file's one list (docs/http_api.md): the time it addresses and its threshold. */
export interface RecommendationDetail {
  rule: string;
  text: string;
  /** µs over `basis`; absent for byte-based advice (memory_peak). */
  addressed_us?: number;
  threshold_us?: number;
  basis?: "average_step" | "steps_window" | "median_step";
  addressed_bytes?: number;
  threshold_bytes?: number;
}

/** An "About this trace" warning: the trace cannot explain some time, or is not a run of steps. */
export interface AboutNote {
  kind: string;
  text: string;
}

/** An operator or Python frame that issued a runtime API's calls. */
export interface RuntimeCallIssuer {
  name: string;
  calls: number;
  total_us: number;
}

export interface RuntimeCallRow {
  api: string;
  calls: number;
  total_us: number;
  window_us: number;
  window_pct: number | null;
  blocks: boolean;
  blocking_calls: number;
  blocking_us: number;
  blocking_kind: string | null;
  operators: RuntimeCallIssuer[];
  frames: RuntimeCallIssuer[];
}

export interface RuntimeCalls {
  window_us: number;
  apis: number;
  rows: RuntimeCallRow[];
}

export type OverviewResponse = OverviewLoading | OverviewError | OverviewReady;

/** A Composer engine event (`event/forward`…), outside the exclusive step breakdown. */
export interface TrainerEvent {
  name: string;
  total_us: number;
  mean_per_step_us: number;
}

/** A counter series (`cpu/cpu_percent`…); times in µs relative to the first step. */
export interface SystemMetric {
  name: string;
  ts_us: number[];
  values: number[];
}

export interface OverviewExtras {
  trainer_events?: TrainerEvent[];
  system_metrics?: SystemMetric[];
}
