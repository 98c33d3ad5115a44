// Number formatting for display. The server sends raw numbers with units in the field names; every
// conversion to text happens here. A null (unknown) value always shows as an en dash.

export const DASH = "\u2013";

const GIB = 1024 ** 3;

function isMissing(value: number | null | undefined): value is null | undefined {
  return value === null || value === undefined || !Number.isFinite(value);
}

/** Fixed-locale grouping, so output does not depend on the browser's language. */
export function formatNumber(value: number | null | undefined, fractionDigits = 0): string {
  if (isMissing(value)) return DASH;
  return value.toLocaleString("en-US", {
    minimumFractionDigits: fractionDigits,
    maximumFractionDigits: fractionDigits,
  });
}

/** 57.4183 -> "57.42 %". */
export function formatPct(value: number | null | undefined, fractionDigits = 2): string {
  if (isMissing(value)) return DASH;
  return `${value.toFixed(fractionDigits)} %`;
}

/** 16945512448 -> "15.78 GiB". */
export function formatGiB(bytes: number | null | undefined): string {
  if (isMissing(bytes)) return DASH;
  return `${(bytes / GIB).toFixed(2)} GiB`;
}

/** Any byte count in the largest binary unit that keeps it at or above 1. */
export function formatBytes(bytes: number | null | undefined): string {
  if (isMissing(bytes)) return DASH;
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** Microseconds as µs, ms or s, whichever reads best: 812 -> "812 µs", 123456 -> "123.46 ms". */
export function formatDuration(us: number | null | undefined): string {
  if (isMissing(us)) return DASH;
  const abs = Math.abs(us);
  if (abs < 1000) return `${formatNumber(us, abs < 10 ? 2 : 0)} \u00b5s`;
  if (abs < 1_000_000) return `${(us / 1000).toFixed(2)} ms`;
  return `${(us / 1_000_000).toFixed(2)} s`;
}

/** Microseconds to milliseconds, as a number. */
export function usToMs(us: number): number {
  return us / 1000;
}

export interface TimeUnit {
  label: "\u00b5s" | "ms";
  /** Divide a µs value by this to get the unit. */
  divisor: number;
}

/** Chart axis unit: ms once the largest value reaches 10 ms, µs below that. */
export function chooseTimeUnit(maxUs: number): TimeUnit {
  return maxUs >= 10_000 ? { label: "ms", divisor: 1000 } : { label: "\u00b5s", divisor: 1 };
}

/** A value in a chosen unit, e.g. 123456 µs in ms -> "123.46 ms". */
export function formatInUnit(us: number | null | undefined, unit: TimeUnit): string {
  if (isMissing(us)) return DASH;
  const digits = unit.divisor === 1 ? 1 : 2;
  return `${formatNumber(us / unit.divisor, digits)} ${unit.label}`;
}

/** part / whole as a percentage; null when whole is 0 or unknown. */
export function percentOf(part: number, whole: number): number | null {
  if (!Number.isFinite(part) || !Number.isFinite(whole) || whole === 0) return null;
  return (part / whole) * 100;
}

export function formatText(value: string | null | undefined): string {
  return value === null || value === undefined || value === "" ? DASH : value;
}

export function formatBool(value: boolean | null | undefined): string {
  if (value === null || value === undefined) return DASH;
  return value ? "Yes" : "No";
}
