// The memory views' extra ECharts parts, registered on the shared echarts/core instance: step lines,
// custom (band) series, marks, brush and data zoom. Imported only by the memory views.
import * as charts from "echarts/charts";
import type { CustomSeriesOption, LineSeriesOption } from "echarts/charts";
import * as components from "echarts/components";
import type { BrushComponentOption, DataZoomComponentOption, GridComponentOption, LegendComponentOption, MarkAreaComponentOption, MarkLineComponentOption, MarkPointComponentOption, TooltipComponentOption } from "echarts/components";
import * as echarts from "echarts/core";
import { CanvasRenderer } from "echarts/renderers";

// Named members of the namespaces only, so the bundler keeps just these parts.
echarts.use([
  charts.LineChart,
  charts.CustomChart,
  components.BrushComponent,
  components.DataZoomInsideComponent,
  components.DataZoomSliderComponent,
  components.GridComponent,
  components.LegendPlainComponent,
  components.MarkAreaComponent,
  components.MarkLineComponent,
  components.MarkPointComponent,
  components.TooltipComponent,
  CanvasRenderer,
]);

export type MemChartOption = echarts.ComposeOption<
  | LineSeriesOption
  | CustomSeriesOption
  | BrushComponentOption
  | DataZoomComponentOption
  | GridComponentOption
  | LegendComponentOption
  | MarkAreaComponentOption
  | MarkLineComponentOption
  | MarkPointComponentOption
  | TooltipComponentOption
>;

export type MemChartInstance = ReturnType<typeof echarts.init>;

export { echarts };
