// The selected file while it is not loaded yet: its place in the load queue, or its parse progress
// with a bar that moves (the server reports bytes read, then events decoded).
import type { SpanInfo } from "../api/types";
import { ProgressBar } from "./ProgressBar";

/** "it is next" / "1 file is queued before it" / "N files are queued before it" (null: not known). */
export function queueText(before: number | null | undefined): string | null {
  if (before === null || before === undefined) return null;
  if (before === 0) return "it is next";
  return `${before} file${before === 1 ? " is" : "s are"} queued before it`;
}

/**
 * A queued or loading file: a notice with the queue position or the percentage, and a progress bar.
 * `progress` overrides the span's (the overview route's answer can be fresher than the runs document).
 */
export function ParseProgress({ span, progress }: { span: SpanInfo; progress?: number | null }) {
  const loading = span.state === "loading" || (progress !== undefined && progress !== null && progress > 0);
  const value = progress ?? (span.state === "loading" ? span.progress : 0);
  const queue = queueText(span.queued_before);
  return (
    <div className="notice notice-info parse-progress" role="status" data-testid="parse-progress" data-state={loading ? "loading" : "queued"}>
      <div data-testid="parse-progress-text">
        {loading
          ? `Parsing ${span.path}: ${Math.round(value * 100)} %`
          : `Waiting to parse ${span.path}${queue ? `: ${queue}` : "\u2026"}`}
      </div>
      <ProgressBar value={loading ? value : 0} state={loading ? "loading" : "queued"} label={`${span.path} parsing progress`} />
    </div>
  );
}
