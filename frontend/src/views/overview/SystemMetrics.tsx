import { LineChart, type LineSeriesOption } from "echarts/charts";
import { useMemo } from "react";
import type { SystemMetric } from "../../api/types";
import { echarts, type ChartOption } from "../../charts/echarts";
import { legendChartBase } from "../../charts/legendChartBase";
import type { Theme } from "../../hooks/useTheme";
import { escapeHtml } from "../../util/escapeHtml";
import { formatNumber } from "../../util/format";
import { useDiffStyles } from "../diff/useDiffStyles";
import { Card } from "../../components/Card";
import { chartTextColor } from "../../components/chartColors";
import { EChart } from "../../components/EChart";

echarts.use([LineChart]);

interface TooltipItem {
  seriesName?: string;
  value?: unknown;
}

/**
 * The time axis' range (ms). Two or more distinct times: ECharts' own, fitted to the data (`scale`).
 * One time (a single sample, or samples at one instant): ECharts would pad it into an axis of its own
 * (−1.1 to −0.3 ms around a sample at −0.72 ms), so the axis runs from the first step (0) to the sample,
 * each end rounded outward to the sample's order of magnitude (−0.8 to 0); a sample at 0 gets 0 to 1.
 */
export function timeAxisRange(series: { data: (number | null)[][] }[]): { scale: true } | { min: number; max: number } {
  const times = new Set(series.flatMap((s) => s.data.map((p) => p[0]).filter((t): t is number => typeof t === "number" && Number.isFinite(t))));
  if (times.size !== 1) return { scale: true };
  const [t] = [...times] as [number];
  if (t === 0) return { min: 0, max: 1 };
  const step = 10 ** Math.floor(Math.log10(Math.abs(t)));
  const round = (k: number) => Number((k * step).toPrecision(12));
  return t < 0 ? { min: round(Math.floor(t / step)), max: 0 } : { min: 0, max: round(Math.ceil(t / step)) };
}

/** One line per counter series, x in ms from the first step; points are marked (series can be short). */
export function systemMetricsOption(metrics: SystemMetric[], textColor: string): ChartOption {
  const series = metrics.map((m) => ({
    type: "line" as const,
    name: m.name,
    showSymbol: true,
    symbolSize: 5,
    data: m.ts_us.map((t, i) => [t / 1000, m.values[i] ?? null]),
  })) satisfies LineSeriesOption[];
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
    xAxis: { type: "value", name: "Time (ms)", nameLocation: "middle", nameGap: 24, ...timeAxisRange(series) },
    yAxis: { type: "value" },
    series: series as unknown as ChartOption["series"],
  } as ChartOption;
}

/** The "System metrics" card of the Overview (Composer's system profiler); nothing when there are none. */
export function SystemMetrics({ metrics, theme }: { metrics: SystemMetric[] | undefined; theme: Theme }) {
  useDiffStyles();
  const option = useMemo(() => systemMetricsOption(metrics ?? [], chartTextColor(theme)), [metrics, theme]);
  if (!metrics || metrics.length === 0) return null;
  const points = metrics.reduce((n, m) => n + m.ts_us.length, 0);
  return (
    <Card title="System metrics" testId="system-metrics">
      <p className="diff-hint" data-testid="system-metrics-hint">
        {metrics.length} series, {points} {points === 1 ? "sample" : "samples"}
        {points === 0 ? ": nothing to plot." : "; time from the first step."}
      </p>
      {points > 0 ? (
        <EChart option={option} theme={theme} height={280} testId="system-metrics-chart" ariaLabel="System metrics over time" />
      ) : null}
    </Card>
  );
}
