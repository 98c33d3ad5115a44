// The `insights?run=&worker=&span=` route (docs/http_api.md, "Distributed and insights"; definitions in
// tb_plugin/analysis/insights.py). Times are µs.
import type { Selection } from "./types";

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

/** p50/p95 (null without kernels) and total, µs. */
export interface Spread {
  p50: number | null;
  p95: number | null;
  total: number;
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
  recommendations: string[];
}

export function insightsUrl(sel: Selection): string {
  const params = new URLSearchParams({ run: sel.run, worker: sel.worker, span: sel.span });
  return `insights?${params.toString()}`;
}
