// Donuts of top-N lists from the table routes ("top" of operators/kernels, the tensor-core split).
import type { PieSeriesOption } from "echarts/charts";
import type { TopItem } from "../api/types";
import type { ChartOption } from "./echarts";
import { pieTooltipFormatter } from "./tooltipFormatters";

export const OTHER_COLOR = "#9e9e9e";
export const TOP_COLORS = [
  "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f",
];

export interface ColoredItem extends TopItem {
  color: string;
  /** Share of the donut, 0-100. */
  pct: number;
}

/**
 * The items with their colors ("Other" is grey; the others take the palette in order, zeros
 * included, so a fixed pair like tensor cores / other keeps its colors) and shares. Negative or
 * missing values count as 0. The legend and the chart agree.
 */
export function colorTopItems(items: TopItem[], colors: string[] = TOP_COLORS): ColoredItem[] {
  const total = items.reduce((s, it) => s + (it.value > 0 ? it.value : 0), 0);
  let i = 0;
  return items.map((it) => ({
    ...it,
    color: it.name === "Other" ? OTHER_COLOR : (colors[i++ % colors.length] as string),
    pct: total > 0 && it.value > 0 ? (it.value / total) * 100 : 0,
  }));
}

/**
 * A donut of the slices with a positive value, in their colors, without labels (the escaped tooltip
 * names them). radius: inner and outer, as percentages; extra: more pie series settings.
 */
export function donutOption(
  slices: { name: string; value: number; color: string }[],
  radius: [string, string],
  extra: Omit<PieSeriesOption, "type" | "data"> = {},
): ChartOption {
  return {
    backgroundColor: "transparent",
    animation: false,
    tooltip: { trigger: "item", confine: true, formatter: pieTooltipFormatter as never },
    series: [
      {
        type: "pie",
        radius,
        center: ["50%", "50%"],
        label: { show: false },
        labelLine: { show: false },
        ...extra,
        data: slices.filter((s) => s.value > 0).map((s) => ({ name: s.name, value: s.value, itemStyle: { color: s.color } })),
      },
    ],
  };
}

/** Names are long (C++ kernel signatures): no ECharts legend; the tooltip (escaped) names them. */
export function buildTopDonutOption(items: ColoredItem[]): ChartOption {
  return donutOption(items, ["45%", "80%"]);
}
