// The frames of one snapshot stack (fetched by index), as text.
import type { ArtifactRef } from "../../api/routes";
import { snapshotStackUrl } from "../../api/routes";
import type { SnapshotStackReady } from "../../api/types";
import { RemoteStatus } from "../../components/RemoteStatus";
import { useRemote } from "../../hooks/useRemote";

export function StackFrames({ artifact, stack }: { artifact: ArtifactRef; stack: number }) {
  const state = useRemote<SnapshotStackReady>(stack >= 0 ? snapshotStackUrl(artifact, stack) : null);
  if (stack < 0) return <div className="mem-hint">No frames were recorded for this block.</div>;
  if (state.kind !== "ready") return <RemoteStatus state={state} what="stack" />;
  if (state.data.frames.length === 0) return <div className="mem-hint">No frames.</div>;
  return (
    <ol className="mem-frames" data-testid="snapshot-frames">
      {state.data.frames.map((f, i) => (
        <li key={i}>
          {f.name}
          {f.filename && f.filename !== "??" ? (
            <span className="mem-frame-file">
              {" "}
              {f.filename}:{f.line}
            </span>
          ) : null}
        </li>
      ))}
    </ol>
  );
}
