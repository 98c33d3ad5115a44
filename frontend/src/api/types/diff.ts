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
  /** ADDED: the time the verdict compared; always the host total. */
  compared?: "device_total_us" | "host_total_us";
  /** ADDED: Δ of the compared time (µs per step); absent from older servers. */
  change_us?: number;
  /** ADDED: why the verdict is what it is (which bound kept a row unchanged). */
  reason?: DiffReason;
  /** ADDED: the baseline path of an operator whose parent changed (its `path` is the experiment's); null otherwise. */
  moved_from?: string[] | null;
  has_children: boolean;
  baseline: OpTimes | null;
  experiment: OpTimes | null;
  delta: OpTimes;
  cumulative_delta_us: number;
}

export type DiffReason = "one_side" | "changed" | "within_us" | "within_pct";

/** ADDED: one level's waterfall: rows summed + remainder = the step-total Δ (µs per step). */
export interface DiffWaterfall {
  rows_us: number;
  remainder_us: number;
  total_us: number;
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

/** The verdict rule: faster/slower when the compared time changes by more than both (ADDED). */
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
  /** ADDED: absent from older servers. */
  thresholds?: DiffThresholds;
  /** Display name per category key (ADDED); absent from older servers. */
  category_labels?: Record<string, string>;
  /** ADDED; absent from older servers. */
  waterfall?: DiffWaterfall;
}
