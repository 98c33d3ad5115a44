import type { RunInfo, Selection, SpanInfo } from "../api/types";
import type { PartialSelection } from "../state/hashState";
import { findRun, findWorker } from "../state/selection";

interface SelectorsProps {
  runs: RunInfo[];
  selection: Selection;
  onSelect: (next: PartialSelection) => void;
}

export function runLabel(name: string): string {
  return name === "." ? ". (logdir root)" : name;
}

export function spanLabel(span: SpanInfo): string {
  switch (span.state) {
    case "ready":
      return span.span;
    case "loading":
      return `${span.span} (loading ${Math.round(span.progress * 100)} %)`;
    case "queued":
      return `${span.span} (queued)`;
    case "error":
      return `${span.span} (error)`;
  }
}

/** Run, Worker and Span pickers. Changing an outer one resets the inner ones to their first entry. */
export function Selectors({ runs, selection, onSelect }: SelectorsProps) {
  const run = findRun(runs, selection.run);
  const worker = findWorker(run, selection.worker);
  return (
    <div className="selectors">
      <label className="selector">
        <span className="selector-label">Run</span>
        <select
          data-testid="run-select"
          value={selection.run}
          onChange={(e) => onSelect({ run: e.target.value })}
        >
          {runs.map((r) => (
            <option key={r.name} value={r.name}>
              {runLabel(r.name)}
            </option>
          ))}
        </select>
      </label>
      <label className="selector">
        <span className="selector-label">Worker</span>
        <select
          data-testid="worker-select"
          value={selection.worker}
          onChange={(e) => onSelect({ run: selection.run, worker: e.target.value })}
        >
          {(run?.workers ?? []).map((w) => (
            <option key={w.worker} value={w.worker}>
              {w.worker}
            </option>
          ))}
        </select>
      </label>
      <label className="selector">
        <span className="selector-label">Span</span>
        <select
          data-testid="span-select"
          value={selection.span}
          onChange={(e) => onSelect({ ...selection, span: e.target.value })}
        >
          {(worker?.spans ?? []).map((s) => (
            <option key={s.span} value={s.span} title={s.path}>
              {spanLabel(s)}
            </option>
          ))}
        </select>
      </label>
    </div>
  );
}
