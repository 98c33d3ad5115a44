// The selected event: name, category, times, every arg, and links to its parents and flow partners.
import type { TimelineEvent } from "../../api/types";
import { formatDecimal } from "../../util/format";
import { formatTimeUs } from "./math";

/** An argument as text: numbers (also inside lists) by the one rounding rule ("blocks per SM" 2.30303 -> 2.303). */
export function argText(v: unknown): string {
  if (typeof v === "string") return v;
  if (typeof v === "number") return formatDecimal(v);
  if (Array.isArray(v) && v.every((x) => typeof x === "number")) return `[${v.map(formatDecimal).join(",")}]`;
  return JSON.stringify(v);
}

export function EventDetails({ ev, onJump }: { ev: TimelineEvent; onJump: (row: number, start: number, dur: number) => void }) {
  return (
    <div className="event-details">
      <div className="panel-head">
        <strong className="event-name" data-testid="event-name">
          {ev.name}
        </strong>
      </div>
      <table className="kv">
        <tbody>
          <tr>
            <th>Category</th>
            <td>{ev.category}</td>
          </tr>
          <tr>
            <th>Start</th>
            <td>{formatTimeUs(ev.start_us)}</td>
          </tr>
          <tr>
            <th>Duration</th>
            <td data-testid="event-duration">{formatTimeUs(ev.dur_us)}</td>
          </tr>
          {Object.entries(ev.args).map(([k, v]) => (
            <tr key={k}>
              <th>{k}</th>
              <td className="arg">{argText(v)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {ev.parents.length > 0 ? (
        <div className="event-links">
          <span className="muted">Parents: </span>
          {ev.parents.map((p, i) => (
            <span key={p.row}>
              {i > 0 ? " › " : ""}
              <button type="button" className="link-button" data-testid="event-parent" onClick={() => onJump(p.row, p.start_us, p.dur_us)}>
                {p.name}
              </button>
            </span>
          ))}
        </div>
      ) : null}
      {ev.flows.length > 0 ? (
        <div className="event-links">
          <span className="muted">Flows: </span>
          {ev.flows.map((f) => (
            <span key={`${f.type}-${f.row}`} className="flow-link">
              {f.type === "launch" ? "launched by " : "runs "}
              <button type="button" className="link-button" data-testid="event-flow" onClick={() => onJump(f.row, f.start_us, f.dur_us)}>
                {f.name}
              </button>{" "}
              <span className="muted">({formatTimeUs(f.dur_us)})</span>
            </span>
          ))}
        </div>
      ) : null}
    </div>
  );
}
