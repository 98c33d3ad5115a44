// Overview fields added by issue 8 (Composer traces). Kept apart from types.ts; both are optional so
// older servers still type-check.

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
