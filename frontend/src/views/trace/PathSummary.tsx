// The line under the Trace view's toolbar while the critical-path overlay is on: what is drawn, per step
// (for the selected worker; with "all ranks on one clock", on how many ranks the path is drawn).
import type { CriticalPathOverlay } from "../../api/types";
import { Notice } from "../../components/Notice";
import { formatDuration, formatNumber } from "../../util/format";
import { PATH_CATEGORIES } from "../distributed/criticalPathCharts";

interface Props {
  doc: CriticalPathOverlay | null;
  error: string | null;
  loading: boolean;
  /** With several ranks shown: how many have their part of the path drawn. */
  ranksDrawn?: number;
}

export function PathSummary({ doc, error, loading, ranksDrawn }: Props) {
  if (error) return <Notice kind="warning">Cannot load the critical path: {error}</Notice>;
  if (loading || !doc) return <div className="muted">Loading the critical path…</div>;
  const shown = doc.steps.reduce((n, s) => n + s.shown, 0);
  const total = doc.steps.reduce((n, s) => n + s.total, 0);
  return (
    <div className="trace-hint" data-testid="path-overlay-summary">
      <span data-testid="path-overlay-count">
        Critical path{doc.cross_rank ? " across ranks" : ""}: {formatNumber(shown)} segment{shown === 1 ? "" : "s"} on rank {doc.rank}
        {shown < total ? ` (the longest of ${formatNumber(total)})` : ""}
      </span>
      {ranksDrawn !== undefined ? <span data-testid="path-overlay-ranks">{` · drawn on the ${formatNumber(ranksDrawn)} ranks shown`}</span> : null}
      {doc.steps.map((s) => (
        <span key={s.step} className="muted" data-testid="path-overlay-step">
          {" · "}step {s.step}: {formatDuration(s.on_rank_us)} of {formatDuration(s.length_us)} here
          {s.top_items?.length ? <span data-testid="path-overlay-items">{`; most time: ${s.top_items.slice(0, 3).map((it) => `${it.name} ${formatDuration(it.us)} (${formatNumber(it.segments)})`).join(", ")}`}</span> : null}
        </span>
      ))}
      {" · "}
      {PATH_CATEGORIES.map((c) => (
        <span key={c.key} style={{ borderBottom: `3px solid ${c.color}`, marginRight: 8 }}>
          {c.label}
        </span>
      ))}
      {doc.messages.map((m, i) => (
        <Notice key={i} kind="warning">
          {m}
        </Notice>
      ))}
    </div>
  );
}
