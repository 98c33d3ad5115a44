import { insightsUrl } from "../../api/routes";
import type { InsightsReady } from "../../api/types";
import type { Selection } from "../../api/types";
import { Card } from "../../components/Card";
import { InfoTooltip } from "../../components/InfoTooltip";
import { RemoteStatus } from "../../components/RemoteStatus";
import { useRemote } from "../../hooks/useRemote";
import { formatDuration } from "../../util/format";
import { ExposedBar } from "./ExposedBar";
import { GpuIdleStats } from "./GpuIdleStats";
import { hasDeviceActivity, NoDeviceActivity } from "./NoDeviceActivity";
import { INSIGHT_DEFS } from "../distributed/definitions";
import { openView } from "../distributed/openView";
import { Stat } from "./Stat";
import { useDistributedStyles } from "../distributed/useDistributedStyles";

/** The Overview's compact Insights: idle per GPU, launch delay p50/p95 and its split, exposed bar, recommendations. */
export function InsightsCard({ selection }: { selection: Selection }) {
  useDistributedStyles();
  const state = useRemote<InsightsReady>(insightsUrl(selection));
  return (
    <Card title={<InfoTooltip label="Insights" text={INSIGHT_DEFS.idle} />} testId="insights-card">
      {state.kind === "ready" ? (
        <InsightsSummary data={state.data} />
      ) : state.kind === "fetch-error" || state.kind === "file-error" ? (
        // A secondary card: its failure is a quiet line, not an error card competing with the file's own.
        <p className="muted" data-testid="insights-card-error">
          Insights are not available: {state.error}
        </p>
      ) : (
        <RemoteStatus state={state} what="insights" />
      )}
    </Card>
  );
}

function InsightsSummary({ data }: { data: InsightsReady }) {
  if (!hasDeviceActivity(data)) return <NoDeviceActivity />;
  return (
    <>
      {data.idle.gpus.map((g) => (
        <GpuIdleStats key={g.device} gpu={g} many={data.idle.gpus.length > 1} />
      ))}
      <div className="stat-grid">
        <Stat label={<InfoTooltip label="Launch delay p50" text={INSIGHT_DEFS.launchDelay} />} value={formatDuration(data.launch.p50)} testId="card-launch-p50" />
        <Stat label="Launch delay p95" value={formatDuration(data.launch.p95)} />
        <Stat
          label={<InfoTooltip label="Launch overhead p50" text={INSIGHT_DEFS.launchOverhead} />}
          value={formatDuration(data.launch.overhead_us.p50)}
          testId="card-overhead-p50"
        />
        <Stat label={<InfoTooltip label="Queueing p50" text={INSIGHT_DEFS.queueing} />} value={formatDuration(data.launch.queueing_us.p50)} />
      </div>
      <div className="exposed-row-title">
        <InfoTooltip label="Exposed time over the steps window" text={INSIGHT_DEFS.exposed} />
      </div>
      <ExposedBar parts={data.exposed} />
      <div className="insights-card-foot">
        <button type="button" className="link-button" data-testid="open-insights" onClick={() => openView("insights")}>
          Open the Insights tab ›
        </button>
      </div>
    </>
  );
}
