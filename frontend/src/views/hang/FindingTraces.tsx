// Under a Hang finding: what the profiler traces of its ranks say (route hang, `in_traces` and
// `trace_note`). The note sentence, then one line per linked rank: the trace's kernel of the stuck
// instance (or that the trace lacks it), the trace's last step and its longest host ops. Every string
// from a trace is shown as text; an absent field shows "–" or nothing.
import type { HangFinding, HangLastStep, HangTraceLink } from "../../api/types";
import { formatNumber } from "../../util/format";

const MAX_RANKS_SHOWN = 8; // linked ranks listed under one finding

/** "1,234 µs" ("3.50 µs" under 10 µs), or "–" when the figure is absent. */
function us(value: number | null | undefined): string {
  if (typeof value !== "number" || !Number.isFinite(value)) return "–";
  return `${formatNumber(value, Math.abs(value) < 10 ? 2 : 0)} \u00b5s`;
}

/** Where the instance stands in the trace: its kernel, or why it is not there. */
export function instanceText(link: HangTraceLink): string {
  const inst = link.instance;
  if (inst) return `${inst.collective || "collective"} at ${us(inst.ts_us)}, ${us(inst.dur_us)}`;
  if (link.last_seq < 0) return "not in its trace (no Seq of the group)";
  if (link.has_instance) return `not in its trace (its Seqs go on to ${link.last_seq})`;
  return `not in its trace (last Seq ${link.last_seq})`;
}

/** "step 12: aten::mm (812 µs), …" (the step's own name when not a number); "" without a step. */
export function stepText(step: HangLastStep | null | undefined): string {
  if (!step) return "";
  const name = String(step.name ?? "");
  const label = /^\d+$/.test(name) ? `step ${name}` : name || "–";
  const ops = (step.top_ops ?? []).map((o) => `${o.name ?? "–"} (${us(o.dur_us)})`).join(", ");
  return `${label}${ops ? `: ${ops}` : ""}`;
}

export function FindingTraces({ finding }: { finding: HangFinding }) {
  const links = Object.entries(finding.in_traces ?? {}).sort(([a], [b]) => Number(a) - Number(b));
  if (links.length === 0) return <span data-testid="hang-trace-none">No loaded trace of its ranks.</span>;
  const missing = new Set(finding.missing_ranks.map(String));
  // the suspects' traces first, as in the note
  const ordered = [...links.filter(([r]) => missing.has(r)), ...links.filter(([r]) => !missing.has(r))];
  return (
    <div className="hang-traces" data-testid="hang-traces">
      {finding.trace_note ? <p data-testid="hang-trace-note">{finding.trace_note}</p> : null}
      <table className="hang-trace-ranks">
        <thead>
          <tr>
            <th>Rank</th>
            <th>Collective in its trace</th>
            <th>Its last step</th>
          </tr>
        </thead>
        <tbody>
          {ordered.slice(0, MAX_RANKS_SHOWN).map(([rank, link]) => (
            <tr key={rank} data-testid="hang-trace-rank">
              <td>
                {rank}
                {missing.has(rank) ? " (suspect)" : ""}
              </td>
              <td>{instanceText(link)}</td>
              <td className="cell-name">{stepText(link.last_step) || "–"}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {ordered.length > MAX_RANKS_SHOWN ? <span>… and {ordered.length - MAX_RANKS_SHOWN} more ranks</span> : null}
    </div>
  );
}
