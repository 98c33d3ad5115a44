import type { RunInfo, RunsResponse, SpanInfo } from "../api/types";
import { formatBytes } from "../util/format";
import { ProgressBar } from "./ProgressBar";

interface FileProgressProps {
  loading: RunsResponse["loading"];
  run: RunInfo | undefined;
}

/** Share of a file that is parsed: loading files report it, finished ones are complete. */
export function spanFraction(span: SpanInfo): number {
  if (span.state === "ready" || span.state === "error") return 1;
  if (span.state === "loading") return span.progress;
  return 0;
}

function stateText(span: SpanInfo): string {
  if (span.state === "loading") return `loading ${Math.round(span.progress * 100)} %`;
  return span.state;
}

/**
 * Loading progress: the registry's overall files_done / files_total, and one bar per file of the
 * selected run. Open while anything loads; a collapsed summary once everything is done.
 */
export function FileProgress({ loading, run }: FileProgressProps) {
  const files = (run?.workers ?? []).flatMap((w) => w.spans.map((s) => ({ worker: w.worker, span: s })));
  const busy =
    loading.files_done < loading.files_total ||
    files.some((f) => f.span.state === "queued" || f.span.state === "loading");
  const overall = loading.files_total > 0 ? loading.files_done / loading.files_total : 1;
  return (
    <details className="file-progress" data-testid="file-progress" open={busy || undefined}>
      <summary>
        <span className="file-progress-summary">
          {busy ? "Loading traces: " : "Traces loaded: "}
          {loading.files_done} of {loading.files_total} files
        </span>
        <ProgressBar value={overall} state={busy ? "loading" : "ready"} label="All files" />
      </summary>
      <table className="file-table">
        <thead>
          <tr>
            <th>Worker</th>
            <th>Span</th>
            <th>File</th>
            <th className="num">Size</th>
            <th>State</th>
            <th className="bar-col">Progress</th>
          </tr>
        </thead>
        <tbody>
          {files.map(({ worker, span }) => (
            <tr key={`${worker}\u0000${span.span}`} data-state={span.state}>
              <td>{worker}</td>
              <td>{span.span}</td>
              <td className="path" title={span.path}>
                {span.path}
              </td>
              <td className="num">{formatBytes(span.size_bytes)}</td>
              <td>
                <span className={`state-badge state-${span.state}`}>{stateText(span)}</span>
              </td>
              <td className="bar-col">
                <ProgressBar value={spanFraction(span)} state={span.state} label={`${span.path} progress`} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </details>
  );
}
