import type { ReactNode } from "react";
import type { Configuration } from "../api/types";
import { DEFINITIONS } from "../util/definitions";
import { DASH, formatBool, formatDuration, formatNumber, formatText } from "../util/format";
import { Card } from "./Card";
import { InfoTooltip } from "./InfoTooltip";

function distributedText(d: Configuration["distributed"]): string {
  if (!d) return DASH;
  return `${d.backend}, rank ${d.rank} of ${d.world_size}`;
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
    </Card>
  );
}
