// The Execution Summary donut: the average step's time split by category.
import type { OverviewReady } from "../api/types";
import { categoryLabel, categoryValue } from "../util/categories";
import type { ChartOption } from "./echarts";
import { categoryColor } from "./palette";
import { donutOption } from "./topDonutOption";

export interface ExecutionRow {
  key: string;
  label: string;
  color: string;
  us: number;
  /** Share of the average step, 0-100 (the server's `average_pct`); null when the average step is 0. */
  pct: number | null;
}

export function buildExecutionRows(
  data: Pick<OverviewReady, "average" | "average_pct" | "categories" | "category_labels">,
): ExecutionRow[] {
  return data.categories.map((key, index) => {
    const us = categoryValue(data.average, key);
    return {
      key,
      label: categoryLabel(key, data.category_labels),
      color: categoryColor(key, index),
      us,
      pct: data.average_pct[key] ?? null, // the served share (analysis/overview.py), not recomputed
    };
  });
}

export function buildDonutOption(rows: ExecutionRow[], textColor: string): ChartOption {
  return donutOption(
    rows.map((r) => ({ name: r.label, value: r.us, color: r.color })),
    ["48%", "78%"],
    {
      avoidLabelOverlap: true,
      itemStyle: { borderColor: "transparent", borderWidth: 1 },
      emphasis: { label: { show: true, color: textColor, fontWeight: "bold", formatter: "{d}%" } },
    },
  );
}
