import type { RecommendationDetail } from "../../api/types";
import { Card } from "../../components/Card";
import { formatBytes, formatDuration } from "../../util/format";

const BASIS: Record<string, string> = {
  average_step: "per average step",
  steps_window: "in the steps window",
  median_step: "over the median step",
  kernel_time: "of kernel time",
};

/** "addresses 8.12 ms in the steps window (threshold 500 µs)": what a recommendation is about. */
export function addressedText(d: RecommendationDetail): string | null {
  if (d.addressed_us !== undefined && d.threshold_us !== undefined) {
    const basis = d.basis ? ` ${BASIS[d.basis] ?? d.basis}` : "";
    return `addresses ${formatDuration(d.addressed_us)}${basis} (threshold ${formatDuration(d.threshold_us)})`;
  }
  if (d.addressed_bytes !== undefined && d.threshold_bytes !== undefined) {
    return `addresses ${formatBytes(d.addressed_bytes)} (threshold ${formatBytes(d.threshold_bytes)})`;
  }
  return null;
}

/** The file's one list of recommendations, as plain text, each with its rule and the time it addresses. */
export function RecommendationList({ items, details, testId }: { items: string[]; details?: RecommendationDetail[]; testId: string }) {
  const rows = details && details.length === items.length ? details : items.map((text) => ({ rule: "", text }));
  return (
    <ul className="recommendations" data-testid={testId}>
      {rows.map((d, i) => {
        const why = addressedText(d);
        return (
          <li key={i} data-rule={d.rule || undefined}>
            {d.text}
            {why ? (
              <div className="muted recommendation-addressed" data-testid="recommendation-addressed">
                {d.rule} · {why}
              </div>
            ) : null}
          </li>
        );
      })}
    </ul>
  );
}

/** The server's recommendations, as plain text. */
export function Recommendations({ items, details }: { items: string[]; details?: RecommendationDetail[] }) {
  return (
    <Card title="Recommendations">
      {items.length === 0 ? (
        <p className="muted" data-testid="recommendations">
          No recommendations for this trace.
        </p>
      ) : (
        <RecommendationList items={items} details={details} testId="recommendations" />
      )}
    </Card>
  );
}
