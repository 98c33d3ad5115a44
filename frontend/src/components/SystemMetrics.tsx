import { LineChart, type LineSeriesOption } from "echarts/charts";
import { useMemo } from "react";
import type { SystemMetric } from "../api/overviewExtras";
import { echarts, type ChartOption } from "../charts/echarts";
import type { Theme } from "../hooks/useTheme";
import { escapeHtml } from "../util/escapeHtml";
import { formatNumber } from "../util/format";
import { useDiffStyles } from "../diff/useDiffStyles";
import { Card } from "./Card";
import { chartTextColor } from "./chartColors";
import { EChart } from "./EChart";

echarts.use([LineChart]);

interface TooltipItem {
  seriesName?: string;
  value?: unknown;
}

/** One line per counter series, x in ms from the first step; points are marked (series can be short). */
export function systemMetricsOption(metrics: SystemMetric[], textColor: string): ChartOption {
  const series: LineSeriesOption[] = metrics.map((m) => ({
    type: "line",
    name: m.name,
    showSymbol: true,
    symbolSize: 5,
    data: m.ts_us.map((t, i) => [t / 1000, m.values[i] ?? null]),
  }));
  return {
    backgroundColor: "transparent",
    animation: false,
    textStyle: { color: textColor },
    legend: { type: "plain", top: 0, textStyle: { color: textColor } },
    grid: { left: 16, right: 24, top: 40, bottom: 36, containLabel: true },
    tooltip: {
      trigger: "item",
      confine: true,
      formatter: ((p: TooltipItem) => {
        const [t, v] = (p.value as [number, number]) ?? [0, 0];
        return `<b>${escapeHtml(p.seriesName ?? "")}</b><br/>${formatNumber(t, 2)} ms: ${formatNumber(v, 2)}`;
      }) as never,
    },
    xAxis: { type: "value", name: "Time (ms)", nameLocation: "middle", nameGap: 24, scale: true },
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
      <p className="diff-hint">
        {metrics.length} series, {points} {points === 1 ? "sample" : "samples"}; time from the first step.
      </p>
      <EChart option={option} theme={theme} height={280} testId="system-metrics-chart" ariaLabel="System metrics over time" />
    </Card>
  );
}
