// The parts of the Distributed view's stacked bars (what a bar is split into, its legend label and
// color) and the one way a list of parts becomes ECharts bar series.

/** One part of a stacked bar: the row field it reads, its legend label, its color. */
export interface Part<K extends string> {
  readonly key: K;
  readonly label: string;
  readonly color: string;
}

/** Parts from ``[key, label, color]`` rows, in stacking order (the first at the bottom). */
export function stackParts<K extends string>(rows: readonly (readonly [K, string, string])[]): readonly Part<K>[] {
  return rows.map(([key, label, color]) => ({ key, label, color }));
}

/** One bar a series: ``value(row)`` in µs, divided by ``divisor``; stacked when ``stack`` is given. */
export interface Bar<R> {
  readonly name: string;
  readonly color: string;
  readonly value: (row: R) => number;
}

/** The ECharts bar series of ``bars`` over ``rows`` (one category a row). */
export function barSeries<R>(bars: readonly Bar<R>[], rows: readonly R[], divisor: number, barMaxWidth: number, stack?: string) {
  return bars.map((b) => ({
    type: "bar" as const,
    name: b.name,
    ...(stack ? { stack } : {}),
    data: rows.map((r) => b.value(r) / divisor),
    itemStyle: { color: b.color },
    barMaxWidth,
  }));
}

/** The bars of ``parts`` over rows that carry each part's field (µs; missing or null: 0). */
export function partBars<K extends string, R extends { [key in K]?: number | null }>(parts: readonly Part<K>[]): Bar<R>[] {
  return parts.map((p) => ({ name: p.label, color: p.color, value: (r: R) => r[p.key] ?? 0 }));
}
