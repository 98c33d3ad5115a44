// An export_memory_timeline HTML file (Composer's rank{r}.{batch}.pt.trace.memory.html): only the PNG the
// server extracted from it is shown, as an <img>; the file's HTML and scripts never reach the page.
import { memoryHtmlImageUrl, memoryHtmlUrl, type ArtifactRef } from "../../api/routes";
import type { ArtifactInfo, MemoryHtmlReady } from "../../api/types";
import { Card } from "../../components/Card";
import { ErrorCard } from "../../components/ErrorCard";
import { RemoteStatus } from "../../components/RemoteStatus";
import { useRemote } from "../../hooks/useRemote";
import { formatBytes, formatNumber } from "../../util/format";

interface MemoryHtmlViewProps {
  artifact: ArtifactRef;
  info: ArtifactInfo;
  onOpenTrace?: (worker: string, span: string) => void;
}

export function MemoryHtmlView({ artifact, info, onOpenTrace }: MemoryHtmlViewProps) {
  const state = useRemote<MemoryHtmlReady>(memoryHtmlUrl(artifact));
  if (state.kind === "file-error") {
    return <ErrorCard title={`This memory timeline could not be shown: ${artifact.path}`} message={state.error} />;
  }
  if (state.kind !== "ready") return <RemoteStatus state={state} what="memory timeline image" />;
  const d = state.data;
  return (
    <Card title="Memory timeline (image exported by the profiler)" testId="memory-html">
      <p className="mem-range" data-testid="memory-html-about">
        {info.rank !== null && info.rank !== undefined ? `Rank ${info.rank}` : "Rank unknown"}
        {info.batch !== null && info.batch !== undefined ? `, batch ${info.batch}` : ""}
        {info.trace ? `; trace: worker ${info.trace.worker}, span ${info.trace.span}` : "; no trace of the same rank and batch here"}
        {`; ${formatNumber(d.width_px)} × ${formatNumber(d.height_px)} px PNG (${formatBytes(d.image_bytes)})`}
        {info.trace && onOpenTrace ? (
          <>
            {" "}
            <button type="button" data-testid="memory-html-open-trace" onClick={() => onOpenTrace(info.trace!.worker, info.trace!.span)}>
              Open its trace
            </button>
          </>
        ) : null}
      </p>
      <img
        className="mem-html-image"
        data-testid="memory-html-image"
        src={memoryHtmlImageUrl(artifact)}
        width={d.width_px}
        height={d.height_px}
        style={{ maxWidth: "100%", height: "auto" }}
        alt={`Memory timeline of ${artifact.path}`}
      />
    </Card>
  );
}
