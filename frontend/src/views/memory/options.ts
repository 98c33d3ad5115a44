// ECharts options of the memory views. Every string from a trace or snapshot that reaches a tooltip
// goes through escapeHtml (ECharts renders tooltip strings as HTML).
import type { MemoryDevice, MemoryTimelineExportReady, SnapshotMarker, SnapshotTimelineReady } from "../../api/types";
import { categoryColor } from "../../charts/palette";
import { byteAxis } from "../../charts/byteAxis";
import { TIME_AXIS_ID } from "../../charts/timeAxes";
import { legendChartBase } from "../../charts/legendChartBase";
import { escapeHtml } from "../../util/escapeHtml";
import { formatBytes, formatDuration, formatNumber } from "../../util/format";
import type { MemChartOption } from "./echarts";
import { argMax, binCenters, stackBands, type PlacedBand } from "./layout";

export const ALLOCATED_COLOR = "#4e79a7";
export const RESERVED_COLOR = "#f28e2b";

/** A time on a snapshot axis: µs as a duration, untimed snapshots as entry numbers. */
export function formatSnapshotTime(t: number, unit: "us" | "entry"): string {
  return unit === "us" ? formatDuration(t) : `entry ${formatNumber(t)}`;
}

/** A time-axis label: the origin as "0" (not "0.00 µs"), every other tick as a duration. */
export function axisTime(us: number): string {
  return us === 0 ? "0" : formatDuration(us);
}

/** The peak of a curve inside the window: [ts, bytes], or null for an empty curve. */
export function curvePeak(ts: number[], bytes: number[]): [number, number] | null {
  const [i, max] = argMax(bytes);
  return i < 0 ? null : [ts[i]!, max];
}

/**
 * Where the peak's label sits: above the peak, or beside it when the peak is in the outer 15 % of the
 * x extent (a label centred there would run past the plot's edge and be cut).
 */
export function peakLabelPosition(x: number, lo: number, hi: number): "top" | "left" | "right" {
  if (!(hi > lo)) return "top";
  const f = (x - lo) / (hi - lo);
  return f > 0.85 ? "left" : f < 0.15 ? "right" : "top";
}

/** The largest value of a few byte lists (0 for none). */
function maxOf(...lists: number[][]): number {
  let m = 0;
  for (const l of lists) for (const v of l) if (v > m) m = v;
  return m;
}

export interface CurveOptionInput {
  device: MemoryDevice;
  textColor: string;
  /** The lifetime of the selected event, highlighted as a band. */
  highlight: { start: number; end: number; label: string } | null;
  /** The x extent to show (the selected range, or the whole trace). */
  extent: { start: number; end: number } | null;
}

export function memoryCurveOption({ device, textColor, highlight, extent }: CurveOptionInput): MemChartOption {
  const alloc = device.allocated;
  const peak = curvePeak(alloc.ts_us, alloc.bytes);
  const series: MemChartOption["series"] = [
    {
      type: "line",
      name: "Allocated",
      step: "end",
      showSymbol: false,
      sampling: undefined,
      data: alloc.ts_us.map((t, i) => [t, alloc.bytes[i]!]),
      lineStyle: { width: 1.5, color: ALLOCATED_COLOR },
      itemStyle: { color: ALLOCATED_COLOR },
      areaStyle: { opacity: 0.12, color: ALLOCATED_COLOR },
      markPoint: peak
        ? {
            symbol: "circle",
            symbolSize: 8,
            data: [{ name: "Peak", coord: peak, value: peak[1] }],
            label: {
              show: true,
              formatter: () => `peak ${formatBytes(peak[1])}`,
              position: peakLabelPosition(peak[0], extent?.start ?? alloc.ts_us[0] ?? 0, extent?.end ?? alloc.ts_us[alloc.ts_us.length - 1] ?? 0),
              distance: 6,
              fontSize: 12,
              fontWeight: "bold",
              color: textColor,
            },
            itemStyle: { color: "#e15759" },
          }
        : undefined,
      markArea: highlight
        ? {
            silent: true,
            itemStyle: { color: "rgba(225, 87, 89, 0.18)", borderColor: "#e15759", borderWidth: 1 },
            label: { show: true, position: "insideTop", formatter: highlight.label, color: textColor, fontSize: 10 },
            data: [[{ xAxis: highlight.start }, { xAxis: highlight.end }]],
          }
        : undefined,
    },
  ];
  if (device.reserved) {
    const r = device.reserved;
    series.push({
      type: "line",
      name: "Reserved",
      step: "end",
      showSymbol: false,
      data: r.ts_us.map((t, i) => [t, r.bytes[i]!]),
      lineStyle: { width: 1.5, color: RESERVED_COLOR, type: "dashed" },
      itemStyle: { color: RESERVED_COLOR },
    });
  }
  return {
    ...legendChartBase(textColor, { left: 16, right: 24, top: 40, bottom: 36 }),
    tooltip: {
      trigger: "axis",
      confine: true,
      formatter: ((params: { seriesName: string; value: [number, number] }[]) => {
        const list = Array.isArray(params) ? params : [params];
        if (list.length === 0) return "";
        const t = list[0]!.value[0];
        return [
          `<b>${escapeHtml(formatDuration(t))}</b>`,
          ...list.map((p) => `${escapeHtml(p.seriesName)}: ${escapeHtml(formatBytes(p.value[1]))}`),
        ].join("<br/>");
      }) as never,
    },
    brush: {
      toolbox: [],
      xAxisIndex: 0,
      brushType: "lineX",
      brushMode: "single",
      transformable: false,
      throttleType: "debounce",
      brushStyle: { color: "rgba(245, 124, 0, 0.15)", borderColor: "#f57c00", borderWidth: 1 },
      outOfBrush: { colorAlpha: 1 },
    },
    xAxis: {
      id: TIME_AXIS_ID,
      type: "value",
      name: "Time",
      nameLocation: "middle",
      nameGap: 24,
      min: extent?.start,
      max: extent?.end,
      axisLabel: { formatter: axisTime },
    },
    yAxis: { type: "value", ...byteAxis(0, maxOf(alloc.bytes, device.reserved?.bytes ?? [])) },
    series,
  };
}

export interface BandSeriesDatum {
  value: [number, number, number, number, number];
}

/**
 * The outline of a placed band in pixels: its bottom edge left to right, step by step, then its top
 * edge back (at least 1 px wide and tall, so tiny allocations stay visible and clickable).
 */
export function bandOutline(p: PlacedBand, coord: (v: [number, number]) => [number, number]): [number, number][] {
  const [left] = coord([p.x0, 0]);
  const right = Math.max(coord([p.x1, 0])[0], left + 1);
  const bottom: [number, number][] = [];
  const top: [number, number][] = [];
  p.steps.forEach((s, k) => {
    const xa = k === 0 ? left : Math.min(coord([s.x, 0])[0], right);
    const xb = k + 1 < p.steps.length ? Math.min(coord([p.steps[k + 1]!.x, 0])[0], right) : right;
    const yBottom = coord([s.x, s.y0])[1];
    const yTop = Math.min(coord([s.x, s.y0 + p.band.bytes])[1], yBottom - 1);
    bottom.push([xa, yBottom], [xb, yBottom]);
    top.push([xa, yTop], [xb, yTop]);
  });
  return [...bottom, ...top.reverse()];
}

/** The snapshot timeline: stacked bands (largest live allocations), active and reserved curves, markers. */
export function snapshotTimelineOption(
  tl: SnapshotTimelineReady,
  textColor: string,
  full: { start: number; end: number },
  selectedBand: number | null,
): { option: MemChartOption; placed: PlacedBand[] } {
  const placed = stackBands(tl.bands, tl.end);
  const centers = binCenters(tl.start, tl.end, tl.active_bytes.length);
  const unit = tl.time_unit;
  const markers: SnapshotMarker[] = tl.markers ?? [];
  // untimed or segment-less snapshots have no reserved curve (all zero): leave it out
  const hasReserved = tl.reserved_bytes.some((v) => v > 0);
  const option: MemChartOption = {
    backgroundColor: "transparent",
    animation: false,
    textStyle: { color: textColor },
    legend: { type: "plain", top: 0, textStyle: { color: textColor }, data: hasReserved ? ["Active", "Reserved", "Largest allocations"] : ["Active", "Largest allocations"] },
    grid: { left: 16, right: 24, top: 40, bottom: 64, containLabel: true },
    tooltip: { trigger: "item", confine: true },
    dataZoom: [
      { type: "inside", xAxisIndex: 0, filterMode: "none", startValue: tl.start, endValue: tl.end },
      { type: "slider", xAxisIndex: 0, filterMode: "none", height: 18, bottom: 8, startValue: tl.start, endValue: tl.end },
    ],
    xAxis: {
      id: TIME_AXIS_ID,
      type: "value",
      min: full.start,
      max: full.end,
      axisLabel: { formatter: (v: number) => (v === 0 ? "0" : formatSnapshotTime(v, unit)) },
    },
    yAxis: { type: "value", ...byteAxis(0, maxOf(tl.active_bytes, tl.reserved_bytes, placed.map((p) => p.y1))) },
    series: [
      {
        type: "custom",
        name: "Largest allocations",
        itemStyle: { color: "#59a14f" },
        renderItem: ((params: { dataIndex: number }, api: {
          value: (i: number) => number;
          coord: (p: [number, number]) => [number, number];
          style: (extra?: object) => object;
        }) => {
          const p = placed[params.dataIndex];
          if (!p) return null;
          const selected = p.index === selectedBand;
          return {
            type: "polygon",
            shape: { points: bandOutline(p, api.coord) },
            style: {
              fill: selected ? "#e15759" : p.band.before_history ? BEFORE_HISTORY_COLOR : bandColor(p.index),
              stroke: "rgba(0,0,0,0.25)",
              lineWidth: 0.5,
              opacity: 0.85,
            },
          };
        }) as never,
        encode: { x: [0, 1], y: [2, 3] },
        data: placed.map((p) => [p.x0, p.x1, p.y0, p.y1, p.index]),
        tooltip: {
          formatter: ((params: { dataIndex: number }) => {
            const p = placed[params.dataIndex];
            if (!p) return "";
            return [
              `<b>${escapeHtml(formatBytes(p.band.bytes))}</b> (${escapeHtml(formatNumber(p.band.bytes))} B)`,
              p.band.before_history
                ? `allocated before the history began${(p.band.blocks ?? 1) > 1 ? ` (${escapeHtml(formatNumber(p.band.blocks!))} blocks)` : ""}, ${
                    p.band.free_time === null ? "not freed" : `freed ${escapeHtml(formatSnapshotTime(p.band.free_time, unit))}`
                  }`
                : `allocated ${escapeHtml(formatSnapshotTime(p.band.alloc_time, unit))}, ${
                p.band.free_time === null ? "not freed" : `freed ${escapeHtml(formatSnapshotTime(p.band.free_time, unit))}`
              }`,
              escapeHtml(p.band.frame || (p.band.before_history && (p.band.blocks ?? 1) > 1 ? "(several stacks)" : "(no frames)")),
              "<i>click for the stack</i>",
            ].join("<br/>");
          }) as never,
        },
        z: 2,
      },
      {
        type: "line",
        name: "Active",
        step: "middle",
        showSymbol: false,
        data: centers.map((t, i) => [t, tl.active_bytes[i]!]),
        lineStyle: { width: 1.5, color: ALLOCATED_COLOR },
        itemStyle: { color: ALLOCATED_COLOR },
        tooltip: { show: false },
        z: 3,
        markLine: markers.length
          ? {
              symbol: "none",
              silent: false,
              lineStyle: { color: "#e15759", type: "solid", width: 1.5 },
              label: { formatter: (p: { name?: string }) => p.name ?? "", color: textColor },
              data: markers.map((m) => ({ name: m.action === "oom" ? "OOM" : "snapshot", xAxis: m.time })),
            }
          : undefined,
      },
      ...(hasReserved
        ? [
            {
              type: "line" as const,
              name: "Reserved",
              step: "middle" as const,
              showSymbol: false,
              data: centers.map((t, i) => [t, tl.reserved_bytes[i] ?? 0]),
              lineStyle: { width: 1, color: RESERVED_COLOR, type: "dashed" as const },
              itemStyle: { color: RESERVED_COLOR },
              tooltip: { show: false },
              z: 3,
            },
          ]
        : []),
    ],
  };
  return { option, placed };
}

/** The band of the blocks allocated before the history began: one neutral colour, below the others. */
export const BEFORE_HISTORY_COLOR = "#9a9a9a";

/**
 * What the timeline's bands show and leave out, in words: "200 largest of 1,344 live allocations drawn
 * (the other 1,144, none over 8.0 MiB, are in the Active curve only); below them, 264 MiB allocated
 * before the history". An older server without the counts: "N largest live allocations drawn".
 */
export function bandsCaption(tl: SnapshotTimelineReady): string {
  const before = tl.bands.filter((b) => b.before_history);
  const drawn = tl.bands.length - before.length;
  let text = `${formatNumber(drawn)} largest live allocations drawn`;
  if (tl.bands_alive !== undefined && tl.bands_left_out !== undefined) {
    text = tl.bands_left_out
      ? `${formatNumber(drawn)} largest of ${formatNumber(tl.bands_alive)} live allocations drawn (the other ${formatNumber(
          tl.bands_left_out,
        )}, none over ${formatBytes(tl.left_out_max_bytes ?? 0)}, are in the Active curve only)`
      : `all ${formatNumber(drawn)} live allocations drawn`;
  }
  if (before.length) {
    const bytes = before.reduce((s, b) => s + b.bytes, 0);
    text += `; below them, ${formatBytes(bytes)} allocated before the history began (grey)`;
  }
  return text;
}

const BAND_COLORS = ["#4e79a7", "#59a14f", "#edc948", "#b07aa1", "#76b7b2", "#ff9da7", "#9c755f", "#86bcb6", "#f28e2b", "#a0cbe8"];

export function bandColor(index: number): string {
  return BAND_COLORS[index % BAND_COLORS.length]!;
}

/** The export's stacked area chart: one area per category, the peak marked. */
export function exportOption(data: MemoryTimelineExportReady, textColor: string): MemChartOption {
  return {
    ...legendChartBase(textColor, { left: 16, right: 24, top: 48, bottom: 56 }),
    tooltip: {
      trigger: "axis",
      confine: true,
      formatter: ((params: { seriesName: string; value: [number, number]; color: string }[]) => {
        const list = Array.isArray(params) ? params : [params];
        if (list.length === 0) return "";
        const total = list.reduce((a, p) => a + (p.value[1] ?? 0), 0);
        return [
          `<b>${escapeHtml(formatDuration(list[0]!.value[0]))}</b> total ${escapeHtml(formatBytes(total))}`,
          ...list
            .filter((p) => p.value[1] > 0)
            .map((p) => `${escapeHtml(p.seriesName)}: ${escapeHtml(formatBytes(p.value[1]))}`),
        ].join("<br/>");
      }) as never,
    },
    dataZoom: [
      { type: "inside", xAxisIndex: 0 },
      { type: "slider", xAxisIndex: 0, height: 18, bottom: 8 },
    ],
    xAxis: { id: TIME_AXIS_ID, type: "value", axisLabel: { formatter: axisTime } },
    yAxis: { type: "value", ...byteAxis(0, data.peak_bytes) },
    series: data.categories.map((name, ci) => ({
      type: "line",
      name,
      stack: "total",
      showSymbol: false,
      areaStyle: { opacity: 0.85 },
      lineStyle: { width: 0 },
      itemStyle: { color: categoryColor(name, ci) },
      data: data.times_us.map((t, i) => [t, data.bytes[ci]?.[i] ?? 0]),
      markLine:
        ci === data.categories.length - 1
          ? {
              symbol: "none",
              silent: true,
              lineStyle: { color: "#e15759", type: "dashed" },
              label: { formatter: `peak ${formatBytes(data.peak_bytes)}`, color: textColor },
              data: [{ xAxis: data.peak_time_us }],
            }
          : undefined,
    })),
  };
}
