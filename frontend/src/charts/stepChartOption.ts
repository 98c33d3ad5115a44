// The Step Time Breakdown chart: one stacked bar per step, one series per category in the server's
// priority order, values in µs or ms depending on the largest step.
import type { OverviewReady } from "../api/types";
import { categoryLabel, categoryValue } from "../util/categories";
import { chooseTimeUnit, formatNumber, type TimeUnit } from "../util/format";
import type { ChartOption } from "./echarts";
import { legendChartBase } from "./legendChartBase";
import { categoryColor } from "./palette";
import { makeStepTooltipFormatter } from "./tooltipFormatters";

export interface StepChartModel {
  unit: TimeUnit;
  stepNames: string[];
  series: { key: string; name: string; color: string; values: number[] }[];
}

export function buildStepChartModel(data: Pick<OverviewReady, "steps" | "categories" | "category_labels">): StepChartModel {
  const maxTotal = data.steps.reduce((max, s) => Math.max(max, s.total_us), 0);
  const unit = chooseTimeUnit(maxTotal);
  return {
    unit,
    stepNames: data.steps.map((s) => s.step),
    series: data.categories.map((key, index) => ({
      key,
      name: categoryLabel(key, data.category_labels),
      color: categoryColor(key, index),
      values: data.steps.map((s) => categoryValue(s, key) / unit.divisor),
    })),
  };
}

export function buildStepChartOption(model: StepChartModel, textColor: string): ChartOption {
  return {
    ...legendChartBase(textColor, { left: 16, right: 16, top: 56, bottom: 40 }),
    tooltip: {
      trigger: "axis",
      axisPointer: { type: "shadow" },
      confine: true,
      formatter: makeStepTooltipFormatter(model.unit) as never,
    },
    xAxis: {
      type: "category",
      data: model.stepNames,
      name: "Step",
      nameLocation: "middle",
      nameGap: 28,
    },
    yAxis: {
      type: "value",
      name: `Step time (${model.unit.label})`,
      nameTextStyle: { align: "left" },
      axisLabel: { formatter: (v: number) => formatNumber(v, 0) },
    },
    series: model.series.map((s) => ({
      type: "bar",
      name: s.name,
      stack: "step",
      data: s.values,
      itemStyle: { color: s.color },
      emphasis: { focus: "series" },
      barMaxWidth: 64,
    })),
  };
}
