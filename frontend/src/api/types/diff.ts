// Types of `diff` (docs/http_api.md, "Diff"): baseline vs experiment; times per average step, µs.
import type { AverageBreakdown } from "./overview";

export type OpStatus = "added" | "removed" | "faster" | "slower" | "unchanged";

export type KernelStatus = "added" | "removed" | "present";

export interface OpTimes {
  calls: number;
  host_self_us: number;
  host_total_us: number;
  device_self_us: number;
  device_total_us: number;
}

export interface DiffOperator {
  name: string;
  path: string[];
  status: OpStatus;
  change_pct: number | null;
  /** ADDED (issue 16): the time the verdict compared (device total when either side has device time). */
  compared?: "device_total_us" | "host_total_us";
  has_children: boolean;
  baseline: OpTimes | null;
  experiment: OpTimes | null;
  delta: OpTimes;
  cumulative_delta_us: number;
}

export interface DiffKernel {
  name: string;
  baseline_calls: number;
  experiment_calls: number;
  baseline_us: number;
  experiment_us: number;
  baseline_per_step_us: number;
  experiment_per_step_us: number;
  delta_per_step_us: number;
  status: KernelStatus | string;
}

export interface DiffSteps {
  baseline: AverageBreakdown;
  experiment: AverageBreakdown;
  delta: Record<string, number>;
  relative_pct: Record<string, number | null>;
}

/** The verdict rule: faster/slower when the compared time changes by more than both (ADDED, issue 16). */
export interface DiffThresholds {
  change_pct: number;
  change_us: number;
}

export interface DiffReady {
  state: "ready";
  steps: DiffSteps;
  path: string[];
  operators: DiffOperator[];
  kernels: DiffKernel[];
  /** ADDED (issue 16): absent from older servers. */
  thresholds?: DiffThresholds;
  /** Display name per category key (ADDED, issue 16); absent from older servers. */
  category_labels?: Record<string, string>;
}
