// ECharts options of the critical-path panel: per step, the path's time stacked by
// category and by rank. Names in tooltips are escaped (ECharts renders formatter output as HTML).
import type { ChartOption } from "../../charts/echarts";
import { legendChartBase } from "../../charts/legendChartBase";
import { SERIES_PALETTE } from "../../charts/palette";
import { TIME_AXIS_ID } from "../../charts/timeAxes";
import type { CriticalPathStep } from "../../api/types";
import { escapeHtml } from "../../util/escapeHtml";
import { chooseTimeUnit, formatDuration, formatNumber } from "../../util/format";
import { type Bar, barSeries, stackParts } from "./stackedBars";

export const PATH_CATEGORIES = stackParts([
  ["kernel", "Kernel", "#4e79a7"],
  ["cpu", "Launch / CPU", "#f28e2b"],
  ["communication", "Communication", "#b07aa1"],
  ["waiting", "Waiting", "#bab0ac"],
]);

const RANK_COLORS = SERIES_PALETTE.slice(0, 10); // ranks cycle through the Tableau 10

interface Param {
  seriesName?: string;
  value?: unknown;
  dataIndex?: number;
}

function tooltip(steps: CriticalPathStep[], divisor: number) {
  return (raw: unknown) => {
    const params = (Array.isArray(raw) ? raw : [raw]) as Param[];
    const step = steps[params[0]?.dataIndex ?? 0];
    const head = step ? `<b>Step ${escapeHtml(step.step)}</b>: ${escapeHtml(formatDuration(step.length_us))}` : "";
    const lines = params
      .filter((p) => Number(p.value) > 0)
      .map((p) => `${escapeHtml(p.seriesName ?? "")}: ${escapeHtml(formatDuration(Number(p.value) * divisor))}`);
    return [head, ...lines].join("<br/>");
  };
}

function base(steps: CriticalPathStep[], textColor: string) {
  const unit = chooseTimeUnit(Math.max(0, ...steps.map((s) => s.length_us)));
  return {
    unit,
    option: {
      ...legendChartBase(textColor, { left: 16, right: 16, top: 48, bottom: 36 }),
      tooltip: { trigger: "axis", axisPointer: { type: "shadow" }, confine: true, formatter: tooltip(steps, unit.divisor) as never },
      xAxis: { type: "category", data: steps.map((s) => s.step), name: "Step", nameLocation: "middle", nameGap: 26 },
      yAxis: { id: TIME_AXIS_ID, type: "value", name: `Critical path (${unit.label})`, nameTextStyle: { align: "left" }, axisLabel: { formatter: (v: number) => formatNumber(v, 0) } },
    } as ChartOption,
  };
}

/** One stacked bar per step: the path's kernel / launch-CPU / communication / waiting time. */
export function pathByCategoryOption(steps: CriticalPathStep[], textColor: string): ChartOption {
  const { unit, option } = base(steps, textColor);
  return {
    ...option,
    series: barSeries(
      PATH_CATEGORIES.map((c) => ({ name: c.label, color: c.color, value: (s: CriticalPathStep) => s.by_category[c.key] })),
      steps,
      unit.divisor,
      56,
      "path",
    ),
  };
}

/** The ranks the path runs on, in order. */
export function pathRanks(steps: CriticalPathStep[]): number[] {
  return [...new Set(steps.flatMap((s) => s.by_rank.map((r) => r.rank)))].sort((a, b) => a - b);
}

const OTHER_RANKS_COLOR: string = "#9e9e9e";

/** One stacked bar per step: the path's time on each rank (the ranks of most time; the rest as "Other ranks"). */
export function pathByRankOption(steps: CriticalPathStep[], textColor: string): ChartOption {
  const { unit, option } = base(steps, textColor);
  const bars: Bar<CriticalPathStep>[] = pathRanks(steps).map((rank, i) => ({
    name: `Rank ${rank}`,
    color: RANK_COLORS[i % RANK_COLORS.length]!,
    value: (s) => s.by_rank.find((r) => r.rank === rank)?.us ?? 0,
  }));
  if (steps.some((s) => (s.by_rank_other?.us ?? 0) > 0)) {
    bars.push({ name: "Other ranks", color: OTHER_RANKS_COLOR, value: (s) => s.by_rank_other?.us ?? 0 });
  }
  return { ...option, series: barSeries(bars, steps, unit.divisor, 56, "path") };
}
