import type { ExposedParts } from "../../api/types";
import { formatDuration } from "../../util/format";
import { exposedPercents } from "../distributed/model";

/** The exposed-time decomposition as one 100 % bar (HTML, so it is exact and testable) with a legend. */
export function ExposedBar({ parts, testId = "exposed-bar" }: { parts: ExposedParts; testId?: string }) {
  const segs = exposedPercents(parts);
  return (
    <div>
      <div className="exposed-bar" data-testid={testId} role="img" aria-label={segs.map((s) => `${s.label} ${s.pct} %`).join(", ")}>
        {segs.map((s) =>
          s.pct > 0 ? (
            <div
              key={s.key}
              className="exposed-seg"
              data-part={s.key}
              data-pct={s.pct}
              style={{ width: `${s.pct}%`, background: s.color }}
              title={`${s.label}: ${formatDuration(s.us)} (${s.pct.toFixed(1)} %)`}
            />
          ) : null,
        )}
      </div>
      <div className="exposed-legend">
        {segs.map((s) => (
          <span key={s.key}>
            <span className="swatch" style={{ background: s.color }} />
            {s.label}: {formatDuration(s.us)} ({s.pct.toFixed(1)} %)
          </span>
        ))}
      </div>
    </div>
  );
}
