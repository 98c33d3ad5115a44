import type { GpuIdle } from "../../api/types";
import { InfoTooltip } from "../../components/InfoTooltip";
import { formatDuration, formatNumber } from "../../util/format";
import { INSIGHT_DEFS } from "../distributed/definitions";
import { Stat } from "./Stat";

/** Percent of the window, one decimal ("–" for an empty window). */
export function windowShare(us: number, windowUs: number): string {
  return windowUs > 0 ? `${formatNumber((100 * us) / windowUs, 1)} % of the window` : "–";
}

/** One GPU's idle time (≤ its window) and its host wait / short gap / other split. */
export function GpuIdleStats({ gpu, many, threshold }: { gpu: GpuIdle; many: boolean; threshold?: number }) {
  const prefix = many ? `GPU ${gpu.device} ` : "";
  const id = many ? `-gpu${gpu.device}` : "";
  return (
    <div className="stat-grid" data-testid={`gpu-idle${id}`}>
      <Stat
        label={<InfoTooltip label={`${prefix}GPU idle`} text={INSIGHT_DEFS.idle} />}
        value={`${formatDuration(gpu.idle_us)} (${windowShare(gpu.idle_us, gpu.window_us)})`}
        testId={`idle-total${id}`}
      />
      <Stat label={<InfoTooltip label="Host wait" text={INSIGHT_DEFS.hostWait} />} value={formatDuration(gpu.host_wait_us)} testId={`idle-host-wait${id}`} />
      <Stat
        label={<InfoTooltip label={threshold !== undefined ? `Short gaps (< ${formatNumber(threshold)} µs)` : "Short gaps"} text={INSIGHT_DEFS.shortGap} />}
        value={formatDuration(gpu.short_gap_us)}
      />
      <Stat label={<InfoTooltip label="Other idle" text={INSIGHT_DEFS.otherGap} />} value={formatDuration(gpu.other_us)} />
    </div>
  );
}
