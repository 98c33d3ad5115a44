// A memory-timeline export (torch.profiler export_memory_timeline): stacked areas by category.
import { useMemo } from "react";
import { memoryTimelineExportUrl, type ArtifactRef } from "../../api/routes";
import type { MemoryTimelineExportReady } from "../../api/types";
import { Card } from "../../components/Card";
import { ErrorCard } from "../../components/ErrorCard";
import { RemoteStatus } from "../../components/RemoteStatus";
import { chartTextColor } from "../../components/chartColors";
import { useRemote } from "../../hooks/useRemote";
import type { Theme } from "../../hooks/useTheme";
import { formatBytes, formatDuration } from "../../util/format";
import { MemChart } from "../memory/MemChart";
import { exportOption } from "../memory/options";
import { useMemoryStyles } from "../memory/useMemoryStyles";

interface MemoryTimelineExportViewProps {
  artifact: ArtifactRef;
  theme: Theme;
  /** The trace of the same rank and batch, when the listing names one. */
  trace?: { worker: string; span: string } | null;
  onOpenTrace?: (worker: string, span: string) => void;
}

export function MemoryTimelineExportView({ artifact, theme, trace, onOpenTrace }: MemoryTimelineExportViewProps) {
  useMemoryStyles();
  const state = useRemote<MemoryTimelineExportReady>(memoryTimelineExportUrl(artifact));
  const textColor = chartTextColor(theme);
  const option = useMemo(() => (state.kind === "ready" ? exportOption(state.data, textColor) : null), [state, textColor]);
  if (state.kind === "file-error") {
    return <ErrorCard title={`This memory timeline could not be read: ${artifact.path}`} message={state.error} />;
  }
  if (state.kind !== "ready" || !option) return <RemoteStatus state={state} what="memory timeline" />;
  const d = state.data;
  return (
    <Card title="Memory timeline by category" testId="memory-timeline-export">
      <p className="mem-range" data-testid="memory-timeline-peak">
        Peak {formatBytes(d.peak_bytes)} at {formatDuration(d.peak_time_us)} ({d.form === "raw" ? "raw export" : "times/sizes export"},{" "}
        {d.categories.length} categories)
        {trace && onOpenTrace ? (
          <>
            {" "}
            <button type="button" data-testid="memory-timeline-open-trace" onClick={() => onOpenTrace(trace.worker, trace.span)}>
              Open its trace ({trace.worker}, span {trace.span})
            </button>
          </>
        ) : null}
      </p>
      <MemChart option={option} theme={theme} height={380} ariaLabel="Memory timeline by category" testId="memory-timeline-chart" />
    </Card>
  );
}
