// The Insights tab of one file: why each GPU idles (per GPU, each stream alone, gap lengths), launch delays
// (overhead vs queueing) and kernel durations, the exposed-time decomposition per GPU, host
// synchronizations, recommendations.
import { useMemo } from "react";
import { insightsUrl } from "../../api/routes";
import type { InsightsReady, Spread, SyncByOperator } from "../../api/types";
import type { Selection } from "../../api/types";
import { Card } from "../../components/Card";
import { EChart } from "../../components/EChart";
import { InfoTooltip } from "../../components/InfoTooltip";
import { RemoteStatus } from "../../components/RemoteStatus";
import { chartTextColor } from "../../components/chartColors";
import { remoteData, useRemote } from "../../hooks/useRemote";
import type { Theme } from "../../hooks/useTheme";
import { histogramOption, streamIdleOption } from "../distributed/charts";
import { INSIGHT_DEFS } from "../distributed/definitions";
import { RecommendationList } from "../overview/Recommendations";
import { ExposedBar } from "./ExposedBar";
import { hasDeviceActivity, NoDeviceActivity } from "./NoDeviceActivity";
import { GpuIdleStats } from "./GpuIdleStats";
import { shareText } from "../distributed/model";
import { Stat } from "./Stat";
import { useDistributedStyles } from "../distributed/useDistributedStyles";
import { formatDuration, formatNumber } from "../../util/format";
import { ColumnTable, type TableColumn } from "../../components/ColumnTable";

const SYNC_COLUMNS: TableColumn<SyncByOperator>[] = [
  { label: "Operator", num: false, className: "cell-code", cell: (r) => r.op },
  { label: "Calls", cell: (r) => formatNumber(r.calls) },
  { label: "Sync time", cell: (r) => formatDuration(r.sync_us) },
  { label: "GPU idle after", tip: INSIGHT_DEFS.gpuIdleAfter, cell: (r) => formatDuration(r.gpu_idle_after_us) },
  {
    label: "APIs",
    num: false,
    cell: (r) =>
      Object.entries(r.apis)
        .map(([api, n]) => `${api} ×${n}`)
        .join(", "),
  },
];

export function InsightsView({ selection, theme }: { selection: Selection; theme: Theme }) {
  useDistributedStyles();
  const state = useRemote<InsightsReady>(insightsUrl(selection));
  const data = remoteData(state);
  return (
    <div className="insights-view" data-testid="insights-page">
      <RemoteStatus state={state} what="insights" />
      {data ? <InsightsContent data={data} theme={theme} /> : null}
    </div>
  );
}

export function InsightsContent({ data, theme }: { data: InsightsReady; theme: Theme }) {
  if (!hasDeviceActivity(data)) {
    return (
      <Card title="Insights">
        <NoDeviceActivity />
      </Card>
    );
  }
  return <DeviceInsights data={data} theme={theme} />;
}

function DeviceInsights({ data, theme }: { data: InsightsReady; theme: Theme }) {
  const text = chartTextColor(theme);
  const idleOption = useMemo(() => streamIdleOption(data.idle.per_stream, text), [data, text]);
  const gapOption = useMemo(() => histogramOption(data.idle.gap_histogram, "Gaps", "#9c755f", text), [data, text]);
  const delayOption = useMemo(() => histogramOption(data.launch.delay_histogram, "Kernels", "#4e79a7", text), [data, text]);
  const durOption = useMemo(() => histogramOption(data.launch.duration_histogram, "Kernels", "#59a14f", text), [data, text]);
  return (
    <>
      <Card title="Recommendations">
        {data.recommendations.length === 0 ? (
          <p className="muted">No recommendations for this trace.</p>
        ) : (
          <RecommendationList items={data.recommendations} details={data.recommendation_details} testId="insights-recommendations" />
        )}
      </Card>

      <Card title={<InfoTooltip label="GPU idle time" text={INSIGHT_DEFS.idle} />}>
        {data.idle.gpus.length === 0 ? (
          <p className="muted">No GPU work in this trace.</p>
        ) : (
          data.idle.gpus.map((g) => (
            <GpuIdleStats key={g.device} gpu={g} many={data.idle.gpus.length > 1} threshold={data.idle.short_gap_threshold_us} />
          ))
        )}
        <div className="grid-2">
          <div>
            <div className="exposed-row-title">
              <InfoTooltip label="Idle time of each stream alone" text={INSIGHT_DEFS.perStream} />
            </div>
            {data.idle.per_stream.length === 0 ? (
              <p className="muted">No stream has device work inside the steps window.</p>
            ) : (
              <EChart
                option={idleOption}
                theme={theme}
                height={Math.max(140, 60 + data.idle.per_stream.length * 34)}
                testId="stream-idle-chart"
                ariaLabel={`Idle time of ${data.idle.per_stream.length} streams by cause`}
              />
            )}
          </div>
          <div>
            <div className="exposed-row-title">Idle gap lengths (count of gaps)</div>
            <EChart option={gapOption} theme={theme} height={240} testId="gap-histogram" ariaLabel="Histogram of idle gap lengths" />
          </div>
        </div>
      </Card>

      <Card title={<InfoTooltip label="Kernel launches" text={INSIGHT_DEFS.launchDelay} />}>
        <div className="stat-grid">
          <Stat label="Kernels" value={formatNumber(data.launch.kernels)} />
          <Stat label={<InfoTooltip label="Launch delay p50" text={INSIGHT_DEFS.launchDelay} />} value={formatDuration(data.launch.p50)} testId="launch-p50" />
          <Stat label="Launch delay p95" value={formatDuration(data.launch.p95)} testId="launch-p95" />
          <Stat label="Launch delay max" value={formatDuration(data.launch.max)} />
          <SpreadStats label="Launch overhead" tip={INSIGHT_DEFS.launchOverhead} spread={data.launch.overhead_us} testId="overhead" />
          <SpreadStats label="Queueing" tip={INSIGHT_DEFS.queueing} spread={data.launch.queueing_us} testId="queueing" />
          {data.launch.graphs.replays + data.launch.graphs.captures > 0 ? (
            <Stat
              label="CUDA graphs"
              value={`${formatNumber(data.launch.graphs.replays)} replays, ${formatNumber(data.launch.graphs.captures)} captures`}
              testId="graph-use"
            />
          ) : null}
          <Stat
            label={<InfoTooltip label="Shorter than launch" text={INSIGHT_DEFS.shortKernels} />}
            value={shareText(data.launch.short_kernel_share)}
            testId="short-kernel-share"
          />
        </div>
        <div className="grid-2">
          <div>
            <div className="exposed-row-title">Launch delay (count of kernels)</div>
            <EChart option={delayOption} theme={theme} height={240} testId="launch-histogram" ariaLabel="Histogram of kernel launch delays" />
          </div>
          <div>
            <div className="exposed-row-title">Kernel duration (count of kernels)</div>
            <EChart option={durOption} theme={theme} height={240} testId="duration-histogram" ariaLabel="Histogram of kernel durations" />
          </div>
        </div>
      </Card>

      <Card title={<InfoTooltip label="Exposed time per GPU" text={INSIGHT_DEFS.exposed} />}>
        <p className="muted" style={{ marginTop: 0 }}>
          Steps window: {formatDuration(data.exposed.window_us)}
        </p>
        {data.exposed.gpus.length === 0 ? (
          <p className="muted">No GPU work in this trace.</p>
        ) : (
          data.exposed.gpus.map((g) => (
            <div className="exposed-row" key={g.device}>
              <div className="exposed-row-title">GPU {g.device}</div>
              <ExposedBar parts={g} testId={data.exposed.gpus.length === 1 ? "exposed-bar" : `exposed-bar-gpu${g.device}`} />
            </div>
          ))
        )}
      </Card>

      <Card title={<InfoTooltip label="Host synchronization" text={INSIGHT_DEFS.syncs} />}>
        <div className="stat-grid">
          <Stat label="Synchronizing calls" value={formatNumber(data.syncs.sync_calls)} />
          <Stat label="Time in them" value={formatDuration(data.syncs.sync_us)} />
          <Stat label="cuda_sync events" value={formatNumber(data.syncs.cuda_sync_events)} />
          <Stat label={<InfoTooltip label="GPU idle after" text={INSIGHT_DEFS.gpuIdleAfter} />} value={formatDuration(data.syncs.gpu_idle_after_us)} />
        </div>
        {data.syncs.by_operator.length === 0 ? (
          <p className="muted">No host synchronization in this trace.</p>
        ) : (
          <ColumnTable testId="sync-table" columns={SYNC_COLUMNS} rows={data.syncs.by_operator} rowKey={(r, i) => `${r.op}\u0000${i}`} />
        )}
      </Card>
    </>
  );
}

/** Two stats of one launch cost: its p50 / p95 per kernel and its time-union over the trace (µs). */
function SpreadStats({ label, tip, spread, testId }: { label: string; tip: string; spread: Spread; testId: string }) {
  return (
    <>
      <Stat
        label={<InfoTooltip label={`${label} p50 / p95`} text={tip} />}
        value={`${formatDuration(spread.p50)} / ${formatDuration(spread.p95)}`}
        testId={`${testId}-p50-p95`}
      />
      <Stat
        label={<InfoTooltip label={`${label} (time-union)`} text={INSIGHT_DEFS.launchUnion} />}
        value={formatDuration(spread.union_us)}
        testId={`${testId}-union`}
      />
    </>
  );
}
