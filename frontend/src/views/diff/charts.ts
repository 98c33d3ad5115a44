// ECharts options of the Diff view: grouped bars of the average step (baseline vs experiment) and the
// cumulative-delta waterfall of one operator level. Tooltip text is escaped: names come from traces.
import type { ChartOption } from "../../charts/echarts";
import { legendChartBase } from "../../charts/legendChartBase";
import { elideMiddle } from "../../util/elide";
import { escapeHtml } from "../../util/escapeHtml";
import { chooseTimeUnit, formatDuration, formatNumber } from "../../util/format";
import type { StepRow, WaterfallBar } from "./model";
import { signed } from "./model";

export const BASE_COLOR = "#4e79a7";
export const EXP_COLOR = "#f28e2b";
export const UP_COLOR = "#e15759"; // slower: more time
export const DOWN_COLOR = "#59a14f"; // faster: less time
export const REST_COLOR = "#9c9c9c"; // the remainder: step-total Δ in no row
/** Characters of a waterfall label; longer names are elided in the middle (the tooltip has them whole). */
export const WATERFALL_LABEL_CHARS = 36;
/** The last waterfall bar: the step-total Δ the rows and the remainder add up to. */
export const TOTAL_LABEL = "Step total \u0394";

interface AxisItem {
  axisValue?: string;
  seriesName?: string;
  value?: unknown;
  dataIndex?: number;
}

/**
 * An axis tooltip (shadow pointer) whose lines are those of the hovered category's item; lines are
 * HTML, so the caller escapes trace strings in them.
 */
function axisTooltip<T>(items: T[], lines: (item: T) => string[]): ChartOption["tooltip"] {
  return {
    trigger: "axis",
    axisPointer: { type: "shadow" },
    confine: true,
    formatter: ((params: AxisItem | AxisItem[]) => {
      const list = Array.isArray(params) ? params : [params];
      const item = items[list[0]?.dataIndex ?? 0];
      return item === undefined ? "" : lines(item).join("<br/>");
    }) as never,
  };
}

export function stepCompareOption(rows: StepRow[], textColor: string): ChartOption {
  const cats = rows.filter((r) => r.key !== "total_us");
  const unit = chooseTimeUnit(Math.max(0, ...cats.map((r) => Math.max(r.baseline, r.experiment))));
  return {
    ...legendChartBase(textColor, { left: 16, right: 16, top: 40, bottom: 8 }),
    tooltip: axisTooltip(cats, (row) => [
      `<b>${escapeHtml(row.label)}</b>`,
      `Baseline: ${formatDuration(row.baseline)}`,
      `Experiment: ${formatDuration(row.experiment)}`,
      `\u0394: ${signed(formatDuration(row.delta), row.delta)}`,
    ]),
    xAxis: { type: "category", data: cats.map((r) => r.label), axisLabel: { interval: 0, rotate: 30, fontSize: 11 } },
    yAxis: {
      type: "value",
      name: `Time per step (${unit.label})`,
      nameTextStyle: { align: "left" },
      axisLabel: { formatter: (v: number) => formatNumber(v, 0) },
    },
    series: [
      { type: "bar", name: "Baseline", data: cats.map((r) => r.baseline / unit.divisor), itemStyle: { color: BASE_COLOR }, barMaxWidth: 40 },
      { type: "bar", name: "Experiment", data: cats.map((r) => r.experiment / unit.divisor), itemStyle: { color: EXP_COLOR }, barMaxWidth: 40 },
    ],
  };
}

/**
 * A horizontal waterfall: an invisible bar from 0 to each step's start, stacked (strategy "all", so it
 * works across zero) with a visible bar of the step's delta; the last bar is the level's total.
 */
export function waterfallOption(bars: WaterfallBar[], total: number, textColor: string): ChartOption {
  const all = [...bars, { name: TOTAL_LABEL, start: 0, end: total, delta: total, remainder: false }];
  const maxAbs = Math.max(0, ...all.map((b) => Math.max(Math.abs(b.start), Math.abs(b.end))));
  const unit = chooseTimeUnit(maxAbs);
  return {
    backgroundColor: "transparent",
    animation: false,
    textStyle: { color: textColor },
    grid: { left: 16, right: 24, top: 16, bottom: 28, containLabel: true },
    tooltip: axisTooltip(all, (b) => [
      `<b>${escapeHtml(b.name)}</b>`,
      `\u0394: ${signed(formatDuration(b.delta), b.delta)}`,
      `Running total: ${signed(formatDuration(b.end), b.end)}`,
    ]),
    yAxis: {
      type: "category",
      inverse: true,
      // full names as categories (the tooltip and a label hover show them); labels elided in the middle
      data: all.map((b) => b.name),
      triggerEvent: true,
      axisLabel: { color: textColor, formatter: (name: string) => elideMiddle(name, WATERFALL_LABEL_CHARS) },
    },
    xAxis: {
      type: "value",
      name: `Cumulative \u0394 per step (${unit.label})`,
      nameLocation: "middle",
      nameGap: 26,
      axisLabel: { formatter: (v: number) => formatNumber(v, 0) },
    },
    series: [
      {
        type: "bar",
        name: "base",
        stack: "wf",
        stackStrategy: "all",
        silent: true,
        itemStyle: { color: "transparent" },
        data: all.map((b) => b.start / unit.divisor),
      },
      {
        type: "bar",
        name: "\u0394",
        stack: "wf",
        stackStrategy: "all",
        barMaxWidth: 18,
        data: all.map((b, i) => ({
          value: b.delta / unit.divisor,
          itemStyle: { color: i === all.length - 1 ? BASE_COLOR : b.remainder ? REST_COLOR : b.delta > 0 ? UP_COLOR : DOWN_COLOR },
        })),
      },
    ],
  };
}
