// The Trace view's controls: search with match stepping, step picker, zoom reset, range-select mode,
// "all ranks on one clock", and the trace file (download, Perfetto).
import { useState } from "react";
import type { Selection, TimelineStep } from "../../api/types";
import { formatNumber } from "../../util/format";
import { formatTimeUs } from "./math";
import { openInPerfetto } from "./perfetto";
import { matchCountText } from "./traceControls";

interface TraceToolbarProps {
  selection: Selection;
  fileUrl: string;
  searchText: string;
  onSearchText: (text: string) => void;
  regex: boolean;
  onRegex: (on: boolean) => void;
  /** The counter text's inputs: visited match, matches listed, matches in all; error instead. */
  matchIdx: number;
  shown: number;
  total: number | null;
  searchError: string | null;
  onMatch: (i: number) => void;
  steps: TimelineStep[];
  shownStep: number;
  onStep: (i: number) => void;
  onReset: () => void;
  selectMode: boolean;
  onSelectMode: (on: boolean) => void;
  /** "All ranks on one clock": shown when the run has several workers; `clock` says how they align. */
  allRanks: { on: boolean; clock: string | null } | null;
  onAllRanks: (on: boolean) => void;
  /** The critical-path overlay: on or off. */
  criticalPath?: boolean;
  onCriticalPath?: (on: boolean) => void;
  /** The CUDA graph replay bands: on or off. */
  graphReplays?: boolean;
  onGraphReplays?: (on: boolean) => void;
}

export function TraceToolbar(p: TraceToolbarProps) {
  const [perfetto, setPerfetto] = useState<string | null>(null);
  const { selection, fileUrl } = p;
  return (
    <div className="view-controls trace-controls">
      <label className="selector">
        <span className="selector-label">Search</span>
        <input
          type="search"
          data-testid="timeline-search"
          placeholder="event name"
          value={p.searchText}
          onChange={(e) => p.onSearchText(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === "Enter") p.onMatch(e.shiftKey ? p.matchIdx - 1 : p.matchIdx + 1);
          }}
        />
      </label>
      <label className="check">
        <input type="checkbox" data-testid="timeline-regex" checked={p.regex} onChange={(e) => p.onRegex(e.target.checked)} /> regex
      </label>
      <span className="match-count" data-testid="match-count">
        {p.searchError ? p.searchError : p.total !== null ? matchCountText(p.matchIdx, p.shown, p.total, formatNumber) : ""}
      </span>
      <button type="button" disabled={p.shown === 0} onClick={() => p.onMatch(p.matchIdx - 1)} data-testid="match-prev">
        ‹ Prev
      </button>
      <button type="button" disabled={p.shown === 0} onClick={() => p.onMatch(p.matchIdx + 1)} data-testid="match-next">
        Next ›
      </button>
      <label className="selector">
        <span className="selector-label">Step</span>
        <select data-testid="step-select" value={p.shownStep < 0 ? "" : String(p.shownStep)} onChange={(e) => p.onStep(Number(e.target.value))}>
          <option value="">{p.steps.length ? "zoom to step…" : "no steps"}</option>
          {p.steps.map((s, i) => (
            <option key={`${s.step}-${i}`} value={i}>
              step {s.step} ({formatTimeUs(s.end_us - s.start_us)})
            </option>
          ))}
        </select>
      </label>
      <button type="button" data-testid="zoom-reset" onClick={p.onReset}>
        Reset zoom
      </button>
      <button
        type="button"
        className={p.selectMode ? "active" : undefined}
        aria-pressed={p.selectMode}
        data-testid="select-mode"
        title="Drag to select a time range (or shift-drag in pan mode)"
        onClick={() => p.onSelectMode(!p.selectMode)}
      >
        Select range
      </button>
      {[
        { on: p.criticalPath, set: p.onCriticalPath, id: "critical-path-toggle", label: "Critical path",
          title: "Highlight each step's critical path on this file's tracks (docs/METRICS.md, Critical path)" },
        { on: p.graphReplays, set: p.onGraphReplays, id: "graph-replays-toggle", label: "Graph replays",
          title: "Draw each CUDA graph replay as a band over its kernels on the streams it ran on (docs/METRICS.md, Inside CUDA graphs)" },
      ].map((t) =>
        t.set ? (
          <label key={t.id} className="check" title={t.title}>
            <input type="checkbox" data-testid={t.id} checked={t.on ?? false} onChange={(e) => t.set?.(e.target.checked)} />
            {" " + t.label}
          </label>
        ) : null,
      )}
      {p.allRanks ? (
        <label className="check">
          <input type="checkbox" data-testid="all-ranks" checked={p.allRanks.on} onChange={(e) => p.onAllRanks(e.target.checked)} />
          {" All ranks on one clock"}
          {p.allRanks.on && p.allRanks.clock ? (
            <span className="muted" data-testid="clock-source">
              {" "}
              ({p.allRanks.clock})
            </span>
          ) : null}
        </label>
      ) : null}
      <a className="csv-link" data-testid="trace-download" href={fileUrl} download>
        Download trace
      </a>
      <button
        type="button"
        data-testid="open-perfetto"
        title="Opens ui.perfetto.dev and sends it this trace; needs internet access"
        onClick={() => {
          setPerfetto("Opening Perfetto…");
          const name = `${selection.worker}.${selection.span}.pt.trace.json`;
          openInPerfetto(fileUrl, `${selection.run} / ${selection.worker} / ${selection.span}`, name)
            .then(() => setPerfetto(null))
            .catch((e) => setPerfetto(String(e instanceof Error ? e.message : e)));
        }}
      >
        Open in Perfetto (online)
      </button>
      {perfetto ? <span className="muted">{perfetto}</span> : null}
    </div>
  );
}

/** How the ranks of "All ranks on one clock" are aligned (see docs/http_api.md timeline_meta). */
export function clockLabel(clocks: (string | undefined)[]): string {
  const kinds = new Set(clocks.map((c) => c ?? "base_time"));
  if (kinds.size > 1) return "mixed clocks: raw timestamps";
  const [only] = kinds;
  if (only === "clock_sync") return "aligned on clock_sync_timestamp_us";
  if (only === "base_time") return "aligned on baseTimeNanoseconds";
  return "raw timestamps";
}
