// The diff route (issue 8): baseline vs experiment, each a (run, worker, span), possibly from different
// runs. Types mirror the server's answer; times are per average step, in µs.
import type { AverageBreakdown, Selection } from "./types";

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

export interface DiffReady {
  state: "ready";
  steps: DiffSteps;
  path: string[];
  operators: DiffOperator[];
  kernels: DiffKernel[];
}

/** Baseline and experiment. */
export interface DiffSelection {
  base: Selection;
  exp: Selection;
}

/** The thresholds the server applies (tb_plugin/analysis/diff.py CHANGE_PCT, CHANGE_US). */
export const CHANGE_PCT = 5;
export const CHANGE_US = 10;
export const THRESHOLD_TEXT =
  `An operator is faster or slower when its time per step changes by more than ${CHANGE_PCT} % and more than ` +
  `${CHANGE_US} \u00b5s; otherwise it is unchanged. The time compared is the device total when either side ` +
  "has device time, else the host total. Added / removed: present on one side only.";

/** `diff?base_run=…&base_worker=…&base_span=…&exp_run=…&exp_worker=…&exp_span=…[&path=[…]]`. */
export function diffUrl(sel: DiffSelection, path: readonly string[] = []): string {
  const params = new URLSearchParams();
  for (const [prefix, side] of [["base", sel.base], ["exp", sel.exp]] as const) {
    params.set(`${prefix}_run`, side.run);
    params.set(`${prefix}_worker`, side.worker);
    params.set(`${prefix}_span`, side.span);
  }
  if (path.length > 0) params.set("path", JSON.stringify(path));
  return `diff?${params.toString()}`;
}
