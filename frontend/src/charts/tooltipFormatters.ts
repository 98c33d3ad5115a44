// ECharts tooltips are HTML. These formatters build that HTML themselves and escape every string that
// comes from a trace (step names, category names), so a name like "<img onerror=...>" shows as text.
import { escapeHtml } from "../util/escapeHtml";
import { formatDuration, formatNumber, formatPct, type TimeUnit } from "../util/format";

/** The subset of ECharts' callback parameters the formatters read. */
export interface TooltipItem {
  seriesName?: string;
  name?: string;
  value?: unknown;
  color?: unknown;
  percent?: number;
}

function swatch(color: unknown): string {
  const css = typeof color === "string" && /^#[0-9a-fA-F]{3,8}$/.test(color) ? color : "#888888";
  return `<span style="display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px;background:${css}"></span>`;
}

function asNumber(value: unknown): number | null {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

/**
 * Axis tooltip for the step chart: the step name, then one line per non-zero category, then the total.
 * Values arrive in the chart's unit; `unit` turns them back into µs, and each is shown in the unit
 * that reads best for it (a 2 µs memcpy next to 98 ms of kernels is "2.00 µs", not "0.00 ms").
 */
export function makeStepTooltipFormatter(unit: TimeUnit): (params: TooltipItem | TooltipItem[]) => string {
  return (params) => {
    const items = Array.isArray(params) ? params : [params];
    const first = items[0];
    if (!first) return "";
    let total = 0;
    const lines: string[] = [];
    for (const item of items) {
      const value = asNumber(item.value);
      if (value === null) continue;
      total += value;
      if (value === 0) continue;
      lines.push(
        `<div>${swatch(item.color)}${escapeHtml(item.seriesName ?? "")}: ` +
          `<b>${escapeHtml(formatDuration(value * unit.divisor))}</b></div>`,
      );
    }
    return (
      `<div><b>Step ${escapeHtml(first.name ?? "")}</b></div>` +
      lines.join("") +
      `<div style="margin-top:4px">Total: <b>${escapeHtml(formatDuration(total * unit.divisor))}</b></div>`
    );
  };
}

/** Item tooltip for the execution-summary donut: category, average time in µs and its share. */
export function pieTooltipFormatter(params: TooltipItem | TooltipItem[]): string {
  const item = Array.isArray(params) ? params[0] : params;
  if (!item) return "";
  const value = asNumber(item.value);
  return (
    `<div>${swatch(item.color)}<b>${escapeHtml(item.name ?? "")}</b></div>` +
    `<div>${escapeHtml(formatNumber(value, 1))} \u00b5s (${escapeHtml(formatPct(item.percent ?? null))})</div>`
  );
}
