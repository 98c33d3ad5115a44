// ECharts options for the Distributed and Insights views. Every string that reaches a tooltip (rank
// workers, stream names, bin labels) is escaped: ECharts renders formatter output as HTML.
import type { ChartOption } from "../../charts/echarts";
import { legendChartBase } from "../../charts/legendChartBase";
import { TIME_AXIS_ID } from "../../charts/timeAxes";
import type { RankRow } from "../../api/types";
import type { Histogram, StreamIdle } from "../../api/types";
import { escapeHtml } from "../../util/escapeHtml";
import { chooseTimeUnit, formatDuration, formatNumber } from "../../util/format";
import { histogramBins } from "./model";
import { barSeries, partBars, stackParts } from "./stackedBars";

interface AxisParam {
  axisValueLabel?: string;
  seriesName?: string;
  value?: unknown;
  color?: unknown;
  dataIndex?: number;
}

function swatch(color: unknown): string {
  return `<span style="display:inline-block;width:9px;height:9px;margin-right:6px;background:${escapeHtml(
    typeof color === "string" ? color : "#888",
  )}"></span>`;
}

/** An axis tooltip: the category, then one "name: value" line per series, values in µs formatted. */
function stackedTooltip(titles: string[], divisor: number) {
  return (raw: unknown) => {
    const params = (Array.isArray(raw) ? raw : [raw]) as AxisParam[];
    const idx = params[0]?.dataIndex ?? 0;
    const lines = params.map(
      (p) => `${swatch(p.color)}${escapeHtml(p.seriesName ?? "")}: ${escapeHtml(formatDuration(Number(p.value) * divisor))}`,
    );
    return [`<b>${escapeHtml(titles[idx] ?? "")}</b>`, ...lines].join("<br/>");
  };
}

function baseOption(textColor: string): ChartOption {
  return legendChartBase(textColor, { left: 16, right: 16, top: 48, bottom: 36 });
}

/** The base of a bar chart whose axis tooltip lists every series of the hovered bar (``titles[i]`` on top). */
function barsBase(textColor: string, titles: string[], divisor: number): ChartOption {
  return {
    ...baseOption(textColor),
    tooltip: { trigger: "axis", axisPointer: { type: "shadow" }, confine: true, formatter: stackedTooltip(titles, divisor) as never },
  };
}

function rankAxis(ranks: RankRow[]) {
  return { type: "category", data: ranks.map((r) => String(r.rank)), name: "Rank", nameLocation: "middle", nameGap: 26 } as const;
}

export const RANK_PARTS = stackParts([
  ["computation_us", "Computation only", "#4e79a7"],
  ["overlap_us", "Overlap", "#76b7b2"],
  ["communication_us", "Communication only", "#b07aa1"],
  ["other_us", "Other", "#bab0ac"],
]);

/** One stacked bar per rank: computation only / overlap / communication only / other (per step). */
export function rankBreakdownOption(ranks: RankRow[], textColor: string): ChartOption {
  const unit = chooseTimeUnit(Math.max(0, ...ranks.map((r) => r.total_us)));
  const titles = ranks.map((r) => `Rank ${r.rank} (${r.worker})`);
  return {
    ...barsBase(textColor, titles, unit.divisor),
    xAxis: rankAxis(ranks),
    yAxis: { id: TIME_AXIS_ID, type: "value", name: `Time per step (${unit.label})`, nameTextStyle: { align: "left" }, axisLabel: { formatter: (v: number) => formatNumber(v, 0) } },
    series: barSeries(partBars(RANK_PARTS), ranks, unit.divisor, 56, "rank"),
  };
}

/** Per rank, transfer vs sync summed over collectives, side by side. */
export function transferSyncOption(ranks: RankRow[], textColor: string): ChartOption {
  const unit = chooseTimeUnit(Math.max(0, ...ranks.map((r) => Math.max(r.transfer_us ?? 0, r.sync_us ?? 0))));
  const titles = ranks.map((r) => `Rank ${r.rank} (${r.worker})`);
  const parts = stackParts([
    ["transfer_us", "Transfer", "#59a14f"],
    ["sync_us", "Sync (waiting)", "#e15759"],
  ]);
  return {
    ...barsBase(textColor, titles, unit.divisor),
    xAxis: rankAxis(ranks),
    yAxis: { id: TIME_AXIS_ID, type: "value", name: `Time (${unit.label})`, nameTextStyle: { align: "left" }, axisLabel: { formatter: (v: number) => formatNumber(v, 0) } },
    series: barSeries(partBars(parts), ranks, unit.divisor, 40),
  };
}

export const IDLE_PARTS = stackParts([
  ["host_wait_us", "Host wait", "#e15759"],
  ["short_gap_us", "Short gap", "#edc948"],
  ["other_us", "Other", "#bab0ac"],
]);

export function streamLabel(s: Pick<StreamIdle, "device" | "stream"> & { carries?: StreamIdle["carries"] }): string {
  const carries = s.carries && s.carries !== "compute" ? ` (${s.carries} only)` : "";
  return `GPU ${s.device} stream ${s.stream}${carries}`;
}

/** One horizontal stacked bar per stream (that stream alone): host wait / short gap / other idle time. */
export function streamIdleOption(streams: StreamIdle[], textColor: string): ChartOption {
  const unit = chooseTimeUnit(Math.max(0, ...streams.map((s) => s.idle_us)));
  const titles = streams.map(streamLabel);
  return {
    ...barsBase(textColor, titles, unit.divisor),
    grid: { left: 16, right: 24, top: 40, bottom: 36, containLabel: true },
    yAxis: { type: "category", data: titles, inverse: true },
    xAxis: { id: TIME_AXIS_ID, type: "value", name: `Idle time (${unit.label})`, nameLocation: "middle", nameGap: 26, axisLabel: { formatter: (v: number) => formatNumber(v, 0) } },
    series: barSeries(partBars(IDLE_PARTS), streams, unit.divisor, 28, "idle"),
  };
}

/** A count histogram with labelled bins ("1–2 µs", "≥10 ms"). */
export function histogramOption(h: Histogram, what: string, color: string, textColor: string): ChartOption {
  const bins = histogramBins(h);
  const total = bins.reduce((a, b) => a + b.count, 0);
  return {
    ...baseOption(textColor),
    legend: { show: false },
    grid: { left: 16, right: 16, top: 28, bottom: 36, containLabel: true },
    tooltip: {
      trigger: "axis",
      axisPointer: { type: "shadow" },
      confine: true,
      formatter: ((raw: unknown) => {
        const p = (Array.isArray(raw) ? raw[0] : raw) as AxisParam | undefined;
        const bin = bins[p?.dataIndex ?? 0];
        if (!bin) return "";
        const pct = total > 0 ? ` (${((bin.count / total) * 100).toFixed(1)} %)` : "";
        return `<b>${escapeHtml(bin.label)}</b><br/>${escapeHtml(what)}: ${escapeHtml(formatNumber(bin.count))}${escapeHtml(pct)}`;
      }) as never,
    },
    xAxis: { type: "category", data: bins.map((b) => b.label), axisLabel: { interval: 0, rotate: 35, fontSize: 10 } },
    yAxis: { type: "value", name: what, nameTextStyle: { align: "left" }, minInterval: 1 },
    series: [{ type: "bar", name: what, data: bins.map((b) => b.count), itemStyle: { color }, barCategoryGap: "10%" }],
  };
}
