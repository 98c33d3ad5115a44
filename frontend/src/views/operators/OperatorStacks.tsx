import { useState } from "react";
import { operatorStacksUrl } from "../../api/routes";
import type { OperatorStacksReady, Selection, StackFrame } from "../../api/types";
import { RemoteStatus } from "../../components/RemoteStatus";
import { useRemote } from "../../hooks/useRemote";
import { formatDuration, formatNumber } from "../../util/format";
import { toggled } from "../../util/sets";

interface OperatorStacksProps {
  selection: Selection;
  rowKey: string;
  groupBy: string;
  onGoto: (frame: StackFrame) => void;
}

/** The distinct call stacks of one operator row; each expands into its frames (innermost last). */
export function OperatorStacks({ selection, rowKey, groupBy, onGoto }: OperatorStacksProps) {
  const state = useRemote<OperatorStacksReady>(operatorStacksUrl(selection, rowKey, groupBy));
  const [open, setOpen] = useState<Set<number>>(new Set());
  if (state.kind !== "ready") return <RemoteStatus state={state} what="call stacks" />;
  const stacks = state.data.stacks;
  if (stacks.length === 0) return <div className="muted">No call stacks recorded (profile with with_stack=True).</div>;
  const toggle = (i: number) => setOpen((prev) => toggled(prev, i));
  return (
    <ol className="stacks" data-testid="stacks">
      {stacks.map((s, i) => (
        <li key={i} className="stack" data-testid="stack" data-frames={s.frames.length}>
          <div className="stack-head">
            <button
              type="button"
              className="toggle"
              data-testid="stack-expand"
              aria-expanded={open.has(i)}
              disabled={s.frames.length === 0}
              onClick={() => toggle(i)}
            >
              {open.has(i) ? "▾" : "▸"}
            </button>
            <span className="stack-summary">
              {s.frames.length === 0 ? "(no call stack)" : (s.frames[s.frames.length - 1]?.text ?? "")}
            </span>
            {s.differs_at != null && s.frames[s.differs_at] ? (
              <span className="stack-differs" data-testid="stack-differs" title="The frame where this stack parts from the stacks ending in the same frame">
                via <code>{s.frames[s.differs_at]?.text}</code>
              </span>
            ) : null}
            <span className="stack-stats muted">
              {formatNumber(s.calls)} calls · host self {formatDuration(s.host_self_us)} · host total{" "}
              {formatDuration(s.host_total_us)} · device self {formatDuration(s.device_self_us)} · device total{" "}
              {formatDuration(s.device_total_us)}
            </span>
          </div>
          {open.has(i) ? (
            <ol className="frames">
              {s.frames.map((f, j) => (
                <li key={j} className="frame" data-testid="frame">
                  <code className="frame-text">{f.text}</code>
                  {f.file && f.line !== null ? (
                    <button
                      type="button"
                      className="link-button"
                      data-testid="goto-source"
                      title={`Open ${f.file}:${f.line} (VS Code) and copy the location`}
                      onClick={() => onGoto(f)}
                    >
                      go to source
                    </button>
                  ) : null}
                </li>
              ))}
            </ol>
          ) : null}
        </li>
      ))}
    </ol>
  );
}
