// The selected event: name, category, times, every arg, and links to its parents and flow partners.
import type { TimelineEvent } from "../../api/types";
import { formatTimeUs } from "./math";

function argText(v: unknown): string {
  return typeof v === "string" ? v : JSON.stringify(v);
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
