import { LineChart, type LineSeriesOption } from "echarts/charts";
import { useMemo } from "react";
import type { SystemMetric } from "../../api/types";
import { echarts, type ChartOption } from "../../charts/echarts";
import { legendChartBase } from "../../charts/legendChartBase";
import { TIME_AXIS_ID } from "../../charts/timeAxes";
import type { Theme } from "../../hooks/useTheme";
import { escapeHtml } from "../../util/escapeHtml";
import { formatDuration, formatNumber } from "../../util/format";
import { useDiffStyles } from "../diff/useDiffStyles";
import { Card } from "../../components/Card";
import { chartTextColor } from "../../components/chartColors";
import { EChart } from "../../components/EChart";

echarts.use([LineChart]);

interface TooltipItem {
  seriesName?: string;
  value?: unknown;
}

/** Series with one sample are values, not lines; the rest are plotted. */
export function splitSeries(metrics: SystemMetric[]): { plotted: SystemMetric[]; single: SystemMetric[] } {
  return { plotted: metrics.filter((m) => m.ts_us.length > 1), single: metrics.filter((m) => m.ts_us.length === 1) };
}

/**
 * The time origin of the chart (µs from the first step): the first step, or the first sample when a
 * sample comes before it, so the time axis never runs negative.
 */
export function metricsOrigin(metrics: SystemMetric[]): number {
  let lo = 0;
  for (const m of metrics) for (const t of m.ts_us) if (Number.isFinite(t) && t < lo) lo = t;
  return lo;
}

/** One line per counter series, x in ms from {@link metricsOrigin}, from 0; points are marked (series can be short). */
export function systemMetricsOption(metrics: SystemMetric[], textColor: string): ChartOption {
  const origin = metricsOrigin(metrics);
  const series = metrics.map((m) => ({
    type: "line" as const,
    name: m.name,
    showSymbol: true,
    symbolSize: 5,
    data: m.ts_us.map((t, i) => [(t - origin) / 1000, m.values[i] ?? null]),
  })) satisfies LineSeriesOption[];
  const axisName = origin < 0 ? "Time from the first sample (ms)" : "Time from the first step (ms)";
  return {
    ...legendChartBase(textColor, { left: 16, right: 24, top: 40, bottom: 36 }),
    tooltip: {
      trigger: "item",
      confine: true,
      formatter: ((p: TooltipItem) => {
        const [t, v] = (p.value as [number, number]) ?? [0, 0];
        return `<b>${escapeHtml(p.seriesName ?? "")}</b><br/>${formatNumber(t, 2)} ms: ${formatNumber(v, 2)}`;
      }) as never,
    },
    xAxis: { id: TIME_AXIS_ID, type: "value", name: axisName, nameLocation: "middle", nameGap: 24, min: 0 },
    yAxis: { type: "value" },
    series: series as unknown as ChartOption["series"],
  } as ChartOption;
}

/** When a single sample was taken, relative to the first step: "0.72 ms before the first step". */
export function sampleTimeText(tUs: number): string {
  if (tUs === 0) return "at the first step";
  return `${formatDuration(Math.abs(tUs))} ${tUs < 0 ? "before" : "after"} the first step`;
}

/** The "System metrics" card of the Overview (Composer's system profiler); nothing when there are none. */
export function SystemMetrics({ metrics, theme }: { metrics: SystemMetric[] | undefined; theme: Theme }) {
  useDiffStyles();
  const { plotted, single } = splitSeries(metrics ?? []);
  const option = useMemo(() => systemMetricsOption(splitSeries(metrics ?? []).plotted, chartTextColor(theme)), [metrics, theme]);
  if (!metrics || metrics.length === 0) return null;
  const points = metrics.reduce((n, m) => n + m.ts_us.length, 0);
  return (
    <Card title="System metrics" testId="system-metrics">
      <p className="diff-hint" data-testid="system-metrics-hint">
        {metrics.length} series, {points} {points === 1 ? "sample" : "samples"}
        {points === 0 ? ": nothing to plot." : plotted.length > 0 ? "; time from the first step." : "."}
      </p>
      {single.length > 0 ? (
        <table className="kv" data-testid="system-metrics-values">
          <tbody>
            {single.map((m) => (
              <tr key={m.name}>
                <th>{m.name}</th>
                <td className="num">{formatNumber(m.values[0] ?? null, 2)}</td>
                <td className="muted">{sampleTimeText(m.ts_us[0]!)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {plotted.length > 0 ? (
        <EChart option={option} theme={theme} height={280} testId="system-metrics-chart" ariaLabel="System metrics over time" />
      ) : null}
    </Card>
  );
}
