// Donuts of top-N lists from the table routes ("top" of operators/kernels, the tensor-core split).
import type { TopItem } from "../api/types";
import type { ChartOption } from "./echarts";
import { pieTooltipFormatter } from "./tooltipFormatters";

const OTHER_COLOR = "#9e9e9e";
const COLORS = [
  "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f",
];

/** Names are long (C++ kernel signatures): the legend is off, the tooltip (escaped) names them. */
export function buildTopDonutOption(items: TopItem[], colors: string[] = COLORS): ChartOption {
  let i = 0;
  return {
    backgroundColor: "transparent",
    animation: false,
    tooltip: { trigger: "item", confine: true, formatter: pieTooltipFormatter as never },
    series: [
      {
        type: "pie",
        radius: ["45%", "78%"],
        center: ["50%", "50%"],
        label: { show: false },
        labelLine: { show: false },
        data: items
          .filter((it) => it.value > 0)
          .map((it) => ({
            name: it.name,
            value: it.value,
            itemStyle: { color: it.name === "Other" ? OTHER_COLOR : (colors[i++ % colors.length] as string) },
          })),
      },
    ],
  };
}
