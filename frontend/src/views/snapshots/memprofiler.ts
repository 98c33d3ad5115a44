// Pure model of the MemProfiler stats view: the table (metrics × snapshots, with end − start per
// profiled iteration) and the chart option (grouped bars of the byte metrics per snapshot).
import type { BarSeriesOption } from "echarts/charts";
import type { ChartOption } from "../../charts/echarts";
import { byteAxis } from "../../charts/byteAxis";
import { legendChartBase } from "../../charts/legendChartBase";
import type { MemProfilerMetric, MemProfilerSnapshot, MemProfilerStatsReady } from "../../api/types";
import { escapeHtml } from "../../util/escapeHtml";
import { formatBytes, formatNumber } from "../../util/format";

/** "training_step #2 start". */
export function snapshotLabel(s: Pick<MemProfilerSnapshot, "function" | "iteration" | "phase">): string {
  return `${s.function} #${s.iteration} ${s.phase}`;
}

export interface StatsColumn {
  id: string;
  label: string;
  /** A snapshot's index, or the [start, end] indices of an iteration's delta column. */
  source: number | [number, number];
}

export interface StatsRow {
  key: string;
  label: string;
  unit: "bytes" | "count";
  cells: (number | null)[];
}

/** Units of stats outside the headline list, from torch.cuda.memory_stats naming. */
export function statUnit(key: string): "bytes" | "count" {
  return /bytes|^rss|^vms|^npp|max_split_size/.test(key) ? "bytes" : "count";
}

/** Columns: each snapshot in order, then "Δ <function> #<iteration>" (end − start) for each
 * iteration that has both. Rows: the headline metrics, or every stat (headline first) when `all`. */
export function statsTable(data: MemProfilerStatsReady, all: boolean): { columns: StatsColumn[]; rows: StatsRow[] } {
  const snaps = data.snapshots;
  const columns: StatsColumn[] = snaps.map((s, i) => ({ id: s.key, label: snapshotLabel(s), source: i }));
  const starts = new Map<string, number>();
  snaps.forEach((s, i) => {
    if (s.phase === "start") starts.set(`${s.rank}.${s.function}.${s.iteration}`, i);
  });
  snaps.forEach((s, i) => {
    const start = starts.get(`${s.rank}.${s.function}.${s.iteration}`);
    if (s.phase === "end" && start !== undefined) {
      columns.push({ id: `delta:${s.key}`, label: `Δ ${s.function} #${s.iteration}`, source: [start, i] });
    }
  });
  const metrics: MemProfilerMetric[] = [...data.metrics];
  if (all) {
    const known = new Set(metrics.map((m) => m.key));
    const rest = new Set<string>();
    for (const s of snaps) for (const k of Object.keys(s.values)) if (!known.has(k)) rest.add(k);
    for (const k of [...rest].sort()) metrics.push({ key: k, label: k, unit: statUnit(k) });
  }
  const value = (i: number, key: string): number | null => {
    const v = snaps[i]?.values[key];
    return typeof v === "number" ? v : null;
  };
  const rows = metrics.map((m) => ({
    key: m.key,
    label: m.label,
    unit: m.unit,
    cells: columns.map((c) => {
      if (typeof c.source === "number") return value(c.source, m.key);
      const [a, b] = c.source;
      const va = value(a, m.key);
      const vb = value(b, m.key);
      return va === null || vb === null ? null : vb - va;
    }),
  }));
  return { columns, rows };
}

export function formatStat(value: number | null, unit: "bytes" | "count"): string {
  if (value === null) return "\u2013";
  if (unit === "count") return formatNumber(value);
  return value < 0 ? `\u2212${formatBytes(-value)}` : formatBytes(value);
}

/** The byte metrics drawn as bars (those present). */
export const CHART_METRICS = [
  "allocated_bytes.all.current",
  "allocated_bytes.all.peak",
  "reserved_bytes.all.current",
  "reserved_bytes.all.peak",
  "rss",
  "npp_post_forward",
];

/** Grouped bars: one group per snapshot (x), one bar per byte metric. */
export function statsChartOption(data: MemProfilerStatsReady, textColor: string): ChartOption {
  const labels = data.snapshots.map(snapshotLabel);
  const metrics = CHART_METRICS.map((k) => data.metrics.find((m) => m.key === k)).filter(
    (m): m is MemProfilerMetric => m !== undefined,
  );
  const series: BarSeriesOption[] = metrics.map((m) => ({
    type: "bar",
    name: m.label,
    data: data.snapshots.map((s) => (typeof s.values[m.key] === "number" ? (s.values[m.key] as number) : null)),
  }));
  const values = series.flatMap((sr) => (sr.data as (number | null)[]).filter((v): v is number => v !== null));
  return {
    ...legendChartBase(textColor, { left: 16, right: 24, top: 56, bottom: 24 }),
    tooltip: {
      trigger: "axis",
      confine: true,
      formatter: ((params: { seriesName?: string; value?: number | null; axisValueLabel?: string }[]) => {
        const list = Array.isArray(params) ? params : [params];
        return [
          `<b>${escapeHtml(list[0]?.axisValueLabel ?? "")}</b>`,
          ...list.map((p) => `${escapeHtml(p.seriesName ?? "")}: ${escapeHtml(formatBytes(p.value ?? null))}`),
        ].join("<br/>");
      }) as never,
    },
    xAxis: { type: "category", data: labels },
    yAxis: { type: "value", ...byteAxis(Math.min(0, ...values), Math.max(0, ...values)) },
    series: series as unknown as ChartOption["series"],
  } as ChartOption;
}
