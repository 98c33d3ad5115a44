import type { ReactNode } from "react";
import type { ClippedStep, Configuration } from "../api/types";
import { DEFINITIONS } from "../util/definitions";
import { DASH, formatBool, formatDuration, formatNumber, formatText } from "../util/format";
import { Card } from "./Card";
import { InfoTooltip } from "./InfoTooltip";

/** "nccl, rank 3 of 8"; the parts the trace does not say are left out ("rank 0"), never "null". */
export function distributedText(d: Configuration["distributed"]): string {
  if (!d) return DASH;
  const known = (v: unknown): boolean => v !== null && v !== undefined && v !== "";
  const rank = known(d.rank) ? `rank ${d.rank}${known(d.world_size) ? ` of ${d.world_size}` : ""}` : "";
  const text = [known(d.backend) ? String(d.backend) : "", rank].filter(Boolean).join(", ");
  return text || DASH;
}

/** One sentence per step cut at the profiler's end. */
export function clippedStepText(c: ClippedStep): string {
  return (
    `Step ${c.step}: its annotation runs to ${formatDuration(c.host_end_us)}, past the end of the profiler; ` +
    `it is cut at ${formatDuration(c.clipped_to_us)}, where the profile ends.`
  );
}

/** What was profiled: device, steps, framework version, distributed setup. */
export function ConfigurationCard({ configuration: c }: { configuration: Configuration }) {
  const rows: [ReactNode, string][] = [
    ["Device type", formatText(c.device_type)],
    ["GPUs", formatNumber(c.gpu_count)],
    ["Workers in run", formatNumber(c.workers_in_run)],
    ["Steps", formatNumber(c.step_count)],
    ["Step markers in trace", formatBool(c.has_step_markers)],
    ...(c.dropped_tail_steps && c.dropped_tail_steps.length > 0
      ? ([["Incomplete last steps left out", c.dropped_tail_steps.join(", ")]] as [ReactNode, string][])
      : []),
    [<InfoTooltip key="avg" label="Average step time" text={DEFINITIONS.stepTime} />, formatDuration(c.average_step_us)],
    ["Steps window", formatDuration(c.steps_window_us)],
    ["Distributed", distributedText(c.distributed)],
    ["Trace format", formatText(c.trace_format)],
    ["PyTorch version", formatText(c.pytorch_version)],
  ];
  return (
    <Card title="Configuration" testId="configuration">
      <dl className="kv">
        {rows.map(([label, value], i) => (
          <div className="kv-row" key={i}>
            <dt>{label}</dt>
            <dd>{value}</dd>
          </div>
        ))}
      </dl>
      {c.clipped_steps && c.clipped_steps.length > 0 ? (
        <div className="notice notice-info" data-testid="clipped-steps-note">
          {c.clipped_steps.map((s) => (
            <p key={s.step}>{clippedStepText(s)}</p>
          ))}
        </div>
      ) : null}
    </Card>
  );
}
