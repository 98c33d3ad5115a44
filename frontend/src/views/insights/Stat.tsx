import type { ReactNode } from "react";

/** A labelled headline number. */
export function Stat({ label, value, testId }: { label: ReactNode; value: string; testId?: string }) {
  return (
    <div className="stat">
      <span className="stat-label">{label}</span>
      <span className="stat-value" data-testid={testId}>
        {value}
      </span>
    </div>
  );
}
