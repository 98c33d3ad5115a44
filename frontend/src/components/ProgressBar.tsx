interface ProgressBarProps {
  /** 0..1; clamped. */
  value: number;
  state?: string;
  label: string;
}

/** A thin horizontal bar; the state sets its color (see .progress-bar[data-state] in the CSS). */
export function ProgressBar({ value, state, label }: ProgressBarProps) {
  const clamped = Number.isFinite(value) ? Math.min(1, Math.max(0, value)) : 0;
  const pct = Math.round(clamped * 100);
  return (
    <div
      className="progress-bar"
      data-state={state}
      role="progressbar"
      aria-label={label}
      aria-valuemin={0}
      aria-valuemax={100}
      aria-valuenow={pct}
    >
      <div className="progress-bar-fill" style={{ width: `${pct}%` }} />
    </div>
  );
}
