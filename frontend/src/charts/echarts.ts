// The one place that imports ECharts: only the chart types and components the UI uses are registered,
// which keeps the bundle small.
import { BarChart, PieChart } from "echarts/charts";
import { GridComponent, LegendPlainComponent, TooltipComponent } from "echarts/components";
import * as echarts from "echarts/core";
import type { BarSeriesOption, PieSeriesOption } from "echarts/charts";
import type { GridComponentOption, LegendComponentOption, TooltipComponentOption } from "echarts/components";
import { CanvasRenderer } from "echarts/renderers";

echarts.use([BarChart, PieChart, GridComponent, LegendPlainComponent, TooltipComponent, CanvasRenderer]);

export type ChartOption = echarts.ComposeOption<
  BarSeriesOption | PieSeriesOption | GridComponentOption | LegendComponentOption | TooltipComponentOption
>;

export { echarts };
